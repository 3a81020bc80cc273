/**
 * Price writes and reads against the real server: single and batch writes, exact amounts, start
 * dates and scheduling, remove_future_changes, dedup and ingest.skip.dedup, strict validation,
 * prices for pricelists created later, the price quota, deletes, stored records, history,
 * skus-for-pricelist, pricelists-for-sku, the raw read and the taxed read with its ETag.
 */
import t from 'tap'
import {
  expectStatus,
  mapSkus,
  postFx,
  priceChanges,
  putArticle,
  putPrice,
  putPricelist,
  putSetting,
  setupReference,
} from '../../helpers/price-fixtures.js'
import { startServer, type Answer, type TenantClient, type TestServer } from '../../helpers/server.js'

let server: TestServer
let acme: TenantClient

t.before(async () => {
  server = await startServer()
  acme = await server.tenant('acme')
  await setupReference(acme)
  await putPricelist(acme, 'RETAIL', { currency_code: 'EUR', vat_mode: 'NET' })
  await putPricelist(acme, 'SHOP', { currency_code: 'EUR', vat_mode: 'GROSS' })
})
t.teardown(async () => server.dispose())

const instantPattern = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** The sales amount of the raw read, or the status when there is none. */
async function salesOf(client: TenantClient, sku: string, pricelist: string, asOf?: string): Promise<number | string> {
  const answer = await client.get(
    `/price/${sku}/${pricelist}${asOf === undefined ? '' : `?asOf=${encodeURIComponent(asOf)}`}`,
  )
  return answer.status === 200 ? answer.body.price.sales : `status ${answer.status}`
}

t.test('a single price write stores sales, fields, breaks and metadata, read back by GET /price', async (t) => {
  const before = Date.now()
  const written = await acme.call('PUT', '/price/W-1/RETAIL', {
    price: { sales: 12.5, fields: { cost: 7, list: '15.00' } },
    quantity_breaks: [
      { quantity_break: 50, fixed_price: 9 },
      { quantity_break: 10, percent_of_base: 90 },
    ],
  })
  t.equal(written.status, 202)
  t.equal(written.text, '')
  const stored = await acme.get('/price?sku=W-1&pricelist=RETAIL')
  t.equal(stored.status, 200)
  t.equal(stored.body.total, 1)
  const record = stored.body.items[0]
  t.same(record, {
    sku: 'W-1',
    pricelist: 'RETAIL',
    price: { sales: 12.5, fields: { cost: 7, list: 15 } },
    // Breaks are kept sorted by quantity.
    quantity_breaks: [
      { quantity_break: 10, percent_of_base: 90 },
      { quantity_break: 50, fixed_price: 9 },
    ],
    start_date: record.start_date,
    updated_at: record.updated_at,
    updated_by: acme.clientId,
  })
  t.match(record.start_date, instantPattern)
  t.ok(Date.parse(record.start_date) >= before - 1000, 'an absent start date means now')
})

t.test('a batch write accepts valid items and lists refused ones with sku, pricelist and message', async (t) => {
  const answer = await acme.call('POST', '/price/batch', [
    { sku: 'B-1', pricelist: 'RETAIL', price: '3.10' },
    { sku: 'B-2', pricelist: 'RETAIL', price: { sales: '4' }, start_date: '2001-01-01' },
    { sku: 'B-3', pricelist: 'RETAIL' },
    { sku: 'B-4', pricelist: 'RETAIL', price: 'abc' },
    { sku: 'B-5', pricelist: 'RETAIL', price: 5, colour: 'red' },
    {
      sku: 'B-6',
      pricelist: 'RETAIL',
      price: 5,
      quantity_breaks: [{ quantity_break: 2, fixed_price: 4, percent_of_base: 80 }],
    },
  ])
  t.equal(answer.status, 202)
  t.equal(answer.body.accepted, 2)
  t.same(
    answer.body.failed.map((entry: { sku: string; pricelist: string }) => [entry.sku, entry.pricelist]),
    [
      ['B-3', 'RETAIL'],
      ['B-4', 'RETAIL'],
      ['B-5', 'RETAIL'],
      ['B-6', 'RETAIL'],
    ],
  )
  for (const entry of answer.body.failed) t.type(entry.message, 'string')
  t.equal(await salesOf(acme, 'B-1', 'RETAIL'), 3.1, 'a numeric string is accepted as the sales amount')
  t.equal(await salesOf(acme, 'B-2', 'RETAIL'), 4, 'a numeric string inside the price object is accepted')
  for (const sku of ['B-3', 'B-4', 'B-5', 'B-6'])
    t.equal(await salesOf(acme, sku, 'RETAIL'), 'status 404', `${sku} stored nothing`)
})

t.test('a refused single write answers 400 validation_failed and stores nothing', async (t) => {
  const percent = (value: number) => ({ price: 1, quantity_breaks: [{ quantity_break: 2, percent_of_base: value }] })
  const duplicate = {
    price: 1,
    quantity_breaks: [
      { quantity_break: 2, fixed_price: 1 },
      { quantity_break: '2.00', fixed_price: 2 },
    ],
  }
  for (const body of [
    {},
    { price: 'ten' },
    { price: { sales: 1, extra: 2 } },
    { price: 1, quantity_breaks: [{ quantity_break: 0, fixed_price: 1 }] },
    { price: 1e12 },
    percent(100.0001),
    percent(-1),
    duplicate,
  ]) {
    const answer = await acme.call('PUT', '/price/BAD-1/RETAIL', body)
    t.equal(answer.status, 400, JSON.stringify(body))
    t.equal(answer.body.code, 'validation_failed')
  }
  const detailed = await acme.call('PUT', '/price/BAD-1/RETAIL', percent(101))
  t.same(detailed.body.details, [
    { path: '/quantity_breaks/0/percent_of_base', message: 'must be a percentage from 0 to 100' },
  ])
  const mismatch = await acme.call('PUT', '/price/BAD-1/RETAIL', { sku: 'OTHER', price: 1 })
  t.equal(mismatch.status, 400)
  t.equal((await acme.get('/price?sku=BAD-1')).body.total, 0)
})

