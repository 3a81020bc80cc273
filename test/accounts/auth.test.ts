/**
 * Authentication: the token endpoint in its three credential forms and at the legacy path, the
 * JWT it issues (header, claims, signature against the JWKS), RFC 6749 errors, bearer checks on the
 * tenant API (missing, malformed, foreign, expired, forged), revocation, last-used times, suspended
 * tenants, and that secrets are stored only as scrypt hashes.
 */
import path from 'node:path'
import t from 'tap'
import {
  createLocalJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  generateKeyPair,
  importJWK,
  jwtVerify,
  SignJWT,
  type JWK,
} from 'jose'
import { open } from 'lmdb'
import { startServer, type Answer, type TenantClient } from '../helpers/server.js'
import { keyTokenClaims, serverSigningKey as signingKeyOf } from '../helpers/tokens.js'
import { suiteServer } from '../helpers/suite.js'

let acme: TenantClient
let beta: TenantClient

/** The issuer with PRICING_PUBLIC_URL unset: the address listened on (kept across restarts by the helper). */
let issuer = ''

const { server } = await suiteServer()

t.before(async () => {
  issuer = server.url
  acme = await server.tenant('acme')
  beta = await server.tenant('beta')
})

interface TokenRequest {
  form?: Record<string, string>
  basic?: string
  path?: string
}

async function tokenRequest(request: TokenRequest): Promise<Answer> {
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' }
  if (request.basic !== undefined) headers['authorization'] = `Basic ${Buffer.from(request.basic).toString('base64')}`
  return server.request('POST', request.path ?? '/oauth2/token', {
    raw: new URLSearchParams(request.form ?? {}).toString(),
    headers,
  })
}

function credentials(client: TenantClient): Record<string, string> {
  return { grant_type: 'client_credentials', client_id: client.clientId, client_secret: client.clientSecret }
}

type Assert = Pick<typeof t, 'equal' | 'same' | 'match' | 'ok'>

function checkTokenAnswer(t: Assert, answer: Answer): void {
  t.equal(answer.status, 200, 'token request succeeds')
  t.same(Object.keys(answer.body).sort(), ['access_token', 'expires_in', 'token_type'])
  t.equal(answer.body.token_type, 'Bearer')
  t.equal(answer.body.expires_in, 900)
  t.match(answer.body.access_token, /^[\w-]+\.[\w-]+\.[\w-]+$/)
  t.equal(answer.headers.get('cache-control'), 'no-store')
}

async function newKey(slug: string, name: string): Promise<{ client_id: string; client_secret: string }> {
  const answer = await server.admin('POST', `/admin/tenants/${slug}/keys`, { name })
  if (answer.status !== 201) throw new Error(`key create failed: ${answer.text}`)
  return answer.body
}

async function articles(token: string, slug = 'acme'): Promise<Answer> {
  return server.request('GET', `/t/${slug}/article`, { token })
}

async function serverSigningKey(): Promise<{ kid: string; alg: string; privateJwk: JWK }> {
  return signingKeyOf(server)
}

function tenantClaims(client: TenantClient, iatS: number, expS: number): SignJWT {
  return keyTokenClaims(issuer, client.slug, client.clientId, iatS, expS)
}

t.test('the token endpoint accepts client credentials as form fields', async (t) => {
  const answer = await tokenRequest({ form: credentials(acme) })
  checkTokenAnswer(t, answer)
  t.equal((await articles(answer.body.access_token)).status, 200)
})

t.test('the token endpoint accepts client credentials as HTTP Basic', async (t) => {
  const answer = await tokenRequest({
    form: { grant_type: 'client_credentials' },
    basic: `${acme.clientId}:${acme.clientSecret}`,
  })
  checkTokenAnswer(t, answer)
  t.equal(decodeJwt(answer.body.access_token).sub, acme.clientId)
  t.equal((await articles(answer.body.access_token)).status, 200)
})

t.test('the token endpoint accepts the older single client_id "id:secret" form', async (t) => {
  const answer = await tokenRequest({
    form: { grant_type: 'client_credentials', client_id: `${acme.clientId}:${acme.clientSecret}` },
  })
  checkTokenAnswer(t, answer)
  t.equal(decodeJwt(answer.body.access_token).sub, acme.clientId)
  t.equal((await articles(answer.body.access_token)).status, 200)
})

