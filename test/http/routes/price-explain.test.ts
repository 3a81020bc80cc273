/**
 * `explain=true` against the real server: hand-computed traces (a parent two levels up, a rule, a
 * GROSS list, an FX and VAT-mode conversion, a quantity break, a bundle), every candidate's reason,
 * the single read's trace, the trace in /openapi.json, the plain answer's bytes unchanged, the
 * stability of a trace and its inputs hash at an as_of after later writes, and the bad requests.
 * Every expected amount is worked out by hand in the comment next to it.
 */
import t from 'tap'
import { expectStatus, mapSkus, putPrice, putPricelist, query, setupReference } from '../../helpers/price-fixtures.js'
import type { TenantClient } from '../../helpers/server.js'
import { suiteServer } from '../../helpers/suite.js'

const {
  server,
  tenants: { acme },
} = await suiteServer({
  tenants: {
    acme: {
      reference: true,
      pricelists: {
        BASE: { currency_code: 'EUR', vat_mode: 'NET' },
        MID: { currency_code: 'EUR', parent_code: 'BASE' },
        LEAF: { currency_code: 'EUR', parent_code: 'MID' },
        'SEK-G': { currency_code: 'SEK', vat_mode: 'GROSS', parent_code: 'BASE' },
        'EUR-G': { currency_code: 'EUR', vat_mode: 'GROSS' },
      },
    },
  },
})

type Body = Record<string, any>

async function explained(client: TenantClient, body: Record<string, unknown>): Promise<Body> {
  const answer = await client.call('POST', '/price/query', { ...body, explain: true })
  if (answer.status !== 200) throw new Error(`query: ${answer.status} ${answer.text}`)
  return answer.body
}

/** The steps of a trace without the fields that depend on when the test ran. */
function stable(steps: Body[]): Body[] {
  return steps.map(({ start_date, written_at, written_by, mapping_start, rate_start, published, ...rest }) => rest)
}

await putPrice(acme, 'X-1', 'BASE', { price: 100 })
await putPrice(acme, 'X-1', 'EUR-G', { price: 120 })
await mapSkus(acme, 'standard', ['X-1'])

t.test('a parent two levels up: the path walked, the version and its writer, VAT and amounts', async (t) => {
  const { items, unavailable } = await explained(acme, query(['X-1'], ['LEAF']))
  t.same(unavailable, [])
  const trace = items[0]!.trace
  // 100 EUR NET on BASE, inherited unchanged by MID and LEAF; VAT 25%: 25, gross 125.
  t.same(stable(trace.steps), [
    { step: 'candidates', pricelists: ['LEAF'] },
    { step: 'inheritance', path: ['LEAF', 'MID', 'BASE'], source: 'BASE' },
    { step: 'version', pricelist: 'BASE', amount: 100 },
    { step: 'vat', vat_class: 'standard', rate: 25, mode: 'NET' },
    { step: 'amounts', net: 100, vat: 25, gross: 125 },
  ])
  const version = trace.steps[2]
  t.match(version.start_date, /^\d{4}-\d\d-\d\dT/, 'the version has its start')
  t.match(version.written_at, /^\d{4}-\d\d-\d\dT/, 'and when it was written')
  t.equal(typeof version.written_by, 'string')
  t.not(version.written_by, '', 'and by whom')
  const vat = trace.steps[3]
  t.match(vat.mapping_start, /^\d{4}-/, 'the mapping version')
  t.match(vat.rate_start, /^\d{4}-/, 'the rate version')
  t.same(trace.candidates, [
    { pricelist: 'LEAF', outcome: 'won', reason: null, amounts: { net: 100, vat: 25, gross: 125 } },
    { pricelist: 'BASE', outcome: 'lost', reason: 'filter_mismatch', amounts: null },
    { pricelist: 'EUR-G', outcome: 'lost', reason: 'filter_mismatch', amounts: null },
    { pricelist: 'MID', outcome: 'lost', reason: 'filter_mismatch', amounts: null },
    { pricelist: 'SEK-G', outcome: 'lost', reason: 'filter_mismatch', amounts: null },
  ])
  t.match(trace.inputs_hash, /^sha256:[0-9a-f]{64}$/)
})