t.test('amounts are kept to 4 decimals, rounded half-up (ties away from zero)', async (t) => {
  const cases: [unknown, number][] = [
    ['1.00005', 1.0001],
    [2.00004, 2],
    [-0.00005, -0.0001],
    ['0.12344', 0.1234],
    [0.99995, 1],
    ['-2.50005', -2.5001],
    ['7.', 7],
  ]
  for (const [index, [input, expected]] of cases.entries()) {
    await putPrice(acme, `R-${index}`, 'RETAIL', { price: input })
    t.equal(await salesOf(acme, `R-${index}`, 'RETAIL'), expected, `${JSON.stringify(input)} -> ${expected}`)
  }
  await putPrice(acme, 'R-F', 'RETAIL', {
    price: { sales: 1, fields: { cost: '0.33335' } },
    quantity_breaks: [
      { quantity_break: '2.00005', fixed_price: '0.99994' },
      { quantity_break: 5, percent_of_base: '12.34565' },
    ],
  })
  const raw = await acme.get('/price/R-F/RETAIL')
  t.same(raw.body.price.fields, { cost: 0.3334 })
  t.same(raw.body.quantity_breaks, [
    { quantity_break: 2.0001, fixed_price: 0.9999 },
    { quantity_break: 5, percent_of_base: 12.3457 },
  ])
})

t.test('a past start date means now: the price is absent before the write', async (t) => {
  const before = new Date(Date.now() - 2000).toISOString()
  await putPrice(acme, 'P-PAST', 'RETAIL', { price: 8, start_date: '2001-01-01T00:00:00Z' })
  const stored = await acme.get('/price?sku=P-PAST')
  t.ok(Date.parse(stored.body.items[0].start_date) >= Date.parse(before), 'start date moved to now')
  t.equal(await salesOf(acme, 'P-PAST', 'RETAIL', before), 'status 404', 'not readable before the write')
  t.equal(await salesOf(acme, 'P-PAST', 'RETAIL'), 8)
})

t.test('a scheduled price takes effect at its start date and not before', async (t) => {
  await putPrice(acme, 'S-1', 'RETAIL', { price: 10 })
  await putPrice(acme, 'S-1', 'RETAIL', { price: 20, start_date: '2999-01-01T00:00:00Z' })
  t.equal(await salesOf(acme, 'S-1', 'RETAIL'), 10, 'now: the price in force')
  t.equal(await salesOf(acme, 'S-1', 'RETAIL', '2998-12-31T23:59:59Z'), 10, 'just before the start')
  t.equal(await salesOf(acme, 'S-1', 'RETAIL', '2999-01-01T00:00:00Z'), 20, 'at the start')
  t.equal(
    (await acme.get('/price?sku=S-1')).body.items[0].price.sales,
    10,
    'stored records show the version in force now',
  )
  t.equal(
    (await acme.get('/price?sku=S-1&asOf=2999-02-01')).body.items[0].price.sales,
    20,
    'and the scheduled one as of later',
  )
  // A start a moment ahead takes over by itself when the time comes.
  const start = new Date(Date.now() + 1500).toISOString()
  await putPrice(acme, 'S-2', 'RETAIL', { price: 1 })
  await putPrice(acme, 'S-2', 'RETAIL', { price: 2, start_date: start })
  t.equal(await salesOf(acme, 'S-2', 'RETAIL'), 1)
  await pause(Date.parse(start) - Date.now() + 100)
  t.equal(await salesOf(acme, 'S-2', 'RETAIL'), 2)
})

t.test('remove_future_changes drops scheduled prices after the start date and keeps earlier ones', async (t) => {
  await putPrice(acme, 'F-1', 'RETAIL', { price: 1 })
  await putPrice(acme, 'F-1', 'RETAIL', { price: 2, start_date: '2997-01-01' })
  await putPrice(acme, 'F-1', 'RETAIL', { price: 3, start_date: '2999-01-01' })
  await putPrice(acme, 'F-1', 'RETAIL', { price: 4, start_date: '2998-01-01', remove_future_changes: true })
  t.equal(await salesOf(acme, 'F-1', 'RETAIL'), 1)
  t.equal(await salesOf(acme, 'F-1', 'RETAIL', '2997-06-01'), 2, 'the change before the start date stays')
  t.equal(await salesOf(acme, 'F-1', 'RETAIL', '2998-06-01'), 4)
  t.equal(await salesOf(acme, 'F-1', 'RETAIL', '2999-06-01'), 4, 'the change after the start date is gone')
  // Without the flag, a scheduled change survives an earlier write.
  await putPrice(acme, 'F-2', 'RETAIL', { price: 1 })
  await putPrice(acme, 'F-2', 'RETAIL', { price: 3, start_date: '2999-01-01' })
  await putPrice(acme, 'F-2', 'RETAIL', { price: 5 })
  t.equal(await salesOf(acme, 'F-2', 'RETAIL'), 5)
  t.equal(await salesOf(acme, 'F-2', 'RETAIL', '2999-06-01'), 3)
  // With the flag and an unchanged price, the future change still goes.
  await putPrice(acme, 'F-2', 'RETAIL', { price: 5, remove_future_changes: true })
  t.equal(await salesOf(acme, 'F-2', 'RETAIL', '2999-06-01'), 5)
})

