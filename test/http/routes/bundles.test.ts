/**
 * Bundle pricing rules against the real server: get, set and remove (falling back to the parent's
 * rule), SUM_OF_PARTS with PERCENTAGE and ABSOLUTE discounts, FIXED, VAT by the bundle's own class,
 * GROSS pricelists, a missing component, children that inherit the parent's rule and apply it to
 * their own component prices, validation and the changelog.
 */
import t from 'tap'
import { expectStatus, mapSkus, putPrice, putPricelist, query, setupReference } from '../../helpers/price-fixtures.js'
import { startServer, type TenantClient, type TestServer } from '../../helpers/server.js'

let server: TestServer
let acme: TenantClient

t.before(async () => {
  server = await startServer()
  acme = await server.tenant('acme')
  await setupReference(acme)
  await putPricelist(acme, 'B-NET', { currency_code: 'EUR', vat_mode: 'NET' })
  await putPricelist(acme, 'B-KID', { currency_code: 'EUR', parent_code: 'B-NET' })
  await putPricelist(acme, 'B-GROSS', { currency_code: 'EUR', vat_mode: 'GROSS' })
  await putPricelist(acme, 'B-SEK', { currency_code: 'SEK', vat_mode: 'GROSS', parent_code: 'B-NET' })
  // Components in the standard class (SE 25%), bundles in the reduced class (SE 12%).
  await mapSkus(acme, 'standard', ['C1', 'C2', 'C3'])
  await mapSkus(acme, 'reduced', ['BUN', 'BUN-ABS', 'BUN-FIX', 'BUN-MISS', 'BUN-G'])
  await putPrice(acme, 'C1', 'B-NET', { price: 10 })
  await putPrice(acme, 'C2', 'B-NET', { price: 5.5 })
})
t.teardown(async () => server.dispose())

type Item = Record<string, any>

async function putRule(
  client: TenantClient,
  sku: string,
  pricelist: string,
  body: Record<string, unknown>,
): Promise<void> {
  await expectStatus(client.call('PUT', `/bundle/${sku}/${pricelist}`, body), 202, `bundle ${sku}/${pricelist}`)
}

/** The single item of a query, or the unavailable reason. */
async function priced(
  client: TenantClient,
  sku: string,
  pricelist: string,
  extra: Record<string, unknown> = {},
): Promise<Item | string> {
  const answer = await client.call('POST', '/price/query', query([sku], [pricelist], extra))
  if (answer.status !== 200) throw new Error(`query: ${answer.status} ${answer.text}`)
  return answer.body.items[0] ?? answer.body.unavailable[0].reason
}

const parts = [
  { sku: 'C1', quantity: 2 },
  { sku: 'C2', quantity: 1 },
]

t.test('a rule reads back with its fields; a pricelist without its own rule shows the inherited one', async (t) => {
  await putRule(acme, 'BUN', 'B-NET', {
    method: 'SUM_OF_PARTS',
    discount_type: 'PERCENTAGE',
    discount_value: 10,
    components: parts,
  })
  const own = await acme.get('/bundle/BUN/B-NET')
  t.equal(own.status, 200)
  t.same(own.body, {
    bundle_sku: 'BUN',
    pricelist: 'B-NET',
    method: 'SUM_OF_PARTS',
    discount_type: 'PERCENTAGE',
    discount_value: 10,
    fixed_price: null,
    components: parts,
    inherited: false,
    source_pricelist: 'B-NET',
    updated_at: own.body.updated_at,
    updated_by: acme.clientId,
  })
  const inherited = await acme.get('/bundle/BUN/B-KID')
  t.same(
    [inherited.body.pricelist, inherited.body.inherited, inherited.body.source_pricelist, inherited.body.method],
    ['B-KID', true, 'B-NET', 'SUM_OF_PARTS'],
  )
  t.equal((await acme.get('/bundle/BUN/B-GROSS')).status, 404, 'an unrelated pricelist has no rule')
  t.equal((await acme.get('/bundle/NOBUNDLE/B-NET')).status, 404)
  // GET-edit-PUT: the read answer is accepted as a body.
  t.equal((await acme.call('PUT', '/bundle/BUN/B-NET', { ...own.body })).status, 202)
})

