/**
 * The price query's byte renderer (workers/answer-bytes.ts) writes exactly the bytes of the text
 * renderer (`answerJson`, workers/render.ts, whose output the API contract tests check):
 *  - on 10,000 random queries answered by the engine over random worlds (workers' shared helper:
 *    breaks, inheritance, FX, rounding, a SKU code with a quote and characters beyond ASCII,
 *    unavailable SKUs), and
 *  - on random items beyond what a world gives: amounts at every edge of the digit writer (0, -0,
 *    fractions with trailing zeros, 10^15 and past it, non-integers), codes with control characters,
 *    quotes, backslashes and astral characters, FX objects, many breaks.
 */
import fc from 'fast-check'
import t from 'tap'
import { PriceContext, type AnswerOptions, type PricedItem } from '../../engine/pipeline.js'
import { queryPrices } from '../../engine/query.js'
import { answerBytes } from '../../workers/answer-bytes.js'
import { answerJson } from '../../workers/render.js'
import { build, profile, queryArbitrary, worldArbitrary } from '../helpers/price-world.js'

const seed =
  process.env['PROPERTY_SEED'] === undefined ? Date.now() % 2_147_483_647 : Number(process.env['PROPERTY_SEED'])

function expectSame(items: readonly PricedItem[], unavailable: Parameters<typeof answerJson>[1]): void {
  const text = Buffer.from(answerJson(items, unavailable), 'utf8')
  const bytes = answerBytes(items, unavailable)
  if (!bytes.equals(text))
    throw new Error(`bytes differ:\n text  ${text.toString('utf8')}\n bytes ${bytes.toString('utf8')}`)
  if (bytes.byteOffset !== 0 || bytes.buffer.byteLength !== bytes.length)
    throw new Error('the answer does not own its buffer')
}

t.test('10,000 random queries render the same bytes as the text renderer', async (t) => {
  let queries = 0
  let items = 0
  let unavailable = 0
  fc.assert(
    fc.property(
      worldArbitrary,
      fc.array(queryArbitrary, { minLength: 5, maxLength: 5 }),
      fc.boolean(),
      (world, asked, sorted) => {
        const { catalog, book } = build(world)
        for (const query of asked) {
          const options: AnswerOptions = {
            currency: query.currency,
            rounding: query.rounding ? profile : null,
            quantity: query.quantity,
          }
          const result = queryPrices(new PriceContext(catalog, book, query.at, 'SE'), {
            skus: query.skus,
            pricelists: [...query.lists].sort(),
            options,
            sortOrder: sorted ? 'DESC' : null,
          })
          expectSame(result.items, result.unavailable)
          queries++
          items += result.items.length
          unavailable += result.unavailable.length
        }
      },
    ),
    { seed, numRuns: 2_000 },
  )
  t.equal(queries, 10_000, `queries compared (seed ${seed})`)
  t.ok(items > 5_000 && unavailable > 5_000, `${items} items and ${unavailable} unavailable SKUs among them`)
})

const amountArbitrary = fc.oneof(
  fc.integer({ min: -1e15 + 1, max: 1e15 - 1 }),
  fc.constantFrom(
    0,
    -0,
    1,
    -1,
    5,
    10,
    100,
    1_000,
    9_999,
    10_000,
    10_001,
    12_340,
    120_000,
    1e15 - 1,
    1e15,
    -1e15,
    1e16,
    0.5,
    -2.25,
    123_456_789.123,
  ),
  fc.integer({ min: -99, max: 99 }).map((value) => value * 1_000),
)
const codeArbitrary = fc.oneof(
  fc.stringMatching(/^[A-Z0-9-]{1,12}$/),
  fc.string({ maxLength: 12, unit: 'binary' }),
  fc.constantFrom('a"b', 'a\\b', '\u0000', '\u007f', '\u00e9', '\ud83d\ude00', '\ud800'),
)
const pricedAmountsArbitrary = fc.record({
  quantity: amountArbitrary,
  net: amountArbitrary,
  vat: amountArbitrary,
  gross: amountArbitrary,
})
const itemArbitrary = fc.record({
  sku: codeArbitrary,
  pricelist: codeArbitrary,
  currency: fc.constantFrom('SEK', 'EUR', 'U"S'),
  vatMode: fc.constantFrom('NET' as const, 'GROSS' as const),
  net: amountArbitrary,
  vat: amountArbitrary,
  gross: amountArbitrary,
  vatRateText: fc.constantFrom('25', '12.5', '0', '7.75', '0.0001'),
  vatClass: codeArbitrary,
  inherited: fc.boolean(),
  breaks: fc.array(pricedAmountsArbitrary, { maxLength: 4 }),
  fx: fc.option(
    fc.record({
      base: fc.constantFrom('SEK', 'EUR'),
      quote: fc.constantFrom('USD', 'E"R'),
      rate: fc.double({ min: 1e-6, max: 1e6, noNaN: true }),
      asOf: fc.integer({ min: 0, max: 4e12 }),
    }),
    { freq: 3 },
  ),
})

t.test('random items, amounts and codes render the same bytes as the text renderer', async (t) => {
  let checked = 0
  fc.assert(
    fc.property(
      fc.array(itemArbitrary, { maxLength: 20 }),
      fc.array(
        fc.record({
          sku: codeArbitrary,
          reason: fc.constantFrom('no_price' as const, 'no_vat_class' as const, 'no_fx_rate' as const),
        }),
        { maxLength: 5 },
      ),
      (items, unavailable) => {
        expectSame(items as unknown as PricedItem[], unavailable)
        checked++
      },
    ),
    { seed, numRuns: 3_000 },
  )
  t.equal(checked, 3_000, `answers compared (seed ${seed})`)
})

t.test('an answer larger than the scratch buffer grows it and stays exact', async (t) => {
  const item = {
    sku: 'SKU-1',
    pricelist: 'NET-1',
    currency: 'SEK',
    vatMode: 'NET',
    net: 1_234_567,
    vat: 308_642,
    gross: 1_543_209,
    vatRateText: '25',
    vatClass: 'standard',
    inherited: false,
    breaks: [],
    fx: null,
  }
  const items = Array.from({ length: 2_000 }, (_, index) => ({
    ...item,
    sku: `SKU-${index}`,
    net: item.net + index,
  })) as unknown as PricedItem[]
  expectSame(items, [])
  t.ok(answerBytes(items, []).length > 64 * 1024, 'past the first 64 KiB')
})