t.test('an identical price stores nothing and records no change; a different one records updated', async (t) => {
  await putPrice(acme, 'D-1', 'RETAIL', {
    price: { sales: 5, fields: { cost: 2 } },
    quantity_breaks: [{ quantity_break: 3, fixed_price: 4 }],
  })
  const first = await priceChanges(acme, 'D-1')
  t.same(
    first.map((entry) => [entry.change_type, entry.composite_key]),
    [['created', 'RETAIL']],
  )
  const updatedAt = (await acme.get('/price?sku=D-1')).body.items[0].updated_at
  await pause(5)
  // The same content spelled differently (string amounts, fields and breaks in another order).
  await putPrice(acme, 'D-1', 'RETAIL', {
    price: { sales: '5.000', fields: { cost: '2' } },
    quantity_breaks: [{ quantity_break: '3', fixed_price: 4.0 }],
  })
  await acme.call('POST', '/price/batch', [
    {
      sku: 'D-1',
      pricelist: 'RETAIL',
      price: { sales: 5, fields: { cost: 2 } },
      quantity_breaks: [{ quantity_break: 3, fixed_price: 4 }],
    },
  ])
  t.equal((await priceChanges(acme, 'D-1')).length, 1, 'no entry for identical writes')
  t.equal((await acme.get('/price?sku=D-1')).body.items[0].updated_at, updatedAt, 'the stored version is untouched')
  await putPrice(acme, 'D-1', 'RETAIL', { price: { sales: 5, fields: { cost: 2 } } })
  const changes = await priceChanges(acme, 'D-1')
  t.same(
    changes.map((entry) => entry.change_type),
    ['created', 'updated'],
    'dropping the breaks is a change',
  )
  t.not(changes[1]!.content_hash, changes[0]!.content_hash)
})

t.test('with ingest.skip.dedup on, an identical price records an entry with the same content hash', async (t) => {
  const bulk = await server.tenant('bulk')
  await putPricelist(bulk, 'PL', { currency_code: 'EUR', vat_mode: 'NET' })
  await putPrice(bulk, 'X', 'PL', { price: 7 })
  await putPrice(bulk, 'X', 'PL', { price: 7 })
  t.equal((await priceChanges(bulk, 'X')).length, 1)
  await putSetting(bulk, 'ingest.skip.dedup', 'true')
  await putPrice(bulk, 'X', 'PL', { price: 7 })
  const batch = await bulk.call('POST', '/price/batch', [{ sku: 'X', pricelist: 'PL', price: '7.0' }])
  t.same(batch.body, { accepted: 1, failed: [] })
  const changes = await priceChanges(bulk, 'X')
  t.equal(changes.length, 3)
  t.same(
    changes.map((entry) => entry.change_type),
    ['created', 'updated', 'updated'],
  )
  t.equal(changes[1]!.content_hash, changes[0]!.content_hash)
  t.equal(changes[2]!.content_hash, changes[0]!.content_hash)
  t.equal(await salesOf(bulk, 'X', 'PL'), 7)
})

t.test(
  'strict.article.validation refuses a price without a live article at its start, even an unchanged one',
  async (t) => {
    const strict = await server.tenant('strict-articles')
    await putPricelist(strict, 'PL', { currency_code: 'EUR', vat_mode: 'NET' })
    await putArticle(strict, 'KNOWN', { name: 'Known' })
    await putPrice(strict, 'KNOWN', 'PL', { price: 1 })
    await putPrice(strict, 'NOART', 'PL', { price: 1 })
    await putSetting(strict, 'strict.article.validation', 'true')
    const refused = await strict.call('PUT', '/price/NEW/PL', { price: 2 })
    t.equal(refused.status, 400)
    t.equal(refused.body.code, 'validation_failed')
    t.match(refused.body.message, /NEW/)
    t.same(
      refused.body.details.map((detail: { path: string }) => detail.path),
      ['/sku'],
    )
    t.equal((await strict.get('/price?sku=NEW')).body.total, 0, 'nothing stored')
    t.equal((await strict.call('PUT', '/price/KNOWN/PL', { price: 3 })).status, 202)
    const unchanged = await strict.call('PUT', '/price/NOART/PL', { price: 1 })
    t.equal(unchanged.status, 400, 'an unchanged price is refused too')
    // An article that starts later admits prices from its start only.
    await putArticle(strict, 'LATER', { name: 'Later', start_date: '2999-01-01' })
    t.equal((await strict.call('PUT', '/price/LATER/PL', { price: 4 })).status, 400)
    t.equal((await strict.call('PUT', '/price/LATER/PL', { price: 4, start_date: '2999-02-01' })).status, 202)
    // A deleted article admits no price.
    await expectStatus(strict.call('DELETE', '/article/KNOWN'), 202, 'article delete')
    t.equal((await strict.call('PUT', '/price/KNOWN/PL', { price: 3 })).status, 400)
    const batch = await strict.call('POST', '/price/batch', [
      { sku: 'NEW', pricelist: 'PL', price: 2 },
      { sku: 'NOART', pricelist: 'PL', price: 1 },
      { sku: 'LATER', pricelist: 'PL', price: 5, start_date: '2999-03-01' },
    ])
    t.equal(batch.status, 202)
    t.equal(batch.body.accepted, 1)
    t.same(
      batch.body.failed.map((entry: { sku: string; pricelist: string }) => `${entry.sku}/${entry.pricelist}`),
      ['NEW/PL', 'NOART/PL'],
    )
    t.match(batch.body.failed[0].message, /strict\.article\.validation/)
    t.equal((await strict.get('/price?sku=NEW')).body.total, 0)
  },
)