t.test(
  'SUM_OF_PARTS sums component prices times quantity, then takes the PERCENTAGE discount; VAT uses the bundle class',
  async (t) => {
    // (2 x 10 + 5.5) = 25.50, 10% off = 22.95; reduced 12%: 2.754 -> 2.75; gross 25.70.
    const item = (await priced(acme, 'BUN', 'B-NET')) as Item
    t.same(
      [item.net, item.vat, item.gross, item.vat_class, item.vat_rate, item.pricelist],
      [22.95, 2.75, 25.7, 'reduced', 12, 'B-NET'],
    )
    // DE reduced 7%: 22.95 x 0.07 = 1.6065 -> 1.61.
    const germany = (await priced(acme, 'BUN', 'B-NET', { tax_area: 'DE' })) as Item
    t.same([germany.vat, germany.gross], [1.61, 24.56])
    // A bundle SKU has no price of its own anywhere, yet the pricelist prices it.
    const listed = await acme.get('/price/skus-for-pricelist/B-NET?limit=500')
    t.same(listed.body.items, ['BUN', 'C1', 'C2'])
    t.same(
      (await acme.get('/price/pricelists-for-sku/BUN')).body.items.map((item: Item) => item.pricelist.code),
      ['B-KID', 'B-NET', 'B-SEK'],
    )
    const raw = await acme.get('/price/BUN/B-NET')
    t.same([raw.body.price.sales, raw.body.inherited, raw.body.start_date], [22.95, false, null])
    // A component price change shows at once.
    await putPrice(acme, 'C2', 'B-NET', { price: 6.5 })
    t.equal(((await priced(acme, 'BUN', 'B-NET')) as Item).net, 23.85, '(20 + 6.5) x 0.9')
    await putPrice(acme, 'C2', 'B-NET', { price: 5.5 })
  },
)

t.test('an ABSOLUTE discount takes an amount off the sum; FIXED answers its fixed price', async (t) => {
  await putRule(acme, 'BUN-ABS', 'B-NET', {
    method: 'SUM_OF_PARTS',
    discount_type: 'ABSOLUTE',
    discount_value: '3.00',
    components: parts,
  })
  // 25.50 - 3 = 22.50; VAT 2.70; gross 25.20.
  const absolute = (await priced(acme, 'BUN-ABS', 'B-NET')) as Item
  t.same([absolute.net, absolute.vat, absolute.gross], [22.5, 2.7, 25.2])
  await putRule(acme, 'BUN-FIX', 'B-NET', { method: 'FIXED', fixed_price: 19.99 })
  // 19.99 x 0.12 = 2.3988 -> 2.40; gross 22.39.
  const fixed = (await priced(acme, 'BUN-FIX', 'B-NET')) as Item
  t.same([fixed.net, fixed.vat, fixed.gross], [19.99, 2.4, 22.39])
  // Without a discount the sum is the price.
  await putRule(acme, 'BUN-ABS', 'B-NET', { method: 'SUM_OF_PARTS', components: [{ sku: 'C1', quantity: 1.5 }] })
  t.equal(((await priced(acme, 'BUN-ABS', 'B-NET')) as Item).net, 15, '1.5 x 10')
})

t.test('a bundle with a component without a price is unavailable with bundle_component_missing', async (t) => {
  await putRule(acme, 'BUN-MISS', 'B-NET', {
    method: 'SUM_OF_PARTS',
    components: [
      { sku: 'C1', quantity: 1 },
      { sku: 'C3', quantity: 1 },
    ],
  })
  t.equal(await priced(acme, 'BUN-MISS', 'B-NET'), 'bundle_component_missing')
  const taxed = await acme.get('/price/BUN-MISS/B-NET/SE')
  t.equal(taxed.status, 404)
  t.equal(taxed.body.reason, 'bundle_component_missing')
  await putPrice(acme, 'C3', 'B-NET', { price: 1 })
  t.equal(((await priced(acme, 'BUN-MISS', 'B-NET')) as Item).net, 11)
  await expectStatus(acme.call('DELETE', '/price/C3/B-NET'), 202, 'delete')
  t.equal(await priced(acme, 'BUN-MISS', 'B-NET'), 'bundle_component_missing')
})

