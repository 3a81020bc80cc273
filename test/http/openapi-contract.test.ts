/**
 * The OpenAPI contract (docs/api.md, "The OpenAPI document"), checked against the running server:
 * the live /openapi.json is valid for swagger-parser and has no error under redocly's recommended
 * rules; every operation of the document is called for real (a tenant with reference data,
 * articles, pricelists, prices, a bundle rule, settings, a rounding profile, exchange rates and a
 * webhook) and each answer's status and body must be the ones the document declares (Ajv, strict:
 * no undeclared fields); an operation that was never called fails the suite, so a new route needs
 * a call here. Last, a client generated from the document (openapi-typescript, openapi-fetch)
 * must compile under strict TypeScript and read the prices it was written for.
 */
import t, { type Test } from 'tap'
import { spawnSync } from 'node:child_process'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import SwaggerParser from '@apidevtools/swagger-parser'
import openapiTS, { astToString } from 'openapi-typescript'
import ts from 'typescript'
import { ContractChecker } from '../helpers/contract.js'
import { repoRoot, sharedFixturesDir } from '../helpers/fixtures.js'
import { adminToken, startServer, type Answer, type TestServer } from '../helpers/server.js'

/** The compiled tree this test runs from (dist/ or PRICING_BUILD_DIR), inside the repository. */
const buildRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const slug = 'contract'
const base = `/t/${slug}`
/** A plan override small enough that a request over it is cheap to send (413 too_many_items). */
const itemsMax = 50

// The ECB feed of POST /fx/fetch, served from the shared fixture file.
const feedServer = http.createServer((_request, response) => {
  response
    .writeHead(200, { 'content-type': 'text/xml' })
    .end(readFileSync(path.join(sharedFixturesDir, 'ecb/eurofxref-daily.xml')))
})

let server: TestServer
let document: Record<string, any>
let checker: ContractChecker
let token = ''
let clientId = ''
let clientSecret = ''

interface CallOptions {
  body?: unknown
  raw?: string
  headers?: Record<string, string>
  /** Bearer token; default the tenant's, `null` for none. */
  token?: string | null
  redirect?: RequestRedirect
}

/**
 * One request, checked against the document: the expected status, and the answer as declared.
 * Tenant paths (relative, no leading `/t/`) get the tenant's base and token.
 */
async function call(
  test: Test,
  method: string,
  urlPath: string,
  expected: number,
  options: CallOptions = {},
): Promise<Answer> {
  const fullPath = urlPath.startsWith('/') ? urlPath : `${base}/${urlPath}`
  const bearer =
    options.token === undefined ? (fullPath.startsWith('/t/') ? token : undefined) : (options.token ?? undefined)
  const answer = await server.request(method, fullPath, {
    body: options.body,
    raw: options.raw,
    headers: options.headers,
    token: bearer,
    redirect: options.redirect,
  })
  const problems = checker.problems(method, fullPath, answer)
  if (answer.status !== expected)
    problems.unshift(`expected ${expected}, got ${answer.status}: ${answer.text.slice(0, 300)}`)
  test.same(problems, [], `${method} ${fullPath} -> ${answer.status} as declared`)
  return answer
}

const admin = (body?: unknown): CallOptions => ({ body, token: adminToken })

function form(fields: Record<string, string>, headers: Record<string, string> = {}): CallOptions {
  return {
    raw: new URLSearchParams(fields).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    token: null,
  }
}

t.before(async () => {
  await new Promise<void>((resolve) => feedServer.listen(0, '127.0.0.1', resolve))
  const feedUrl = `http://127.0.0.1:${(feedServer.address() as AddressInfo).port}/daily`
  server = await startServer({
    env: { PRICING_FX_FEED_URL: feedUrl, PRICING_FX_FETCH_DELAY_MS: '3600000', PRICING_WEBHOOK_ALLOW_PRIVATE: 'true' },
  })
  const answer = await server.request('GET', '/openapi.json')
  if (answer.status !== 200) throw new Error(`GET /openapi.json: ${answer.status}`)
  document = answer.body
  checker = await ContractChecker.create(document)
})
t.teardown(async () => {
  await server?.dispose()
  await new Promise<void>((resolve) => feedServer.close(() => resolve()))
})

