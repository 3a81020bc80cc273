/**
 * POST /price/simulate against the real server: each family of proposed writes (a price, a
 * pricelist with a rule and a parent, a VAT rate, a mapping, an FX rate) changes the query's answer
 * as the committed write then does, and before the commit every read is as it was; a simulation
 * stores nothing (changelog, ETags, reads unchanged); a refused write answers the real write's
 * error body; the bound on writes and bad shapes answer 400. Amounts are worked out by hand beside
 * each expectation (NET lists in SE: standard 25%, reduced 12%, the test's class `sim` 10%).
 */
import t, { type Test } from 'tap'
import { expectStatus, mapSkus, putPrice, putPricelist, query } from '../../helpers/price-fixtures.js'
import type { Answer, TenantClient } from '../../helpers/server.js'
import { suiteServer } from '../../helpers/suite.js'

const {
  tenants: { acme, small },
} = await suiteServer({
  tenants: {
    acme: {
      reference: true,
      // A slow refill, so that the rate-limit test sees each request's cost.
      limits: { query_rate: 1 },
      pricelists: {
        BASE: { currency_code: 'EUR', vat_mode: 'NET' },
        OTHER: { currency_code: 'EUR', vat_mode: 'NET' },
      },
    },
    small: { reference: true, limits: { prices: 1 }, pricelists: { BASE: { currency_code: 'EUR', vat_mode: 'NET' } } },
  },
})

await expectStatus(acme.call('PUT', '/vat/class/sim', { name: 'sim' }), 202, 'VAT class sim')
await expectStatus(
  acme.call('POST', '/vat/rate', { tax_area_code: 'SE', vat_class_code: 'sim', rate: 10 }),
  202,
  'VAT rate SE/sim',
)

type Writes = Record<string, unknown[]>

/** The query's answer as the plain route gives it. */
async function plain(client: TenantClient, body: Record<string, unknown>): Promise<Record<string, any>> {
  return (await expectStatus(client.call('POST', '/price/query', body), 200, 'query')).body
}

async function simulate(client: TenantClient, writes: Writes, body: Record<string, unknown>): Promise<Answer> {
  return client.call('POST', '/price/simulate', { writes, query: body })
}

/** Makes the writes for real, through their own routes, in the simulation's order. */
async function commit(client: TenantClient, writes: Writes): Promise<void> {
  for (const pricelist of writes['pricelists'] ?? []) {
    const { code, ...body } = pricelist as Record<string, unknown>
    await putPricelist(client, code as string, body)
  }
  if (writes['prices'] !== undefined) {
    const answer = await expectStatus(client.call('POST', '/price/batch', writes['prices']), 202, 'prices')
    if (answer.body.failed.length > 0) throw new Error(`prices failed: ${answer.text}`)
  }
  for (const rate of writes['vat_rates'] ?? []) await expectStatus(client.call('POST', '/vat/rate', rate), 202, 'rate')
  for (const mapping of writes['mappings'] ?? []) {
    await expectStatus(client.call('POST', '/article-taxclass', mapping), 202, 'mapping')
  }
  for (const day of writes['fx_rates'] ?? []) await expectStatus(client.call('POST', '/fx/daily', day), 202, 'fx')
}

/**
 * Simulates `writes`, checks that the plain query still answers as before, commits them and checks
 * that the plain query now answers what the simulation did; answers the simulated items.
 */
async function simulateThenCommit(
  t: Test,
  writes: Writes,
  body: Record<string, unknown>,
): Promise<Record<string, any>[]> {
  const before = await plain(acme, body)
  const simulated = await simulate(acme, writes, body)
  t.equal(simulated.status, 200, simulated.text)
  t.notSame(simulated.body.query, before, 'the simulation answers something else than today')
  t.same(await plain(acme, body), before, 'nothing changed before the commit')
  await commit(acme, writes)
  t.same(await plain(acme, body), simulated.body.query, 'the committed writes answer what the simulation did')
  return simulated.body.query.items
}

function amounts(item: Record<string, any>): unknown[] {
  return [item['pricelist'], item['net'], item['vat'], item['gross']]
}

t.test('a price change', async (t) => {
  await mapSkus(acme, 'standard', ['P-1'])
  await putPrice(acme, 'P-1', 'BASE', { price: 100 })
  const writes = { prices: [{ sku: 'P-1', pricelist: 'BASE', price: 80 }] }
  const items = await simulateThenCommit(t, writes, query(['P-1'], ['BASE']))
  // 80 NET + 25% = 100.
  t.same(amounts(items[0]!), ['BASE', 80, 20, 100])
})

