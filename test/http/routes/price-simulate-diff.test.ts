/**
 * POST /price/simulate with a diff instead of a query, against the real server: proposed writes
 * scheduled between the diff's two instants show in the simulated diff with their causes (an own
 * price: own_version, a parent's price: parent_version, a VAT rate: vat_rate); the simulation stores
 * nothing; committing the same writes makes POST /price/diff answer what the simulation did; all
 * SKUs of the lists page as the diff route pages them, a proposed new SKU included; bad diff bodies
 * answer the diff route's 400 bodies; the page is counted against the rate as the diff route counts
 * it, plus the writes. Amounts by hand (NET lists in SE: standard 25%, reduced 12%).
 */
import t from 'tap'
import { expectStatus, mapSkus, putPrice, putPricelist, setupReference } from '../../helpers/price-fixtures.js'
import type { Answer, TenantClient } from '../../helpers/server.js'
import { suiteServer } from '../../helpers/suite.js'

const from = '2997-06-01T00:00:00Z'
const to = '2998-06-01T00:00:00Z'
/** When the proposed changes start: between the two instants. */
const change = '2998-02-01T00:00:00Z'

// Queries of 3 SKUs or more go to a price worker, as the query route sends them.
const { server } = await suiteServer({
  env: { PRICING_WORKER_THRESHOLD_SKUS: '3', PRICING_WORKERS: '2' },
  tenants: {},
})

type Writes = Record<string, unknown[]>

/** A fresh enterprise tenant (pages of 1,000 SKUs fit its bucket): BASE, CHILD under it, four SKUs. */
async function freshTenant(slug: string, limits?: Record<string, unknown>): Promise<TenantClient> {
  const client = await server.tenant(slug, { tier: 'enterprise', ...(limits === undefined ? {} : { limits }) })
  await setupReference(client)
  await putPricelist(client, 'BASE', { currency_code: 'EUR', vat_mode: 'NET' })
  await putPricelist(client, 'CHILD', { currency_code: 'EUR', parent_code: 'BASE' })
  await mapSkus(client, 'standard', ['D-OWN', 'D-PARENT', 'D-SAME', 'D-NEW'])
  await mapSkus(client, 'reduced', ['D-VAT'])
  await putPrice(client, 'D-OWN', 'CHILD', { price: 10 })
  await putPrice(client, 'D-PARENT', 'BASE', { price: 20 })
  await putPrice(client, 'D-VAT', 'CHILD', { price: 30 })
  await putPrice(client, 'D-SAME', 'CHILD', { price: 60 })
  return client
}

function diffBody(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { currency_code: 'EUR', tax_area: 'SE', pricelist_filter: { pricelists: ['CHILD'] }, from, to, ...extra }
}

/** An own price, a parent's price and a VAT rate, each scheduled between from and to. */
const proposed: Writes = {
  prices: [
    { sku: 'D-OWN', pricelist: 'CHILD', price: 12, start_date: change },
    { sku: 'D-PARENT', pricelist: 'BASE', price: 22, start_date: change },
  ],
  vat_rates: [{ tax_area_code: 'SE', vat_class_code: 'reduced', rate: 6, start_date: change }],
}

const skus = ['D-OWN', 'D-PARENT', 'D-SAME', 'D-VAT']

async function realDiff(client: TenantClient, body: Record<string, unknown>): Promise<Record<string, any>> {
  return (await expectStatus(client.call('POST', '/price/diff', body), 200, 'diff')).body
}

async function simulatedDiff(client: TenantClient, writes: Writes, body: Record<string, unknown>): Promise<Answer> {
  return client.call('POST', '/price/simulate', { writes, diff: body })
}

/** Makes the writes for real, through their own routes. */
async function commit(client: TenantClient, writes: Writes): Promise<void> {
  const batch = await expectStatus(client.call('POST', '/price/batch', writes['prices']), 202, 'prices')
  if (batch.body.failed.length > 0) throw new Error(`prices failed: ${batch.text}`)
  for (const rate of writes['vat_rates'] ?? []) await expectStatus(client.call('POST', '/vat/rate', rate), 202, 'rate')
}

