/**
 * The operator API (API.md §2): off without PRICING_ADMIN_TOKEN, guarded by the admin token,
 * tenant create/list/get/patch with validation, unknown tenants, and API key creation.
 */
import t from 'tap'
import { adminToken, startServer } from '../../helpers/server.js'
import { suiteServer } from '../../helpers/suite.js'

const { server } = await suiteServer()

const rfc3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/

async function createTenant(slug: string, extra: Record<string, unknown> = {}) {
  return server.admin('POST', '/admin/tenants', { slug, tier: 'standard', region: 'eu-north', ...extra })
}

t.test('the admin API is off (404) when PRICING_ADMIN_TOKEN is unset', async (t) => {
  const off = await startServer({ env: { PRICING_ADMIN_TOKEN: '' } })
  t.teardown(() => off.dispose())
  for (const token of [adminToken, '']) {
    const list = await off.request('GET', '/admin/tenants', { token })
    t.equal(list.status, 404)
    t.equal(list.body.code, 'route_not_found')
  }
  const create = await off.request('POST', '/admin/tenants', {
    body: { slug: 'x', tier: 'starter', region: 'eu' },
    token: '',
  })
  t.equal(create.status, 404)
  t.equal((await off.request('GET', '/admin/tenants/x/keys')).status, 404)
})

t.test('a wrong or missing admin token answers 401 and changes nothing', async (t) => {
  const wrong = await server.request('POST', '/admin/tenants', {
    body: { slug: 'sneaky', tier: 'starter', region: 'eu' },
    token: 'wrong-token',
  })
  t.equal(wrong.status, 401)
  t.equal(wrong.body.code, 'unauthorized')
  t.equal(wrong.body.error, 'Unauthorized')
  const prefix = await server.request('GET', '/admin/tenants', { token: `${adminToken}-and-more` })
  t.equal(prefix.status, 401)
  const missing = await server.request('GET', '/admin/tenants')
  t.equal(missing.status, 401)
  t.equal((await server.admin('GET', '/admin/tenants/sneaky')).status, 404, 'the refused create stored nothing')
  const scheme = await server.request('GET', '/admin/tenants', { headers: { authorization: `bearer ${adminToken}` } })
  t.equal(scheme.status, 200, 'the scheme name is case-insensitive')
})

t.test('creating a tenant answers 201 with slug, tier, region, status active and created_at', async (t) => {
  const before = Date.now()
  const answer = await createTenant('shop-1', { owner_email: 'owner@example.com' })
  t.equal(answer.status, 201)
  t.equal(answer.body.slug, 'shop-1')
  t.equal(answer.body.tier, 'standard')
  t.equal(answer.body.region, 'eu-north')
  t.equal(answer.body.status, 'active')
  t.equal(answer.body.owner_email, 'owner@example.com')
  t.match(answer.body.created_at, rfc3339)
  t.ok(Date.parse(answer.body.created_at) >= before - 1000)
  const read = await server.admin('GET', '/admin/tenants/shop-1')
  t.equal(read.status, 200)
  t.same(read.body, answer.body)
})

t.test('a new tenant is usable at once: its base URL answers (401 without a token)', async (t) => {
  await createTenant('ready-now')
  const answer = await server.request('GET', '/t/ready-now/article')
  t.equal(answer.status, 401)
})

t.test('a duplicate slug answers 409 and leaves the first tenant unchanged', async (t) => {
  await createTenant('dup', { tier: 'starter' })
  const again = await createTenant('dup', { tier: 'enterprise' })
  t.equal(again.status, 409)
  t.equal(again.body.code, 'conflict')
  t.equal((await server.admin('GET', '/admin/tenants/dup')).body.tier, 'starter')
})

t.test('concurrent creates of one slug: exactly one answers 201, the others 409', async (t) => {
  const answers = await Promise.all(
    Array.from({ length: 12 }, (_, index) => createTenant('contended', { region: `r${index}` })),
  )
  const statuses = answers.map((answer) => answer.status)
  t.equal(statuses.filter((status) => status === 201).length, 1, `statuses ${statuses.join(',')}`)
  t.equal(statuses.filter((status) => status === 409).length, 11)
  const winner = answers.find((answer) => answer.status === 201)!
  t.equal(
    (await server.admin('GET', '/admin/tenants/contended')).body.region,
    winner.body.region,
    'the stored tenant is the winner',
  )
})