t.test('a price on a SKU and a pricelist the book has never seen', async (t) => {
  await mapSkus(acme, 'standard', ['P-NEW'])
  const writes = {
    pricelists: [{ code: 'FRESH', currency_code: 'EUR', vat_mode: 'NET' }],
    prices: [{ sku: 'P-NEW', pricelist: 'FRESH', price: 8, quantity_breaks: [{ quantity_break: 10, fixed_price: 6 }] }],
  }
  const items = await simulateThenCommit(t, writes, query(['P-NEW'], ['BASE', 'FRESH'], { quantity: 10 }))
  // Quantity 10 takes the break: 6 NET + 25% = 7.50.
  t.same(amounts(items[0]!), ['FRESH', 6, 1.5, 7.5])
})

t.test('a pricelist with a rule and a parent two levels up', async (t) => {
  await mapSkus(acme, 'standard', ['R-1'])
  await putPrice(acme, 'R-1', 'BASE', { price: 40 })
  const writes = {
    pricelists: [
      { code: 'MIDDLE', currency_code: 'EUR', parent_code: 'BASE' },
      {
        code: 'PROMO',
        currency_code: 'EUR',
        parent_code: 'MIDDLE',
        price_rules: [{ code: 'half', filter: 'article.sku == "R-1"', expression: 'sales * 0.5' }],
      },
    ],
  }
  await putPricelist(acme, 'PROMO', { currency_code: 'EUR', vat_mode: 'NET' })
  const items = await simulateThenCommit(t, writes, query(['R-1'], ['PROMO']))
  // BASE 40, inherited through MIDDLE, halved by PROMO's rule: 20 NET + 25% = 25.
  t.same([...amounts(items[0]!), items[0]!['inherited']], ['PROMO', 20, 5, 25, true])
})

t.test('a VAT rate', async (t) => {
  await mapSkus(acme, 'sim', ['V-1'])
  await putPrice(acme, 'V-1', 'BASE', { price: 100 })
  const writes = { vat_rates: [{ tax_area_code: 'SE', vat_class_code: 'sim', rate: '15.5' }] }
  const items = await simulateThenCommit(t, writes, query(['V-1'], ['BASE']))
  // 100 NET + 15.5% = 115.50.
  t.same([...amounts(items[0]!), items[0]!['vat_rate']], ['BASE', 100, 15.5, 115.5, 15.5])
})

t.test('a mapping', async (t) => {
  await mapSkus(acme, 'standard', ['M-1'])
  await putPrice(acme, 'M-1', 'BASE', { price: 50 })
  const writes = { mappings: [{ sku_code: 'M-1', tax_area_code: 'SE', vat_class_code: 'reduced' }] }
  const items = await simulateThenCommit(t, writes, query(['M-1'], ['BASE']))
  // 50 NET + 12% = 56.
  t.same([...amounts(items[0]!), items[0]!['vat_class']], ['BASE', 50, 6, 56, 'reduced'])
})

t.test('an FX rate', async (t) => {
  await mapSkus(acme, 'standard', ['F-1'])
  await putPrice(acme, 'F-1', 'BASE', { price: 100 })
  const writes = { fx_rates: [{ date: '2025-06-02', rates: { SEK: '10.5' } }] }
  const items = await simulateThenCommit(t, writes, query(['F-1'], ['BASE'], { currency_code: 'SEK' }))
  // 100 EUR at 10.5 = 1050 SEK NET + 25% = 1312.50.
  t.same(
    [...amounts(items[0]!), items[0]!['fx'].rate, items[0]!['fx'].as_of],
    ['BASE', 1050, 262.5, 1312.5, 10.5, '2025-06-02T00:00:00Z'],
  )
})

/** What a simulation must leave as it was: the changelog, a read's ETag and body, the stored prices. */
async function observed(client: TenantClient): Promise<unknown[]> {
  const changelog = await expectStatus(client.get('/changelog?limit=1000'), 200, 'changelog')
  const read = await expectStatus(client.get('/price/S-1/BASE/SE'), 200, 'read')
  const stored = await expectStatus(client.get('/price?sku=S-1'), 200, 'stored')
  const rate = await expectStatus(client.get('/vat/rate?tax_area=SE&vat_class=standard'), 200, 'rate')
  const pricelists = await expectStatus(client.get('/pricelist'), 200, 'pricelists')
  return [changelog.body, read.headers.get('etag'), read.body, stored.body, rate.body, pricelists.body]
}