/** What a simulation must leave as it was. */
async function observed(client: TenantClient): Promise<unknown[]> {
  const changelog = await expectStatus(client.get('/changelog?limit=1000'), 200, 'changelog')
  const read = await expectStatus(client.get('/price/D-OWN/CHILD/SE'), 200, 'read')
  const stored = await expectStatus(client.get('/price?sku=D-OWN'), 200, 'stored')
  return [changelog.body, read.headers.get('etag'), read.body, stored.body]
}

t.test('proposed changes show with their causes, and committing them diffs the same', async (t) => {
  const client = await freshTenant('sim-diff-causes')
  const body = diffBody({ skus })
  t.same((await realDiff(client, body)).items, [], 'nothing changes between the instants today')
  const before = await observed(client)
  const simulated = await simulatedDiff(client, proposed, body)
  t.equal(simulated.status, 200, simulated.text)
  t.equal(simulated.headers.get('cache-control'), 'no-store')
  t.equal(simulated.headers.get('x-price-engine'), 'worker', 'the page ran on a worker, as a diff page does')
  t.same(await observed(client), before, 'changelog, ETag, reads and stored prices are as they were')
  t.same((await realDiff(client, body)).items, [], 'the real diff is unchanged after the simulation')
  t.same(simulated.body.diff, {
    items: [
      // 10 NET + 25% = 12.50 -> 12 + 3 = 15.00: +20%.
      {
        sku: 'D-OWN',
        from: { pricelist: 'CHILD', net: 10, vat: 2.5, gross: 12.5 },
        to: { pricelist: 'CHILD', net: 12, vat: 3, gross: 15 },
        change_percent: '20.0000',
        causes: ['own_version'],
      },
      // BASE 20 -> 22, inherited by CHILD: 25.00 -> 27.50, +10%.
      {
        sku: 'D-PARENT',
        from: { pricelist: 'CHILD', net: 20, vat: 5, gross: 25 },
        to: { pricelist: 'CHILD', net: 22, vat: 5.5, gross: 27.5 },
        change_percent: '10.0000',
        causes: ['parent_version'],
      },
      // 30 NET: 12% = 33.60 -> 6% = 31.80: -5.357142...% -> -5.3571.
      {
        sku: 'D-VAT',
        from: { pricelist: 'CHILD', net: 30, vat: 3.6, gross: 33.6 },
        to: { pricelist: 'CHILD', net: 30, vat: 1.8, gross: 31.8 },
        change_percent: '-5.3571',
        causes: ['vat_rate'],
      },
    ],
    next_cursor: null,
  })
  await commit(client, proposed)
  t.same(await realDiff(client, body), simulated.body.diff, 'the committed writes diff what the simulation did')
})

t.test('all SKUs of the lists page as the diff route pages them, a proposed new SKU included', async (t) => {
  const client = await freshTenant('sim-diff-pages')
  const writes: Writes = {
    prices: [...(proposed['prices'] ?? []), { sku: 'D-NEW', pricelist: 'CHILD', price: 4, start_date: change }],
    vat_rates: proposed['vat_rates']!,
  }
  const whole = await simulatedDiff(client, writes, diffBody())
  t.equal(whole.status, 200, whole.text)
  t.same(
    whole.body.diff.items.map((item: Record<string, unknown>) => [item['sku'], item['causes']]),
    [
      // No price at from; 4 NET + 25% = 5.00 at to.
      ['D-NEW', ['own_version']],
      ['D-OWN', ['own_version']],
      ['D-PARENT', ['parent_version']],
      ['D-VAT', ['vat_rate']],
    ],
  )
  t.same(whole.body.diff.items[0].from, { reason: 'no_price' }, 'the new SKU has no price at from')
  const seen: unknown[] = []
  let cursor: string | null = null
  let pages = 0
  do {
    const page: Answer = await simulatedDiff(
      client,
      writes,
      diffBody(cursor === null ? { limit: 2 } : { limit: 2, cursor }),
    )
    seen.push(...page.body.diff.items)
    cursor = page.body.diff.next_cursor
    pages++
  } while (cursor !== null && pages < 10)
  t.same(seen, whole.body.diff.items, 'the pages together are the whole diff')
  // 5 SKUs (4 with prices and the proposed one), 2 per page.
  t.equal(pages, 3)
  await commit(client, writes)
  t.same(await realDiff(client, diffBody()), whole.body.diff, 'the committed writes diff the same')
})

