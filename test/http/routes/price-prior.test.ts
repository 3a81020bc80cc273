/**
 * `prior_price=true` against the real server: the EU prior price of hand-computed histories,
 * written as scheduled prices (a write cannot start in the past) and asked at an `as_of` after
 * them: the directive's examples, a parent's reduction, a VAT rate's, `omnibus.days`, the single
 * read, the schema in /openapi.json, and the bad requests. test/engine/prior-price.test.ts has the
 * rest of the fixture (rules, reclassification, FX, windows, ties).
 */
import t from 'tap'
import { expectStatus, futureDay, mapSkus, putPrice, putSetting, query } from '../../helpers/price-fixtures.js'
import { answerCacheCounts } from '../../helpers/metrics.js'
import { suiteServer } from '../../helpers/suite.js'

const priorMetric = 'pricing_prior_price_cache_total'

const {
  server,
  tenants: { acme },
} = await suiteServer({
  tenants: {
    acme: {
      reference: true,
      pricelists: {
        RETAIL: { currency_code: 'EUR', vat_mode: 'GROSS' },
        CHILD: { currency_code: 'EUR', parent_code: 'RETAIL' },
        NETL: { currency_code: 'EUR', vat_mode: 'NET' },
      },
    },
  },
})

const day = futureDay

/** Prices by day on a list for a SKU, in order. */
async function history(sku: string, pricelist: string, prices: [number, number][]): Promise<void> {
  for (const [at, price] of prices) await putPrice(acme, sku, pricelist, { price, start_date: day(at) })
}

async function prior(sku: string, pricelist: string, at: number, taxArea = 'SE'): Promise<unknown> {
  const body = query([sku], [pricelist], { as_of: day(at), prior_price: true, tax_area: taxArea })
  const answer = await acme.call('POST', '/price/query', body)
  if (answer.status !== 200) throw new Error(`query: ${answer.status} ${answer.text}`)
  return answer.body.items[0].prior_price
}

const skus = ['DIR', 'OLD', 'PROG', 'FLAT', 'UP', 'INH', 'VAT', 'LONG']
await mapSkus(acme, 'standard', skus)
await history('DIR', 'RETAIL', [
  [0, 80],
  [10, 100],
  [20, 90],
])
await history('OLD', 'RETAIL', [
  [0, 100],
  [40, 80],
])
await history('PROG', 'RETAIL', [
  [0, 100],
  [40, 90],
  [50, 80],
])
await history('FLAT', 'RETAIL', [[0, 100]])
await history('UP', 'RETAIL', [
  [0, 80],
  [10, 100],
])
await history('INH', 'RETAIL', [
  [0, 100],
  [40, 80],
])
await history('VAT', 'NETL', [[0, 100]])
await history('LONG', 'RETAIL', [
  [0, 70],
  [10, 100],
  [60, 90],
])
// The standard rate in DE from 19% to 10% on day 40: the NET list's gross falls with it there.
await expectStatus(
  acme.call('POST', '/vat/rate', { tax_area_code: 'DE', vat_class_code: 'standard', rate: 10, start_date: day(40) }),
  202,
  'scheduled VAT rate',
)

t.test("the directive's examples", async (t) => {
  // 80 -> 100 -> 90: reduced on day 20; over the 30 days before it, 80 (from day 0; the window opens on day -10).
  t.same(await prior('DIR', 'RETAIL', 25), {
    net: 64,
    gross: 80,
    in_force_at: day(0),
    reduction_started_at: day(20),
  })
  // Reduced 20 days before the question: the window is the 30 days before day 40, not before now.
  t.same(await prior('OLD', 'RETAIL', 60), { net: 80, gross: 100, in_force_at: day(10), reduction_started_at: day(40) })
  // 100 -> 90 -> 80: anchored at the first step.
  t.same(await prior('PROG', 'RETAIL', 55), {
    net: 80,
    gross: 100,
    in_force_at: day(10),
    reduction_started_at: day(40),
  })
  t.equal(await prior('FLAT', 'RETAIL', 30), null, 'never reduced: null')
  t.equal(await prior('UP', 'RETAIL', 30), null, 'raised: null')
  t.equal(await prior('DIR', 'RETAIL', 15), null, 'asked before the fall (at the rise): null')
})

