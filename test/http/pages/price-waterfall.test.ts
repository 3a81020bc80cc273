/**
 * The console's waterfall wording for the steps the page test's data does not reach (a conversion
 * from a parent in another currency, an exchange rate, a quantity break, a bundle, a failed rule,
 * rounding), the currency each amount is in after each step, text that stays text, and the exact
 * amount text (two decimals at least, no binary rounding).
 */
import t from 'tap'
import { waterfall, type TraceStep } from '../../../http/pages/console/prices/waterfall.js'
import { amountText, momentOf } from '../../../http/pages/console/prices/words.js'

/** [label, detail, amount] per row, tags dropped. */
function rows(steps: TraceStep[]): string[][] {
  const markup = waterfall({ steps, currencyOf: (pricelist) => (pricelist === 'BASE' ? 'EUR' : 'SEK') }).text
  return [...markup.matchAll(/<li class="step-[a-z_]+">(.*?)<\/li>/g)].map(([, row]) =>
    [...row!.matchAll(/<span class="(?:label|detail|amount[^"]*)"[^>]*>(.*?)<\/span>(?=<span class="|$)/g)].map(
      ([, cell]) => cell!.replace(/<[^>]+>/g, '').replace('Amount after this step: ', ''),
    ),
  )
}

t.test('a parent in EUR NET into a SEK GROSS list, a break, a failed rule, FX and rounding', async (t) => {
  const steps: TraceStep[] = [
    { step: 'inheritance', path: ['SEK-G', 'BASE'], source: 'BASE' },
    {
      step: 'version',
      pricelist: 'BASE',
      start_date: '2026-01-01T00:00:00Z',
      written_at: '2026-01-01T00:00:00Z',
      written_by: 'a<b>',
      amount: 100,
    },
    { step: 'quantity_break', quantity: 10, break_quantity: 5, amount: 90 },
    {
      step: 'conversion',
      ...{ from_pricelist: 'BASE', to_pricelist: 'SEK-G', from_currency: 'EUR', to_currency: 'SEK' },
      ...{ from_vat_mode: 'NET', to_vat_mode: 'GROSS', vat_rate: 25, input: 90, output: 1286.1113 },
      fx: { base: 'EUR', quote: 'SEK', rate: 11.4321, published: '2024-01-02T00:00:00Z' },
    },
    { step: 'rule', pricelist: 'SEK-G', index: 0, code: 'bad', filter_matched: true, input: 1286.1113, output: null },
    {
      step: 'fx',
      base: 'SEK',
      quote: 'EUR',
      rate: 0.0874729,
      published: '2024-01-02T00:00:00Z',
      input: 1,
      output: 1.5,
    },
    {
      step: 'rounding',
      profile: 'eur',
      tier: { from: 0, to: 10, increment: 0.05, mode: 'HALF_UP', offset: null },
      input: 1.5,
      output: 1.5,
    },
  ]
  t.same(rows(steps), [
    ['Inheritance', 'SEK-G → BASE; the price comes from BASE', ''],
    [
      'Price version',
      'on BASE, in force since 2026-01-01 00:00:00 UTC, written 2026-01-01 00:00:00 UTC by a&lt;b&gt;',
      '100.00 EUR',
    ],
    ['Quantity break', 'quantity 10: the break from 5 applies', '90.00 EUR'],
    [
      'From the parent',
      'BASE (EUR NET) into SEK-G (SEK GROSS); rate EUR→SEK 11.4321 (published 2024-01-02 00:00:00 UTC); VAT 25%',
      '1,286.1113 SEK',
    ],
    ['Rule bad', 'on SEK-G: failed on 1,286.1113', 'none'],
    ['Exchange rate', 'SEK → EUR at 0.0874729, published 2024-01-02 00:00:00 UTC', '1.50 EUR'],
    ['Rounding', 'profile eur, tier 0.00 to 10.00: HALF_UP to 0.05', '1.50 EUR'],
  ])
})

t.test('a bundle with a component without price, and a list with its own price', async (t) => {
  const steps: TraceStep[] = [
    { step: 'inheritance', path: ['BASE'], source: 'BASE' },
    {
      step: 'bundle',
      ...{ pricelist: 'BASE', rule_pricelist: 'BASE', method: 'sum', discount_type: 'percent', discount_value: 10 },
      components: [
        { sku: 'A', quantity: 2, amount: 5 },
        { sku: 'B', quantity: 1, amount: null },
      ],
      amount: null,
    },
  ]
  t.same(rows(steps), [
    ['Inheritance', 'BASE has its own price (no parent is asked)', ''],
    ['Bundle', 'sum of 2 × A at 5.00, 1 × B at no price; discount percent 10 (rule on BASE)', 'none'],
  ])
})

t.test('amounts as exact text, moments in UTC', async (t) => {
  t.same(
    [amountText(0), amountText(-20.202), amountText('-20.2020'), amountText(1234567.5), amountText('3.0000')],
    ['0.00', '-20.202', '-20.202', '1,234,567.50', '3.00'],
  )
  t.equal(momentOf('2026-12-01T09:00', 0), Date.UTC(2026, 11, 1, 9), 'a datetime-local value is UTC')
  t.equal(momentOf('2026-12-01T09:00:00+01:00', 0), Date.UTC(2026, 11, 1, 8), 'an offset is kept')
  t.equal(momentOf('', 42), 42, 'empty is the default')
  t.throws(() => momentOf('2026-13-01T00:00', 0), /is not a date and time/)
})