t.test('a simulated query runs where the query route runs it, with the same items either way', async (t) => {
  const client = await freshTenant('sim-diff-engines')
  const writes: Writes = {
    prices: [
      { sku: 'D-OWN', pricelist: 'CHILD', price: 12 },
      { sku: 'D-NEW', pricelist: 'CHILD', price: 4 },
    ],
    vat_rates: [{ tax_area_code: 'SE', vat_class_code: 'reduced', rate: 6 }],
  }
  const body = (skus: string[]) => ({
    writes,
    query: { skus, tax_area: 'SE', currency_code: 'EUR', pricelist_filter: { pricelists: ['CHILD'] } },
  })
  const all = ['D-NEW', 'D-OWN', 'D-PARENT', 'D-VAT']
  const worker = await client.call('POST', '/price/simulate', body(all))
  t.same([worker.status, worker.headers.get('x-price-engine')], [200, 'worker'], worker.text)
  // D-NEW: 4 NET + 25% = 5.00 (a SKU the replica has never seen); D-OWN 12 + 3 = 15; D-VAT 30 + 6% = 31.80.
  t.same(
    worker.body.query.items.map((item: Record<string, unknown>) => [item['sku'], item['gross']]),
    [
      ['D-NEW', 5],
      ['D-OWN', 15],
      ['D-PARENT', 25],
      ['D-VAT', 31.8],
    ],
  )
  for (let start = 0; start < all.length; start += 2) {
    const main = await client.call('POST', '/price/simulate', body(all.slice(start, start + 2)))
    t.equal(main.headers.get('x-price-engine'), 'main')
    for (const item of main.body.query.items) {
      const same = worker.body.query.items.find((other: { sku: string }) => other.sku === item.sku)
      t.same(same, item, `${item.sku}: the same from the worker and from the main thread`)
    }
  }
  await commit(client, writes)
  const real = await client.call('POST', '/price/query', body(all).query)
  t.equal(worker.text, `{"query":${real.text}}`, 'the committed writes answer the same bytes')
})

/** The error bodies without what differs per request. */
function errorOf(answer: Answer): Record<string, unknown> {
  const { timestamp: _timestamp, request_id: _requestId, ...rest } = answer.body
  return { status: answer.status, ...rest }
}

