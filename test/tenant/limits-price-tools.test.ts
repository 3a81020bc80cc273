/**
 * The plans' limits (tenant/plans.ts) on the price tools of issue 29: explain, diff and simulate
 * spend each plan's query allowance by their size (an explained SKU 3 items, on the query and on
 * the single read; a diff page the SKUs it covers; a simulation its writes plus its SKUs), are held
 * to the items per request, run out the smallest plan's burst with 429 and Retry-After where a small
 * request still passes, and a simulated write over the plan's quota is refused as the real write is.
 * Kept beside limits.test.ts (the other routes' limits) in a file of its own.
 */
import t from 'tap'
import { plans, tiers } from '../../tenant/plans.js'
import type { Answer, TenantClient } from '../helpers/server.js'
import { query } from '../helpers/price-fixtures.js'
import { retailReference, writeRetailPrices } from '../helpers/retail-fixtures.js'
import { suiteServer } from '../helpers/suite.js'

const { server } = await suiteServer()

const skus = Array.from({ length: 100 }, (_, index) => `T-${index}`)
const explainCost = 3
const diffLimitDefault = 1_000

const remaining = (answer: Answer): number => Number(answer.headers.get('x-ratelimit-remaining'))

async function pricedTenant(slug: string, options: { tier: string; limits?: Record<string, unknown> }) {
  const client = await server.tenant(slug, options)
  await retailReference(client, skus)
  await writeRetailPrices(client, skus, 10)
  return client
}

function diffBody(extra: Record<string, unknown>): Record<string, unknown> {
  return {
    currency_code: 'EUR',
    tax_area: 'SE',
    pricelist_filter: { pricelists: ['RETAIL'] },
    // After the fixtures' tax area was written (it does not exist before).
    from: new Date(Date.now() + 60_000).toISOString(),
    to: new Date(Date.now() + 86_400_000).toISOString(),
    ...extra,
  }
}

function simulateBody(writeCount: number, skuCount: number): Record<string, unknown> {
  return {
    writes: {
      prices: Array.from({ length: writeCount }, (_, index) => ({ sku: skus[index], pricelist: 'RETAIL', price: 99 })),
    },
    query: query(skus.slice(0, skuCount), ['RETAIL']),
  }
}

/** The checks of one request: what it sends, what it should cost. */
interface Spend {
  readonly label: string
  readonly cost: number
  readonly send: (client: TenantClient) => Promise<Answer>
}

const spends: Spend[] = [
  { label: 'a plain single read', cost: 1, send: (client) => client.get('/price/T-1/RETAIL/SE') },
  {
    label: 'an explained single read',
    cost: explainCost,
    send: (client) => client.get('/price/T-1/RETAIL/SE?explain=true'),
  },
  {
    label: 'an explained single read, its parameter percent-encoded',
    cost: explainCost,
    send: (client) => client.get('/price/T-1/RETAIL/SE?expl%61in=true'),
  },
  {
    label: 'a single read with explain=false',
    cost: 1,
    send: (client) => client.get('/price/T-1/RETAIL/SE?explain=false'),
  },
  {
    label: 'an explained 100-SKU query',
    cost: 100 * explainCost,
    send: (client) => client.call('POST', '/price/query', query(skus, ['RETAIL'], { explain: true })),
  },
  {
    label: 'a diff of 40 named SKUs',
    cost: 40,
    send: (client) => client.call('POST', '/price/diff', diffBody({ skus: skus.slice(0, 40) })),
  },
  {
    label: 'a diff page of the default size over all SKUs',
    cost: diffLimitDefault,
    send: (client) => client.call('POST', '/price/diff', diffBody({})),
  },
  {
    label: 'a simulation of 10 prices and a 5-SKU query',
    cost: 15,
    send: (client) => client.call('POST', '/price/simulate', simulateBody(10, 5)),
  },
]

t.test("on every plan, explain, diff and simulate spend the plan's query burst by their size", async (t) => {
  for (const tier of tiers) {
    const burst = plans[tier].query_burst!
    // Rate 0: the bucket never refills during the test, so each drop is the request's exact cost.
    const client = await pricedTenant(`spend-${tier}`, { tier, limits: { query_rate: 0 } })
    let left = burst
    for (const spend of spends) {
      const answer = await spend.send(client)
      t.equal(answer.status, 200, `${tier}: ${spend.label} answers (${answer.text.slice(0, 200)})`)
      t.equal(answer.headers.get('x-ratelimit-limit'), String(burst), `${tier}: the limit is the plan's burst`)
      t.equal(left - remaining(answer), spend.cost, `${tier}: ${spend.label} costs ${spend.cost}`)
      left = remaining(answer)
    }
    // A full page (2,500 SKUs) fits the plan's burst when full; what is left decides.
    const page = await client.call('POST', '/price/diff', diffBody({ limit: 2_500 }))
    const expected = left >= 2_500 ? 200 : 429
    t.equal(page.status, expected, `${tier}: a 2,500-SKU page with ${left} items left answers ${expected}`)
    if (expected === 429) {
      t.equal(page.body.code, 'rate_limited')
      t.equal(remaining(page), left, 'a refused page spends nothing')
    }
  }
})