t.test('a GROSS list wins by the lower gross; the other loses to it with its amounts', async (t) => {
  const { items } = await explained(acme, query(['X-1'], ['BASE', 'EUR-G']))
  // EUR-G: 120 gross, VAT 120 x 25 / 125 = 24, net 96; BASE: 100 + 25 = 125 gross.
  t.same([items[0]!.pricelist, items[0]!.gross], ['EUR-G', 120])
  const trace = items[0]!.trace
  t.same(stable(trace.steps).slice(1), [
    { step: 'inheritance', path: ['EUR-G'], source: 'EUR-G' },
    { step: 'version', pricelist: 'EUR-G', amount: 120 },
    { step: 'vat', vat_class: 'standard', rate: 25, mode: 'GROSS' },
    { step: 'amounts', net: 96, vat: 24, gross: 120 },
  ])
  t.same(trace.candidates.slice(0, 2), [
    { pricelist: 'BASE', outcome: 'lost', reason: 'lost_to_lower', amounts: { net: 100, vat: 25, gross: 125 } },
    { pricelist: 'EUR-G', outcome: 'won', reason: null, amounts: { net: 96, vat: 24, gross: 120 } },
  ])
})

t.test('a tie goes to the code that sorts first; the other is lost_tie', async (t) => {
  await putPricelist(acme, 'TIE-A', { currency_code: 'EUR', vat_mode: 'NET' })
  await putPricelist(acme, 'TIE-B', { currency_code: 'EUR', vat_mode: 'NET' })
  await putPrice(acme, 'X-1', 'TIE-A', { price: 50 })
  await putPrice(acme, 'X-1', 'TIE-B', { price: 50 })
  const { items } = await explained(acme, query(['X-1'], ['TIE-B', 'TIE-A']))
  t.equal(items[0]!.pricelist, 'TIE-A')
  t.same(
    items[0]!.trace.candidates.slice(0, 2).map((entry: Body) => [entry.pricelist, entry.outcome, entry.reason]),
    [
      ['TIE-A', 'won', null],
      ['TIE-B', 'lost', 'lost_tie'],
    ],
  )
})

t.test('rules: one whose filter does not match, then one that sets the price', async (t) => {
  await putPricelist(acme, 'RULES', {
    currency_code: 'EUR',
    parent_code: 'BASE',
    price_rules: [
      { code: 'food', filter: 'article.type == "food"', expression: 'sales * 0.5' },
      { code: 'minus', expression: 'sales - 1' },
    ],
  })
  const { items } = await explained(acme, query(['X-1'], ['RULES']))
  // 100 from BASE; the food rule's filter does not match; 100 - 1 = 99; VAT 24.75; gross 123.75.
  t.same(stable(items[0]!.trace.steps).slice(1), [
    { step: 'inheritance', path: ['RULES', 'BASE'], source: 'BASE' },
    { step: 'version', pricelist: 'BASE', amount: 100 },
    { step: 'rule', pricelist: 'RULES', index: 0, code: 'food', filter_matched: false, input: 100, output: null },
    { step: 'rule', pricelist: 'RULES', index: 1, code: 'minus', filter_matched: true, input: 100, output: 99 },
    { step: 'vat', vat_class: 'standard', rate: 25, mode: 'NET' },
    { step: 'amounts', net: 99, vat: 24.75, gross: 123.75 },
  ])
})