t.test('an invalid slug answers 400 and creates nothing', async (t) => {
  for (const slug of ['Bad_Slug', '-x', 'x-', 'a'.repeat(64), '', 'has space', 'ünï']) {
    const answer = await createTenant(slug)
    t.equal(answer.status, 400, JSON.stringify(slug))
    t.equal(answer.body.code, 'validation_failed')
  }
  const list = await server.admin('GET', '/admin/tenants')
  const slugs = list.body.map((tenant: { slug: string }) => tenant.slug)
  t.notOk(slugs.includes('Bad_Slug') || slugs.includes('-x') || slugs.includes('a'.repeat(64)))
  const longest = await createTenant('a'.repeat(63))
  t.equal(longest.status, 201, 'a 63-character slug is allowed')
  t.equal((await createTenant('7')).status, 201, 'a one-character slug is allowed')
})

t.test('an invalid tier, a missing region or an unknown field answers 400', async (t) => {
  const tier = await createTenant('tiered', { tier: 'gold' })
  t.equal(tier.status, 400)
  t.equal(tier.body.code, 'validation_failed')
  t.ok(tier.body.details.some((detail: { path: string }) => detail.path.includes('tier')))
  const region = await server.admin('POST', '/admin/tenants', { slug: 'tiered', tier: 'starter' })
  t.equal(region.status, 400)
  const unknown = await createTenant('tiered', { colour: 'red' })
  t.equal(unknown.status, 400)
  const badLimit = await createTenant('tiered', { limits: { articles: -1 } })
  t.equal(badLimit.status, 400)
  const malformed = await server.request('POST', '/admin/tenants', {
    raw: '{"slug":',
    headers: { 'content-type': 'application/json' },
    token: adminToken,
  })
  t.equal(malformed.status, 400)
  t.equal(malformed.body.code, 'malformed_json')
  t.equal((await server.admin('GET', '/admin/tenants/tiered')).status, 404, 'nothing was created')
})

t.test('the tenant list holds every created tenant', async (t) => {
  await createTenant('listed-a', { tier: 'starter' })
  await createTenant('listed-b', { tier: 'enterprise' })
  const list = await server.admin('GET', '/admin/tenants')
  t.equal(list.status, 200)
  t.ok(Array.isArray(list.body))
  const bySlug = new Map(list.body.map((tenant: { slug: string }) => [tenant.slug, tenant]))
  t.match(bySlug.get('listed-a'), { slug: 'listed-a', tier: 'starter', status: 'active' })
  t.match(bySlug.get('listed-b'), { slug: 'listed-b', tier: 'enterprise', status: 'active' })
})

t.test('PATCH changes the tier and the runtime limits follow', async (t) => {
  const client = await server.tenant('patchy', { tier: 'starter' })
  t.equal((await client.get('/article')).headers.get('x-ratelimit-limit'), '2500', 'starter query burst')
  const patched = await server.admin('PATCH', '/admin/tenants/patchy', { tier: 'enterprise' })
  t.equal(patched.status, 200)
  t.equal(patched.body.tier, 'enterprise')
  t.equal(patched.body.status, 'active')
  t.equal((await server.admin('GET', '/admin/tenants/patchy')).body.tier, 'enterprise')
  t.equal((await client.get('/article')).headers.get('x-ratelimit-limit'), '100000', 'enterprise query burst')
})

t.test('PATCH limits overrides merge, apply at once and survive a restart', async (t) => {
  const client = await server.tenant('limited', { tier: 'standard' })
  const first = await server.admin('PATCH', '/admin/tenants/limited', { limits: { query_burst: 7, articles: 5 } })
  t.equal(first.status, 200)
  t.same(first.body.limits, { query_burst: 7, articles: 5 })
  const second = await server.admin('PATCH', '/admin/tenants/limited', { limits: { articles: null } })
  t.same(second.body.limits, { query_burst: 7, articles: null }, 'later overrides merge into earlier ones')
  t.equal((await client.get('/article')).headers.get('x-ratelimit-limit'), '7')
  t.equal(second.body.tier, 'standard', 'the tier is unchanged')
  await server.restart()
  t.same((await server.admin('GET', '/admin/tenants/limited')).body.limits, { query_burst: 7, articles: null })
  await client.refreshToken()
  t.equal((await client.get('/article')).headers.get('x-ratelimit-limit'), '7')
})