t.test('the live document is valid OpenAPI 3.1 with no error under redocly recommended', async (t) => {
  t.match(document['openapi'], /^3\.1\./)
  await t.resolves(SwaggerParser.validate(structuredClone(document) as never), 'swagger-parser validates it')
  const folder = mkdtempSync(path.join(buildRoot, 'openapi-lint-'))
  t.teardown(() => rmSync(folder, { recursive: true, force: true }))
  const file = path.join(folder, 'openapi.json')
  writeFileSync(file, JSON.stringify(document))
  const redocly = path.join(repoRoot(), 'node_modules/.bin/redocly')
  const lint = spawnSync(redocly, ['lint', '--extends', 'recommended', '--format', 'json', file], {
    encoding: 'utf8',
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
  })
  const report = JSON.parse(lint.stdout.slice(lint.stdout.indexOf('{'))) as {
    totals: { errors: number; warnings: number }
    problems: { ruleId: string; severity: string; message: string }[]
  }
  const errors = report.problems
    .filter((problem) => problem.severity === 'error')
    .map((problem) => `${problem.ruleId}: ${problem.message}`)
  t.same(errors, [], 'no errors')
  t.equal(report.totals.errors, 0)
  t.equal(lint.status, 0, 'redocly exits 0')
  const warnings = report.problems.filter((problem) => problem.severity === 'warn').map((problem) => problem.ruleId)
  t.comment(`redocly warnings: ${warnings.length} (${[...new Set(warnings)].join(', ')})`)
  // The known ones: no license to state, and health/metrics/keys endpoints that answer no 4xx.
  t.ok(
    warnings.every((rule) => rule === 'info-license' || rule === 'operation-4xx-response'),
    'only the known warnings',
  )
  const ids = checker.operationIds
  t.equal(new Set(ids).size, ids.length, 'operationIds are unique')
  t.ok(
    ids.every((id) => /^[a-z][A-Za-z0-9]*$/.test(id)),
    'operationIds are camelCase names',
  )
  t.ok(
    ids.includes('getPrice') && ids.includes('queryPrices') && ids.includes('listArticles'),
    'stable names of the routes',
  )
})