t.test('a parent in another currency and VAT mode: the conversion, then the answer in EUR through FX', async (t) => {
  const { items } = await explained(acme, query(['X-1'], ['SEK-G'], { currency_code: 'SEK' }))
  // 100 EUR x 11.4321 = 1143.21 SEK net; + VAT 25% = 285.8025 -> 285.80: 1429.01 SEK gross on SEK-G.
  // The answer is in SEK: VAT of the gross 1429.01 x 25 / 125 = 285.802 -> 285.80, net 1143.21.
  const steps = stable(items[0]!.trace.steps)
  t.same(steps.slice(1), [
    { step: 'inheritance', path: ['SEK-G', 'BASE'], source: 'BASE' },
    { step: 'version', pricelist: 'BASE', amount: 100 },
    {
      step: 'conversion',
      from_pricelist: 'BASE',
      to_pricelist: 'SEK-G',
      from_currency: 'EUR',
      to_currency: 'SEK',
      from_vat_mode: 'NET',
      to_vat_mode: 'GROSS',
      fx: { base: 'EUR', quote: 'SEK', rate: 11.4321, published: '2024-01-02T00:00:00Z' },
      vat_rate: 25,
      input: 100,
      output: 1429.01,
    },
    { step: 'vat', vat_class: 'standard', rate: 25, mode: 'GROSS' },
    { step: 'amounts', net: 1143.21, vat: 285.8, gross: 1429.01 },
  ])
  const euro = await explained(acme, query(['X-1'], ['SEK-G']))
  // Back to EUR at 1 / 11.4321 (0.08747299271 to 10 digits): 125 x 11.4321 = 1429.0125, so
  // 1429.01 / 11.4321 = 125 - 0.0025 / 11.4321 = 124.99978... -> 124.9998.
  const fx = stable(euro.items[0]!.trace.steps).find((step) => step.step === 'fx')
  t.same(fx, { step: 'fx', base: 'SEK', quote: 'EUR', rate: 0.08747299271, input: 1429.01, output: 124.9998 })
  t.equal(euro.items[0]!.trace.steps[4].published, '2024-01-02T00:00:00Z', 'the publication of the rate used')
})

t.test('a quantity break and a rounding profile', async (t) => {
  await putPrice(acme, 'BRK', 'BASE', { price: 10, quantity_breaks: [{ quantity_break: 10, percent_of_base: 91 }] })
  await mapSkus(acme, 'standard', ['BRK'])
  await expectStatus(
    acme.call('POST', '/rounding-profile', {
      code: 'NINES',
      tier_rules: [{ from: 0, increment: 1, mode: 'UP', offset: -0.01 }],
    }),
    202,
    'profile',
  )
  const { items } = await explained(acme, query(['BRK'], ['BASE'], { quantity: 12, rounding_profile: 'NINES' }))
  // 91% of 10 = 9.1 for 12 pieces; rounded up to 10, less 0.01: 9.99; VAT 2.4975 -> 2.50; gross 12.49.
  t.same(stable(items[0]!.trace.steps).slice(2), [
    { step: 'version', pricelist: 'BASE', amount: 10 },
    { step: 'quantity_break', quantity: 12, break_quantity: 10, amount: 9.1 },
    {
      step: 'rounding',
      profile: 'NINES',
      tier: { from: 0, to: null, increment: 1, mode: 'UP', offset: -0.01 },
      input: 9.1,
      output: 9.99,
    },
    { step: 'vat', vat_class: 'standard', rate: 25, mode: 'NET' },
    { step: 'amounts', net: 9.99, vat: 2.5, gross: 12.49 },
  ])
})

t.test('a bundle: its components with their amounts and the discount', async (t) => {
  await expectStatus(
    acme.call('PUT', '/bundle/B-1/BASE', {
      method: 'SUM_OF_PARTS',
      components: [{ sku: 'X-1', quantity: 2 }],
      discount_type: 'PERCENTAGE',
      discount_value: 10,
    }),
    202,
    'bundle',
  )
  await mapSkus(acme, 'standard', ['B-1'])
  const { items } = await explained(acme, query(['B-1'], ['BASE']))
  // 2 x 100 = 200, less 10%: 180; VAT 45; gross 225.
  t.same(stable(items[0]!.trace.steps).slice(1), [
    { step: 'inheritance', path: ['BASE'], source: 'BASE' },
    {
      step: 'bundle',
      pricelist: 'BASE',
      rule_pricelist: 'BASE',
      method: 'SUM_OF_PARTS',
      components: [{ sku: 'X-1', quantity: 2, amount: 100 }],
      discount_type: 'PERCENTAGE',
      discount_value: 10,
      amount: 180,
    },
    { step: 'vat', vat_class: 'standard', rate: 25, mode: 'NET' },
    { step: 'amounts', net: 180, vat: 45, gross: 225 },
  ])
})