t.test('past the items per request, each route answers 413 too_many_items before it spends anything', async (t) => {
  const client = await pricedTenant('items-max', { tier: 'standard', limits: { query_rate: 0 } })
  const before = remaining(await client.get('/price/T-1/RETAIL/SE'))
  // 1,000 writes (the bound) and a 1,600-SKU query: 2,600 items, more than the 2,500 a request may cost.
  const body = simulateBody(100, 100) as { writes: { prices: unknown[] }; query: Record<string, unknown> }
  body.writes.prices = Array.from({ length: 1_000 }, (_, index) => ({
    sku: `T-${index % 100}`,
    pricelist: 'RETAIL',
    price: 1,
  }))
  body.query = query(
    Array.from({ length: 1_600 }, (_, index) => `N-${index}`),
    ['RETAIL'],
  )
  const refused = await client.call('POST', '/price/simulate', body)
  t.same(
    [refused.status, refused.body.code, refused.body.max_items_per_request],
    [413, 'too_many_items', 2_500],
    'a simulation of 2,600 items',
  )
  const overPlan = await server.tenant('items-plan', { tier: 'standard', limits: { max_items_per_request: 200 } })
  const explained = await overPlan.call(
    'POST',
    '/price/query',
    query(
      Array.from({ length: 67 }, (_, index) => `T-${index}`),
      ['RETAIL'],
      { explain: true },
    ),
  )
  t.same(
    [explained.status, explained.body.code, explained.body.max_items_per_request],
    [413, 'too_many_items', 200],
    "67 explained SKUs cost 201 items: past a plan's lowered items per request",
  )
  const page = await overPlan.call('POST', '/price/diff', diffBody({}))
  t.same([page.status, page.body.code], [413, 'too_many_items'], 'a default diff page (1,000 SKUs) too')
  t.equal(remaining(await client.get('/price/T-1/RETAIL/SE')), before - 1, 'the refusals spent nothing')
})

t.test(
  "the starter plan's own bucket: a 2,500-SKU diff page spends it, the next answers 429 with Retry-After; " +
    'a small explained query passes after a second',
  async (t) => {
    const { query_rate: rate, query_burst: burst } = plans.starter
    const client = await pricedTenant('starter-run-out', { tier: 'starter' })
    const started = performance.now()
    const first = await client.call('POST', '/price/diff', diffBody({ limit: burst! }))
    const refill = Math.ceil((rate! * (performance.now() - started)) / 1_000)
    t.equal(first.status, 200, 'a page as large as the burst passes on a full bucket')
    // What is left is at most what refilled while the page was computed (a loaded machine takes longer).
    t.ok(remaining(first) <= refill, `and leaves nothing but the refill (${remaining(first)} <= ${refill})`)
    const second = await client.call('POST', '/price/diff', diffBody({ limit: burst! }))
    t.equal(second.status, 429)
    t.equal(second.body.code, 'rate_limited')
    const retryAfter = Number(second.headers.get('retry-after'))
    t.equal(second.body.retry_after, retryAfter, 'the body names the same wait as the header')
    // (2,500 - what is left) / 500 per second: 5 s, or 4 after the refill while the requests ran.
    t.ok(retryAfter >= 4 && retryAfter <= Math.ceil(burst! / rate!), `Retry-After ${retryAfter} s`)
    await new Promise((resolve) => setTimeout(resolve, 1_000))
    const small = await client.call('POST', '/price/query', query(skus.slice(0, 20), ['RETAIL'], { explain: true }))
    t.equal(small.status, 200, 'a 20-SKU explained query (60 items) passes after a second of refill')
    t.ok(small.body.items[0].trace !== undefined, 'and is explained')
    const again = await client.call('POST', '/price/diff', diffBody({ limit: burst! }))
    t.equal(again.status, 429, 'while the large page is still refused')
  },
)

t.test("a simulated pricelist past the starter plan's quota is refused as the real write is", async (t) => {
  const quota = plans.starter.pricelists!
  const client = await pricedTenant('starter-quota', { tier: 'starter' })
  // RETAIL and quota - 1 more: the plan's pricelists are all taken.
  const batch = Array.from({ length: quota - 1 }, (_, index) => ({
    code: `L-${index}`,
    currency_code: 'EUR',
    vat_mode: 'NET',
  }))
  const written = await client.call('POST', '/pricelist/batch', batch)
  t.same([written.status, written.body.accepted], [202, quota - 1])
  const proposed = { code: 'ONE-MORE', currency_code: 'EUR', vat_mode: 'NET' }
  const simulated = await client.call('POST', '/price/simulate', {
    writes: { pricelists: [proposed] },
    query: query(['T-1'], ['RETAIL']),
  })
  const real = await client.call('PUT', '/pricelist/ONE-MORE', { currency_code: 'EUR', vat_mode: 'NET' })
  t.same([simulated.status, simulated.body.code, simulated.body.write], [422, 'quota_exceeded', '/writes/pricelists/0'])
  const fields = (answer: Answer) => {
    const { timestamp: _timestamp, request_id: _requestId, write: _write, ...rest } = answer.body
    return { status: answer.status, ...rest }
  }
  t.same(fields(simulated), fields(real), "the real write's error body")
  t.equal((await client.get('/pricelist/ONE-MORE')).status, 404, 'neither stored it')
})
