import t from 'tap'
import { startServer, type TenantClient, type TestServer } from '../../helpers/server.js'

let server: TestServer
let acme: TenantClient

t.before(async () => {
  server = await startServer()
  acme = await server.tenant('acme')
})
t.teardown(async () => server.dispose())

t.test('an article written with PUT reads back with its fields and update metadata', async (t) => {
  const put = await acme.call('PUT', '/article/SKU-1', {
    name: 'Mug',
    type: 'kitchen',
    metadata: { color: ['red', 'blue'] },
  })
  t.equal(put.status, 202)
  t.equal(put.text, '')
  const read = await acme.get('/article/SKU-1')
  t.equal(read.status, 200)
  t.same(read.body, {
    sku: 'SKU-1',
    name: 'Mug',
    type: 'kitchen',
    metadata: { color: ['red', 'blue'] },
    updated_at: read.body.updated_at,
    updated_by: acme.clientId,
  })
  t.match(read.body.updated_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/)
})

t.test('an unknown field is refused with 400 validation details and stores nothing', async (t) => {
  const answer = await acme.call('PUT', '/article/SKU-BAD', { name: 'x', colour: 'red' })
  t.equal(answer.status, 400)
  t.equal(answer.body.code, 'validation_failed')
  t.equal(answer.body.error, 'Bad Request')
  t.equal(answer.body.status, 400)
  t.ok(Array.isArray(answer.body.details) && answer.body.details.length > 0)
  t.equal((await acme.get('/article/SKU-BAD')).status, 404)
})

t.test(
  'GET /article: the full list without page and size (the specification), numbered pages with both; a walk gives every article once',
  async (t) => {
    const shop = await server.tenant('paged')
    const skus = ['P-07', 'P-03', 'P-01', 'P-05', 'P-02', 'P-06', 'P-04', 'P-GONE']
    t.same(
      (
        await shop.call(
          'POST',
          '/article/batch',
          skus.map((sku) => ({ sku, name: `name of ${sku}` })),
        )
      ).body,
      { accepted: 8, failed: [] },
    )
    t.equal((await shop.call('DELETE', '/article/P-GONE')).status, 202)
    const live = skus.filter((sku) => sku !== 'P-GONE').sort()

    const all = await shop.get('/article')
    t.equal(all.status, 200)
    t.ok(Array.isArray(all.body), 'without page and size: the full list')
    t.same(
      all.body.map((item: { sku: string }) => item.sku),
      live,
      'sorted by SKU, the deleted one left out',
    )
    t.equal(all.body[0].name, 'name of P-01', 'items are whole articles')
    t.ok(Array.isArray((await shop.get('/article?size=5')).body), 'size alone: still the full list')

    const seen: string[] = []
    let pages = 0
    for (let pageNumber = 1; ; pageNumber++) {
      const answer = await shop.get(`/article?page=${pageNumber}&size=3`)
      t.equal(answer.status, 200)
      t.same(Object.keys(answer.body).sort(), ['items', 'page', 'size', 'total'], 'the envelope of GET /pricelist')
      t.same(
        [answer.body.page, answer.body.size, answer.body.total],
        [pageNumber, 3, 7],
        `page ${pageNumber} echoes its place`,
      )
      seen.push(...answer.body.items.map((item: { sku: string }) => item.sku))
      pages++
      if (pageNumber * answer.body.size >= answer.body.total) break
    }
    t.equal(pages, 3, '7 articles in pages of 3')
    t.same(seen, live, 'every article exactly once, in order')
    t.same((await shop.get('/article?page=4&size=3')).body.items, [], 'a page past the end is empty')
    const withDeleted = await shop.get('/article?include_deleted=true&page=1&size=1000')
    t.equal(withDeleted.body.total, 8, 'include_deleted counts the deleted article too')
    t.type(withDeleted.body.items.find((item: { sku: string }) => item.sku === 'P-GONE')?.deleted_at, 'string')
    const bad = await shop.get('/article?page=1&size=0')
    t.equal(bad.status, 400)
    t.equal(bad.body.code, 'validation_failed')
  },
)

