/**
 * System endpoints and addressing: health, readiness, Prometheus metrics, the OpenAPI description,
 * the legacy /api/v1 prefix, Host-based tenant addressing, unknown routes and methods, and the demo
 * tenant provisioned on first start.
 */
import { existsSync, readFileSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import path from 'node:path'
import t from 'tap'
import { outboxLink, spendLink } from '../../helpers/console.js'
import { startServer } from '../../helpers/server.js'
import { suiteServer } from '../../helpers/suite.js'

const {
  server,
  tenants: { acme },
} = await suiteServer({ tenants: { acme: {} } })

t.before(async () => {
  await acme.call('PUT', '/article/X', { name: 'Mug', type: 'kitchen' })
})

/** A request with a chosen Host header (fetch does not allow setting it). */
function withHost(
  port: number,
  host: string,
  method: string,
  urlPath: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<{ status: number; body: any; text: string }> {
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(
      { host: '127.0.0.1', port, method, path: urlPath, headers: { ...headers, host } },
      (response) => {
        let text = ''
        response.setEncoding('utf8')
        response.on('data', (chunk: string) => (text += chunk))
        response.on('end', () => {
          let parsed: unknown
          try {
            parsed = text === '' ? undefined : JSON.parse(text)
          } catch {
            parsed = undefined
          }
          resolve({ status: response.statusCode ?? 0, body: parsed, text })
        })
      },
    )
    outgoing.on('error', reject)
    if (body !== undefined) outgoing.write(body)
    outgoing.end()
  })
}

/** Prometheus sample lines of one metric whose labels include all of `labels`. */
function samples(text: string, name: string, labels: Record<string, string>): { labels: string; value: number }[] {
  const found: { labels: string; value: number }[] = []
  for (const line of text.split('\n')) {
    const match = /^([a-z_]+)\{([^}]*)\} (\S+)$/.exec(line)
    if (match === null || match[1] !== name) continue
    if (Object.entries(labels).every(([key, value]) => match[2]!.includes(`${key}="${value}"`)))
      found.push({ labels: match[2]!, value: Number(match[3]) })
  }
  return found
}

t.test('/healthz answers 200', async (t) => {
  const answer = await server.request('GET', '/healthz')
  t.equal(answer.status, 200)
  t.same(Object.keys(answer.body), ['status', 'version', 'commit'], 'and the build (test/server/build-info.test.ts)')
  t.equal(answer.body.status, 'ok')
})

t.test('/readyz answers 200 once every tenant is loaded', async (t) => {
  const answer = await server.request('GET', '/readyz')
  t.equal(answer.status, 200)
  // The data directory's free space (tenant/storage-guard.ts): the default reserve, 1024 MiB.
  t.same(Object.keys(answer.body), ['status', 'storage', 'query_workers'])
  // Every worker warmed before the first 200 (tenant/runtime.ts `warm`).
  t.ok(answer.body.query_workers.threads >= 1, `query workers (${answer.body.query_workers.threads})`)
  t.equal(answer.body.query_workers.warmed, answer.body.query_workers.threads, 'every worker warmed')
  t.equal(answer.body.status, 'ready')
  t.same(Object.keys(answer.body.storage).sort(), ['free_bytes', 'nearly_full', 'reserve_bytes'])
  t.equal(answer.body.storage.reserve_bytes, 1024 * 1024 * 1024)
  t.ok(
    Number.isInteger(answer.body.storage.free_bytes) &&
      answer.body.storage.free_bytes > answer.body.storage.reserve_bytes,
    `free bytes sampled (${answer.body.storage.free_bytes})`,
  )
  t.equal(answer.body.storage.nearly_full, false, 'above the reserve: writes are admitted')
})

