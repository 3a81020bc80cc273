/**
 * Token-signing key rotation (issue 13; docs/security.md "Key rotation"). Against the real server:
 * POST /admin/signing-keys/rotate makes a new key sign while tokens of the old one are still
 * accepted and the JWKS lists both, across a restart too; drop_previous refuses the old keys'
 * tokens at once; the operator's errors (401, 400, 409 at ten keys); the CLI's `signing-key`
 * commands. With the clock in the test's hands (TokenService on a real LMDB system store, as the
 * server runs it): the old key verifies until the last token it signed has expired (token lifetime
 * plus clock skew after the rotation), then it is dropped from the JWKS and the store, and even a
 * valid signature of it is refused, cached or not; automatic rotation at its interval.
 */
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import t from 'tap'
import { createLocalJWKSet, importJWK, jwtVerify, SignJWT, type JWK } from 'jose'
import { signingKeyRetentionMs, TokenService, tokenLifetimeS } from '../../accounts/auth.js'
import { SecretSealer } from '../../platform/secrets/sealer.js'
import { privateJwkOf } from '../../accounts/signing-key-records.js'
import { signingKeysMax } from '../../accounts/signing-keys.js'
import { SystemStore } from '../../storage/system-store.js'
import { adminToken, entryPath, startServer, type TestServer } from '../helpers/server.js'

function kidOf(token: string): string {
  return JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString()).kid
}

interface KeyAnswer {
  kid: string
  alg: string
  created_at: string
  status: 'signing' | 'verifying'
  drops_at: string | null
  encrypted: boolean
}