t.test("through a parent's price and a VAT rate", async (t) => {
  // CHILD inherits RETAIL's 100 -> 80 on day 40.
  t.same(await prior('INH', 'CHILD', 50), { net: 80, gross: 100, in_force_at: day(10), reduction_started_at: day(40) })
  // 100 net in DE at 19%: 119 gross; at 10% from day 40: 110.
  t.same(await prior('VAT', 'NETL', 50, 'DE'), {
    net: 100,
    gross: 119,
    in_force_at: day(10),
    reduction_started_at: day(40),
  })
  t.equal(await prior('VAT', 'NETL', 50), null, 'in SE the rate did not change: null')
})

t.test('omnibus.days sets the window', async (t) => {
  // 70 until day 10, then 100, then 90 from day 60: the 30 days before day 60 hold only 100.
  t.same((await prior('LONG', 'RETAIL', 61)) as { gross: number }, {
    net: 80,
    gross: 100,
    in_force_at: day(30),
    reduction_started_at: day(60),
  })
  await putSetting(acme, 'omnibus.days', '60')
  t.teardown(() => putSetting(acme, 'omnibus.days', '30'))
  t.same(await prior('LONG', 'RETAIL', 61), { net: 56, gross: 70, in_force_at: day(0), reduction_started_at: day(60) })
  const refused = await acme.call('PUT', '/settings/omnibus.days', { value: '0' })
  t.equal(refused.status, 400, 'a window of 0 days is refused')
})