t.test('/metrics is Prometheus text with request counts and latency buckets per route pattern', async (t) => {
  for (let index = 0; index < 3; index++) t.equal((await acme.get('/article/X')).status, 200)
  t.equal((await acme.get('/article/MISSING')).status, 404)
  const answer = await server.request('GET', '/metrics')
  t.equal(answer.status, 200)
  t.match(answer.headers.get('content-type'), /^text\/plain/)
  t.match(answer.text, /# TYPE pricing_http_requests_total counter/)
  t.match(answer.text, /# TYPE pricing_http_request_duration_seconds histogram/)
  const ok = samples(answer.text, 'pricing_http_requests_total', {
    route: '/article/:sku',
    method: 'GET',
    status: '200',
  })
  t.equal(ok.length, 1, 'one series for the route pattern, not per SKU')
  t.ok(ok[0]!.value >= 3, `counted ${ok[0]?.value}`)
  const missing = samples(answer.text, 'pricing_http_requests_total', {
    route: '/article/:sku',
    method: 'GET',
    status: '404',
  })
  t.equal(missing[0]?.value, 1)
  const buckets = samples(answer.text, 'pricing_http_request_duration_seconds_bucket', {
    route: '/article/:sku',
    method: 'GET',
    status: '200',
  })
  t.ok(buckets.length >= 5, 'several buckets')
  const infinite = buckets.find((bucket) => bucket.labels.includes('le="+Inf"'))
  t.ok(infinite !== undefined && infinite.value >= 3, 'the +Inf bucket counts every request')
  t.notOk(answer.text.includes('route="/t/acme'), 'no raw paths as labels')
})

t.test('/openapi.json is OpenAPI 3.1 with tenant paths and closed request bodies', async (t) => {
  const answer = await server.request('GET', '/openapi.json')
  t.equal(answer.status, 200)
  t.match(answer.headers.get('content-type'), /application\/json/)
  const doc = answer.body
  t.match(doc.openapi, /^3\.1\./)
  const article = doc.paths['/t/{slug}/article/{sku}']
  t.ok(article?.get && article?.put && article?.delete, 'GET, PUT and DELETE of an article')
  const putSchema = article.put.requestBody.content['application/json'].schema
  t.equal(putSchema.additionalProperties, false)
  t.ok('name' in putSchema.properties)
  const names = article.get.parameters.map((parameter: { name: string }) => parameter.name)
  t.ok(names.includes('slug') && names.includes('sku'))
  t.ok(doc.paths['/t/{slug}/article']?.get, 'the article list')
  t.ok(doc.paths['/oauth2/token']?.post, 'the token endpoint')
  t.ok(doc.paths['/admin/tenants']?.post, 'the operator API')
  for (const [route, operations] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
    t.notOk(route.includes(':'), `${route} uses {param} syntax`)
    t.ok(Object.keys(operations).length > 0)
  }
})

t.test('the legacy /api/v1 prefix answers exactly like the plain base URL', async (t) => {
  const plain = await acme.get('/article/X')
  const legacy = await acme.get('/api/v1/article/X')
  t.equal(legacy.status, 200)
  t.same(legacy.body, plain.body)
  t.equal((await acme.get('/api/v1/article/NONE')).status, 404)
  const write = await acme.call('PUT', '/api/v1/article/LEGACY', { name: 'Through the prefix' })
  t.equal(write.status, 202)
  t.equal((await acme.get('/article/LEGACY')).body.name, 'Through the prefix')
  t.equal((await server.request('GET', '/t/acme/api/v1/article/X')).status, 401, 'auth still applies')
})

t.test('a trailing slash addresses the same resource', async (t) => {
  const answer = await acme.get('/article/X/')
  t.equal(answer.status, 200)
  t.equal(answer.body.sku, 'X')
})

t.test('Host-based addressing: {slug}.{PRICING_DOMAIN} answers like /t/{slug}', async (t) => {
  const hosted = await startServer({ env: { PRICING_DOMAIN: 'pricing.test' } })
  t.teardown(() => hosted.dispose())
  const client = await hosted.tenant('acme')
  await client.call('PUT', '/article/X', { name: 'Hosted mug' })
  const byPath = await client.get('/article/X')
  const auth = { authorization: `Bearer ${client.token}` }
  const byHost = await withHost(hosted.port, `acme.pricing.test:${hosted.port}`, 'GET', '/article/X', auth)
  t.equal(byHost.status, 200)
  t.same(byHost.body, byPath.body)
  const legacy = await withHost(hosted.port, 'acme.pricing.test', 'GET', '/api/v1/article/X', auth)
  t.same(legacy.body, byPath.body)
  const unknown = await withHost(hosted.port, 'nope.pricing.test', 'GET', '/article/X', auth)
  t.equal(unknown.status, 404)
  t.equal(unknown.body.code, 'tenant_not_found')
  const noToken = await withHost(hosted.port, 'acme.pricing.test', 'GET', '/article/X')
  t.equal(noToken.status, 401)
  const form = new URLSearchParams({
    grant_type: 'client_credentials',
    client_id: client.clientId,
    client_secret: client.clientSecret,
  }).toString()
  const token = await withHost(
    hosted.port,
    'acme.pricing.test',
    'POST',
    '/oauth2/token',
    { 'content-type': 'application/x-www-form-urlencoded', 'content-length': String(form.length) },
    form,
  )
  t.equal(token.status, 200, 'the token endpoint under the tenant host')
  t.equal(token.body.token_type, 'Bearer')
  const root = await withHost(hosted.port, 'pricing.test', 'GET', '/healthz')
  t.equal(root.status, 200, 'the bare domain is the root')
})

t.test('an unknown route answers 404 route_not_found', async (t) => {
  const root = await server.request('GET', '/nope')
  t.equal(root.status, 404)
  t.equal(root.body.code, 'route_not_found')
  t.equal(root.body.error, 'Not Found')
  t.equal(root.body.status, 404)
  const tenant = await acme.get('/nope/deeper')
  t.equal(tenant.status, 404)
  t.equal(tenant.body.code, 'route_not_found')
})

t.test('a wrong method on a known path answers 405 with Allow', async (t) => {
  const root = await server.request('DELETE', '/healthz')
  t.equal(root.status, 405)
  t.equal(root.body.code, 'method_not_allowed')
  t.equal(root.body.error, 'Method Not Allowed')
  t.match(root.headers.get('allow'), /GET/)
  const token = await server.request('GET', '/oauth2/token')
  t.equal(token.status, 405)
  t.match(token.headers.get('allow'), /POST/)
  const tenant = await acme.call('PATCH', '/article/X', { name: 'x' })
  t.equal(tenant.status, 405)
  t.match(tenant.headers.get('allow'), /PUT/)
  t.equal((await acme.get('/article/X')).body.name, 'Mug', 'nothing was written')
})

t.test('the demo tenant is provisioned once on first start and the credentials in its file work', async (t) => {
  const demo = await startServer({ env: { PRICING_DEMO: 'true' } })
  t.teardown(() => demo.dispose())
  const file = path.join(demo.dataDir, 'demo-credentials.json')
  for (let attempt = 0; attempt < 400 && !existsSync(file); attempt++)
    await new Promise((resolve) => setTimeout(resolve, 25))
  const written = readFileSync(file, 'utf8')
  const credentials = JSON.parse(written) as Record<string, string>
  t.equal(credentials['base_url'], `${demo.url}/t/demo`)
  t.match(credentials['client_id'], /^[0-9a-f]{24}$/)
  t.match(credentials['client_secret'], /^[0-9a-f]{64}$/)
  t.notOk(demo.stdout.includes(credentials['client_secret']!), 'the secret is not printed')
  const form = new URLSearchParams({
    grant_type: 'client_credentials',
    client_id: credentials['client_id']!,
    client_secret: credentials['client_secret']!,
  }).toString()
  const token = await demo.request('POST', '/oauth2/token', {
    raw: form,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  })
  t.equal(token.status, 200)
  const article = await demo.request('GET', '/t/demo/article/ESP-HOUSE-500', { token: token.body.access_token })
  t.equal(article.status, 200)
  t.equal(article.body.name, 'House Espresso, whole beans 500 g')
  // The owner's console link: a sign-in mail in the outbox, its link in the log, and it works.
  t.equal(credentials['owner_email'], 'owner@demo.example')
  t.equal(credentials['portal_url'], `${demo.url}/portal`)
  t.equal(credentials['console_url'], `${demo.url}/console/demo`)
  for (let attempt = 0; attempt < 400 && !demo.stdout.includes('mail written to the outbox'); attempt++)
    await new Promise((resolve) => setTimeout(resolve, 25))
  const logged = /"to":"owner@demo.example"[^\n]*"link":"([^"]+)"/.exec(demo.stdout)
  t.ok(logged !== null, "the owner's sign-in link is in the log")
  t.equal(outboxLink(demo, 'owner@demo.example'), logged![1], 'and in the outbox mail')
  const signedIn = await spendLink(demo, logged![1]!)
  t.equal(signedIn.status, 303, "the link's Sign in button signs the owner in")
  t.equal(signedIn.headers.get('location'), '/console/demo', "and lands on the demo tenant's console")
  const cookie = /pricing_session=[^;]+/.exec(signedIn.headers.get('set-cookie') ?? '')![0]
  t.equal(
    (await demo.request('GET', '/t/demo/management/users', { headers: { cookie } })).body[0].role,
    'owner',
    'as the owner of demo',
  )
  await demo.restart()
  await new Promise((resolve) => setTimeout(resolve, 200))
  t.notOk(demo.stdout.includes('demo tenant provisioned'), 'no second demo provisioning')
  t.equal(readFileSync(file, 'utf8'), written, 'the credentials file is left as it was')
  const again = await demo.request('POST', '/oauth2/token', {
    raw: form,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  })
  t.equal(again.status, 200, 'the demo key still works after restart')
  const tenants = await demo.admin('GET', '/admin/tenants')
  t.same(
    tenants.body.map((tenant: { slug: string }) => tenant.slug),
    ['demo'],
  )
})

t.test('PRICING_DEMO=false provisions no demo tenant', async (t) => {
  const plain = await startServer({ env: { PRICING_DEMO: 'false' } })
  t.teardown(() => plain.dispose())
  await new Promise((resolve) => setTimeout(resolve, 200))
  t.notOk(plain.stdout.includes('client_secret'))
  t.notOk(existsSync(path.join(plain.dataDir, 'demo-credentials.json')), 'no credentials file')
  t.equal((await plain.request('GET', '/t/demo/article')).status, 404)
})