t.test("a child without its own rule applies the parent's rule to its own component prices", async (t) => {
  await putPrice(acme, 'C1', 'B-KID', { price: 8 })
  // (2 x 8 + 5.5 inherited) = 21.50, 10% off = 19.35.
  const kid = (await priced(acme, 'BUN', 'B-KID')) as Item
  t.same([kid.net, kid.pricelist], [19.35, 'B-KID'])
  t.equal(((await priced(acme, 'BUN', 'B-NET')) as Item).net, 22.95, 'the parent keeps its own components')
  // A GROSS SEK child: components are converted (FX, then VAT of their own class) and summed gross,
  // then the bundle's VAT is taken out with the bundle's class.
  // C1: 10 x 11.4321 = 114.321 + 28.58 = 142.901; C2: 5.5 x 11.4321 = 62.87655 -> 62.8766 + 15.72 = 78.5966.
  // Sum 2 x 142.901 + 78.5966 = 364.3986; 10% off: 36.43986 -> 36.4399; 327.9587 gross;
  // VAT 12%: 327.9587 x 12 / 112 = 35.1384... -> 35.14; net 292.8187.
  const sek = (await priced(acme, 'BUN', 'B-SEK', { currency_code: 'SEK' })) as Item
  t.same([sek.gross, sek.vat, sek.net, sek.vat_mode], [327.9587, 35.14, 292.8187, 'GROSS'])
})

t.test(
  "removing a child's own rule falls back to the parent's; removing the last rule leaves the bundle without a price",
  async (t) => {
    await putRule(acme, 'BUN', 'B-KID', { method: 'FIXED', fixed_price: 12 })
    t.equal(((await priced(acme, 'BUN', 'B-KID')) as Item).net, 12)
    t.equal((await acme.get('/bundle/BUN/B-KID')).body.inherited, false)
    const removed = await acme.call('DELETE', '/bundle/BUN/B-KID')
    t.equal(removed.status, 202)
    t.equal(
      ((await priced(acme, 'BUN', 'B-KID')) as Item).net,
      19.35,
      "the parent's rule on the child's components again",
    )
    t.equal((await acme.get('/bundle/BUN/B-KID')).body.source_pricelist, 'B-NET')
    t.equal((await acme.call('DELETE', '/bundle/BUN/B-KID')).status, 404, 'no own rule left to remove')
    await putRule(acme, 'BUN-TMP', 'B-NET', { method: 'FIXED', fixed_price: 1 })
    await mapSkus(acme, 'reduced', ['BUN-TMP'])
    t.equal((await acme.call('DELETE', '/bundle/BUN-TMP/B-NET')).status, 202)
    t.equal(await priced(acme, 'BUN-TMP', 'B-NET'), 'no_price')
    t.equal((await acme.get('/bundle/BUN-TMP/B-NET')).status, 404)
    // A scheduled removal keeps the rule until then.
    await putRule(acme, 'BUN-TMP', 'B-NET', { method: 'FIXED', fixed_price: 2 })
    t.equal((await acme.call('DELETE', '/bundle/BUN-TMP/B-NET?when=2999-01-01')).status, 202)
    t.equal(((await priced(acme, 'BUN-TMP', 'B-NET')) as Item).net, 2)
    t.equal(await priced(acme, 'BUN-TMP', 'B-NET', { as_of: '2999-06-01T00:00:00Z' }), 'no_price')
  },
)

