/**
 * Token-signing keys in a cluster of two nodes on a real Redis, both with one PRICING_SECRET_KEY
 * (issue 13; docs/security.md): what the shared directory puts in Redis (the hash and the change
 * stream) holds the private keys sealed, never their `d`; a rotation on one node makes the other
 * sign with the new key while both accept the old key's tokens; a rotation with drop_previous on
 * the other node drops the old keys on both, and their tokens are refused on both.
 */
import { randomBytes } from 'node:crypto'
import t from 'tap'
import type { JWK } from 'jose'
import { Packr } from 'msgpackr'
import { connectRedis } from '../../cluster/redis.js'
import { SecretSealer } from '../../platform/secrets/sealer.js'
import { privateJwkOf } from '../../accounts/signing-key-records.js'
import type { SigningKeyRecord } from '../../storage/system-store.js'
import { startCluster } from '../helpers/cluster.js'
import { redisForTest } from '../helpers/redis.js'
import { adminToken, TenantClient, type TestServer } from '../helpers/server.js'
import { eventually } from '../helpers/until.js'

const leaseMs = 1_000
const secretKey = randomBytes(32).toString('base64')
const packr = new Packr({ useRecords: false, moreTypes: false })

function kidOf(token: string): string {
  return JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString()).kid
}

const redis = await redisForTest(t)
if (redis !== null) {
  const env = { PRICING_SECRET_KEY: secretKey }
  const nodes = await startCluster(
    t,
    redis,
    [
      { name: 'a', region: 'local', env },
      { name: 'b', region: 'local', env },
    ],
    leaseMs,
  )
  const a = nodes.get('a')!
  const b = nodes.get('b')!
  const client = connectRedis(redis.url)
  t.teardown(() => client.disconnect())
  const jwksKids = async (node: TestServer): Promise<string[]> =>
    (await node.request('GET', '/.well-known/jwks.json')).body.keys.map((key: JWK) => key.kid)
  // Set-up: failures throw (an assertion at the top level after an await ends tap's root test early).
  const created = await a.request('POST', '/admin/tenants', {
    body: { slug: 'shop', tier: 'standard', region: 'local' },
    token: adminToken,
  })
  if (created.status !== 201) throw new Error(`tenant create: ${created.status} ${created.text}`)
  const key = await a.request('POST', '/admin/tenants/shop/keys', { body: { name: 'k' }, token: adminToken })
  const onA = new TenantClient(a, 'shop', key.body.client_id, key.body.client_secret)
  const onB = new TenantClient(b, 'shop', key.body.client_id, key.body.client_secret)
  await onA.refreshToken()
  await eventually(
    async () => ((await onB.refreshToken().catch(() => null)) === null ? undefined : true),
    10_000,
    'the key known on b',
  )
  const accepted = (node: TestServer, token: string) =>
    node.request('GET', '/t/shop/article', { token }).then((answer) => answer.status)

  await t.test('Redis holds the signing keys sealed: no private d in the hash or the change stream', async (t) => {
    const hash = await client.hgetallBuffer('pricing:system:signing_keys')
    const records = Object.values(hash).map((bytes) => packr.unpack(bytes) as SigningKeyRecord)
    t.equal(records.length, 1, 'one signing key shared')
    t.equal(records[0]!.kid, kidOf(onA.token))
    t.equal(records[0]!.private_jwk, undefined, 'no private JWK')
    t.match(records[0]!.sealed_private_jwk, /^v1:[0-9a-f]{8}:/, 'the sealed form')
    const d = String(privateJwkOf(records[0]!, SecretSealer.fromSettings(secretKey, '')).d)
    t.equal(Buffer.from(d, 'base64url').length, 32, 'which opens to the Ed25519 key')
    const stream = await client.xrangeBuffer('pricing:system:log', '-', '+')
    const carried = stream.filter(([, fields]) => fields.some((field) => field.toString() === 'signing_keys'))
    t.ok(carried.length >= 1, 'the stream carried the key')
    const needle = Buffer.from(d)
    t.notOk(
      Object.values(hash).some((bytes) => bytes.includes(needle)),
      'the hash holds no d',
    )
    t.notOk(
      stream.some(([, fields]) => fields.some((field) => field.includes(needle))),
      'the change stream holds no d',
    )
  })

  await t.test('a rotation on one node: the other signs with the new key, both accept the old tokens', async (t) => {
    const oldToken = onA.token
    const oldKid = kidOf(oldToken)
    const rotated = await a.request('POST', '/admin/signing-keys/rotate', { body: {}, token: adminToken })
    t.equal(rotated.status, 200)
    const newKid = rotated.body[0].kid as string
    t.not(newKid, oldKid)
    t.same(
      await eventually(
        async () => {
          const kids = await jwksKids(b)
          return kids.length === 2 ? kids : undefined
        },
        10_000,
        "b's JWKS with both keys",
      ),
      [newKid, oldKid],
      "b's JWKS lists both, newest first",
    )
    t.equal(kidOf(await onB.refreshToken()), newKid, 'b signs with the new key')
    t.equal(kidOf(await onA.refreshToken()), newKid, 'a too')
    t.equal(await accepted(a, oldToken), 200, 'a accepts a token of the old key')
    t.equal(await accepted(b, oldToken), 200, 'b too')
    t.equal(await accepted(a, onB.token), 200, "a accepts b's new token")

    await t.test(
      'drop_previous on the other node: the old key is dropped on both, its tokens refused on both',
      async (t) => {
        const dropped = await b.request('POST', '/admin/signing-keys/rotate', {
          body: { drop_previous: true },
          token: adminToken,
        })
        t.equal(dropped.status, 200)
        const newest = dropped.body[0].kid as string
        t.same(
          dropped.body.map((state: { kid: string }) => state.kid),
          [newest],
          'one key left on b',
        )
        t.same(
          await eventually(
            async () => {
              const kids = await jwksKids(a)
              return kids.length === 1 && kids[0] === newest ? kids : undefined
            },
            10_000,
            "a's JWKS with the one key",
          ),
          [newest],
          'a dropped the old keys too',
        )
        for (const node of [a, b]) {
          t.equal(await accepted(node, oldToken), 401, 'a token of the first key is refused')
          t.equal(await accepted(node, onA.token), 401, 'a token of the second key is refused')
        }
        t.equal(kidOf(await onA.refreshToken()), newest, "a signs with b's new key")
        t.equal(await accepted(b, onA.token), 200)
        t.same(
          Object.keys(await client.hgetallBuffer('pricing:system:signing_keys')),
          [newest],
          'Redis holds only the new key',
        )
      },
    )
  })
}