t.test('strict.pricelist.validation refuses prices for a pricelist never created, even an unchanged one', async (t) => {
  const strict = await server.tenant('strict-pricelists')
  await putPricelist(strict, 'PL', { currency_code: 'EUR', vat_mode: 'NET' })
  await putPrice(strict, 'A', 'GHOST', { price: 1 })
  await putSetting(strict, 'strict.pricelist.validation', 'true')
  const refused = await strict.call('PUT', '/price/A/NOPE', { price: 1 })
  t.equal(refused.status, 400)
  t.equal(refused.body.code, 'validation_failed')
  t.match(refused.body.message, /NOPE/)
  t.same(
    refused.body.details.map((detail: { path: string }) => detail.path),
    ['/pricelist'],
  )
  t.equal(
    (await strict.call('PUT', '/price/A/GHOST', { price: 1 })).status,
    400,
    'unchanged price on an unknown pricelist is refused',
  )
  t.equal((await strict.call('PUT', '/price/A/PL', { price: 1 })).status, 202)
  // A pricelist that was created and then deleted has been created: prices are accepted.
  await putPricelist(strict, 'GONE', { currency_code: 'EUR', vat_mode: 'NET' })
  await expectStatus(strict.call('DELETE', '/pricelist/GONE'), 202, 'pricelist delete')
  t.equal((await strict.call('PUT', '/price/A/GONE', { price: 1 })).status, 202)
  const batch = await strict.call('POST', '/price/batch', [
    { sku: 'B', pricelist: 'NOPE', price: 1 },
    { sku: 'B', pricelist: 'PL', price: 1 },
  ])
  t.equal(batch.body.accepted, 1)
  t.same(
    batch.body.failed.map((entry: { sku: string; pricelist: string }) => [entry.sku, entry.pricelist]),
    [['B', 'NOPE']],
  )
  t.match(batch.body.failed[0].message, /strict\.pricelist\.validation/)
  t.equal((await strict.get('/price?pricelist=NOPE')).body.total, 0)
})

t.test('a price for a pricelist not yet created is stored and appears once the pricelist exists', async (t) => {
  await putPrice(acme, 'E-1', 'EARLY', { price: 6.5 })
  const missing = await acme.get('/price/E-1/EARLY')
  t.equal(missing.status, 404)
  t.equal((await acme.get('/price?pricelist=EARLY')).body.total, 1, 'the stored record is there')
  await putPricelist(acme, 'EARLY', { currency_code: 'EUR', vat_mode: 'NET' })
  t.equal(await salesOf(acme, 'E-1', 'EARLY'), 6.5)
  await mapSkus(acme, 'standard', ['E-1'])
  const taxed = await acme.get('/price/E-1/EARLY/SE')
  t.equal(taxed.status, 200)
  t.equal(taxed.body.gross, 8.13, '6.5 + 1.625 rounded half-up to 1.63')
})

t.test('the price quota answers 422 for a new pair; updates and replacements of deleted pairs fit', async (t) => {
  const small = await server.tenant('small', { limits: { prices: 2 } })
  await putPricelist(small, 'PL', { currency_code: 'EUR', vat_mode: 'NET' })
  await putPrice(small, 'A', 'PL', { price: 1 })
  await putPrice(small, 'B', 'PL', { price: 1 })
  const over = await small.call('PUT', '/price/C/PL', { price: 1 })
  t.equal(over.status, 422)
  t.equal(over.body.code, 'quota_exceeded')
  t.equal(over.body.error, 'Unprocessable Content')
  t.equal((await small.get('/price?sku=C')).body.total, 0)
  t.equal((await small.call('PUT', '/price/A/PL', { price: 2 })).status, 202, 'an update of an existing pair fits')
  const batch = await small.call('POST', '/price/batch', [
    { sku: 'B', pricelist: 'PL', price: 3 },
    { sku: 'D', pricelist: 'PL', price: 1 },
  ])
  t.equal(batch.body.accepted, 1)
  t.same(
    batch.body.failed.map((entry: { sku: string }) => entry.sku),
    ['D'],
  )
  t.match(batch.body.failed[0].message, /2/)
  await expectStatus(small.call('DELETE', '/price/B/PL'), 202, 'delete')
  t.equal((await small.call('PUT', '/price/C/PL', { price: 1 })).status, 202, 'a deleted pair frees its place')
})

t.test('single delete hides the price from its time on and answers 404 for a missing price', async (t) => {
  await putPrice(acme, 'DEL-1', 'RETAIL', { price: 3 })
  const deleted = await acme.call('DELETE', '/price/DEL-1/RETAIL')
  t.equal(deleted.status, 202)
  t.equal(deleted.text, '')
  t.equal(await salesOf(acme, 'DEL-1', 'RETAIL'), 'status 404')
  t.equal((await acme.get('/price?sku=DEL-1')).body.total, 0)
  const changes = await priceChanges(acme, 'DEL-1')
  t.same(
    changes.map((entry) => entry.change_type),
    ['created', 'deleted'],
  )
  const again = await acme.call('DELETE', '/price/DEL-1/RETAIL')
  t.equal(again.status, 404)
  t.equal(again.body.code, 'not_found')
  t.equal((await acme.call('DELETE', '/price/NEVER/RETAIL')).status, 404)
  t.equal((await acme.call('DELETE', '/price/DEL-1/NOPL')).status, 404)
  // A scheduled delete keeps the price until then.
  await putPrice(acme, 'DEL-2', 'RETAIL', { price: 4 })
  t.equal((await acme.call('DELETE', '/price/DEL-2/RETAIL?when=2999-01-01T00:00:00Z')).status, 202)
  t.equal(await salesOf(acme, 'DEL-2', 'RETAIL'), 4)
  t.equal(await salesOf(acme, 'DEL-2', 'RETAIL', '2999-01-02'), 'status 404')
  // A write after a delete brings the price back as an update.
  await putPrice(acme, 'DEL-1', 'RETAIL', { price: 5 })
  t.equal(await salesOf(acme, 'DEL-1', 'RETAIL'), 5)
  t.same(
    (await priceChanges(acme, 'DEL-1')).map((entry) => entry.change_type),
    ['created', 'deleted', 'updated'],
  )
})