t.test('every operation answers as the document declares', async (t) => {
  await t.test('system, operator API and tokens', async (t) => {
    await call(t, 'GET', '/healthz', 200)
    await call(t, 'GET', '/readyz', 200)
    await call(t, 'GET', '/metrics', 200)
    await call(t, 'GET', '/openapi.json', 200)
    const jwks = await call(t, 'GET', '/.well-known/jwks.json', 200)
    t.ok(jwks.body.keys.length >= 1, 'a signing key')
    const metadata = await call(t, 'GET', '/.well-known/oauth-authorization-server', 200)
    t.equal(metadata.body.token_endpoint, `${metadata.body.issuer}/oauth2/token`)

    const created = await call(
      t,
      'POST',
      '/admin/tenants',
      201,
      admin({ slug, tier: 'standard', region: 'local', limits: { max_items_per_request: itemsMax } }),
    )
    t.equal(created.body.slug, slug)
    await call(t, 'POST', '/admin/tenants', 409, admin({ slug, tier: 'standard', region: 'local' }))
    await call(t, 'POST', '/admin/tenants', 400, admin({ slug: 'x', tier: 'no-such-tier', region: 'local' }))
    await call(t, 'POST', '/admin/tenants', 401, {
      body: { slug: 'y', tier: 'standard', region: 'local' },
      token: 'wrong',
    })
    const tenants = await call(t, 'GET', '/admin/tenants', 200, admin())
    t.ok(tenants.body.some((tenant: { slug: string }) => tenant.slug === slug))
    await call(t, 'GET', `/admin/tenants/${slug}`, 200, admin())
    await call(t, 'GET', '/admin/tenants/nobody', 404, admin())
    const patched = await call(t, 'PATCH', `/admin/tenants/${slug}`, 200, admin({ limits: { articles: 1000 } }))
    t.equal(patched.body.limits.articles, 1000)
    const key = await call(t, 'POST', `/admin/tenants/${slug}/keys`, 201, admin({ name: 'contract' }))
    clientId = key.body.client_id
    clientSecret = key.body.client_secret
    const spare = await call(t, 'POST', `/admin/tenants/${slug}/keys`, 201, admin({ name: 'spare' }))
    await call(t, 'DELETE', `/admin/tenants/${slug}/keys/${spare.body.client_id}`, 204, admin())
    const keys = await call(t, 'GET', `/admin/tenants/${slug}/keys`, 200, admin())
    t.same(
      (await call(t, 'GET', '/admin/access-log', 200, admin())).body,
      { enabled: false, sample: 0.1 },
      'the access log as configured',
    )
    t.same((await call(t, 'PUT', '/admin/access-log', 200, admin({ enabled: true, sample: 0.5 }))).body, {
      enabled: true,
      sample: 0.5,
    })
    await call(t, 'PUT', '/admin/access-log', 400, admin({ enabled: true, sample: 2 }))
    const signingKeys = await call(t, 'GET', '/admin/signing-keys', 200, admin())
    t.equal(signingKeys.body.length, 1, 'one signing key before a rotation')
    const rotated = await call(t, 'POST', '/admin/signing-keys/rotate', 200, admin({}))
    t.same(
      rotated.body.map((key: { status: string }) => key.status),
      ['signing', 'verifying'],
      'the new key signs, the old one verifies',
    )
    await call(t, 'POST', '/admin/signing-keys/rotate', 400, admin({ drop_previous: 'yes' }))

    // People: a magic link from the outbox, the session, a console token, the management endpoints.
    await call(
      t,
      'POST',
      '/admin/tenants',
      201,
      admin({ slug: 'people', tier: 'standard', region: 'local', owner_email: 'owner@example.com' }),
    )
    t.same((await call(t, 'POST', '/portal/sign-in', 202, { body: { email: 'owner@example.com' } })).body, {
      status: 'sent',
    })
    await call(t, 'POST', '/portal/sign-in', 400, { body: { email: 'nope' } })
    const outbox = path.join(server.dataDir, 'outbox')
    const mail = readFileSync(path.join(outbox, readdirSync(outbox)[0]!), 'utf8')
      .replace(/=\r?\n/g, '')
      .replaceAll('=3D', '=')
    const link = new URL(/http:\/\/\S+\/portal\/verify\?token=[A-Za-z0-9_-]+/.exec(mail)![0])
    // Opening the link is a page (not in the document); its button posts the token, here as JSON.
    const verified = await call(t, 'POST', '/portal/verify', 303, {
      body: { token: link.searchParams.get('token') },
      redirect: 'manual',
      token: null,
    })
    await call(t, 'POST', '/portal/verify', 401, {
      body: { token: link.searchParams.get('token') },
      redirect: 'manual',
      token: null,
    })
    await call(t, 'POST', '/portal/verify', 400, { body: { token: '' }, token: null })
    const session = {
      cookie: /pricing_session=[^;]+/.exec(verified.headers.get('set-cookie') ?? '')![0],
      origin: server.url,
    }
    const consoleToken = await call(t, 'POST', '/portal/console-token', 200, {
      body: { tenant: 'people' },
      headers: session,
      token: null,
    })
    await call(t, 'POST', '/portal/console-token', 403, { body: { tenant: slug }, headers: session, token: null })
    const asPerson: CallOptions = { token: consoleToken.body.access_token }
    await call(t, 'GET', '/t/people/management/backups', 200, asPerson)
    await call(t, 'GET', '/t/people/management/backups', 401, { token: null })
    t.equal(
      (await call(t, 'POST', '/t/people/management/backups', 201, { ...asPerson, body: { retain: true } })).body.retain,
      true,
    )
    await call(t, 'POST', '/t/people/management/backups', 400, { ...asPerson, body: { retain: 1 } })
    const operatorBackup = await call(t, 'POST', '/admin/tenants/people/backups', 201, admin({ retain: false }))
    t.equal(operatorBackup.body.type, 'manual')
    await call(t, 'POST', '/admin/tenants/people/backups', 400, admin({ retain: 'no' }))
    t.equal(
      (await call(t, 'GET', '/admin/tenants/people/backups', 200, admin())).body.length,
      2,
      "the console's and the operator's",
    )
    await call(t, 'GET', '/admin/tenants/nobody/backups', 404, admin())
    t.equal((await call(t, 'GET', '/t/people/management/restore/status', 200, asPerson)).body.status, 'idle')
    await call(t, 'POST', '/t/people/management/restore', 404, { ...asPerson, body: { backup_id: 'people-none' } })
    await call(t, 'POST', '/t/people/management/restore', 400, { ...asPerson, body: {} })
    t.equal(
      (
        await call(t, 'POST', '/t/people/management/restore', 202, {
          ...asPerson,
          body: { backup_id: operatorBackup.body.id },
        })
      ).body.status,
      'in_progress',
    )
    let restoreStatus = await call(t, 'GET', '/admin/tenants/people/restore/status', 200, admin())
    while (restoreStatus.body.status === 'in_progress')
      restoreStatus = await call(t, 'GET', '/admin/tenants/people/restore/status', 200, admin())
    t.equal(restoreStatus.body.status, 'completed')
    t.equal(
      (await call(t, 'POST', '/admin/tenants/people/restore', 202, admin({ backup_id: operatorBackup.body.id }))).body
        .backup_id,
      operatorBackup.body.id,
    )
    // (409 for a second restore while one runs: test/tenant/restore.test.ts, on a tenant big enough to still be restoring.)
    while ((await call(t, 'GET', '/admin/tenants/people/restore/status', 200, admin())).body.status === 'in_progress');
    await call(t, 'POST', '/admin/tenants/people/restore', 400, admin({}))
    await call(t, 'GET', '/admin/tenants/nobody/restore/status', 404, admin())
    await call(t, 'POST', '/admin/tenants/people/retention', 409, admin())
    t.equal((await call(t, 'GET', '/t/people/management/users', 200, asPerson)).body.length, 1)
    await call(t, 'POST', '/t/people/management/users', 201, {
      ...asPerson,
      body: { email: 'helper@example.com', role: 'editor' },
    })
    await call(t, 'POST', '/t/people/management/users', 409, {
      ...asPerson,
      body: { email: 'helper@example.com', role: 'editor' },
    })
    t.equal(
      (
        await call(t, 'PUT', '/t/people/management/users/helper@example.com', 200, {
          ...asPerson,
          body: { role: 'viewer' },
        })
      ).body.role,
      'viewer',
    )
    await call(t, 'PUT', '/t/people/management/users/owner@example.com', 409, { ...asPerson, body: { role: 'viewer' } })
    await call(t, 'DELETE', '/t/people/management/users/helper@example.com', 204, asPerson)
    await call(t, 'DELETE', '/t/people/management/users/helper@example.com', 404, asPerson)
    const consoleKey = await call(t, 'POST', '/t/people/management/keys', 201, {
      ...asPerson,
      body: { name: 'console' },
    })
    t.equal((await call(t, 'GET', '/t/people/management/keys', 200, asPerson)).body.length, 1)
    await call(t, 'DELETE', `/t/people/management/keys/${consoleKey.body.client_id}`, 204, asPerson)
    await call(t, 'DELETE', '/t/people/management/keys/nope', 404, asPerson)
    const requested = await call(t, 'POST', '/portal/tenant-requests', 201, {
      body: { slug: 'requested-shop', tier: 'starter', region: 'local' },
      headers: session,
      token: null,
    })
    await call(t, 'POST', '/portal/tenant-requests', 409, {
      body: { slug: 'requested-shop', tier: 'starter', region: 'local' },
      headers: session,
      token: null,
    })
    await call(t, 'POST', '/portal/tenant-requests', 400, {
      body: { slug: 'x', tier: 'starter' },
      headers: session,
      token: null,
    })
    t.equal((await call(t, 'GET', '/portal/tenant-requests', 200, { headers: session, token: null })).body.length, 1)
    t.equal((await call(t, 'GET', '/admin/tenant-requests', 200, admin())).body.length, 1)
    const second = await call(t, 'POST', '/portal/tenant-requests', 201, {
      body: { slug: 'rejected-shop', tier: 'starter', region: 'local' },
      headers: session,
      token: null,
    })
    t.equal(
      (await call(t, 'POST', `/admin/tenant-requests/${second.body.id}/reject`, 200, admin({ reason: 'test' }))).body
        .status,
      'rejected',
    )
    await call(t, 'POST', `/admin/tenant-requests/${second.body.id}/reject`, 409, admin({}))
    t.equal(
      (await call(t, 'POST', `/admin/tenant-requests/${requested.body.id}/approve`, 200, admin())).body.status,
      'active',
    )
    await call(t, 'POST', '/admin/tenant-requests/nope/approve', 404, admin())
    t.same(
      (await call(t, 'GET', '/portal/slug-check?slug=requested-shop', 200, { headers: session, token: null })).body,
      { slug: 'requested-shop', available: false, problem: 'taken' },
    )
    t.same((await call(t, 'GET', '/portal/slug-check?slug=free-shop', 200, { headers: session, token: null })).body, {
      slug: 'free-shop',
      available: true,
      problem: null,
    })
    t.equal(
      (await call(t, 'GET', '/portal/slug-check?slug=Bad_Slug', 200, { headers: session, token: null })).body.available,
      false,
    )
    await call(t, 'GET', '/portal/slug-check', 400, { headers: session, token: null })
    await call(t, 'GET', '/portal/slug-check?slug=x', 401, { token: null })
    // Web pages are not operations of the document (docs/api.md, Web pages).
    for (const page of ['/portal', '/console', '/console/{slug}', '/operator', '/assets/{name}'])
      t.notOk(page in document['paths'], `${page}: a page, not in the document`)
    await call(t, 'POST', '/portal/sign-out', 204, { headers: session, token: null })
    await call(t, 'POST', '/portal/sign-out', 401, { headers: session, token: null })
    t.same(
      (await call(t, 'PUT', '/admin/access-log', 200, admin({ enabled: false }))).body,
      { enabled: false, sample: 0.5 },
      'an absent sample is kept',
    )
    t.equal(
      keys.body.find((listed: { client_id: string }) => listed.client_id === spare.body.client_id)?.revoked_at !== null,
      true,
      'the spare key is revoked',
    )

    const issued = await call(
      t,
      'POST',
      '/oauth2/token',
      200,
      form({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret }),
    )
    token = issued.body.access_token
    t.equal(issued.body.token_type, 'Bearer')
    const basic = `Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString('base64')}`
    await call(t, 'POST', '/oauth2/token', 200, form({ grant_type: 'client_credentials' }, { authorization: basic }))
    const refused = await call(
      t,
      'POST',
      '/oauth2/token',
      401,
      form({ grant_type: 'client_credentials', client_id: clientId, client_secret: 'wrong' }),
    )
    t.equal(refused.body.error, 'invalid_client')
    await call(t, 'POST', '/oauth2/token', 400, form({ grant_type: 'password' }))

    await call(t, 'GET', 'article', 401, { token: null })
    await call(t, 'GET', '/t/nobody/article', 404)
    // A token of a tenant suspended after it was issued: 403.
    await call(t, 'POST', '/admin/tenants', 201, admin({ slug: 'paused', tier: 'starter', region: 'local' }))
    const pausedKey = await call(t, 'POST', '/admin/tenants/paused/keys', 201, admin({ name: 'paused' }))
    const pausedToken = await call(
      t,
      'POST',
      '/oauth2/token',
      200,
      form({
        grant_type: 'client_credentials',
        client_id: pausedKey.body.client_id,
        client_secret: pausedKey.body.client_secret,
      }),
    )
    await call(t, 'PATCH', '/admin/tenants/paused', 200, admin({ status: 'suspended' }))
    await call(t, 'GET', '/t/paused/article', 403, { token: pausedToken.body.access_token })
  })

  await t.test('reference data', async (t) => {
    for (const code of ['EUR', 'SEK']) await call(t, 'PUT', `currency/${code}`, 202, { body: { vat_precision: 2 } })
    t.equal((await call(t, 'GET', 'currency/EUR', 200)).body.vat_precision, 2)
    await call(t, 'GET', 'currency', 200)
    for (const code of ['SE', 'DE', 'GONE']) await call(t, 'PUT', `tax-area/${code}`, 202, { body: { name: code } })
    t.equal((await call(t, 'GET', 'tax-area/SE', 200)).body.name, 'SE')
    await call(t, 'GET', 'tax-area', 200)
    for (const code of ['standard', 'reduced', 'gone'])
      await call(t, 'PUT', `vat/class/${code}`, 202, { body: { name: code } })
    await call(t, 'GET', 'vat/class/standard', 200)
    await call(t, 'GET', 'vat/class', 200)
    for (const [area, vatClass, rate] of [
      ['SE', 'standard', 25],
      ['DE', 'standard', 19],
      ['SE', 'reduced', 12],
    ] as const) {
      await call(t, 'POST', 'vat/rate', 202, { body: { tax_area_code: area, vat_class_code: vatClass, rate } })
    }
    t.equal((await call(t, 'GET', 'vat/rate?tax_area=SE&vat_class=standard', 200)).body.rate, 25)
    await call(t, 'GET', 'vat/rates?tax_area=SE', 200)
    await call(t, 'GET', 'vat/rate?tax_area=SE', 400)
    await call(t, 'POST', 'article-taxclass', 202, {
      body: { sku_code: 'A-1', tax_area_code: 'SE', vat_class_code: 'standard' },
    })
    const mappings = [
      ['A-1', 'DE', 'standard'],
      ['B-2', 'SE', 'standard'],
      ['C-3', 'SE', 'reduced'],
      ['BOX', 'SE', 'standard'],
    ]
    const batch = await call(t, 'POST', 'article-taxclass/batch', 202, {
      body: mappings.map(([sku, area, vatClass]) => ({ sku_code: sku, tax_area_code: area, vat_class_code: vatClass })),
    })
    t.same(batch.body, { accepted: 4, failed: [] })
    t.equal((await call(t, 'GET', 'article-taxclass/by-area?tax_area=SE', 200)).body.length, 4)
    await call(t, 'GET', 'article-taxclass/A-1/SE', 200)
  })

  await t.test('articles and pricelists', async (t) => {
    await call(t, 'PUT', 'article/A-1', 202, { body: { name: 'Anvil', type: 'tool', metadata: { color: ['red'] } } })
    for (const sku of ['B-2', 'C-3', 'BOX']) await call(t, 'PUT', `article/${sku}`, 202, { body: { name: sku } })
    const batch = await call(t, 'POST', 'article/batch', 202, {
      body: [{ sku: 'D-4', name: 'Drill' }, { sku: 'E-5' }, { name: 'no sku' }],
    })
    t.equal(batch.body.accepted, 2)
    t.equal(batch.body.failed.length, 1)
    t.equal((await call(t, 'GET', 'article/A-1', 200)).body.name, 'Anvil')
    await call(t, 'GET', 'article', 200)
    await call(t, 'GET', 'article?page=1&size=2', 200)
    t.equal((await call(t, 'POST', 'article/search', 200, { body: { text: 'anv' } })).body.items[0].sku, 'A-1')
    await call(t, 'GET', 'article/NOPE', 404)
    await call(t, 'PUT', 'article/X', 400, { body: { name: 5 } })
    await call(t, 'PUT', 'article/X', 415, { raw: 'name=x', headers: { 'content-type': 'text/plain' } })
    const tooMany = await call(t, 'POST', 'article/batch', 413, {
      body: Array.from({ length: itemsMax + 1 }, (_, index) => ({ sku: `N-${index}` })),
    })
    t.equal(tooMany.body.max_items_per_request, itemsMax)

    await call(t, 'PUT', 'pricelist/RETAIL', 202, {
      body: { currency_code: 'EUR', vat_mode: 'NET', name: 'Retail', metadata: { channel: ['web'] } },
    })
    await call(t, 'PUT', 'pricelist/OUTLET', 202, {
      body: { currency_code: 'EUR', parent_code: 'RETAIL', name: 'Outlet' },
    })
    const lists = await call(t, 'POST', 'pricelist/batch', 202, {
      body: [
        { code: 'SPARE', currency_code: 'EUR', vat_mode: 'GROSS' },
        { code: 'SPARE2', currency_code: 'EUR', vat_mode: 'NET' },
      ],
    })
    t.same(lists.body, { accepted: 2, failed: [] })
    t.equal((await call(t, 'GET', 'pricelist/OUTLET', 200)).body.vat_mode, 'NET', 'inherited VAT mode')
    t.equal((await call(t, 'GET', 'pricelist', 200)).body.total, 4)
    await call(t, 'POST', 'pricelist/query', 200, { body: { metadata: { channel: ['web'] } } })
    t.equal((await call(t, 'POST', 'pricelist/search', 200, { body: { text: 'retail' } })).body.total, 1)
  })

  await t.test('prices and bundles', async (t) => {
    const breaks = [
      { quantity_break: 10, fixed_price: 90 },
      { quantity_break: 20, percent_of_base: 80 },
    ]
    await call(t, 'PUT', 'price/A-1/RETAIL', 202, { body: { price: 100, quantity_breaks: breaks } })
    const batch = await call(t, 'POST', 'price/batch', 202, {
      body: [
        { sku: 'B-2', pricelist: 'RETAIL', price: { sales: 50, fields: { cost: 20 } } },
        { sku: 'C-3', pricelist: 'RETAIL', price: '10.5' },
        { sku: 'D-4', pricelist: 'SPARE', price: 1 },
        { sku: 'E-5', pricelist: 'SPARE', price: 2 },
      ],
    })
    t.same(batch.body, { accepted: 4, failed: [] })
    await call(t, 'PUT', 'price/A-1/RETAIL', 400, { body: { price: 'abc' } })
    const price = await call(t, 'GET', 'price/A-1/RETAIL/SE', 200)
    t.same([price.body.net, price.body.vat, price.body.gross, price.body.tax_area], [100, 25, 125, 'SE'])
    await call(t, 'GET', 'price/A-1/RETAIL/SE', 304, { headers: { 'if-none-match': price.headers.get('etag')! } })
    const missing = await call(t, 'GET', 'price/Z-9/RETAIL/SE', 404)
    t.type(missing.body.reason, 'string', 'a missing price says why')
    const definition = await call(t, 'GET', 'price/A-1/OUTLET', 200)
    t.same(
      [
        definition.body.price.sales,
        definition.body.inherited,
        definition.body.source_pricelist,
        definition.body.quantity_breaks.length,
      ],
      [100, true, 'RETAIL', 2],
    )
    const query = await call(t, 'POST', 'price/query', 200, {
      body: {
        currency_code: 'EUR',
        pricelist_filter: { pricelists: ['RETAIL'] },
        skus: ['A-1', 'B-2', 'NOPE'],
        tax_area: 'SE',
      },
    })
    t.same(
      query.body.items.map((item: { sku: string; gross: number }) => [item.sku, item.gross]),
      [
        ['A-1', 125],
        ['B-2', 62.5],
      ],
    )
    t.same(
      query.body.unavailable.map((item: { sku: string }) => item.sku),
      ['NOPE'],
    )
    const simulated = await call(t, 'POST', 'price/simulate', 200, {
      body: {
        writes: { prices: [{ sku: 'A-1', pricelist: 'RETAIL', price: 80 }] },
        query: { currency_code: 'EUR', pricelist_filter: { pricelists: ['RETAIL'] }, skus: ['A-1'], tax_area: 'SE' },
      },
    })
    t.same(
      simulated.body.query.items.map((item: { sku: string; gross: number }) => [item.sku, item.gross]),
      [['A-1', 100]],
      'the simulated price, 80 NET + 25%',
    )
    await call(t, 'POST', 'price/simulate', 400, {
      body: {
        writes: { prices: [{ sku: 'A-1', pricelist: 'RETAIL', price: 'free' }] },
        query: { currency_code: 'EUR', pricelist_filter: {}, skus: ['A-1'], tax_area: 'SE' },
      },
    })
    const skus = Array.from({ length: itemsMax + 1 }, (_, index) => `S-${index}`)
    await call(t, 'POST', 'price/query', 413, {
      body: { currency_code: 'EUR', pricelist_filter: {}, skus, tax_area: 'SE' },
    })
    // From now (the tax area exists from its write, and the diff, like a query, needs it at both instants).
    const diffBody = {
      currency_code: 'EUR',
      pricelist_filter: { pricelists: ['RETAIL'] },
      tax_area: 'SE',
      from: new Date().toISOString(),
      to: '2999-01-01',
    }
    const diff = await call(t, 'POST', 'price/diff', 200, { body: { ...diffBody, limit: 2 } })
    t.type(diff.body.next_cursor, 'string', 'three SKUs are priced: a page of two has a next')
    await call(t, 'POST', 'price/diff', 413, { body: { ...diffBody, limit: itemsMax + 1 } })
    t.equal((await call(t, 'GET', 'price?pricelist=RETAIL', 200)).body.total, 3)
    const history = (await call(t, 'GET', 'price/history/RETAIL/A-1', 200)).body
    t.ok(history.length >= 1)
    // A correction: the oldest version marked as an error, listed, and the mark taken back.
    const start = history.at(-1).change_at
    await call(t, 'POST', 'price/corrections/RETAIL/A-1', 202, { body: { start_date: start, reason: 'typo' } })
    t.same(
      (await call(t, 'GET', 'price/corrections/RETAIL/A-1', 200)).body.errors.map(
        (mark: { start_date: string }) => mark.start_date,
      ),
      [start],
    )
    await call(t, 'DELETE', `price/corrections/RETAIL/A-1?start_date=${encodeURIComponent(start)}`, 202)
    await call(t, 'POST', 'price/corrections/RETAIL/A-1', 404, { body: { start_date: '2001-01-01T00:00:00Z' } })
    t.same((await call(t, 'GET', 'price/skus-for-pricelist/RETAIL', 200)).body.items, ['A-1', 'B-2', 'C-3'])
    t.equal((await call(t, 'GET', 'price/skus-for-pricelist/RETAIL?page=1&size=2', 200)).body.total, 3)
    const pricelists = await call(t, 'GET', 'price/pricelists-for-sku/A-1?currency_code=EUR&tax_area=SE', 200)
    t.same(
      pricelists.body.items.map((item: { pricelist: { code: string }; price: { gross: number } }) => [
        item.pricelist.code,
        item.price.gross,
      ]),
      [
        ['OUTLET', 125],
        ['RETAIL', 125],
      ],
    )

    const rule = {
      method: 'SUM_OF_PARTS',
      discount_type: 'PERCENTAGE',
      discount_value: 10,
      components: [
        { sku: 'A-1', quantity: 1 },
        { sku: 'B-2', quantity: 2 },
      ],
    }
    await call(t, 'PUT', 'bundle/BOX/RETAIL', 202, { body: rule })
    const inherited = await call(t, 'GET', 'bundle/BOX/OUTLET', 200)
    t.same(
      [inherited.body.inherited, inherited.body.source_pricelist, inherited.body.discount_value],
      [true, 'RETAIL', 10],
    )
    await call(t, 'DELETE', 'bundle/BOX/RETAIL', 202)
    await call(t, 'GET', 'bundle/BOX/RETAIL', 404)
  })

  await t.test('settings, rounding profiles, exchange rates and the changelog', async (t) => {
    t.ok((await call(t, 'GET', 'settings/definitions', 200)).body.length >= 1)
    await call(t, 'PUT', 'settings/default.tax.area', 202, { body: { value: 'SE' } })
    t.equal((await call(t, 'GET', 'settings/default.tax.area', 200)).body.value, 'SE')
    await call(t, 'GET', 'settings', 200)
    await call(t, 'DELETE', 'settings/default.tax.area', 202)
    await call(t, 'PUT', 'settings/no.such.setting', 400, { body: { value: 'x' } })

    await call(t, 'POST', 'rounding-profile', 202, {
      body: { code: 'cash', currency_code: 'EUR', tier_rules: [{ from: 0, increment: '0.05' }] },
    })
    await call(t, 'PUT', 'rounding-profile/cash', 202, { body: { default_for_currency: true } })
    t.equal((await call(t, 'GET', 'rounding-profile/cash', 200)).body.default_for_currency, true)
    await call(t, 'GET', 'rounding-profile', 200)
    t.same(
      (await call(t, 'POST', 'rounding-profile/apply', 200, { body: { profile: 'cash', values: [1.02, 1.03] } })).body
        .values,
      [1, 1.05],
    )
    await call(t, 'DELETE', 'rounding-profile/cash', 202)
    await call(t, 'PUT', 'rounding-profile/none', 404, { body: { default_global: true } })

    await call(t, 'POST', 'fx/daily', 202, { body: { date: '2024-01-02', rates: { SEK: '11.5', USD: 1.1 } } })
    t.equal((await call(t, 'GET', 'fx/rate?base=EUR&quote=SEK&as_of=2024-01-03T00:00:00Z', 200)).body.rate, 11.5)
    t.equal((await call(t, 'POST', 'fx/fetch', 200)).body.count, 30, 'the fixture file has 30 rates')
    t.ok((await call(t, 'GET', 'fx/currencies', 200)).body.currencies.includes('EUR'))

    const page = await call(t, 'GET', 'changelog?limit=5', 200)
    t.same([page.body.items.length, page.body.has_more], [5, true])
    await call(t, 'GET', 'changelog?cursor=not-a-cursor', 400)
  })

  await t.test('webhooks', async (t) => {
    const created = await call(t, 'POST', 'webhooks', 201, {
      body: { url: 'https://127.0.0.1:9/hook', secret: 'contract-secret' },
    })
    const id = created.body.id
    t.equal(created.body.has_secret, true)
    t.equal((await call(t, 'GET', 'webhooks', 200)).body.length, 1)
    await call(t, 'GET', `webhooks/${id}`, 200)
    await call(t, 'GET', 'webhooks/abc', 400)
    t.equal(
      (await call(t, 'PUT', `webhooks/${id}`, 200, { body: { entity_type_filter: 'price' } })).body.entity_type_filter,
      'price',
    )
    await call(t, 'POST', `webhooks/${id}/test`, 202)
    t.equal((await call(t, 'DELETE', `webhooks/${id}`, 200)).body.active, false)
  })

  await t.test('deletes', async (t) => {
    await call(t, 'DELETE', 'article-taxclass/C-3/SE', 202)
    await call(t, 'DELETE', 'vat/rate/SE/reduced', 202)
    await call(t, 'DELETE', 'price/C-3/RETAIL', 202)
    t.same(
      (
        await call(t, 'DELETE', 'price/batch', 202, {
          body: [
            { sku: 'D-4', pricelist: 'SPARE' },
            { sku: 'E-5', pricelist: 'SPARE' },
          ],
        })
      ).body,
      { accepted: 2, failed: [] },
    )
    await call(t, 'DELETE', 'article/E-5', 202)
    t.equal((await call(t, 'DELETE', 'article/batch', 202, { body: ['D-4', 'NOPE'] })).body.failed.length, 1)
    await call(t, 'DELETE', 'pricelist/SPARE', 202)
    t.same((await call(t, 'DELETE', 'pricelist/batch', 202, { body: ['SPARE2'] })).body, { accepted: 1, failed: [] })
    await call(t, 'DELETE', 'tax-area/GONE', 202)
    await call(t, 'DELETE', 'vat/class/gone', 202)
    await call(t, 'DELETE', 'vat/class/gone', 404)
  })

  t.same(checker.missing(), [], 'every operation of the document was called')
})