t.test(
  'a metadata query keyed by a name of Object.prototype (constructor, toString) matches nothing: 200, never a 500 (found by the fuzzer)',
  async (t) => {
    const shop = await server.tenant('proto-keys')
    t.equal((await shop.call('PUT', '/article/A-1', { name: 'a', metadata: { colour: ['red'] } })).status, 202)
    t.equal(
      (
        await shop.call('PUT', '/pricelist/PL-1', {
          currency_code: 'EUR',
          vat_mode: 'NET',
          metadata: { colour: ['red'] },
        })
      ).status,
      202,
    )
    const bodies = [
      '{"metadata":{"constructor":["x"]}}',
      '{"metadata":{"toString":["x"]}}',
      '{"metadata":{"hasOwnProperty":["x"]}}',
      '{"metadata":{"valueOf":["x"]}}',
    ]
    for (const text of bodies) {
      for (const path of ['/article/search', '/pricelist/search']) {
        const answer = await server.request('POST', `${shop.base}${path}`, {
          raw: text,
          headers: { 'content-type': 'application/json' },
          token: shop.token,
        })
        t.same([answer.status, answer.body?.total], [200, 0], `${path} ${text}`)
      }
      const query = await server.request('POST', `${shop.base}/pricelist/query`, {
        raw: text,
        headers: { 'content-type': 'application/json' },
        token: shop.token,
      })
      t.same([query.status, query.body?.total], [200, 0], `/pricelist/query ${text}`)
      const prices = `{"skus":["A-1"],"tax_area":"SE","pricelist_filter":${text}}`
      const priced = await server.request('POST', `${shop.base}/price/query`, {
        raw: prices,
        headers: { 'content-type': 'application/json' },
        token: shop.token,
      })
      t.equal(priced.status, 400, `/price/query with pricelist_filter ${text}: no pricelist selected`)
    }
    const own = await shop.call('POST', '/article/search', { metadata: { colour: ['red'] } })
    t.same(
      own.body.items.map((item: { sku: string }) => item.sku),
      ['A-1'],
      'an own key still matches',
    )
  },
)

t.test(
  'metadata and price-field keys: 1 to 64 characters and never __proto__ (400), so that what is stored reads back the same after a restart',
  async (t) => {
    const shop = await server.tenant('map-keys')
    const send = (method: string, path: string, text: string) =>
      server.request(method, `${shop.base}${path}`, {
        raw: text,
        headers: { 'content-type': 'application/json' },
        token: shop.token,
      })
    // JSON.parse makes `__proto__` an own key, as a client sends it; a JavaScript literal would not.
    for (const key of ['__proto__', '', 'k'.repeat(65)]) {
      const metadata = `{"${key}":["x"]}`
      for (const [method, path, text] of [
        ['PUT', '/article/A-1', `{"name":"a","metadata":${metadata}}`],
        ['PUT', '/pricelist/PL-1', `{"currency_code":"EUR","vat_mode":"NET","metadata":${metadata}}`],
        ['POST', '/article/search', `{"metadata":${metadata}}`],
        ['PUT', '/price/A-1/PL-1', `{"price":{"sales":5,"fields":{"${key}":1}}}`],
      ] as const) {
        const answer = await send(method, path, text)
        t.same(
          [answer.status, answer.body?.code],
          [400, 'validation_failed'],
          `${method} ${path} with the key ${JSON.stringify(key.slice(0, 10))}`,
        )
      }
    }
    t.equal((await shop.get('/article/A-1')).status, 404, 'nothing was stored')
    t.equal(
      (await send('PUT', '/article/A-1', `{"name":"a","metadata":{"${'k'.repeat(64)}":["x"],"constructor":["y"]}}`))
        .status,
      202,
      '64 characters and other names are keys',
    )
    t.equal(
      (await send('PUT', '/price/A-1/PL-1', '{"price":{"sales":5,"fields":{"cost":1,"constructor":2}}}')).status,
      202,
    )
    await server.restart()
    await shop.refreshToken()
    t.same(
      Object.keys((await shop.get('/article/A-1')).body.metadata).sort(),
      ['constructor', 'k'.repeat(64)],
      'the keys read back after a restart',
    )
    t.same(
      (await shop.get('/price?sku=A-1')).body.items[0].price.fields,
      { constructor: 2, cost: 1 },
      'the price fields too',
    )
  },
)