t.test('batch delete removes existing prices and lists missing ones in failed', async (t) => {
  await putPrice(acme, 'BD-1', 'RETAIL', { price: 1 })
  await putPrice(acme, 'BD-2', 'RETAIL', { price: 1 })
  const answer = await acme.call('DELETE', '/price/batch', [
    { sku: 'BD-1', pricelist: 'RETAIL' },
    { sku: 'BD-2', pricelist: 'RETAIL', when: '2999-01-01' },
    { sku: 'BD-3', pricelist: 'RETAIL' },
    { sku: 'BD-4' },
  ])
  t.equal(answer.status, 202)
  t.equal(answer.body.accepted, 2)
  t.same(
    answer.body.failed.map((entry: { sku: string; pricelist: string | null }) => [entry.sku, entry.pricelist]),
    [
      ['BD-3', 'RETAIL'],
      ['BD-4', null],
    ],
  )
  t.equal(await salesOf(acme, 'BD-1', 'RETAIL'), 'status 404')
  t.equal(await salesOf(acme, 'BD-2', 'RETAIL'), 1)
  t.equal(await salesOf(acme, 'BD-2', 'RETAIL', '2999-06-01'), 'status 404')
})

t.test('GET /price answers a numbered page of stored records filtered by sku and pricelist', async (t) => {
  const shop = await server.tenant('listing')
  await putPricelist(shop, 'PA', { currency_code: 'EUR', vat_mode: 'NET' })
  await putPricelist(shop, 'PB', { currency_code: 'EUR', vat_mode: 'NET' })
  for (const sku of ['K1', 'K2', 'K3']) await putPrice(shop, sku, 'PA', { price: 1 })
  await putPrice(shop, 'K2', 'PB', { price: 2 })
  const all = await shop.get('/price')
  t.same(
    all.body.items.map((item: { sku: string; pricelist: string }) => `${item.pricelist}/${item.sku}`),
    ['PA/K1', 'PA/K2', 'PA/K3', 'PB/K2'],
  )
  t.same([all.body.page, all.body.size, all.body.total], [1, 100, 4])
  const bySku = await shop.get('/price?sku=K2')
  t.same(
    bySku.body.items.map((item: { pricelist: string; price: { sales: number } }) => [item.pricelist, item.price.sales]),
    [
      ['PA', 1],
      ['PB', 2],
    ],
  )
  t.equal((await shop.get('/price?pricelist=PB')).body.total, 1)
  t.equal((await shop.get('/price?sku=K2&pricelist=PB')).body.items[0].price.sales, 2)
  const second = await shop.get('/price?page=2&size=3')
  t.same([second.body.page, second.body.size, second.body.total, second.body.items.length], [2, 3, 4, 1])
  t.equal((await shop.get('/price?size=0')).status, 400)
  t.equal((await shop.get('/price?sku=NONE')).body.total, 0)
})

t.test('price history lists versions newest first with their meta, and the parent versions on a child', async (t) => {
  const shop = await server.tenant('history')
  await putPricelist(shop, 'PARENT', { currency_code: 'EUR', vat_mode: 'NET' })
  await putPricelist(shop, 'CHILD', { currency_code: 'EUR', parent_code: 'PARENT' })
  await putPrice(shop, 'H', 'PARENT', { price: 1 })
  await putPrice(shop, 'H', 'PARENT', {
    price: { sales: 2, fields: { cost: 1 } },
    quantity_breaks: [{ quantity_break: 5, fixed_price: 1.5 }],
  })
  await putPrice(shop, 'H', 'PARENT', { price: 3, start_date: '2999-01-01' })
  const history = await shop.get('/price/history/PARENT/H')
  t.equal(history.status, 200)
  t.same(
    history.body.map((entry: { price: { sales: number } }) => entry.price.sales),
    [3, 2, 1],
  )
  const [scheduled, current] = history.body
  t.equal(scheduled.change_at, '2999-01-01T00:00:00Z')
  t.same(scheduled.meta, {
    inherited: false,
    start_at: '2999-01-01T00:00:00Z',
    updated_at: scheduled.meta.updated_at,
    updated_by: shop.clientId,
    source_pricelist: 'PARENT',
  })
  t.same(current.price, { sales: 2, fields: { cost: 1 } })
  t.same(current.quantity_breaks, [{ quantity_break: 5, fixed_price: 1.5 }])
  t.equal((await shop.get('/price/history/PARENT/H?limit=1')).body.length, 1)
  const inherited = await shop.get('/price/history/CHILD/H')
  t.equal(inherited.body.length, 3)
  t.equal(inherited.body[0].meta.inherited, true)
  t.equal((await shop.get('/price/history/NOPE/H')).status, 404)
  t.same((await shop.get('/price/history/PARENT/NOSKU')).body, [])
  t.equal((await shop.get('/price/history/PARENT/H?days=0')).status, 400)
})