t.test('PATCH refuses an invalid status, tier or field with 400 and changes nothing', async (t) => {
  await createTenant('strict', { tier: 'starter' })
  for (const body of [
    { status: 'deleted' },
    { status: 'requested' },
    { tier: 'gold' },
    { slug: 'other' },
    { limits: { query_burst: 'many' } },
  ]) {
    const answer = await server.admin('PATCH', '/admin/tenants/strict', body)
    t.equal(answer.status, 400, JSON.stringify(body))
    t.equal(answer.body.code, 'validation_failed')
  }
  const read = await server.admin('GET', '/admin/tenants/strict')
  t.equal(read.body.tier, 'starter')
  t.equal(read.body.status, 'active')
  t.same(read.body.limits, {})
})

t.test('an unknown tenant answers 404 on every admin route', async (t) => {
  const routes: [string, string, unknown?][] = [
    ['GET', '/admin/tenants/ghost'],
    ['PATCH', '/admin/tenants/ghost', { tier: 'starter' }],
    ['POST', '/admin/tenants/ghost/keys', { name: 'k' }],
    ['GET', '/admin/tenants/ghost/keys'],
    ['DELETE', '/admin/tenants/ghost/keys/0123456789abcdef01234567'],
  ]
  for (const [method, route, body] of routes) {
    const answer = await server.admin(method, route, body)
    t.equal(answer.status, 404, `${method} ${route}`)
    t.equal(answer.body.code, 'not_found')
  }
  t.equal((await server.admin('GET', '/admin/tenants/ghost')).status, 404, 'PATCH did not create it')
})

t.test('an unknown tenant slug in an API path answers 404 before auth', async (t) => {
  const plain = await server.request('GET', '/t/nope/article')
  t.equal(plain.status, 404)
  t.equal(plain.body.code, 'tenant_not_found')
  t.equal(plain.body.error, 'Not Found')
  const invalid = await server.request('GET', '/t/Not_A_Slug/article')
  t.equal(invalid.status, 404)
  const write = await server.request('PUT', '/t/nope/article/X', { body: { name: 'x' } })
  t.equal(write.status, 404)
})

t.test('key create answers a 24-hex client_id and a 64-hex secret shown only there', async (t) => {
  await createTenant('keyed')
  const answer = await server.admin('POST', '/admin/tenants/keyed/keys', { name: 'ci' })
  t.equal(answer.status, 201)
  t.equal(answer.body.name, 'ci')
  t.match(answer.body.client_id, /^[0-9a-f]{24}$/)
  t.match(answer.body.client_secret, /^[0-9a-f]{64}$/)
  t.match(answer.body.created_at, rfc3339)
  const other = await server.admin('POST', '/admin/tenants/keyed/keys', { name: 'ci-2' })
  t.not(other.body.client_id, answer.body.client_id)
  t.not(other.body.client_secret, answer.body.client_secret)
  const list = await server.admin('GET', '/admin/tenants/keyed/keys')
  t.same(
    list.body.map((key: { name: string }) => key.name),
    ['ci', 'ci-2'],
  )
  t.notOk(list.text.includes(answer.body.client_secret))
})

t.test('key create without a name or with an unknown field answers 400', async (t) => {
  await createTenant('keyless')
  t.equal((await server.admin('POST', '/admin/tenants/keyless/keys', {})).status, 400)
  t.equal((await server.admin('POST', '/admin/tenants/keyless/keys', { name: '' })).status, 400)
  t.equal((await server.admin('POST', '/admin/tenants/keyless/keys', { name: 'x', secret: 'mine' })).status, 400)
  t.same((await server.admin('GET', '/admin/tenants/keyless/keys')).body, [], 'no key was created')
})

t.test("revoking a key under another tenant's path answers 404 and leaves it active", async (t) => {
  await createTenant('owner-a')
  await createTenant('owner-b')
  const key = await server.admin('POST', '/admin/tenants/owner-a/keys', { name: 'a' })
  const wrong = await server.admin('DELETE', `/admin/tenants/owner-b/keys/${key.body.client_id}`)
  t.equal(wrong.status, 404)
  const listed = (await server.admin('GET', '/admin/tenants/owner-a/keys')).body[0]
  t.equal(listed.revoked_at, null)
  const right = await server.admin('DELETE', `/admin/tenants/owner-a/keys/${key.body.client_id}`)
  t.equal(right.status, 204)
  t.equal(right.text, '')
  t.equal(right.headers.get('content-length'), null, 'a 204 carries no Content-Length')
  t.equal(
    (await server.admin('DELETE', `/admin/tenants/owner-a/keys/${key.body.client_id}`)).status,
    204,
    'revoking twice is harmless',
  )
})