t.test('unavailable SKUs carry a trace with each candidate reason', async (t) => {
  await putPrice(acme, 'NOCLASS', 'BASE', { price: 1 })
  const { items, unavailable } = await explained(acme, query(['NOCLASS', 'NOWHERE'], ['BASE', 'EUR-G']))
  t.same(items, [])
  t.same(
    unavailable.map((entry: Body) => [entry.sku, entry.reason, entry.trace.candidates.slice(0, 2)]),
    [
      [
        'NOCLASS',
        'no_vat_class',
        [
          { pricelist: 'BASE', outcome: 'lost', reason: 'no_vat_class', amounts: null },
          { pricelist: 'EUR-G', outcome: 'lost', reason: 'no_price_at_as_of', amounts: null },
        ],
      ],
      [
        'NOWHERE',
        'no_price',
        [
          { pricelist: 'BASE', outcome: 'lost', reason: 'no_price_at_as_of', amounts: null },
          { pricelist: 'EUR-G', outcome: 'lost', reason: 'no_price_at_as_of', amounts: null },
        ],
      ],
    ],
  )
  t.same(unavailable[0]!.trace.steps, [{ step: 'candidates', pricelists: ['BASE', 'EUR-G'] }])
})

t.test('the single read explains too, and its plain answer is unchanged', async (t) => {
  const plain = await acme.call('GET', '/price/X-1/LEAF/SE')
  const withTrace = await acme.call('GET', '/price/X-1/LEAF/SE?explain=true')
  t.equal(withTrace.status, 200)
  const { trace, ...rest } = withTrace.body
  t.same(rest, plain.body, 'the same answer besides the trace')
  t.equal(withTrace.text.slice(0, plain.text.length - 1), plain.text.slice(0, -1), 'the same bytes before it')
  t.same(trace.steps[1], { step: 'inheritance', path: ['LEAF', 'MID', 'BASE'], source: 'BASE' })
  t.same(trace.candidates, [
    { pricelist: 'LEAF', outcome: 'won', reason: null, amounts: { net: 100, vat: 25, gross: 125 } },
  ])
  const off = await acme.call('GET', '/price/X-1/LEAF/SE?explain=false')
  t.equal(off.text, plain.text, 'explain=false answers the plain bytes')
  t.equal((await acme.call('GET', '/price/X-1/LEAF/SE?explain=maybe')).status, 400)
})

t.test('without explain the query answers the same bytes; the explained items add only a trace', async (t) => {
  const body = query(['X-1', 'BRK', 'NOWHERE'], ['BASE', 'EUR-G'])
  const plain = await acme.call('POST', '/price/query', body)
  const off = await acme.call('POST', '/price/query', { ...body, explain: false })
  t.equal(off.text, plain.text)
  const on = await explained(acme, body)
  const stripped = {
    items: on.items.map(({ trace, ...item }: Body) => item),
    unavailable: on.unavailable.map(({ trace, ...entry }: Body) => entry),
  }
  t.equal(JSON.stringify(stripped), plain.text, 'the plain answer, byte for byte, once the traces are taken out')
})

t.test('the same query at the same as_of after later writes answers the same trace and hash', async (t) => {
  await putPrice(acme, 'H-1', 'BASE', { price: 40 })
  await mapSkus(acme, 'standard', ['H-1'])
  await new Promise((resolve) => setTimeout(resolve, 20))
  const asOf = new Date().toISOString()
  await new Promise((resolve) => setTimeout(resolve, 20))
  const body = query(['H-1'], ['LEAF', 'EUR-G'], { as_of: asOf })
  const before = await explained(acme, body)
  await putPrice(acme, 'H-1', 'BASE', { price: 30 })
  await putPrice(acme, 'H-1', 'MID', { price: 35 })
  await mapSkus(acme, 'reduced', ['H-1'])
  const after = await explained(acme, body)
  t.same(after, before, 'the whole answer, traces included, is the same')
  t.equal(after.items[0]!.net, 40)
  const now = await explained(acme, query(['H-1'], ['LEAF', 'EUR-G']))
  // MID's own 35 now; reduced VAT 12%: 4.20, gross 39.20.
  t.same([now.items[0]!.net, now.items[0]!.gross], [35, 39.2])
  t.not(now.items[0]!.trace.inputs_hash, before.items[0]!.trace.inputs_hash, 'now reads other inputs')
})