t.test('skus-for-pricelist walks a cursor with afterSku and limit, and refuses a limit above 500', async (t) => {
  const shop = await server.tenant('skus')
  await putPricelist(shop, 'PL', { currency_code: 'EUR', vat_mode: 'NET' })
  await putPricelist(shop, 'KID', { currency_code: 'EUR', parent_code: 'PL' })
  await putPricelist(shop, 'OTHER', { currency_code: 'EUR', vat_mode: 'NET' })
  const skus = ['S07', 'S01', 'S03', 'S05', 'S02', 'S06', 'S04']
  await expectStatus(
    shop.call(
      'POST',
      '/price/batch',
      skus.map((sku) => ({ sku, pricelist: 'PL', price: 1 })),
    ),
    202,
    'batch',
  )
  await putPrice(shop, 'S00', 'OTHER', { price: 1 })
  await putPrice(shop, 'S08', 'PL', { price: 1, start_date: '2999-01-01' })
  await expectStatus(shop.call('DELETE', '/price/S06/PL'), 202, 'delete')
  const walked: string[] = []
  let cursor: string | null = null
  let pages = 0
  for (;;) {
    const answer: Answer = await shop.get(
      `/price/skus-for-pricelist/PL?limit=2${cursor === null ? '' : `&afterSku=${cursor}`}`,
    )
    t.equal(answer.status, 200)
    walked.push(...answer.body.items)
    pages++
    if (!answer.body.has_more) break
    cursor = answer.body.next_cursor
    t.equal(cursor, answer.body.items[answer.body.items.length - 1])
  }
  t.same(walked, ['S01', 'S02', 'S03', 'S04', 'S05', 'S07'], 'sorted, no deleted, no scheduled, no other pricelist')
  t.equal(pages, 3)
  t.same((await shop.get('/price/skus-for-pricelist/PL?asOf=2999-06-01')).body.items, [
    'S01',
    'S02',
    'S03',
    'S04',
    'S05',
    'S07',
    'S08',
  ])
  t.same((await shop.get('/price/skus-for-pricelist/KID')).body.items, walked, 'a child lists the SKUs it inherits')
  const last = await shop.get('/price/skus-for-pricelist/PL?afterSku=S05&limit=500')
  t.same(last.body, { items: ['S07'], next_cursor: 'S07', has_more: false })
  const tooMany = await shop.get('/price/skus-for-pricelist/PL?limit=501')
  t.equal(tooMany.status, 400)
  t.equal(tooMany.body.code, 'validation_failed')
  t.equal((await shop.get('/price/skus-for-pricelist/PL?limit=0')).status, 400)
  const deprecated = await shop.get('/price/skus-for-pricelist/PL?page=2&size=4')
  t.equal(deprecated.status, 200)
  t.same(deprecated.body, { items: ['S05', 'S07'], page: 2, size: 4, total: 6 })
  t.equal((await shop.get('/price/skus-for-pricelist/NOPE')).status, 404)
})

t.test('pricelists-for-sku lists pricing pricelists, with prices only when currency_code is given', async (t) => {
  const shop = await server.tenant('for-sku')
  await setupReference(shop)
  await putPricelist(shop, 'A-NET', { currency_code: 'EUR', vat_mode: 'NET', metadata: { channel: ['web'] } })
  await putPricelist(shop, 'B-KID', { currency_code: 'SEK', parent_code: 'A-NET' })
  await putPricelist(shop, 'C-EMPTY', { currency_code: 'EUR', vat_mode: 'NET' })
  await putPrice(shop, 'Q', 'A-NET', { price: 10 })
  await mapSkus(shop, 'standard', ['Q'])
  const bare = await shop.get('/price/pricelists-for-sku/Q')
  t.equal(bare.status, 200)
  t.same(
    bare.body.items.map((item: { pricelist: { code: string } }) => item.pricelist.code),
    ['A-NET', 'B-KID'],
  )
  t.same([bare.body.page, bare.body.size, bare.body.total], [1, 100, 2])
  t.same(
    bare.body.items.map((item: { price: unknown }) => item.price),
    [null, null],
  )
  t.same(bare.body.items[0].pricelist.metadata, { channel: ['web'] }, 'full pricelist with metadata')
  const priced = await shop.get('/price/pricelists-for-sku/Q?currency_code=EUR')
  const [own, kid] = priced.body.items.map((item: { price: Record<string, unknown> }) => item.price)
  // Default tax area SE (25%): 10 -> vat 2.5.
  t.same([own.net, own.vat, own.gross, own.vat_rate, own.inherited, own.pricelist], [10, 2.5, 12.5, 25, false, 'A-NET'])
  // The child is SEK: 10 EUR x 11.4321 = 114.321 SEK, answered in EUR again: 114.321 / 11.4321 = 10.
  t.same([kid.net, kid.inherited, kid.fx.base, kid.fx.quote], [10, true, 'SEK', 'EUR'])
  const germany = await shop.get('/price/pricelists-for-sku/Q?currency_code=EUR&tax_area=DE')
  t.same([germany.body.items[0].price.vat, germany.body.items[0].price.vat_rate], [1.9, 19])
  await putSetting(shop, 'default.tax.area', 'DE')
  const fallback = await shop.get('/price/pricelists-for-sku/Q?currency_code=EUR')
  t.equal(fallback.body.items[0].price.vat, 1.9, 'an omitted tax_area falls back to default.tax.area')
  t.same((await shop.get('/price/pricelists-for-sku/NOPE')).body.items, [])
})