t.test("bad diff bodies answer the diff route's error bodies", async (t) => {
  const client = await freshTenant('sim-diff-bad')
  const checked: [string, Record<string, unknown>][] = [
    ['to before from', diffBody({ from: to, to: from })],
    ['skus with a cursor', diffBody({ skus: ['D-OWN'], cursor: 'D-A' })],
    ['an unknown tax area', diffBody({ tax_area: 'XX' })],
    ['a filter that selects nothing', diffBody({ pricelist_filter: { pricelists: ['NONE'] } })],
    ['an unknown rounding profile', diffBody({ rounding_profile: 'NOPE' })],
    ['too many SKUs', diffBody({ skus: Array.from({ length: 2501 }, (_, index) => `X${index}`) })],
  ]
  for (const [name, body] of checked) {
    const real = await client.call('POST', '/price/diff', body)
    const simulated = await simulatedDiff(client, {}, body)
    t.ok(real.status >= 400 && real.status < 500, `${name}: the diff route refuses (${real.status})`)
    t.same(errorOf(simulated), errorOf(real), `${name}: the diff route's error body`)
  }
  // Shapes are checked in the simulate body: the same details, under /diff.
  for (const [name, body] of [
    ['a limit over the maximum', diffBody({ limit: 2501 })],
    ['no from', diffBody({ from: undefined })],
    ['not an instant', diffBody({ from: '2997-13-45T00:00:00Z' })],
  ] as const) {
    const real = await client.call('POST', '/price/diff', body)
    const simulated = await simulatedDiff(client, {}, body)
    const under = real.body.details.map((detail: { path: string }) => ({ ...detail, path: `/diff${detail.path}` }))
    t.same(
      [simulated.status, simulated.body.code, simulated.body.details],
      [real.status, real.body.code, under],
      `${name}: the shape's details, under /diff`,
    )
  }
  const both = await client.call('POST', '/price/simulate', {
    writes: {},
    diff: diffBody(),
    query: { skus: ['D-OWN'], tax_area: 'SE', currency_code: 'EUR', pricelist_filter: { pricelists: ['CHILD'] } },
  })
  t.same([both.status, both.body.code, both.body.message], [400, 'validation_failed', 'only one of query and diff'])
  const neither = await client.call('POST', '/price/simulate', { writes: {} })
  t.same(
    [neither.status, neither.body.code, neither.body.message],
    [400, 'validation_failed', 'a query or a diff is required'],
  )
})

t.test('a refused proposed write answers its error body before the diff runs', async (t) => {
  const client = await freshTenant('sim-diff-refused')
  const rate = { tax_area_code: 'SE', vat_class_code: 'nothing', rate: 5 }
  const simulated = await simulatedDiff(client, { vat_rates: [rate] }, diffBody())
  const real = await client.call('POST', '/vat/rate', rate)
  t.ok(real.status >= 400 && real.status < 500, `the real write refuses (${real.status})`)
  const { write, ...rest } = errorOf(simulated)
  t.same(rest, errorOf(real), "the real write's error body")
  t.equal(write, '/writes/vat_rates/0')
})

t.test('the rate limit counts the page as the diff route does, plus the writes', async (t) => {
  const client = await freshTenant('sim-diff-cost', { query_rate: 1, query_burst: 1000 })
  const first = await simulatedDiff(client, {}, diffBody({ skus: ['D-OWN'] }))
  t.equal(first.status, 200, first.text)
  const second = await simulatedDiff(client, proposed, diffBody({ limit: 300 }))
  t.equal(second.status, 200, second.text)
  const drop = Number(first.headers.get('x-ratelimit-remaining')) - Number(second.headers.get('x-ratelimit-remaining'))
  // A page of 300 SKUs and 3 writes; the bucket refills by less than one item meanwhile.
  t.ok(drop >= 302 && drop <= 303, `303 items taken (dropped by ${drop})`)
  const third = await simulatedDiff(client, proposed, diffBody({ skus: ['D-OWN', 'D-VAT'] }))
  const explicit =
    Number(second.headers.get('x-ratelimit-remaining')) - Number(third.headers.get('x-ratelimit-remaining'))
  t.ok(explicit >= 4 && explicit <= 5, `an explicit set costs its SKUs plus the writes (dropped by ${explicit})`)
  const refused = await simulatedDiff(client, {}, diffBody({ limit: 1000 }))
  t.equal(refused.status, 429, 'a page beyond the bucket is refused')
})

t.test('the OpenAPI document has the diff in the simulate body and answer', async (t) => {
  const answer = await server.request('GET', '/openapi.json')
  const key = Object.keys(answer.body.paths).find((path) => path.endsWith('/price/simulate'))
  const operation = answer.body.paths[key ?? '']?.post
  const request = operation?.requestBody?.content?.['application/json']?.schema
  t.ok(request?.properties?.diff?.properties?.from, 'the body has the diff with its from')
  t.same(request?.required, ['writes'], 'query and diff are each optional (exactly one is checked)')
  const response = operation?.responses?.['200']?.content?.['application/json']?.schema
  t.ok(response?.properties?.diff?.properties?.next_cursor, 'the answer has the diff page')
})
