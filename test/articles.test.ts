import t from 'tap'
import { startServer, type TenantClient, type TestServer } from './helpers/server.js'

let server: TestServer
let acme: TenantClient

t.before(async () => {
  server = await startServer()
  acme = await server.tenant('acme')
})
t.teardown(async () => server.dispose())

t.test('an article written with PUT reads back with its fields and update metadata', async (t) => {
  const put = await acme.call('PUT', '/article/SKU-1', { name: 'Mug', type: 'kitchen', metadata: { color: ['red', 'blue'] } })
  t.equal(put.status, 202)
  t.equal(put.text, '')
  const read = await acme.get('/article/SKU-1')
  t.equal(read.status, 200)
  t.same(read.body, { sku: 'SKU-1', name: 'Mug', type: 'kitchen', metadata: { color: ['red', 'blue'] }, updated_at: read.body.updated_at, updated_by: acme.clientId })
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

t.test('GET /article: the full list without page and size (the specification), numbered pages with both; a walk gives every article once', async (t) => {
  const shop = await server.tenant('paged')
  const skus = ['P-07', 'P-03', 'P-01', 'P-05', 'P-02', 'P-06', 'P-04', 'P-GONE']
  t.same((await shop.call('POST', '/article/batch', skus.map((sku) => ({ sku, name: `name of ${sku}` })))).body, { accepted: 8, failed: [] })
  t.equal((await shop.call('DELETE', '/article/P-GONE')).status, 202)
  const live = skus.filter((sku) => sku !== 'P-GONE').sort()

  const all = await shop.get('/article')
  t.equal(all.status, 200)
  t.ok(Array.isArray(all.body), 'without page and size: the full list')
  t.same(all.body.map((item: { sku: string }) => item.sku), live, 'sorted by SKU, the deleted one left out')
  t.equal(all.body[0].name, 'name of P-01', 'items are whole articles')
  t.ok(Array.isArray((await shop.get('/article?size=5')).body), 'size alone: still the full list')

  const seen: string[] = []
  let pages = 0
  for (let pageNumber = 1; ; pageNumber++) {
    const answer = await shop.get(`/article?page=${pageNumber}&size=3`)
    t.equal(answer.status, 200)
    t.same(Object.keys(answer.body).sort(), ['items', 'page', 'size', 'total'], 'the envelope of GET /pricelist')
    t.same([answer.body.page, answer.body.size, answer.body.total], [pageNumber, 3, 7], `page ${pageNumber} echoes its place`)
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
})