t.test('the raw read answers the definition after inheritance and rules, without tax', async (t) => {
  await putPricelist(acme, 'RAW-KID', {
    currency_code: 'EUR',
    parent_code: 'RETAIL',
    price_rules: [{ expression: 'sales * 0.5' }],
  })
  await putPrice(acme, 'RAW', 'RETAIL', {
    price: { sales: 9, fields: { cost: 4 } },
    quantity_breaks: [{ quantity_break: 10, percent_of_base: 80 }],
  })
  const own = await acme.get('/price/RAW/RETAIL')
  t.equal(own.status, 200)
  t.equal(own.headers.get('cache-control'), 'no-store')
  t.same(own.body, {
    sku: 'RAW',
    pricelist: 'RETAIL',
    currency_code: 'EUR',
    vat_mode: 'NET',
    price: { sales: 9, fields: { cost: 4 } },
    quantity_breaks: [{ quantity_break: 10, percent_of_base: 80 }],
    start_date: own.body.start_date,
    inherited: false,
    source_pricelist: 'RETAIL',
  })
  const kid = await acme.get('/price/RAW/RAW-KID')
  t.same(
    [kid.body.price.sales, kid.body.inherited, kid.body.source_pricelist, kid.body.vat_mode],
    [4.5, true, 'RETAIL', 'NET'],
  )
  t.equal(kid.body.start_date, own.body.start_date)
  const missing = await acme.get('/price/NOSUCH/RETAIL')
  t.equal(missing.status, 404)
  t.equal(missing.body.code, 'not_found')
  t.equal((await acme.get('/price/RAW/NOPL')).status, 404)
})

t.test('the taxed read has a strong ETag and answers 304 without a body on a matching If-None-Match', async (t) => {
  await putPrice(acme, 'T-1', 'RETAIL', { price: 10 })
  await mapSkus(acme, 'standard', ['T-1'])
  const first = await acme.get('/price/T-1/RETAIL/SE')
  t.equal(first.status, 200)
  t.same(first.body, {
    sku: 'T-1',
    pricelist: 'RETAIL',
    currency_code: 'EUR',
    vat_mode: 'NET',
    net: 10,
    vat: 2.5,
    gross: 12.5,
    vat_rate: 25,
    vat_class: 'standard',
    inherited: false,
    quantity_breaks: [],
    fx: null,
    tax_area: 'SE',
  })
  const etag = first.headers.get('etag')!
  t.match(etag, /^"[^"]+"$/, 'a strong validator (no W/ prefix)')
  t.equal(first.headers.get('cache-control'), 'no-store')
  const cached = await acme.call('GET', '/price/T-1/RETAIL/SE', undefined, { 'if-none-match': etag })
  t.equal(cached.status, 304)
  t.equal(cached.text, '')
  t.equal(cached.headers.get('etag'), etag)
  const listed = await acme.call('GET', '/price/T-1/RETAIL/SE', undefined, { 'if-none-match': `"other", ${etag}` })
  t.equal(listed.status, 304, 'a list containing the tag matches')
  const stale = await acme.call('GET', '/price/T-1/RETAIL/SE', undefined, { 'if-none-match': '"stale"' })
  t.equal(stale.status, 200)
  t.equal(stale.body.gross, 12.5)
  t.equal((await acme.get('/price/T-1/RETAIL/DE')).body.vat, 1.9)
  t.equal((await acme.get('/price/T-1/RETAIL/XX')).status, 404)
  t.equal((await acme.get('/price/NONE/RETAIL/SE')).status, 404)
})

t.test('the ETag changes after any change that alters the answer and stays after an unrelated one', async (t) => {
  const shop = await server.tenant('etags')
  await setupReference(shop)
  await putPricelist(shop, 'PARENT', { currency_code: 'EUR', vat_mode: 'NET' })
  await putPricelist(shop, 'KID', { currency_code: 'EUR', parent_code: 'PARENT' })
  await putPrice(shop, 'E', 'PARENT', { price: 10 })
  await putPrice(shop, 'OTHER', 'PARENT', { price: 1 })
  await mapSkus(shop, 'standard', ['E', 'OTHER'])
  const tagOf = async (path: string) => {
    const answer = await shop.get(path)
    if (answer.status !== 200) throw new Error(`${path}: ${answer.status} ${answer.text}`)
    return answer.headers.get('etag')!
  }
  const direct = '/price/E/PARENT/SE'
  const inherited = '/price/E/KID/SE'
  const converted = '/price/E/PARENT/SE?currency_code=SEK'
  let tags = [await tagOf(direct), await tagOf(inherited), await tagOf(converted)]
  t.equal(new Set(tags).size, 3)
  const same = async (message: string) =>
    t.same([await tagOf(direct), await tagOf(inherited), await tagOf(converted)], tags, message)

  await putPrice(shop, 'OTHER', 'PARENT', { price: 2 })
  await putArticle(shop, 'E2', { name: 'unrelated' })
  await putPrice(shop, 'E', 'PARENT', { price: 10 })
  await same('an unrelated price, an article and an identical price leave the tags')

  await postFx(shop, '2024-06-03', { SEK: '11.5' })
  const afterFx = [await tagOf(direct), await tagOf(inherited), await tagOf(converted)]
  t.equal(afterFx[0], tags[0], 'FX does not touch a read in the pricelist currency')
  t.not(afterFx[2], tags[2], 'a new FX rate changes the converted read')
  t.equal((await shop.get(converted)).body.net, 115)
  tags = afterFx

  await expectStatus(
    shop.call('POST', '/vat/rate', { tax_area_code: 'SE', vat_class_code: 'standard', rate: 20 }),
    202,
    'VAT rate',
  )
  const afterVat = [await tagOf(direct), await tagOf(inherited), await tagOf(converted)]
  for (const [index, tag] of afterVat.entries()) t.not(tag, tags[index], `VAT rate change alters tag ${index}`)
  t.equal((await shop.get(direct)).body.vat, 2)
  tags = afterVat

  await putPrice(shop, 'E', 'PARENT', { price: 11 })
  const afterParent = [await tagOf(direct), await tagOf(inherited), await tagOf(converted)]
  for (const [index, tag] of afterParent.entries()) t.not(tag, tags[index], `parent price change alters tag ${index}`)
  t.equal((await shop.get(inherited)).body.net, 11)
  tags = afterParent

  await putPrice(shop, 'E', 'KID', { price: 9 })
  t.not(await tagOf(inherited), tags[1], "the child's own price alters its tag")
  t.equal(await tagOf(direct), tags[0], "and not the parent's")
  const stale = await shop.call('GET', inherited, undefined, { 'if-none-match': tags[1]! })
  t.equal(stale.status, 200, 'the old tag no longer matches')
  t.equal(stale.body.net, 9)
})

