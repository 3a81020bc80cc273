/**
 * The access log (issue 15 point 3): with PRICING_ACCESS_LOG=true every answer adds one JSON line
 * on stdout with method, route pattern (never the raw path), status, duration, tenant, bytes and
 * request id; PRICING_ACCESS_LOG_SAMPLE=0 keeps only 4xx and 5xx; off (the default) adds none;
 * PUT /admin/access-log turns it on and off on a running server, until the next start.
 */
import t from 'tap'
import { AccessLog } from '../../http/access-log.js'
import type { Incoming } from '../../http/adapter.js'
import { logRecords, stopAndReadRecords, waitForRecord, type LogRecord } from '../helpers/logs.js'
import { startServer, type TenantClient, type TestServer } from '../helpers/server.js'

const accessFields = [
  'bytes',
  'duration_ms',
  'level',
  'method',
  'msg',
  'request_id',
  'route',
  'service',
  'status',
  'tenant',
  'time',
]

const isAccess = (record: LogRecord): boolean => record['msg'] === 'request'

function idHeader(id: string): Record<string, string> {
  return { 'x-request-id': id }
}

t.test('on: one line per answer with the route pattern, tenant, status, bytes and id', async (t) => {
  // An empty feed URL (helpers/server.ts) makes POST /fx/fetch answer 502.
  const server: TestServer = await startServer({ env: { PRICING_ACCESS_LOG: 'true', PRICING_ACCESS_LOG_SAMPLE: '1' } })
  t.teardown(() => server.dispose())
  const acme: TenantClient = await server.tenant('acme')
  t.equal((await acme.call('PUT', '/article/SKU-777', { name: 'Mug', type: 'kitchen' })).status, 202)
  const read = await acme.call('GET', '/article/SKU-777', undefined, idHeader('read-article'))
  t.equal(read.status, 200)

  const line = await waitForRecord(server, (record) => record['request_id'] === 'read-article', "of 'read-article'")
  t.same(Object.keys(line).sort(), accessFields, 'exactly the access fields')
  t.equal(line['level'], 30)
  t.equal(line['msg'], 'request')
  t.equal(line['service'], 'pricing-service')
  t.equal(line['method'], 'GET')
  t.equal(line['route'], '/article/:sku', 'the route pattern')
  t.notOk(JSON.stringify(line).includes('SKU-777'), 'the raw path (with the SKU) is nowhere in the line')
  t.equal(line['status'], 200)
  t.equal(line['tenant'], 'acme')
  t.equal(line['bytes'], Buffer.byteLength(read.text), 'bytes: the body length')
  t.ok(
    typeof line['duration_ms'] === 'number' && (line['duration_ms'] as number) >= 0,
    `duration_ms is a number of ms (${line['duration_ms']})`,
  )
  t.ok(Math.abs(Date.parse(line['time'] as string) - Date.now()) < 60_000, 'time is an ISO instant of now')

  const metrics = (await server.request('GET', '/metrics')).text
  t.match(metrics, 'route="/article/:sku"', 'the same label as /metrics')

  await server.request('GET', '/healthz', { headers: idHeader('root-route') })
  await server.request('GET', '/t/nobody/article/SKU-777', { headers: idHeader('unknown-tenant') })
  await server.request('GET', `${acme.base}/article/SKU-777`, { headers: idHeader('no-token') })
  const empty = await acme.call('GET', '/article/SKU-777', undefined, {
    ...idHeader('not-modified'),
    'if-none-match': read.headers.get('etag') ?? '',
  })
  const failed = await acme.call('POST', '/fx/fetch', undefined, idHeader('feed-failed'))
  t.equal(failed.status, 502)
  await waitForRecord(
    server,
    (record) => isAccess(record) && record['request_id'] === 'feed-failed',
    "of 'feed-failed'",
  )
  const byId = new Map(
    logRecords(server.stdout)
      .filter(isAccess)
      .map((record) => [record['request_id'], record]),
  )
  t.match(
    byId.get('root-route'),
    { route: '/healthz', tenant: null, status: 200, method: 'GET' },
    'a root route: no tenant',
  )
  t.match(
    byId.get('unknown-tenant'),
    { route: 'tenant', tenant: null, status: 404 },
    'an unknown tenant: its label, no slug',
  )
  t.match(byId.get('no-token'), { route: '/article/:sku', tenant: 'acme', status: 401 })
  t.match(byId.get('not-modified'), { status: empty.status, bytes: Buffer.byteLength(empty.text) })
  t.match(byId.get('feed-failed'), {
    route: '/fx/fetch',
    method: 'POST',
    status: 502,
    tenant: 'acme',
    bytes: Buffer.byteLength(failed.text),
  })
  const failure = logRecords(server.stdout).filter((record) => record['request_id'] === 'feed-failed')
  t.same(
    failure.map((record) => record['msg']).sort(),
    ['request', 'request failed'],
    'a 5xx: its access line and its one error record',
  )
})

