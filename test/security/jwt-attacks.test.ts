/**
 * The JWT attack set (issue 13; RFC 8725): every forged, altered or out-of-date bearer token is
 * refused with 401 and the spec's error body, and a token of a suspended tenant with 403. Each
 * attack is a named test against the real server; "a token made this way is otherwise valid"
 * shows that the refusals come from the attack, not from a malformed test token.
 */
import { createHmac, createPrivateKey, generateKeyPairSync, sign, type JsonWebKey } from 'node:crypto'
import t from 'tap'
import { base64url, generateKeyPair, importJWK, SignJWT } from 'jose'
import { keyTokenClaims, serverSigningKey } from '../helpers/tokens.js'
import type { Answer } from '../helpers/server.js'
import { suiteServer } from '../helpers/suite.js'

let signing: Awaited<ReturnType<typeof serverSigningKey>>

const {
  server,
  tenants: { acme, beta },
} = await suiteServer({ tenants: { acme: {}, beta: {} } })

t.before(async () => {
  signing = await serverSigningKey(server)
})

const nowS = () => Math.floor(Date.now() / 1000)
const articles = (token: string, slug = 'acme'): Promise<Answer> =>
  server.request('GET', `/t/${slug}/article`, { token })
const claims = (iatS = nowS(), expS = nowS() + 600) => keyTokenClaims(server.url, 'acme', acme.clientId, iatS, expS)
const serverSigned = async (token: SignJWT, header: Record<string, unknown> = {}): Promise<string> =>
  token
    .setProtectedHeader({ alg: signing.alg, kid: signing.kid, typ: 'JWT', ...header })
    .sign(await importJWK(signing.privateJwk, signing.alg))
/** A JWT of `header` and `payload` with `signature` (base64url) as given: hand-made, for headers jose will not sign. */
const raw = (header: object, payload: object, signature = ''): string =>
  `${base64url.encode(JSON.stringify(header))}.${base64url.encode(JSON.stringify(payload))}.${signature}`
const payloadOf = async (): Promise<Record<string, unknown>> =>
  JSON.parse(Buffer.from((await serverSigned(claims())).split('.')[1]!, 'base64url').toString())

async function refused(t: Pick<typeof import('tap').default, 'equal'>, token: string, slug = 'acme'): Promise<void> {
  const answer = await articles(token, slug)
  t.equal(answer.status, 401, 'refused with 401')
  t.equal(answer.body?.code, 'unauthorized', 'with the spec error body')
}

t.test('a token made this way is otherwise valid', async (t) => {
  t.equal((await articles(await serverSigned(claims()))).status, 200)
})

t.test('alg none: an unsigned token', async (t) => {
  await refused(t, raw({ alg: 'none', typ: 'JWT', kid: signing.kid }, await payloadOf()))
  await refused(t, raw({ alg: 'none', typ: 'JWT', kid: signing.kid }, await payloadOf(), 'e30'))
})

t.test('algorithm confusion: HS256 keyed with the public key', async (t) => {
  const payload = await payloadOf()
  const header = { alg: 'HS256', typ: 'JWT', kid: signing.kid }
  const input = `${base64url.encode(JSON.stringify(header))}.${base64url.encode(JSON.stringify(payload))}`
  for (const secret of [
    Buffer.from(String(signing.publicJwk.x), 'base64url'),
    Buffer.from(JSON.stringify(signing.publicJwk)),
    Buffer.from(String(signing.publicJwk.x)),
  ]) {
    await refused(t, `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`)
  }
})

t.test("algorithm confusion: RS256 and ES256 signed by an attacker's key under the server's kid", async (t) => {
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 })
  await refused(
    t,
    await claims().setProtectedHeader({ alg: 'RS256', kid: signing.kid, typ: 'JWT' }).sign(rsa.privateKey),
  )
  const ec = await generateKeyPair('ES256')
  await refused(
    t,
    await claims().setProtectedHeader({ alg: 'ES256', kid: signing.kid, typ: 'JWT' }).sign(ec.privateKey),
  )
})

t.test("EdDSA signed by an attacker's key, under the server's kid and under another", async (t) => {
  const { privateKey } = await generateKeyPair('EdDSA')
  await refused(t, await claims().setProtectedHeader({ alg: 'EdDSA', kid: signing.kid, typ: 'JWT' }).sign(privateKey))
  await refused(t, await claims().setProtectedHeader({ alg: 'EdDSA', kid: 'unknown', typ: 'JWT' }).sign(privateKey))
})