t.test('the price book stays exact while it grows past its first buffers and compacts replaced versions', async (t) => {
  const big = await server.tenant('big-book')
  await putPricelist(big, 'PL', { currency_code: 'EUR', vat_mode: 'NET' })
  const skus = Array.from({ length: 1200 }, (_, index) => `G-${String(index).padStart(4, '0')}`)
  for (const round of [1, 2, 3]) {
    const items = skus.map((sku, index) => ({
      sku,
      pricelist: 'PL',
      // Every third item without extras, so runs with and without fields and breaks mix.
      price:
        index % 3 === 0 ? round * 1000 + index : { sales: round * 1000 + index, fields: { cost: round + index / 10 } },
      quantity_breaks:
        index % 3 === 0
          ? undefined
          : [
              { quantity_break: 10 + round, fixed_price: round },
              { quantity_break: 100, percent_of_base: 50 + round },
            ],
    }))
    const answer = await expectStatus(big.call('POST', '/price/batch', items), 202, `round ${round}`)
    t.same(answer.body, { accepted: 1200, failed: [] }, `round ${round}`)
  }
  for (const index of [0, 1, 2, 599, 1000, 1199]) {
    const raw = await big.get(`/price/${skus[index]}/PL`)
    const plain = index % 3 === 0
    t.same(
      raw.body.price,
      { sales: 3000 + index, fields: plain ? {} : { cost: 3 + index / 10 } },
      `${skus[index]} price`,
    )
    t.same(
      raw.body.quantity_breaks,
      plain
        ? []
        : [
            { quantity_break: 13, fixed_price: 3 },
            { quantity_break: 100, percent_of_base: 53 },
          ],
      `${skus[index]} breaks`,
    )
  }
  const history = await big.get(`/price/history/PL/${skus[1]}`)
  t.same(
    history.body.map((entry: { price: { sales: number; fields: Record<string, number> } }) => [
      entry.price.sales,
      entry.price.fields.cost,
    ]),
    [
      [3001, 3.1],
      [2001, 2.1],
      [1001, 1.1],
    ],
  )
  const listed = await big.get('/price?pricelist=PL&size=1000&page=2')
  t.same([listed.body.total, listed.body.items.length, listed.body.items[0].sku], [1200, 200, 'G-1000'])
  t.equal((await big.get('/pricelist/PL')).body.sku_count, 1200)
  // A query large enough for a worker thread reads the compacted columns (breaks included) too.
  await setupReference(big)
  const asked = skus.slice(0, 300)
  await mapSkus(big, 'standard', asked, ['SE'])
  const answer = await expectStatus(
    big.call('POST', '/price/query', {
      currency_code: 'EUR',
      tax_area: 'SE',
      skus: asked,
      pricelist_filter: { pricelists: ['PL'] },
      quantity: 13,
    }),
    200,
    'query',
  )
  const expected = asked.map((_, index) => (index % 3 === 0 ? 3000 + index : 3))
  t.same(
    answer.body.items.map((item: { net: number }) => item.net),
    expected,
    `answered by ${answer.headers.get('x-price-engine')}`,
  )
})

t.test('prices, their versions and history survive a restart', async (t) => {
  const before = {
    scheduled: await salesOf(acme, 'S-1', 'RETAIL', '2999-01-01T00:00:00Z'),
    now: await salesOf(acme, 'S-1', 'RETAIL'),
    fields: (await acme.get('/price/W-1/RETAIL')).body,
    history: (await acme.get('/price/history/RETAIL/F-1')).body,
    taxed: (await acme.get('/price/T-1/RETAIL/SE')).headers.get('etag'),
  }
  await server.restart()
  await acme.refreshToken()
  t.equal(await salesOf(acme, 'S-1', 'RETAIL', '2999-01-01T00:00:00Z'), before.scheduled)
  t.equal(await salesOf(acme, 'S-1', 'RETAIL'), before.now)
  t.same((await acme.get('/price/W-1/RETAIL')).body, before.fields)
  t.same((await acme.get('/price/history/RETAIL/F-1')).body, before.history)
  t.equal(
    (await acme.get('/price/T-1/RETAIL/SE')).headers.get('etag'),
    before.taxed,
    'the same answer gives the same ETag',
  )
  t.equal(await salesOf(acme, 'DEL-1', 'RETAIL'), 5)
})
