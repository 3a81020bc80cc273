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