t.test('an unknown kid, and no kid, on a token signed with the server key', async (t) => {
  await refused(t, await serverSigned(claims(), { kid: 'not-a-kid' }))
  const key = await importJWK(signing.privateJwk, signing.alg)
  await refused(t, await claims().setProtectedHeader({ alg: signing.alg, typ: 'JWT' }).sign(key))
})

t.test('expired', async (t) => {
  await refused(t, await serverSigned(claims(nowS() - 1_000, nowS() - 100)))
})

t.test('not yet valid (nbf ahead)', async (t) => {
  await refused(t, await serverSigned(claims().setNotBefore(nowS() + 300)))
})

t.test('issued in the future, and older than a token lives (a long exp the service never issues)', async (t) => {
  await refused(t, await serverSigned(claims(nowS() + 600, nowS() + 1_200)))
  await refused(t, await serverSigned(claims(nowS() - 86_400, nowS() + 86_400)))
})

t.test('wrong iss, wrong aud, and a tid of another tenant', async (t) => {
  await refused(t, await serverSigned(claims().setIssuer('https://evil.example')))
  await refused(t, await serverSigned(claims().setAudience('beta')))
  await refused(
    t,
    await serverSigned(
      new SignJWT({ tid: 'beta', typ: 'key', scope: 'api' })
        .setIssuer(server.url)
        .setSubject(acme.clientId)
        .setAudience('beta')
        .setIssuedAt(nowS())
        .setExpirationTime(nowS() + 600),
    ),
  )
  // beta's own valid token is valid on beta only.
  t.equal((await articles(beta.token, 'beta')).status, 200)
  await refused(t, beta.token, 'acme')
})

t.test('a tampered payload under the original signature', async (t) => {
  const [header, payload, signature] = acme.token.split('.')
  const claimsText = JSON.parse(Buffer.from(payload!, 'base64url').toString()) as Record<string, unknown>
  for (const change of [{ tid: 'beta', aud: 'beta' }, { exp: nowS() + 86_400 }, { sub: beta.clientId }]) {
    await refused(t, `${header}.${base64url.encode(JSON.stringify({ ...claimsText, ...change }))}.${signature}`)
  }
  await refused(t, `${header}.${payload}.`)
})

t.test('explicit typing: a typ other than JWT, and an unknown crit header', async (t) => {
  await refused(t, await serverSigned(claims(), { typ: 'at+jwt' }))
  // jose will not sign an unknown crit: signed here by hand with the server's key.
  const header = { alg: signing.alg, kid: signing.kid, typ: 'JWT', crit: ['x-unknown'], 'x-unknown': true }
  const input = `${base64url.encode(JSON.stringify(header))}.${base64url.encode(JSON.stringify(await payloadOf()))}`
  const signature = sign(
    null,
    Buffer.from(input),
    createPrivateKey({ key: signing.privateJwk as JsonWebKey, format: 'jwk' }),
  ).toString('base64url')
  await refused(t, `${input}.${signature}`)
})

t.test('an oversized token: refused, never a 5xx', async (t) => {
  // A token the service never issues (over 2,048 characters), correctly signed: refused unread.
  await refused(t, await serverSigned(claims().setJti('x'.repeat(1_800))))
  // Beyond it, uWebSockets.js refuses the request head itself with 431 before any handler runs.
  for (const length of [5_000, 200_000]) {
    const answer = await articles(`${'a'.repeat(length)}.b.c`)
    t.equal(answer.status, 431, `a ${length}-character token: 431 from the HTTP layer`)
  }
})

t.test('a token of a suspended tenant answers 403 until it is active again', async (t) => {
  const token = await serverSigned(claims())
  t.equal((await server.admin('PATCH', '/admin/tenants/acme', { status: 'suspended' })).status, 200)
  const answer = await articles(token)
  t.equal(answer.status, 403)
  t.equal(answer.body.code, 'tenant_suspended')
  t.equal((await server.admin('PATCH', '/admin/tenants/acme', { status: 'active' })).status, 200)
  t.equal((await articles(token)).status, 200, 'active again: the same token passes')
})