t.test('the legacy token path under the tenant base URL issues tokens in every form', async (t) => {
  const form = await tokenRequest({ path: '/t/acme/oauth2/token', form: credentials(acme) })
  checkTokenAnswer(t, form)
  t.equal(decodeJwt(form.body.access_token).aud, 'acme')
  const older = await tokenRequest({
    path: '/t/acme/oauth2/token',
    form: { grant_type: 'client_credentials', client_id: `${acme.clientId}:${acme.clientSecret}` },
  })
  checkTokenAnswer(t, older)
  const basic = await tokenRequest({
    path: '/t/acme/api/v1/oauth2/token',
    form: { grant_type: 'client_credentials' },
    basic: `${acme.clientId}:${acme.clientSecret}`,
  })
  checkTokenAnswer(t, basic)
  t.equal((await articles(older.body.access_token)).status, 200)
})

t.test("the legacy token path refuses another tenant's key with 401 invalid_client", async (t) => {
  const answer = await tokenRequest({ path: '/t/acme/oauth2/token', form: credentials(beta) })
  t.equal(answer.status, 401)
  t.equal(answer.body.error, 'invalid_client')
  t.type(answer.body.error_description, 'string')
  t.equal(answer.body.access_token, undefined)
})

t.test('the legacy token path of an unknown tenant answers 404', async (t) => {
  const answer = await tokenRequest({ path: '/t/nope/oauth2/token', form: credentials(acme) })
  t.equal(answer.status, 404)
  t.equal(answer.body.code, 'tenant_not_found')
})

t.test('the JWT is EdDSA-signed with a kid from the JWKS and carries the documented claims', async (t) => {
  const before = Math.floor(Date.now() / 1000)
  const answer = await tokenRequest({ form: credentials(acme) })
  const after = Math.ceil(Date.now() / 1000)
  const token = answer.body.access_token as string
  const header = decodeProtectedHeader(token)
  t.equal(header.alg, 'EdDSA')
  t.type(header.kid, 'string')
  const jwks = await server.request('GET', '/.well-known/jwks.json')
  t.equal(jwks.status, 200)
  const kids = (jwks.body.keys as JWK[]).map((key) => key.kid)
  t.ok(kids.includes(header.kid), 'kid is published')
  for (const key of jwks.body.keys as JWK[]) t.equal(key.d, undefined, 'no private part in the JWKS')
  const claims = decodeJwt(token)
  t.equal(claims.iss, issuer)
  t.equal(claims.sub, acme.clientId)
  t.equal(claims.aud, 'acme')
  t.equal(claims['tid'], 'acme')
  t.equal(claims['typ'], 'key')
  t.ok(claims.iat! >= before - 1 && claims.iat! <= after, 'iat is now')
  t.equal(claims.exp! - claims.iat!, 900)
  t.match(claims.jti, /^[\w-]{8,}$/)
  const verified = await jwtVerify(token, createLocalJWKSet(jwks.body), {
    issuer,
    audience: 'acme',
    algorithms: ['EdDSA'],
  })
  t.equal(verified.payload.sub, acme.clientId)
  const second = await tokenRequest({ form: credentials(acme) })
  t.not(decodeJwt(second.body.access_token).jti, claims.jti, 'each token has its own jti')
})

t.test('a wrong secret answers 401 invalid_client with a description', async (t) => {
  const answer = await tokenRequest({ form: { ...credentials(acme), client_secret: 'f'.repeat(64) } })
  t.equal(answer.status, 401)
  t.same(Object.keys(answer.body).sort(), ['error', 'error_description'])
  t.equal(answer.body.error, 'invalid_client')
  t.ok(answer.body.error_description.length > 0)
  t.equal(answer.headers.get('cache-control'), 'no-store')
  t.equal(
    answer.headers.get('www-authenticate'),
    null,
    'no Basic challenge for a secret sent in the body (RFC 6749 section 5.2)',
  )
})

t.test('an unknown client_id and a wrong Basic secret answer 401 invalid_client', async (t) => {
  const unknown = await tokenRequest({ form: { ...credentials(acme), client_id: '0'.repeat(24) } })
  t.equal(unknown.status, 401)
  t.equal(unknown.body.error, 'invalid_client')
  const basic = await tokenRequest({ form: { grant_type: 'client_credentials' }, basic: `${acme.clientId}:wrong` })
  t.equal(basic.status, 401)
  t.equal(basic.body.error, 'invalid_client')
  t.match(basic.headers.get('www-authenticate'), /^Basic/)
})