t.test('through the operator API, on the real server', async (t) => {
  const server: TestServer = await startServer()
  t.teardown(() => server.dispose())
  const acme = await server.tenant('acme')
  const oldToken = acme.token
  const oldKid = kidOf(oldToken)
  const jwksKids = async (): Promise<string[]> =>
    (await server.request('GET', '/.well-known/jwks.json')).body.keys.map((key: JWK) => key.kid)
  const articles = (token: string) => server.request('GET', '/t/acme/article', { token })

  await t.test(
    'a rotation: the new key signs, tokens of the old one are still accepted, the JWKS lists both',
    async (t) => {
      t.same(await jwksKids(), [oldKid], 'one key before')
      const rotated = await server.admin<KeyAnswer[]>('POST', '/admin/signing-keys/rotate', {})
      t.equal(rotated.status, 200)
      const [newest, old] = rotated.body
      t.equal(rotated.body.length, 2)
      t.not(newest!.kid, oldKid, 'a new key')
      t.same(
        [newest!.status, newest!.drops_at, newest!.encrypted, newest!.alg],
        ['signing', null, false, 'EdDSA'],
        'the new key signs, is never dropped while newest, and is stored as it is without a secret key',
      )
      t.same([old!.kid, old!.status], [oldKid, 'verifying'], 'the old key verifies')
      t.equal(
        Date.parse(old!.drops_at!) - Date.parse(newest!.created_at),
        (tokenLifetimeS + 30) * 1000,
        'it is dropped a token lifetime plus the clock skew after the new key was made',
      )
      t.same(await jwksKids(), [newest!.kid, oldKid], 'the JWKS lists both, newest first')
      t.equal((await articles(oldToken)).status, 200, 'a token of the old key is accepted')
      const newToken = await acme.refreshToken()
      t.equal(kidOf(newToken), newest!.kid, 'new tokens are signed with the new key')
      t.equal((await articles(newToken)).status, 200)
      const jwks = createLocalJWKSet((await server.request('GET', '/.well-known/jwks.json')).body)
      for (const token of [oldToken, newToken]) {
        const { payload } = await jwtVerify(token, jwks, {
          issuer: server.url,
          audience: 'acme',
          algorithms: ['EdDSA'],
        })
        t.equal(
          payload['tid'],
          'acme',
          `the published JWKS verifies a token of ${kidOf(token) === oldKid ? 'the old' : 'the new'} key`,
        )
      }
      t.same(
        (await server.admin<KeyAnswer[]>('GET', '/admin/signing-keys')).body,
        rotated.body,
        'GET /admin/signing-keys answers the same',
      )

      await server.restart()
      t.same(await jwksKids(), [newest!.kid, oldKid], 'a restart keeps both')
      t.equal((await articles(oldToken)).status, 200, 'and the old token')
      t.equal(kidOf(await acme.refreshToken()), newest!.kid, 'and signs with the new key')
    },
  )

  await t.test('the CLI lists the keys on the data directory and rotates through the running server', async (t) => {
    const listed = await cli(['signing-key', 'list', '--data-dir', server.dataDir])
    t.equal(listed.code, 0, listed.stderr)
    const keys = JSON.parse(listed.stdout) as KeyAnswer[]
    t.same(keys, (await server.admin<KeyAnswer[]>('GET', '/admin/signing-keys')).body, 'the same as the operator API')
    const refused = await cli(['signing-key', 'rotate', '--data-dir', server.dataDir])
    t.equal(refused.code, 2, 'rotate without --url is a usage mistake')
    t.match(
      refused.stderr,
      'signing-key rotate: the running server signs with the new key from then on (and shares it in a cluster): pass --url of the running server',
    )
    const rotated = await cli(['signing-key', 'rotate', '--url', server.url], { PRICING_ADMIN_TOKEN: adminToken })
    t.equal(rotated.code, 0, rotated.stderr)
    const after = JSON.parse(rotated.stdout) as KeyAnswer[]
    t.equal(after.length, 3, 'a third key')
    t.same(
      after.slice(1).map((key) => key.kid),
      keys.map((key) => key.kid),
      'after the two before',
    )
    t.equal(kidOf(await acme.refreshToken()), after[0]!.kid, 'which signs')
    t.equal((await articles(oldToken)).status, 200, 'the first key still verifies')
  })

  await t.test('the operator: 401 without the admin token, 400 for a bad body, 409 at ten keys', async (t) => {
    const anonymous = await server.request('POST', '/admin/signing-keys/rotate', { body: {} })
    t.equal(anonymous.status, 401)
    t.equal(anonymous.body.code, 'unauthorized')
    t.equal((await server.request('GET', '/admin/signing-keys', { token: 'wrong' })).status, 401)
    const badType = await server.admin('POST', '/admin/signing-keys/rotate', { drop_previous: 'yes' })
    t.equal(badType.status, 400)
    t.equal(badType.body.code, 'validation_failed')
    t.equal((await server.admin('POST', '/admin/signing-keys/rotate', { drop: true })).status, 400, 'an unknown field')
    t.equal((await server.admin('GET', '/admin/signing-keys')).body.length, 3, 'nothing rotated by a refused request')
    for (let held = 3; held < signingKeysMax; held++)
      t.equal((await server.admin('POST', '/admin/signing-keys/rotate', {})).status, 200)
    const full = await server.admin('POST', '/admin/signing-keys/rotate', {})
    t.equal(full.status, 409)
    t.equal(full.body.code, 'conflict')
    t.match(
      full.body.message,
      /^10 signing keys are held, the most there may be; the oldest is dropped at \d{4}-\d{2}-\d{2}T[\d:.]+Z: rotate after that, or with drop_previous$/,
    )
    t.equal((await server.admin('GET', '/admin/signing-keys')).body.length, signingKeysMax, 'still ten')
  })

  await t.test('drop_previous: every older key is dropped at once and its tokens are refused', async (t) => {
    const middleToken = acme.token
    t.equal((await articles(middleToken)).status, 200, 'before: a token of the latest key is accepted')
    const dropped = await server.admin<KeyAnswer[]>('POST', '/admin/signing-keys/rotate', { drop_previous: true })
    t.equal(dropped.status, 200)
    t.equal(dropped.body.length, 1, 'one key left')
    t.same(await jwksKids(), [dropped.body[0]!.kid], 'the JWKS lists only the new key')
    for (const token of [oldToken, middleToken]) {
      const answer = await articles(token)
      t.equal(answer.status, 401, 'a token of a dropped key is refused, even one verified before')
      t.equal(answer.body.code, 'unauthorized')
    }
    const fresh = await acme.refreshToken()
    t.equal((await articles(fresh)).status, 200, 'a new token works')
    await server.stop()
    const system = new SystemStore(path.join(server.dataDir, 'system'))
    t.same(
      [...system.signingKeys.getKeys()],
      [dropped.body[0]!.kid],
      'the dropped private keys are deleted from the store',
    )
    await system.close()
  })
})