t.test('a simulation stores nothing, and committing its writes answers what it did', async (t) => {
  await mapSkus(acme, 'standard', ['S-1', 'S-2'])
  await putPrice(acme, 'S-1', 'BASE', { price: 10 })
  await putPrice(acme, 'S-2', 'OTHER', { price: 30 })
  const writes = {
    pricelists: [
      { code: 'ALL-IN', currency_code: 'EUR', parent_code: 'BASE', price_rules: [{ expression: 'sales + 1' }] },
    ],
    prices: [
      { sku: 'S-1', pricelist: 'BASE', price: 12 },
      { sku: 'S-2', pricelist: 'ALL-IN', price: 20 },
    ],
    vat_rates: [{ tax_area_code: 'SE', vat_class_code: 'standard', rate: 20 }],
    mappings: [{ sku_code: 'S-2', tax_area_code: 'SE', vat_class_code: 'reduced' }],
    fx_rates: [{ date: '2025-07-01', rates: { SEK: '11', JPY: '150' } }],
  }
  const body = query(['S-1', 'S-2'], ['ALL-IN', 'OTHER'], { currency_code: 'SEK' })
  const before = await observed(acme)
  const head = (before[0] as { items: unknown[] }).items.length
  const simulated = await simulate(acme, writes, body)
  t.equal(simulated.status, 200, simulated.text)
  t.equal(simulated.headers.get('cache-control'), 'no-store')
  t.same(await observed(acme), before, 'changelog, ETag, reads and stored records are as they were')
  // S-1: BASE 12 + 1 by ALL-IN's rule = 13 EUR x 11 = 143 SEK NET, +20% = 171.60.
  // S-2: ALL-IN 20 + 1 = 21 x 11 = 231 SEK, +12% = 258.72; OTHER 30 x 11 = 330: ALL-IN wins.
  t.same(
    simulated.body.query.items.map((item: Record<string, any>) => [item['sku'], ...amounts(item)]),
    [
      ['S-1', 'ALL-IN', 143, 28.6, 171.6],
      ['S-2', 'ALL-IN', 231, 27.72, 258.72],
    ],
  )
  await commit(acme, writes)
  t.same(await plain(acme, body), simulated.body.query, 'the committed writes answer the same')
  const after = await expectStatus(acme.get('/changelog?limit=1000'), 200, 'changelog')
  t.ok(after.body.items.length > head, 'the commit, not the simulation, wrote the changelog')
})

/** The error bodies without what differs per request. */
function errorOf(answer: Answer): Record<string, unknown> {
  const { timestamp: _timestamp, request_id: _requestId, write: _write, ...rest } = answer.body
  return { status: answer.status, ...rest }
}

t.test('a write the real route refuses answers its error body, naming the write', async (t) => {
  const body = query(['P-1'], ['BASE'])
  const cases: [string, Writes, () => Promise<Answer>][] = [
    [
      '/writes/prices/1',
      {
        prices: [
          { sku: 'P-1', pricelist: 'BASE', price: 1 },
          { sku: 'P-1', pricelist: 'BASE', price: 'lots' },
        ],
      },
      () => acme.call('PUT', '/price/P-1/BASE', { price: 'lots' }),
    ],
    [
      '/writes/prices/0',
      { prices: [{ sku: 'P-1', pricelist: 'BASE', price: true }] },
      () => acme.call('PUT', '/price/P-1/BASE', { sku: 'P-1', pricelist: 'BASE', price: true }),
    ],
    [
      '/writes/pricelists/0',
      { pricelists: [{ code: 'LOOP', currency_code: 'EUR', parent_code: 'NOWHERE' }] },
      () => acme.call('PUT', '/pricelist/LOOP', { currency_code: 'EUR', parent_code: 'NOWHERE' }),
    ],
    [
      '/writes/pricelists/0',
      {
        pricelists: [
          { code: 'BAD-RULE', currency_code: 'EUR', vat_mode: 'NET', price_rules: [{ expression: 'sales *' }] },
        ],
      },
      () =>
        acme.call('PUT', '/pricelist/BAD-RULE', {
          currency_code: 'EUR',
          vat_mode: 'NET',
          price_rules: [{ expression: 'sales *' }],
        }),
    ],
    [
      '/writes/vat_rates/0',
      { vat_rates: [{ tax_area_code: 'SE', vat_class_code: 'nothing', rate: 5 }] },
      () => acme.call('POST', '/vat/rate', { tax_area_code: 'SE', vat_class_code: 'nothing', rate: 5 }),
    ],
    [
      '/writes/mappings/0',
      { mappings: [{ sku_code: 'P-1', tax_area_code: 'SE' }] },
      () => acme.call('POST', '/article-taxclass', { sku_code: 'P-1', tax_area_code: 'SE' }),
    ],
    [
      '/writes/fx_rates/0',
      { fx_rates: [{ date: '2025-01-01', rates: { SEK: -1 } }] },
      () => acme.call('POST', '/fx/daily', { date: '2025-01-01', rates: { SEK: -1 } }),
    ],
  ]
  for (const [pointer, writes, real] of cases) {
    const simulated = await simulate(acme, writes, body)
    const refused = await real()
    t.ok(refused.status >= 400 && refused.status < 500, `the real write refuses (${refused.status})`)
    t.same(errorOf(simulated), errorOf(refused), `the real write's error body (${pointer})`)
    t.equal(simulated.body.write, pointer, 'the refused write is named')
  }
})