t.test('malformed percent-encoding in HTTP Basic credentials answers 401 invalid_client, not 500', async (t) => {
  const answer = await tokenRequest({
    form: { grant_type: 'client_credentials' },
    basic: `${acme.clientId}%zz:${acme.clientSecret}`,
  })
  t.equal(answer.status, 401)
  t.equal(answer.body.error, 'invalid_client')
})

t.test('a missing grant_type answers 400 invalid_request', async (t) => {
  const { grant_type: _omitted, ...rest } = credentials(acme)
  const answer = await tokenRequest({ form: rest })
  t.equal(answer.status, 400)
  t.equal(answer.body.error, 'invalid_request')
  t.type(answer.body.error_description, 'string')
})

t.test('grant_type=password answers 400 unsupported_grant_type', async (t) => {
  const answer = await tokenRequest({ form: { ...credentials(acme), grant_type: 'password' } })
  t.equal(answer.status, 400)
  t.equal(answer.body.error, 'unsupported_grant_type')
})

t.test('missing client credentials answer 400 invalid_request', async (t) => {
  const answer = await tokenRequest({ form: { grant_type: 'client_credentials', client_id: acme.clientId } })
  t.equal(answer.status, 400)
  t.equal(answer.body.error, 'invalid_request')
})

t.test('an API call without Authorization answers 401 with the spec error body', async (t) => {
  const answer = await server.request('GET', '/t/acme/article')
  t.equal(answer.status, 401)
  t.same(Object.keys(answer.body).sort(), ['code', 'error', 'message', 'request_id', 'status', 'timestamp'])
  t.equal(answer.body.status, 401)
  t.equal(answer.body.error, 'Unauthorized')
  t.equal(answer.body.code, 'unauthorized')
  t.ok(answer.body.message.length > 0)
  t.match(answer.body.timestamp, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/)
  t.match(answer.headers.get('www-authenticate'), /^Bearer/)
})

t.test('a refused write without a token stores nothing', async (t) => {
  const answer = await server.request('PUT', '/t/acme/article/NOAUTH', { body: { name: 'x' } })
  t.equal(answer.status, 401)
  t.equal((await acme.get('/article/NOAUTH')).status, 404)
})

t.test('a malformed token or a non-bearer scheme answers 401', async (t) => {
  for (const authorization of [
    'Bearer not-a-jwt',
    'Bearer a.b.c',
    `Basic ${Buffer.from('x:y').toString('base64')}`,
    'Bearer ',
  ]) {
    const answer = await server.request('GET', '/t/acme/article', { headers: { authorization } })
    t.equal(answer.status, 401, authorization)
    t.equal(answer.body.code, 'unauthorized')
  }
  const tampered = `${acme.token.slice(0, -4)}AAAA`
  t.equal((await articles(tampered)).status, 401, 'a token with a changed signature')
})

t.test("a token of tenant A on tenant B's URL answers 401", async (t) => {
  const answer = await articles(acme.token, 'beta')
  t.equal(answer.status, 401)
  t.equal(answer.body.code, 'unauthorized')
  t.equal((await articles(beta.token, 'beta')).status, 200, 'the right token passes')
})

t.test('an expired token answers 401, while the same claims unexpired pass', async (t) => {
  const { kid, alg, privateJwk } = await serverSigningKey()
  const key = await importJWK(privateJwk, alg)
  const nowS = Math.floor(Date.now() / 1000)
  const valid = await tenantClaims(acme, nowS - 60, nowS + 840)
    .setProtectedHeader({ alg, kid, typ: 'JWT' })
    .sign(key)
  t.equal((await articles(valid)).status, 200, 'a token made this way is otherwise valid')
  const expired = await tenantClaims(acme, nowS - 1000, nowS - 100)
    .setProtectedHeader({ alg, kid, typ: 'JWT' })
    .sign(key)
  const answer = await articles(expired)
  t.equal(answer.status, 401)
  t.equal(answer.body.code, 'unauthorized')
})