t.test(
  'with the clock in hand: the old key verifies until its last token has expired, then it is dropped everywhere',
  async (t) => {
    const dir = mkdtempSync(path.join(tmpdir(), 'pricing-rotation-'))
    const store = new SystemStore(dir)
    t.teardown(async () => {
      await store.close()
      rmSync(dir, { recursive: true, force: true })
    })
    const sealer = SecretSealer.fromSettings(randomBytes(32).toString('base64'), '')
    const issuer = 'https://pricing.test'
    const tokens = new TokenService(store, () => issuer, { sealer })
    const startedAt = Date.parse('2026-03-01T08:00:00Z')
    await tokens.init(startedAt)
    const oldKid = tokens.jwks.keys[0]!.kid!
    const oldPrivate = privateJwkOf(store.signingKeys.get(oldKid)!, sealer)
    const lastOldTokenAt = startedAt + 100_000
    const oldToken = await tokens.issue('acme', 'client-1', 'key', lastOldTokenAt)
    const rotatedAt = lastOldTokenAt + 700
    const states = await tokens.rotate(rotatedAt, false)
    const newKid = states[0]!.kid
    t.same(
      states.map((state) => [state.kid, state.signing, state.dropsAt, state.encrypted]),
      [
        [newKid, true, null, true],
        [oldKid, false, rotatedAt + signingKeyRetentionMs, true],
      ],
      'the new key signs; the old one drops 930 s after the rotation',
    )
    t.equal(signingKeyRetentionMs, (tokenLifetimeS + 30) * 1000)
    const newToken = await tokens.issue('acme', 'client-1', 'key', rotatedAt)
    t.equal(kidOf(newToken), newKid)
    t.same(
      tokens.jwks.keys.map((key) => key.kid),
      [newKid, oldKid],
    )

    const lastValidMs = lastOldTokenAt + (tokenLifetimeS + 30) * 1000 - 1000
    t.ok(
      await tokens.verify(oldToken, lastValidMs),
      'the last token of the old key verifies until its end (lifetime plus skew)',
    )
    t.equal(await tokens.verify(oldToken + 'x', lastValidMs), null, 'a tampered copy does not (the check is real)')

    // A valid signature of the old key made late (its private key in the wrong hands), verified and
    // cached while the key is still held.
    const lateS = Math.floor((rotatedAt + signingKeyRetentionMs - 2_000) / 1000)
    const stolen = await new SignJWT({ tid: 'acme', typ: 'key', scope: 'api' })
      .setProtectedHeader({ alg: 'EdDSA', kid: oldKid, typ: 'JWT' })
      .setIssuer(issuer)
      .setSubject('client-1')
      .setAudience('acme')
      .setIssuedAt(lateS)
      .setExpirationTime(lateS + tokenLifetimeS)
      .sign(await importJWK(oldPrivate, 'EdDSA'))
    const stolenClaims = await tokens.verify(stolen, lateS * 1000)
    t.equal(stolenClaims?.kid, oldKid, 'while the old key is held, its signatures verify')

    await tokens.keys.maintain(rotatedAt + signingKeyRetentionMs - 1, 0)
    t.same(
      tokens.jwks.keys.map((key) => key.kid),
      [newKid, oldKid],
      'one millisecond before its time: still held',
    )
    t.ok(store.signingKeys.get(oldKid), 'and stored')

    const droppedAt = rotatedAt + signingKeyRetentionMs
    await tokens.keys.maintain(droppedAt, 0)
    t.same(
      tokens.jwks.keys.map((key) => key.kid),
      [newKid],
      'at its time: gone from the JWKS',
    )
    t.equal(store.signingKeys.get(oldKid), undefined, 'and from the store, its private key with it')
    t.equal(stolenClaims!.expiresAtMs, 0, 'the cached claims of its token end (the request path holds the same object)')
    t.equal(tokens.cached(stolen, droppedAt), undefined, 'no longer cached')
    t.equal(await tokens.verify(stolen, droppedAt), null, 'a valid signature of the dropped key is refused')
    const freshToken = await tokens.issue('acme', 'client-1', 'key', droppedAt)
    t.equal(kidOf(freshToken), newKid, 'the new key signs')
    t.equal((await tokens.verify(freshToken, droppedAt))?.kid, newKid, 'and its tokens verify')
    t.same(
      tokens.keys.states().map((state) => [state.kid, state.signing, state.dropsAt]),
      [[newKid, true, null]],
      'one key left',
    )

    await t.test(
      'a new TokenService on the same store (a restart) holds the same keys and drops what is due at start',
      async (t) => {
        const restarted = new TokenService(store, () => issuer, { sealer })
        const loaded = await restarted.init(droppedAt + 1)
        t.same(loaded, { created: false, resealed: 0, dropped: [] })
        t.same(
          restarted.jwks.keys.map((key) => key.kid),
          [newKid],
        )
        t.equal(
          (await restarted.verify(freshToken, droppedAt + 1))?.subject,
          'client-1',
          'a token issued before verifies',
        )
      },
    )
  },
)