t.test("the plan's quota refuses a proposed price as it refuses the real one", async (t) => {
  await mapSkus(small, 'standard', ['Q-1'])
  await putPrice(small, 'Q-1', 'BASE', { price: 1 })
  const body = query(['Q-1'], ['BASE'])
  const changed = await simulate(small, { prices: [{ sku: 'Q-1', pricelist: 'BASE', price: 2 }] }, body)
  t.equal(changed.body.query.items[0].net, 2, 'a change of a live pair passes the quota of one price')
  const writes = {
    prices: [
      { sku: 'Q-1', pricelist: 'BASE', price: 2 },
      { sku: 'Q-2', pricelist: 'BASE', price: 2 },
    ],
  }
  const simulated = await simulate(small, writes, body)
  const refused = await small.call('PUT', '/price/Q-2/BASE', { price: 2 })
  t.same([simulated.status, simulated.body.code, simulated.body.write], [422, 'quota_exceeded', '/writes/prices/1'])
  t.same(errorOf(simulated), errorOf(refused), "the real write's error body")
})

t.test('the bound on writes and bad bodies answer 400', async (t) => {
  const body = query(['P-1'], ['BASE'])
  const prices = Array.from({ length: 1_001 }, (_, index) => ({ sku: `B-${index}`, pricelist: 'BASE', price: 1 }))
  const over = await simulate(acme, { prices }, body)
  t.equal(over.status, 400)
  t.same(over.body.details, [{ path: '/writes', message: 'at most 1000 writes in all, got 1001' }])
  const rates = Object.fromEntries(['SEK', 'JPY', 'USD', 'GBP'].map((code) => [code, 2]))
  const fxOver = await simulate(acme, { prices: prices.slice(0, 997), fx_rates: [{ date: '2025-01-01', rates }] }, body)
  t.same(fxOver.body.details, [{ path: '/writes', message: 'at most 1000 writes in all, got 1001' }], 'rates count')
  const atBound = await simulate(acme, { prices: prices.slice(0, 1_000) }, body)
  t.equal(atBound.status, 200, 'the bound itself is accepted')
  const unknownFamily = await simulate(acme, { articles: [] }, body)
  t.equal(unknownFamily.status, 400)
  t.equal(unknownFamily.body.code, 'validation_failed')
  const noQuery = await acme.call('POST', '/price/simulate', { writes: {} })
  t.equal(noQuery.status, 400)
  const emptySkus = await simulate(acme, {}, query([], ['BASE']))
  t.same(
    [emptySkus.status, emptySkus.body.message],
    [400, 'skus must not be empty'],
    'the query is checked as the query route does',
  )
})

t.test('the rate limit counts writes and SKUs', async (t) => {
  const body = query(['P-1', 'P-2'], ['BASE'])
  const answer = await simulate(acme, { prices: [{ sku: 'P-1', pricelist: 'BASE', price: 3 }] }, body)
  const before = Number(answer.headers.get('x-ratelimit-remaining'))
  const next = await simulate(acme, { prices: [{ sku: 'P-1', pricelist: 'BASE', price: 3 }] }, body)
  const after = Number(next.headers.get('x-ratelimit-remaining'))
  // 1 write + 2 SKUs = 3 items; the bucket refills meanwhile, by less than one item.
  t.ok(before - after >= 2 && before - after <= 3, `3 items taken (${before} -> ${after})`)
})