t.test('a token signed by another key under the server kid answers 401', async (t) => {
  const { kid } = await serverSigningKey()
  const { privateKey } = await generateKeyPair('EdDSA')
  const nowS = Math.floor(Date.now() / 1000)
  const forged = await tenantClaims(acme, nowS, nowS + 900)
    .setProtectedHeader({ alg: 'EdDSA', kid, typ: 'JWT' })
    .sign(privateKey)
  t.equal((await articles(forged)).status, 401)
  const unknownKid = await tenantClaims(acme, nowS, nowS + 900)
    .setProtectedHeader({ alg: 'EdDSA', kid: 'other', typ: 'JWT' })
    .sign(privateKey)
  t.equal((await articles(unknownKid)).status, 401)
})

t.test('a revoked key gets no new token while a token issued before still works', async (t) => {
  const key = await newKey('acme', 'to-revoke')
  const form = { grant_type: 'client_credentials', client_id: key.client_id, client_secret: key.client_secret }
  const before = await tokenRequest({ form })
  t.equal(before.status, 200)
  const revoke = await server.admin('DELETE', `/admin/tenants/acme/keys/${key.client_id}`)
  t.equal(revoke.status, 204)
  t.equal(revoke.text, '')
  const after = await tokenRequest({ form })
  t.equal(after.status, 401)
  t.equal(after.body.error, 'invalid_client')
  t.equal(
    (await tokenRequest({ form: { grant_type: 'client_credentials' }, basic: `${key.client_id}:${key.client_secret}` }))
      .status,
    401,
  )
  t.equal((await articles(before.body.access_token)).status, 200, 'the earlier token stays valid')
  const listed = (await server.admin('GET', '/admin/tenants/acme/keys')).body.find(
    (entry: { client_id: string }) => entry.client_id === key.client_id,
  )
  t.match(listed.revoked_at, /^\d{4}-\d{2}-\d{2}T/)
})

t.test('a revoke racing a token request stays revoked', async (t) => {
  const key = await newKey('acme', 'race')
  const form = { grant_type: 'client_credentials', client_id: key.client_id, client_secret: key.client_secret }
  // scrypt takes tens of milliseconds, so the revoke lands while the token request verifies.
  const [token, revoke] = await Promise.all([
    tokenRequest({ form }),
    server.admin('DELETE', `/admin/tenants/acme/keys/${key.client_id}`),
  ])
  t.equal(revoke.status, 204)
  t.ok(token.status === 200 || token.status === 401, `token request answered ${token.status}`)
  const listed = (await server.admin('GET', '/admin/tenants/acme/keys')).body.find(
    (entry: { client_id: string }) => entry.client_id === key.client_id,
  )
  t.match(listed.revoked_at, /^\d{4}-\d{2}-\d{2}T/, 'revoked_at survives the token request')
  t.equal((await tokenRequest({ form })).status, 401)
})

t.test('the key listing shows last_used_at after use, null when unused, and never a secret', async (t) => {
  const used = await newKey('beta', 'used')
  const unused = await newKey('beta', 'unused')
  const started = Date.now()
  const token = await tokenRequest({
    form: { grant_type: 'client_credentials', client_id: used.client_id, client_secret: used.client_secret },
  })
  t.equal(token.status, 200)
  const listing = await server.admin('GET', '/admin/tenants/beta/keys')
  t.equal(listing.status, 200)
  const byId = new Map<string, Record<string, unknown>>(
    listing.body.map((entry: Record<string, unknown>) => [entry['client_id'], entry]),
  )
  const usedEntry = byId.get(used.client_id)!
  t.equal(usedEntry['name'], 'used')
  t.type(usedEntry['last_used_at'], 'string')
  t.ok(Date.parse(usedEntry['last_used_at'] as string) >= started - 1000, 'last_used_at is the token request time')
  t.equal(byId.get(unused.client_id)!['last_used_at'], null)
  t.equal(byId.get(unused.client_id)!['revoked_at'], null)
  for (const secret of [used.client_secret, unused.client_secret, beta.clientSecret])
    t.notOk(listing.text.includes(secret), 'no secret in the listing')
  for (const entry of listing.body) {
    t.equal(entry.client_secret, undefined)
    t.equal(entry.secret_hash, undefined)
  }
  await new Promise((resolve) => setTimeout(resolve, 1100))
  const calledAt = Date.now()
  t.equal((await articles(token.body.access_token, 'beta')).status, 200)
  const later = (await server.admin('GET', '/admin/tenants/beta/keys')).body.find(
    (entry: { client_id: string }) => entry.client_id === used.client_id,
  )
  t.ok(Date.parse(later.last_used_at) >= calledAt - 5, "an API call with the key's token counts as use")
})