t.test('the single read, and the plain answer unchanged without the flag', async (t) => {
  const read = await acme.get(`/price/DIR/RETAIL/SE?as_of=${day(25)}&prior_price=true`)
  t.equal(read.status, 200)
  t.same(read.body.prior_price, { net: 64, gross: 80, in_force_at: day(0), reduction_started_at: day(20) })
  t.equal(read.body.gross, 90, 'the price asked about')
  const plain = await acme.get(`/price/DIR/RETAIL/SE?as_of=${day(25)}`)
  t.notOk('prior_price' in plain.body, 'no prior_price without the flag')
  const skusAsked = ['DIR', 'OLD', 'NONE']
  const plainQuery = await acme.call('POST', '/price/query', query(skusAsked, ['RETAIL'], { as_of: day(25) }))
  t.notOk('prior_price' in plainQuery.body.items[0], 'nor in a plain query')
  const withPrior = await acme.call(
    'POST',
    '/price/query',
    query(skusAsked, ['RETAIL'], { as_of: day(25), prior_price: true }),
  )
  const { prior_price: _, ...item } = withPrior.body.items[0]
  t.same(
    {
      items: [item, ...withPrior.body.items.slice(1).map(({ prior_price: _, ...rest }: any) => rest)],
      unavailable: withPrior.body.unavailable,
    },
    plainQuery.body,
    "with prior_price, each item is the plain answer's, its prior price last; unavailable entries the same",
  )
  t.match(withPrior.text, /"fx":null,"prior_price":\{"net":64,"gross":80,/, 'written after the plain fields')
})

t.test('a later write to the history changes the answer (nothing stale is kept); other writes keep it', async (t) => {
  await history('KEPT', 'RETAIL', [
    [0, 100],
    [40, 80],
  ])
  await mapSkus(acme, 'standard', ['KEPT'])
  const first = await prior('KEPT', 'RETAIL', 60)
  t.same(first, { net: 80, gross: 100, in_force_at: day(10), reduction_started_at: day(40) })
  const counted = await answerCacheCounts(server, priorMetric)
  t.same(await prior('KEPT', 'RETAIL', 60), first, 'asked again: the same')
  const again = await answerCacheCounts(server, priorMetric)
  t.same([again.hits - counted.hits, again.misses - counted.misses], [1, 0], 'from the kept one (the metric counts it)')
  // Another SKU's price written: this one's is still kept.
  await history('OTHER', 'RETAIL', [[0, 5]])
  t.same(await prior('KEPT', 'RETAIL', 60), first, 'after a write of another SKU: the same')
  const afterOther = await answerCacheCounts(server, priorMetric)
  t.same([afterOther.hits - again.hits, afterOther.misses - again.misses], [1, 0], 'still kept')
  t.same(await prior('KEPT', 'RETAIL', 61), first, 'a moment later, nothing changed between: the same')
  // 60 from day 20: the price rose to 80 on day 40, so no reduction is in force on day 60.
  const beforeOwn = await answerCacheCounts(server, priorMetric)
  await history('KEPT', 'RETAIL', [[20, 60]])
  t.equal(await prior('KEPT', 'RETAIL', 60), null, 'after the write: none')
  const afterOwn = await answerCacheCounts(server, priorMetric)
  t.same(
    [afterOwn.hits - beforeOwn.hits, afterOwn.misses - beforeOwn.misses],
    [0, 1],
    'its own price written: computed again',
  )
})

t.test('bad requests', async (t) => {
  const both = await acme.call(
    'POST',
    '/price/query',
    query(['DIR'], ['RETAIL'], { as_of: day(25), prior_price: true, explain: true }),
  )
  t.same([both.status, both.body.code], [400, 'validation_failed'], 'not with explain')
  const many = Array.from({ length: 101 }, (_, index) => `N-${index}`)
  const large = await acme.call('POST', '/price/query', query(many, ['RETAIL'], { prior_price: true }))
  t.same([large.status, large.body.code], [400, 'validation_failed'], 'at most 100 SKUs')
  const wrong = await acme.call('POST', '/price/query', query(['DIR'], ['RETAIL'], { prior_price: 'yes' }))
  t.equal(wrong.status, 400, 'a boolean')
})

t.test('the OpenAPI document describes prior_price', async (t) => {
  const document = (await server.request('GET', '/openapi.json')).body
  const post = document.paths['/t/{slug}/price/query'].post
  t.ok(JSON.stringify(post.requestBody).includes('prior_price'), 'the query body names it')
  const item = post.responses['200'].content['application/json'].schema.properties.items.items
  t.match(JSON.stringify(item.properties.prior_price), /Directive 98\/6\/EC/, 'the answer item explains it')
})

t.test(
  'asked at now, through the answer cache: the same answer as computed afresh, and again from the cache',
  async (t) => {
    await mapSkus(acme, 'standard', ['NOW-CUT', 'NOW-FLAT'])
    for (const [sku, price] of [
      ['NOW-CUT', 100],
      ['NOW-FLAT', 70],
      ['NOW-CUT', 80],
    ] as const)
      await putPrice(acme, sku, 'RETAIL', { price })
    const skus = ['NOW-CUT', 'NOW-FLAT', 'NOW-NONE']
    const cachedAnswers: string[] = []
    for (let round = 0; round < 3; round++) {
      const answer = await acme.call(
        'POST',
        '/price/query',
        query(skus, ['RETAIL'], { prior_price: true, sort_order: 'ASC' }),
      )
      t.equal(answer.status, 200)
      cachedAnswers.push(answer.text)
    }
    t.equal(cachedAnswers[1], cachedAnswers[0], 'asked again: the same bytes')
    t.equal(cachedAnswers[2], cachedAnswers[0])
    const body = JSON.parse(cachedAnswers[0]!)
    t.same(
      body.items.map((item: { sku: string; gross: number; prior_price: { gross: number } | null }) => [
        item.sku,
        item.gross,
        item.prior_price?.gross ?? null,
      ]),
      [
        ['NOW-FLAT', 70, null],
        ['NOW-CUT', 80, 100],
      ],
      'sorted by gross; the reduced SKU has its prior price, the other none',
    )
    t.same(body.unavailable, [{ sku: 'NOW-NONE', reason: 'no_price' }])
    // The same question with an explicit as_of (never cached): computed afresh, the same prior prices.
    const asOf = new Date(Date.now()).toISOString()
    const fresh = await acme.call(
      'POST',
      '/price/query',
      query(skus, ['RETAIL'], { prior_price: true, sort_order: 'ASC', as_of: asOf }),
    )
    t.same(
      fresh.body.items.map((item: { prior_price: unknown }) => item.prior_price),
      body.items.map((item: { prior_price: unknown }) => item.prior_price),
      'the cached prior prices are the ones computed afresh',
    )
    // A write to the history: the next answer changes with it (the cached item is not served).
    await putPrice(acme, 'NOW-FLAT', 'RETAIL', { price: 60 })
    const after = await acme.call('POST', '/price/query', query(skus, ['RETAIL'], { prior_price: true }))
    const flat = after.body.items.find((item: { sku: string }) => item.sku === 'NOW-FLAT')
    t.same([flat.gross, flat.prior_price?.gross], [60, 70], 'reduced from 70 to 60: its prior price is 70')
  },
)