/** The client program: typed by the generated schema; `never` anywhere fails the compile. */
const clientSource = `
import createClient from 'openapi-fetch'
import type { paths } from './schema.js'

type IsNever<T> = [T] extends [never] ? true : false
const notNever = <T>(_value: T, _check: IsNever<T> extends false ? true : never): void => undefined

export async function run(baseUrl: string, slug: string, clientId: string, clientSecret: string) {
  const client = createClient<paths>({ baseUrl })
  const issued = await client.POST('/oauth2/token', {
    body: { grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret },
    bodySerializer: (body) => new URLSearchParams(body as Record<string, string>).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  })
  if (issued.data === undefined) throw new Error('no token: ' + JSON.stringify(issued.error))
  notNever(issued.data, true)
  const headers = { authorization: 'Bearer ' + issued.data.access_token }
  const price = await client.GET('/t/{slug}/price/{sku}/{pricelist}/{tax_area}', {
    params: { path: { slug, sku: 'A-1', pricelist: 'RETAIL', tax_area: 'SE' } },
    headers,
  })
  if (price.data === undefined) throw new Error('no price: ' + JSON.stringify(price.error))
  notNever(price.data, true)
  const definition = await client.GET('/t/{slug}/price/{sku}/{pricelist}', {
    params: { path: { slug, sku: 'A-1', pricelist: 'RETAIL' } },
    headers,
  })
  if (definition.data === undefined) throw new Error('no definition: ' + JSON.stringify(definition.error))
  notNever(definition.data, true)
  const query = await client.POST('/t/{slug}/price/query', {
    params: { path: { slug } },
    body: { currency_code: 'EUR', pricelist_filter: { pricelists: ['RETAIL'] }, skus: ['A-1', 'B-2', 'NOPE'], tax_area: 'SE' },
    headers,
  })
  if (query.data === undefined) throw new Error('no query answer: ' + JSON.stringify(query.error))
  notNever(query.data, true)
  const gross: number = price.data.gross
  const taxArea: string = price.data.tax_area
  const sales: number = definition.data.price.sales
  // The generated types are not \`any\`: each wrong use below must be an error, else the directive is.
  // @ts-expect-error tax_area is a string
  const wrongTaxArea: number = price.data.tax_area
  // @ts-expect-error the price query needs its tax_area
  void client.POST('/t/{slug}/price/query', { params: { path: { slug } }, body: { currency_code: 'EUR', pricelist_filter: {}, skus: [] }, headers })
  // @ts-expect-error no such operation
  void client.GET('/t/{slug}/no-such-route', { params: { path: { slug } } })
  void wrongTaxArea
  return {
    tokenType: issued.data.token_type,
    gross,
    taxArea,
    sales,
    items: query.data.items.map((item) => [item.sku, item.net, item.gross] as const),
    unavailable: query.data.unavailable.map((item) => item.sku),
  }
}
`