t.test('bad requests: a non-boolean explain, too many SKUs; the rate limit counts explained SKUs', async (t) => {
  const bad = await acme.call('POST', '/price/query', { ...query(['X-1'], ['BASE']), explain: 'yes' })
  t.equal(bad.status, 400)
  t.equal(bad.body.code, 'validation_failed')
  const skus = Array.from({ length: 101 }, (_, index) => `MANY-${index}`)
  const many = await acme.call('POST', '/price/query', { ...query(skus, ['BASE']), explain: true })
  t.equal(many.status, 400)
  t.match(many.body.message, /at most 100 SKUs/)
  t.equal(
    (await acme.call('POST', '/price/query', { ...query(skus.slice(0, 100), ['BASE']), explain: true })).status,
    200,
  )
})

t.test('/openapi.json documents the trace on both routes', async (t) => {
  const doc = (await server.request('GET', '/openapi.json')).body
  const queryItem =
    doc.paths['/t/{slug}/price/query'].post.responses['200'].content['application/json'].schema.properties.items.items
  t.ok(queryItem.properties.trace, 'a query item has a trace')
  const steps = queryItem.properties.trace.properties.steps.items.properties.step
  t.ok(JSON.stringify(steps).includes('quantity_break'), 'the step kinds are listed')
  const reasons = JSON.stringify(queryItem.properties.trace.properties.candidates.items.properties.reason)
  t.ok(reasons.includes('lost_tie') && reasons.includes('filter_mismatch'), 'the reasons are listed')
  const read = doc.paths['/t/{slug}/price/{sku}/{pricelist}/{tax_area}'].get
  t.ok(read.responses['200'].content['application/json'].schema.properties.trace, 'the single read has a trace')
  const body = doc.paths['/t/{slug}/price/query'].post.requestBody.content['application/json'].schema
  t.equal(body.properties.explain.type, 'boolean')
})

t.test('an explained SKU costs 3 items of the query rate limit', async (t) => {
  const slow = await server.tenant('explain-cost', { limits: { query_rate: 1, query_burst: 1000 } })
  await setupReference(slow)
  await putPricelist(slow, 'PL', { currency_code: 'EUR', vat_mode: 'NET' })
  const skus = Array.from({ length: 20 }, (_, index) => `C-${index}`)
  const first = await slow.call('POST', '/price/query', query(['C-0'], ['PL']))
  const second = await slow.call('POST', '/price/query', { ...query(skus, ['PL']), explain: true })
  t.equal(second.status, 200)
  t.equal(second.body.unavailable.length, 20)
  const remaining = (answer: { headers: Headers }) => Number(answer.headers.get('x-ratelimit-remaining'))
  const drop = remaining(first) - remaining(second)
  // 20 SKUs x 3; a second of refill (1 item) may land between the two.
  t.ok(drop >= 59 && drop <= 60, `dropped by ${drop}`)
})

t.test('a live pricelist outside its activity window is list_not_active', async (t) => {
  await putPricelist(acme, 'ENDED', { currency_code: 'EUR', vat_mode: 'NET', end_date: '2020-01-01' })
  await putPrice(acme, 'X-1', 'ENDED', { price: 1 })
  const { items } = await explained(acme, query(['X-1'], ['BASE', 'ENDED']))
  // ENDED would be cheaper (1 + 0.25), but it is not selected: BASE answers 125.
  t.same([items[0]!.pricelist, items[0]!.gross], ['BASE', 125])
  const ended = items[0]!.trace.candidates.find((candidate: Body) => candidate.pricelist === 'ENDED')
  t.same(ended, { pricelist: 'ENDED', outcome: 'lost', reason: 'list_not_active', amounts: null })
  t.same(items[0]!.trace.steps[0], { step: 'candidates', pricelists: ['BASE'] })
})

t.test('explanations run on the price workers; the main thread fills in who wrote each version', async (t) => {
  const answer = await acme.call('POST', '/price/query', { ...query(['X-1'], ['LEAF']), explain: true })
  t.same([answer.status, answer.headers.get('x-price-engine')], [200, 'worker'])
  const version = answer.body.items[0].trace.steps[2]
  t.same([version.step, version.pricelist], ['version', 'BASE'])
  t.match(version.written_at, /^\d{4}-\d\d-\d\dT/, 'the writer and instant come from the main thread')
  t.not(version.written_by, null)
  const read = await acme.call('GET', '/price/X-1/LEAF/SE?explain=true')
  t.same([read.status, read.headers.get('x-price-engine')], [200, 'worker'])
  t.same(read.body.trace.steps[2], version, 'the single read names the same version and writer')
})