t.test('sample 0: only 4xx and 5xx answers are logged', async (t) => {
  const server = await startServer({ env: { PRICING_ACCESS_LOG: 'true', PRICING_ACCESS_LOG_SAMPLE: '0' } })
  t.teardown(() => server.dispose())
  const acme = await server.tenant('acme')
  for (let index = 0; index < 20; index++) {
    t.equal((await server.request('GET', '/healthz', { headers: idHeader(`fine-${index}`) })).status, 200)
  }
  t.equal((await acme.call('GET', '/pricelist', undefined, idHeader('fine-tenant'))).status, 200)
  t.equal((await server.request('GET', `${acme.base}/pricelist`, { headers: idHeader('error-401') })).status, 401)
  t.equal((await server.request('GET', '/t/nobody/pricelist', { headers: idHeader('error-404') })).status, 404)
  const records = (await stopAndReadRecords(server)).filter(isAccess)
  const ids = records.map((record) => record['request_id'])
  t.ok(ids.includes('error-401') && ids.includes('error-404'), 'the errors are logged')
  t.notOk(
    ids.some((id) => String(id).startsWith('fine-')),
    'no successful answer is',
  )
  t.ok(
    records.every((record) => (record['status'] as number) >= 400),
    'nor any other 2xx (the harness made some)',
  )
})

t.test('off (the default): no access lines', async (t) => {
  const server = await startServer()
  t.teardown(() => server.dispose())
  const acme = await server.tenant('acme')
  t.equal((await acme.call('GET', '/pricelist')).status, 200)
  t.equal((await server.request('GET', '/t/nobody/pricelist')).status, 404)
  t.equal((await server.request('GET', '/healthz')).status, 200)
  const records = await stopAndReadRecords(server)
  t.ok(records.length >= 3, `the server logged its start and stop (${records.length} records)`)
  t.equal(records.filter(isAccess).length, 0, 'but no request')
})

t.test('PUT /admin/access-log: on and off while running, until the next start', async (t) => {
  const server = await startServer()
  t.teardown(() => server.dispose())
  t.same(
    (await server.admin('GET', '/admin/access-log')).body,
    { enabled: false, sample: 0.1 },
    'off, with the default sample',
  )
  t.equal((await server.request('GET', '/admin/access-log')).status, 401, 'the admin token is needed')
  t.equal((await server.request('PUT', '/admin/access-log', { body: { enabled: true }, token: 'wrong' })).status, 401)
  for (const refused of [
    { enabled: true, sample: 1.5 },
    { enabled: true, sample: -0.1 },
    { sample: 1 },
    { enabled: 'yes' },
    { enabled: true, level: 'debug' },
  ]) {
    const answer = await server.admin('PUT', '/admin/access-log', refused)
    t.equal(answer.status, 400, `refused: ${JSON.stringify(refused)}`)
    t.equal(answer.body.code, 'validation_failed')
  }
  t.same(
    (await server.admin('GET', '/admin/access-log')).body,
    { enabled: false, sample: 0.1 },
    'a refused change changes nothing',
  )

  await server.request('GET', '/healthz', { headers: idHeader('before-on') })
  const on = await server.admin('PUT', '/admin/access-log', { enabled: true, sample: 1 })
  t.equal(on.status, 200)
  t.same(on.body, { enabled: true, sample: 1 })
  await server.request('GET', '/healthz', { headers: idHeader('while-on') })
  t.same(
    (await server.admin('PUT', '/admin/access-log', { enabled: false })).body,
    { enabled: false, sample: 1 },
    'the sample is kept',
  )
  await server.request('GET', '/healthz', { headers: idHeader('after-off') })
  const records = await stopAndReadRecords(server)
  const ids = records.filter(isAccess).map((record) => record['request_id'])
  t.ok(ids.includes('while-on'), 'logged while on (turning it off writes what was gathered)')
  t.notOk(ids.includes('before-on') || ids.includes('after-off'), 'nothing before or after')
  const changes = records.filter((record) => record['msg'] === 'access log changed')
  t.same(
    changes.map((record) => record['access_log']),
    [
      { enabled: true, sample: 1 },
      { enabled: false, sample: 1 },
    ],
    'each change is logged',
  )

  await server.start()
  t.same(
    (await server.admin('GET', '/admin/access-log')).body,
    { enabled: false, sample: 0.1 },
    'a start reads the configuration again',
  )
  await server.request('GET', '/healthz', { headers: idHeader('after-restart') })
  t.notOk(
    (await stopAndReadRecords(server)).some((record) => isAccess(record) && record['request_id'] === 'after-restart'),
    'off again',
  )
})

t.test('the sample: a random share of 2xx answers (geometric gaps), every 4xx and 5xx, whole JSON lines', async (t) => {
  const incoming = { method: 'GET', requestId: 'unit', tenantSlug: 'acme' } as Incoming
  for (const sample of [0, 0.01, 0.1, 0.5, 1]) {
    const chunks: Buffer[] = []
    const log = new AccessLog({ write: (chunk: Buffer) => chunks.push(chunk) }, { enabled: true, sample })
    const answers = 100_000
    for (let index = 0; index < answers; index++)
      log.record(incoming, '/article/:sku', index % 100 === 0 ? 404 : 200, 0.5, 'body')
    log.configure({ enabled: false, sample })
    const lines = logRecords(Buffer.concat(chunks).toString('utf8'))
    const errors = lines.filter((line) => line['status'] === 404).length
    const successes = lines.length - errors
    t.equal(errors, answers / 100, `sample ${sample}: every 404`)
    // Binomial: five standard deviations either side (and exact at 0 and 1).
    const expected = sample * answers * 0.99
    const spread = 5 * Math.sqrt(answers * 0.99 * sample * (1 - sample))
    t.ok(
      Math.abs(successes - expected) <= spread,
      `sample ${sample}: ${successes} of ${answers * 0.99} 2xx answers recorded (expected ${expected} ± ${spread.toFixed(0)})`,
    )
    t.ok(
      lines.every((line) => line['request_id'] === 'unit' && line['bytes'] === 4 && line['route'] === '/article/:sku'),
      'whole records',
    )
  }
})