t.test('a suspended tenant answers 403 tenant_suspended and gets no tokens; reactivation restores both', async (t) => {
  const suspend = await server.admin('PATCH', '/admin/tenants/beta', { status: 'suspended' })
  t.equal(suspend.status, 200)
  t.equal(suspend.body.status, 'suspended')
  const call = await articles(beta.token, 'beta')
  t.equal(call.status, 403)
  t.equal(call.body.code, 'tenant_suspended')
  t.equal(call.body.error, 'Forbidden')
  const token = await tokenRequest({ form: credentials(beta) })
  t.equal(token.status, 401)
  t.equal(token.body.error, 'invalid_client')
  const write = await server.request('PUT', '/t/beta/article/SUSP', { body: { name: 'x' }, token: beta.token })
  t.equal(write.status, 403)
  t.equal((await articles(acme.token)).status, 200, 'other tenants are unaffected')
  const reactivate = await server.admin('PATCH', '/admin/tenants/beta', { status: 'active' })
  t.equal(reactivate.body.status, 'active')
  t.equal((await articles(beta.token, 'beta')).status, 200)
  t.equal((await tokenRequest({ form: credentials(beta) })).status, 200)
  t.equal((await beta.get('/article/SUSP')).status, 404, 'the refused write stored nothing')
})

t.test('the client secret is stored only as a scrypt hash', async (t) => {
  const own = await startServer()
  t.teardown(() => own.dispose())
  await own.tenant('hashy')
  const created = await own.admin('POST', '/admin/tenants/hashy/keys', { name: 'stored' })
  t.equal(created.status, 201)
  await own.stop()
  const env = open({ path: path.join(own.dataDir, 'system'), readOnly: true })
  try {
    const record = env.openDB<Record<string, unknown>, string>({ name: 'api_keys' }).get(created.body.client_id)
    t.ok(record !== undefined, 'the key is stored')
    t.match(record!['secret_hash'], /^scrypt\$/)
    for (const [field, value] of Object.entries(record!))
      t.not(value, created.body.client_secret, `field ${field} is not the secret`)
    t.notOk(JSON.stringify(record).includes(created.body.client_secret), 'the secret appears nowhere in the record')
  } finally {
    await env.close()
  }
})

t.test('signing keys persist: a token issued before a restart still verifies after it', async (t) => {
  const kidsBefore = (await server.request('GET', '/.well-known/jwks.json')).body.keys.map((key: JWK) => key.kid)
  const token = (await tokenRequest({ form: credentials(acme) })).body.access_token as string
  await server.restart()
  const kidsAfter = (await server.request('GET', '/.well-known/jwks.json')).body.keys.map((key: JWK) => key.kid)
  t.same(kidsAfter, kidsBefore)
  t.equal((await articles(token)).status, 200)
  const listed = (await server.admin('GET', '/admin/tenants/acme/keys')).body.find(
    (entry: { client_id: string }) => entry.client_id === acme.clientId,
  )
  t.type(listed.last_used_at, 'string', 'last_used_at is stored, not only held in memory')
})

t.test('token requests per client are rate limited (each costs a slow hash): 429 with Retry-After', async (t) => {
  const local = await startServer()
  t.teardown(() => local.dispose())
  const client = await local.tenant('burst')
  const form = new URLSearchParams({
    grant_type: 'client_credentials',
    client_id: client.clientId,
    client_secret: client.clientSecret,
  })
  // Concurrent, so that the refill (5 per second) cannot keep up whatever the hash costs here.
  const answers = await Promise.all(
    Array.from({ length: 40 }, () =>
      fetch(`${local.url}/oauth2/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: form.toString(),
      }),
    ),
  )
  const statuses = answers.map((answer) => answer.status)
  const passed = statuses.filter((status) => status === 200).length
  t.ok(passed >= 19 && passed <= 25, `about the burst passes (${passed})`)
  t.ok(
    statuses.every((status) => status === 200 || status === 429),
    'the others are 429',
  )
  const limited = answers.find((answer) => answer.status === 429) ?? null
  t.ok(limited !== null, 'past the burst the endpoint answers 429')
  t.equal(Number(limited!.headers.get('retry-after')) >= 1, true)
  const body = (await limited!.json()) as { error: string; error_description: string }
  t.equal(body.error, 'invalid_request')
  t.match(body.error_description, /Too many token requests/)
})