t.test('a client generated from the document compiles and reads prices', async (t) => {
  const folder = mkdtempSync(path.join(buildRoot, 'openapi-client-'))
  t.teardown(() => rmSync(folder, { recursive: true, force: true }))
  writeFileSync(path.join(folder, 'schema.d.ts'), astToString(await openapiTS(structuredClone(document) as never)))
  const clientPath = path.join(folder, 'client.ts')
  writeFileSync(clientPath, clientSource)
  const program = ts.createProgram([clientPath], {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    lib: ['lib.es2022.d.ts'],
    types: ['node'],
    skipLibCheck: true,
  })
  const diagnostics = ts
    .getPreEmitDiagnostics(program)
    .map((diagnostic) => ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'))
  t.same(diagnostics, [], 'the client compiles under strict TypeScript, and its three wrong uses do not')

  const compiled = ts.transpileModule(clientSource, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  })
  const modulePath = path.join(folder, 'client.mjs')
  writeFileSync(modulePath, compiled.outputText)
  const client = (await import(pathToFileURL(modulePath).href)) as {
    run: (...args: string[]) => Promise<Record<string, unknown>>
  }
  const result = await client.run(server.url, slug, clientId, clientSecret)
  t.same(result, {
    tokenType: 'Bearer',
    gross: 125,
    taxArea: 'SE',
    sales: 100,
    items: [
      ['A-1', 100, 125],
      ['B-2', 50, 62.5],
    ],
    unavailable: ['NOPE'],
  })
})
