/**
 * Tenant isolation (issue 13): every tenant operation of the OpenAPI document called on tenant
 * beta's address with tenant acme's credentials (its API token, its console token), and acme's
 * token with beta's resource codes on acme's address. Every foreign call is refused (401), no
 * answer carries beta's data (names and an amount only beta holds), and neither tenant's
 * changelog changes.
 */
import t from 'tap'
import { consoleHeaders } from '../helpers/console.js'
import { TenantClient } from '../helpers/server.js'
import { suiteServer } from '../helpers/suite.js'

let acme: TenantClient
let beta: TenantClient
/** Beta's resource code, used in the paths of the calls (an error message may echo it). */
const betaMarker = 'BETA-7f3a'
/** What only beta's data holds, never in a request: an answer that carries it leaked. */
const betaSecret = 'BETA-SECRET-91c2'
const betaSales = '98.7654'
const leaked = (text: string): boolean => text.includes(betaSecret) || text.includes(betaSales)

const { server } = await suiteServer()

t.before(async () => {
  // acme has an owner, who signs in to its console.
  if (
    (
      await server.admin('POST', '/admin/tenants', {
        slug: 'acme',
        tier: 'standard',
        region: 'local',
        owner_email: 'owner@acme.example',
      })
    ).status !== 201
  )
    throw new Error('acme')
  const key = (await server.admin('POST', '/admin/tenants/acme/keys', { name: 'k' })).body
  acme = new TenantClient(server, 'acme', key.client_id, key.client_secret)
  await acme.refreshToken()
  beta = await server.tenant('beta', { tier: 'standard' })
  for (const [client, code, name, sales] of [
    [acme, 'ACME-LIST', 'acme list', '12.5'],
    [beta, betaMarker, betaSecret, betaSales],
  ] as const) {
    const written = [
      await client.call('PUT', '/currency/EUR', { is_active: true, vat_precision: 2 }),
      await client.call('PUT', `/pricelist/${code}`, { currency_code: 'EUR', vat_mode: 'NET', name }),
      await client.call('PUT', `/article/${code}`, { name }),
      await client.call('PUT', `/price/${code}/${code}`, { price: { sales } }),
    ]
    if (written.some((answer) => answer.status !== 202))
      throw new Error(`seeding ${client.slug}: ${written.map((answer) => answer.status).join(' ')}`)
  }
  if (!leaked((await beta.get(`/pricelist/${betaMarker}`)).text)) throw new Error("beta's own read shows its marker")
})

/** The tenant operations of the OpenAPI document: method and path template. */
async function tenantOperations(): Promise<{ method: string; path: string }[]> {
  const document = (await server.request('GET', '/openapi.json')).body as {
    paths: Record<string, Record<string, unknown>>
  }
  return Object.entries(document.paths)
    .filter(([path]) => path.startsWith('/t/{slug}'))
    .flatMap(([path, item]) => Object.keys(item).map((method) => ({ method: method.toUpperCase(), path })))
}

/** The path with `slug` and every other parameter filled in with `code`. */
const filled = (path: string, slug: string, code: string): string =>
  path.replace('{slug}', slug).replace(/\{[^}]+\}/g, encodeURIComponent(code))

/** A tenant's whole changelog as text: any write shows in it. */
async function changelogOf(client: TenantClient): Promise<string> {
  const answer = await client.get('/changelog?limit=1000')
  if (answer.status !== 200) throw new Error(`changelog: ${answer.status} ${answer.text}`)
  return answer.text
}

t.test("every tenant operation on beta's address with acme's API token: refused, nothing changes", async (t) => {
  const operations = await tenantOperations()
  t.ok(operations.length > 40, `${operations.length} operations in the OpenAPI document`)
  const before = [await changelogOf(acme), await changelogOf(beta)]
  const leaks: string[] = []
  for (const { method, path } of operations) {
    const url = filled(path, 'beta', betaMarker)
    const answer = await server.request(method, url, {
      token: acme.token,
      ...(method === 'GET' || method === 'DELETE' ? {} : { body: {} }),
    })
    // 401: the token is another tenant's. The console's routes refuse any API token with 403 first.
    const expected = path.includes('/management') ? 403 : 401
    if (answer.status !== expected || leaked(answer.text)) leaks.push(`${method} ${url}: ${answer.status}`)
  }
  t.same(leaks, [], 'each refused (401; 403 for the console routes) without beta data')
  t.same([await changelogOf(acme), await changelogOf(beta)], before, 'neither changelog changed')
})

t.test("acme's console token on beta's management operations: 401, nothing changes", async (t) => {
  const headers = await consoleHeaders(server, 'owner@acme.example', 'acme')
  t.equal(
    (await server.request('GET', '/t/acme/management/backups', { headers })).status,
    200,
    'the console token works on its own tenant',
  )
  const operations = (await tenantOperations()).filter((operation) => operation.path.includes('/management'))
  t.ok(operations.length > 0, `${operations.length} management operations`)
  const before = await changelogOf(beta)
  const leaks: string[] = []
  for (const { method, path } of operations) {
    const url = filled(path, 'beta', betaMarker)
    const answer = await server.request(method, url, {
      headers,
      ...(method === 'GET' || method === 'DELETE' ? {} : { body: {} }),
    })
    if (answer.status !== 401 || leaked(answer.text)) leaks.push(`${method} ${url}: ${answer.status}`)
  }
  t.same(leaks, [], 'each answered 401 without beta data')
  t.equal(await changelogOf(beta), before, "beta's changelog did not change")
})

t.test("acme's token with beta's resource codes on acme's address: never beta's data", async (t) => {
  const reads = (await tenantOperations()).filter(
    (operation) => operation.method === 'GET' && /\{(?!slug)[^}]+\}/.test(operation.path),
  )
  t.ok(reads.length > 5, `${reads.length} reads with a resource in the path`)
  const leaks: string[] = []
  let found = 0
  for (const { path } of reads) {
    const url = filled(path, 'acme', betaMarker)
    const answer = await server.request('GET', url, { token: acme.token })
    if (answer.status >= 500 || leaked(answer.text)) leaks.push(`GET ${url}: ${answer.status}`)
    else if (answer.status === 200) found++
  }
  t.same(leaks, [], "no answer carries beta's data")
  t.ok(found <= 2, `${found} answered 200: lists that are empty in acme (for example pricelists-for-sku)`)
  const own = await acme.get('/pricelist/ACME-LIST')
  t.equal(own.status, 200, 'acme reads its own pricelist')
})