t.test(
  'on a GROSS pricelist components are summed VAT-inclusive and the VAT comes out with the bundle class',
  async (t) => {
    await putPrice(acme, 'C1', 'B-GROSS', { price: 12.5 })
    await putPrice(acme, 'C2', 'B-GROSS', { price: 6.25 })
    await putRule(acme, 'BUN-G', 'B-GROSS', {
      method: 'SUM_OF_PARTS',
      discount_type: 'PERCENTAGE',
      discount_value: 10,
      components: parts,
    })
    // (2 x 12.5 + 6.25) = 31.25 gross, 10% off = 28.125; VAT 12%: 28.125 x 12 / 112 = 3.0134 -> 3.01; net 25.115.
    const item = (await priced(acme, 'BUN-G', 'B-GROSS')) as Item
    t.same([item.gross, item.vat, item.net, item.vat_mode], [28.125, 3.01, 25.115, 'GROSS'])
  },
)

t.test('an own price of the bundle SKU on a pricelist wins over a rule', async (t) => {
  await putPrice(acme, 'BUN-FIX', 'B-NET', { price: 18 })
  t.equal(((await priced(acme, 'BUN-FIX', 'B-NET')) as Item).net, 18)
  await expectStatus(acme.call('DELETE', '/price/BUN-FIX/B-NET'), 202, 'delete')
  t.equal(((await priced(acme, 'BUN-FIX', 'B-NET')) as Item).net, 19.99)
})

t.test('an inherited FIXED rule is converted like an inherited price', async (t) => {
  // 19.99 EUR x 11.4321 = 228.527679 -> 228.5277 SEK net; VAT 12% 27.423324 -> 27.42; gross 255.9477.
  const item = (await priced(acme, 'BUN-FIX', 'B-SEK', { currency_code: 'SEK' })) as Item
  t.same([item.gross, item.vat_mode], [255.9477, 'GROSS'])
  // Answer VAT: 255.9477 x 12 / 112 = 27.4229... -> 27.42; net 228.5277.
  t.same([item.net, item.vat], [228.5277, 27.42])
})

t.test('the nearest definition wins: an own price below a rule is inherited, not replaced by the rule', async (t) => {
  await putPricelist(acme, 'B-OWN', { currency_code: 'EUR', parent_code: 'B-NET' })
  await putPricelist(acme, 'B-OWN-KID', { currency_code: 'EUR', parent_code: 'B-OWN' })
  await putPrice(acme, 'BUN', 'B-OWN', { price: 15 })
  t.equal(((await priced(acme, 'BUN', 'B-OWN')) as Item).net, 15)
  const kid = (await priced(acme, 'BUN', 'B-OWN-KID')) as Item
  t.same([kid.net, kid.inherited], [15, true], "the parent's own price, not the grandparent's rule")
  // A rule on the child itself is nearer than the parent's own price.
  await putRule(acme, 'BUN', 'B-OWN-KID', { method: 'FIXED', fixed_price: 14 })
  t.equal(((await priced(acme, 'BUN', 'B-OWN-KID')) as Item).net, 14)
})

t.test('bundles may contain bundles; a cycle of bundles is unavailable, not an error', async (t) => {
  await mapSkus(acme, 'reduced', ['NEST', 'CYC-A', 'CYC-B'])
  await putRule(acme, 'NEST', 'B-NET', {
    method: 'SUM_OF_PARTS',
    components: [
      { sku: 'BUN', quantity: 1 },
      { sku: 'C2', quantity: 1 },
    ],
  })
  // BUN = 22.95 on B-NET; + 5.50 = 28.45.
  t.equal(((await priced(acme, 'NEST', 'B-NET')) as Item).net, 28.45)
  await putRule(acme, 'CYC-A', 'B-NET', { method: 'SUM_OF_PARTS', components: [{ sku: 'CYC-B', quantity: 1 }] })
  await putRule(acme, 'CYC-B', 'B-NET', {
    method: 'SUM_OF_PARTS',
    components: [
      { sku: 'C1', quantity: 1 },
      { sku: 'CYC-A', quantity: 1 },
    ],
  })
  const answer = await acme.call('POST', '/price/query', query(['CYC-A', 'CYC-B', 'C1'], ['B-NET', 'B-KID']))
  t.equal(answer.status, 200)
  t.same(answer.body.unavailable, [
    { sku: 'CYC-A', reason: 'bundle_component_missing' },
    { sku: 'CYC-B', reason: 'bundle_component_missing' },
  ])
  t.same(
    answer.body.items.map((item: Item) => item.sku),
    ['C1'],
  )
  t.equal((await acme.get('/price/CYC-A/B-NET/SE')).status, 404)
})