t.test('automatic rotation at PRICING_SIGNING_KEY_ROTATION_S, and the limit of keys held', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'pricing-rotation-'))
  const store = new SystemStore(dir)
  t.teardown(async () => {
    await store.close()
    rmSync(dir, { recursive: true, force: true })
  })
  const tokens = new TokenService(store, () => 'https://pricing.test')
  const startedAt = Date.parse('2026-03-01T08:00:00Z')
  const intervalMs = 3_600_000
  await tokens.init(startedAt)
  const first = tokens.jwks.keys[0]!.kid!
  await tokens.keys.maintain(startedAt + intervalMs - 1, intervalMs)
  t.same(
    tokens.jwks.keys.map((key) => key.kid),
    [first],
    'not before the interval',
  )
  await tokens.keys.maintain(startedAt + intervalMs, intervalMs)
  const afterOne = tokens.keys.states()
  t.equal(afterOne.length, 2, 'a rotation at the interval')
  t.same(
    [afterOne[0]!.signing, afterOne[0]!.createdAt, afterOne[1]!.kid, afterOne[0]!.encrypted],
    [true, startedAt + intervalMs, first, false],
  )
  await tokens.keys.maintain(startedAt + intervalMs + signingKeyRetentionMs, intervalMs)
  t.same(
    tokens.keys.states().map((state) => state.kid),
    [afterOne[0]!.kid],
    'the old key dropped at its time, no rotation before the next interval',
  )
  await tokens.keys.maintain(startedAt + 2 * intervalMs, 0)
  t.equal(tokens.keys.states().length, 1, 'interval 0: never')

  let nowMs = startedAt + 2 * intervalMs
  while (tokens.keys.states().length < signingKeysMax) await tokens.rotate(++nowMs, false)
  await t.rejects(tokens.rotate(++nowMs, false), { code: 'conflict' }, 'the eleventh is refused')
  t.equal(tokens.keys.states().length, signingKeysMax, 'and nothing was added')
  await tokens.keys.maintain(startedAt + 3 * intervalMs, intervalMs)
  t.equal(
    tokens.keys.states().length,
    1,
    'the automatic step drops the expired ones first, then does not rotate (the newest is young)',
  )
})

interface CliResult {
  code: number
  stdout: string
  stderr: string
}

function cli(args: string[], extra: Record<string, string> = {}): Promise<CliResult> {
  const env = {
    ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('PRICING_'))),
    ...extra,
  }
  return new Promise((resolve) => {
    execFile(process.execPath, [entryPath, ...args], { env, timeout: 30_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stdout, stderr })
    })
  })
}