t.test(
  "a bundle's price goes through the pricelist's rules like any price; a filter can leave bundles out",
  async (t) => {
    await putPricelist(acme, 'B-HALF', {
      currency_code: 'EUR',
      parent_code: 'B-NET',
      price_rules: [{ expression: 'sales * 0.5' }],
    })
    await putPricelist(acme, 'B-HALF-PARTS', {
      currency_code: 'EUR',
      parent_code: 'B-NET',
      price_rules: [{ filter: 'article.type != "bundle"', expression: 'sales * 0.5' }],
    })
    await expectStatus(acme.call('PUT', '/article/BUN', { name: 'Bundle', type: 'bundle' }), 202, 'article')
    // Components halved: 2 x 5 + 2.75 = 12.75, 10% off = 11.475; the rule then halves the bundle too: 5.7375.
    t.equal(((await priced(acme, 'BUN', 'B-HALF')) as Item).net, 5.7375)
    t.equal(((await priced(acme, 'BUN', 'B-HALF-PARTS')) as Item).net, 11.475)
  },
)

t.test('invalid rules are refused with 400 and store nothing', async (t) => {
  const cases: [string, Record<string, unknown>][] = [
    ['no components', { method: 'SUM_OF_PARTS', components: [] }],
    ['FIXED without price', { method: 'FIXED' }],
    ['unknown method', { method: 'CHEAPEST', components: parts }],
    ['discount without type', { method: 'SUM_OF_PARTS', discount_value: 5, components: parts }],
    [
      'percentage above 100',
      { method: 'SUM_OF_PARTS', discount_type: 'PERCENTAGE', discount_value: 150, components: parts },
    ],
    ['bad amount', { method: 'FIXED', fixed_price: 'abc' }],
    ['itself as component', { method: 'SUM_OF_PARTS', components: [{ sku: 'BUN-BAD', quantity: 1 }] }],
    ['zero quantity', { method: 'SUM_OF_PARTS', components: [{ sku: 'C1', quantity: 0 }] }],
    ['unknown field', { method: 'FIXED', fixed_price: 1, colour: 'red' }],
  ]
  for (const [name, body] of cases) {
    const answer = await acme.call('PUT', '/bundle/BUN-BAD/B-NET', body)
    t.equal(answer.status, 400, name)
    t.equal(answer.body.code, 'validation_failed', name)
  }
  t.equal((await acme.get('/bundle/BUN-BAD/B-NET')).status, 404)
  t.equal(
    (await acme.call('PUT', '/bundle/BUN-BAD/NOPL', { method: 'FIXED', fixed_price: 1 })).status,
    400,
    'unknown pricelist',
  )
})

t.test('rule changes are recorded in the changelog as bundle_rule with the pricelist as key', async (t) => {
  const shop = await server.tenant('bundle-log')
  await putPricelist(shop, 'PL', { currency_code: 'EUR', vat_mode: 'NET' })
  await putRule(shop, 'B', 'PL', { method: 'FIXED', fixed_price: 1 })
  await putRule(shop, 'B', 'PL', { method: 'FIXED', fixed_price: 1 })
  await putRule(shop, 'B', 'PL', { method: 'FIXED', fixed_price: 2 })
  await expectStatus(shop.call('DELETE', '/bundle/B/PL'), 202, 'delete')
  const log = await shop.get('/changelog?entity_type=bundle_rule')
  t.same(
    log.body.items.map((entry: Item) => [entry.entity_code, entry.composite_key, entry.change_type]),
    [
      ['B', 'PL', 'created'],
      ['B', 'PL', 'updated'],
      ['B', 'PL', 'deleted'],
    ],
  )
})
