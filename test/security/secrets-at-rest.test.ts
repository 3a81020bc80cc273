/**
 * Secrets at rest (issue 13; docs/security.md "Secrets at rest") against the real server and real
 * LMDB files: with PRICING_SECRET_KEY the token-signing private keys and the webhook secrets are
 * stored sealed (AES-256-GCM), so that no byte of the data directory, of a tenant's backup or of
 * the log holds them in plaintext; a restart with the same key signs and verifies as before; a
 * wrong, missing or malformed key stops the start with a message naming the setting, and changes
 * nothing; PRICING_SECRET_KEY_PREVIOUS moves everything to a new key; plaintext data from before
 * the key is sealed at the first start with one; a webhook secret sealed under a key not given
 * holds its deliveries until a new secret is set. Records are read through the storage classes
 * after each stop; the raw files are searched byte for byte.
 */
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import t from 'tap'
import { importJWK, SignJWT, type JWK } from 'jose'
import { SecretSealer } from '../../platform/secrets/sealer.js'
import { privateJwkOf } from '../../accounts/signing-key-records.js'
import { openWebhookSecret, sealWebhookSecret, storedWebhookForm } from '../../tenant/webhooks/secrets.js'
import { SystemStore, type SigningKeyRecord } from '../../storage/system-store.js'
import { TenantStore, type StoredWebhook } from '../../storage/tenant-store.js'
import { entriesAfter, expectStatus, lastSequence, sequencesOf } from '../helpers/changelog.js'
import {
  signatureOf,
  startHttpsReceiver,
  testCertificate,
  type HttpsReceiver,
  type ReceivedRequest,
} from '../helpers/https-receiver.js'
import { entryPath, TestServer, TenantClient } from '../helpers/server.js'

const publicUrl = 'http://pricing.test'
const keyA = randomBytes(32).toString('base64')
const keyB = randomBytes(32).toString('hex')
const fingerprintA = SecretSealer.fromSettings(keyA, '').current!.fingerprint
const fingerprintB = SecretSealer.fromSettings(keyB, '').current!.fingerprint
const sealedPattern = /^v1:[0-9a-f]{8}:[A-Za-z0-9_-]+$/
const deliveryTimeoutMs = 20_000

let caPath = ''
let rx: HttpsReceiver
const dataDirs: string[] = []

t.before(async () => {
  caPath = (await testCertificate()).caPath
  rx = await startHttpsReceiver()
})
t.teardown(async () => {
  await rx.close()
  for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true })
})

function freshDataDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'pricing-secrets-'))
  dataDirs.push(dir)
  return dir
}

/** The environment of every start here: one public URL (the token issuer across restarts), webhooks to the test receiver. */
function envWith(extra: Record<string, string>): Record<string, string> {
  return {
    NODE_EXTRA_CA_CERTS: caPath,
    PRICING_WEBHOOK_ALLOW_PRIVATE: 'true',
    PRICING_WEBHOOK_BATCH_MS: '50',
    PRICING_PUBLIC_URL: publicUrl,
    ...extra,
  }
}

async function serve(dataDir: string, extra: Record<string, string>): Promise<TestServer> {
  const server = new TestServer(dataDir, envWith(extra))
  await server.start()
  return server
}

/** A start that must fail: its exit code and output (the server's own environment, as TestServer sets it). */
function failedStart(
  dataDir: string,
  extra: Record<string, string>,
): Promise<{ code: number | null; stderr: string; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [entryPath, 'start'], {
      env: {
        ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('PRICING_'))),
        PRICING_PORT: '0',
        PRICING_HOST: '127.0.0.1',
        PRICING_DATA_DIR: dataDir,
        PRICING_DEMO: 'false',
        PRICING_FX_FEED_URL: '',
        PRICING_BACKUP_INTERVAL_S: '0',
        ...envWith(extra),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`the start did not stop by itself: ${stdout}`))
    }, 20_000)
    child.once('exit', (code) => {
      clearTimeout(timer)
      resolve({ code, stderr, stdout })
    })
  })
}

/** The signing-key records as stored (the server stopped). */
async function storedSigningKeys(dataDir: string): Promise<SigningKeyRecord[]> {
  const system = new SystemStore(path.join(dataDir, 'system'))
  try {
    return [...system.signingKeys.getRange()]
      .map((entry) => entry.value)
      .sort((left, right) => right.created_at - left.created_at)
  } finally {
    await system.close()
  }
}

/** A tenant's webhook records as stored (the server stopped). */
async function storedWebhooks(dataDir: string, slug: string): Promise<StoredWebhook[]> {
  const store = new TenantStore(path.join(dataDir, 'tenants', slug))
  try {
    return store.webhooks()
  } finally {
    await store.close()
  }
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name)
    return statSync(full).isDirectory() ? filesUnder(full) : [full]
  })
}

/** The files under `dir` (relative paths) whose bytes contain `text` (UTF-8, as msgpack stores strings). */
function filesContaining(dir: string, text: string): string[] {
  const needle = Buffer.from(text, 'utf8')
  return filesUnder(dir)
    .filter((file) => readFileSync(file).includes(needle))
    .map((file) => path.relative(dir, file))
}

function kidOf(token: string): string {
  return JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString()).kid
}

function header(request: ReceivedRequest, name: string): string | undefined {
  const value = request.headers[name]
  return Array.isArray(value) ? value.join(',') : value
}

/** A tenant with change events on, an API key and a token. */
async function hookTenant(server: TestServer, slug: string): Promise<TenantClient> {
  const client = await server.tenant(slug)
  await expectStatus(
    client.call('PUT', '/settings/change.events.enabled', { value: 'true' }),
    202,
    'change.events.enabled',
  )
  return client
}

/** The delivery to `/<slug>` (each tenant's webhook has its own path) that carries `sequence`. */
async function deliveredTo(slug: string, sequence: number): Promise<ReceivedRequest> {
  const carries = (request: ReceivedRequest): boolean =>
    request.path === `/${slug}` && sequencesOf([request]).includes(sequence)
  const requests = await rx.waitFor((received) => received.some(carries), deliveryTimeoutMs)
  return requests.find(carries)!
}

/** Writes an article and answers the delivery of its changelog entry. */
async function deliveryOf(client: TenantClient, sku: string): Promise<ReceivedRequest> {
  const before = await lastSequence(client)
  await expectStatus(client.call('PUT', `/article/${sku}`, { name: `article ${sku}` }), 202, `article ${sku}`)
  const entry = (await entriesAfter(client, before)).find((candidate) => candidate.entity_code === sku)!
  return deliveredTo(client.slug, entry.sequence)
}

/** The same client on another start of the server (same credentials, new address). */
function clientOn(server: TestServer, client: TenantClient): TenantClient {
  const moved = new TenantClient(server, client.slug, client.clientId, client.clientSecret)
  moved.token = client.token
  return moved
}

function secretKeyLines(stdout: string): string[] {
  return stdout.split('\n').filter((line) => line.includes('"msg":"secrets at rest'))
}

// One data directory through the tests below, as one deployment through its life.
const dataDir = freshDataDir()
const webhookSecret = `whsec-${randomBytes(16).toString('hex')}`
let acme: TenantClient
let firstKid = ''

t.test(
  'with a key from the first start, neither the private key nor the webhook secret is anywhere in plaintext: LMDB files, backups, logs',
  async (t) => {
    const server = await serve(dataDir, { PRICING_SECRET_KEY: keyA })
    const lines = secretKeyLines(server.stdout)
    t.equal(lines.length, 1, 'one line about secrets at rest')
    t.match(
      lines[0],
      /"level":30,.*"fingerprint":"[0-9a-f]{8}".*encrypted with PRICING_SECRET_KEY/,
      'at info level, naming the key by its fingerprint',
    )
    t.ok(lines[0]!.includes(`"fingerprint":"${fingerprintA}"`), 'the fingerprint of the key given')
    acme = await hookTenant(server, 'acme')
    firstKid = kidOf(acme.token)
    await expectStatus(
      acme.call('POST', '/webhooks', { url: `${rx.url}/acme`, secret: webhookSecret }),
      201,
      'register',
    )
    const delivery = await deliveryOf(acme, 'A-1')
    t.equal(
      header(delivery, 'x-signature-256'),
      signatureOf(webhookSecret, delivery.raw),
      'deliveries are signed with the secret',
    )
    const keys = await server.admin('GET', '/admin/signing-keys')
    t.same(
      keys.body.map((key: { kid: string; encrypted: boolean }) => [key.kid, key.encrypted]),
      [[firstKid, true]],
      'the signing key is stored encrypted',
    )
    t.equal(
      (await server.admin('POST', '/admin/tenants/acme/backups', { retain: false })).status,
      201,
      'a backup of the tenant',
    )
    const stdout = server.stdout
    await server.stop()

    const [signing] = await storedSigningKeys(dataDir)
    t.equal(signing!.kid, firstKid)
    t.equal(signing!.private_jwk, undefined, 'no private JWK field')
    t.match(signing!.sealed_private_jwk, sealedPattern, 'the private key sealed')
    t.equal(signing!.sealed_private_jwk!.split(':')[1], fingerprintA, 'under the key given')
    const privateJwk = privateJwkOf(signing!, SecretSealer.fromSettings(keyA, ''))
    const d = String(privateJwk.d)
    t.equal(Buffer.from(d, 'base64url').length, 32, 'the opened private key has an Ed25519 `d` (32 bytes)')
    const [stored] = await storedWebhooks(dataDir, 'acme')
    t.equal(stored!['secret'], null, 'no webhook secret field')
    t.match(stored!['sealedSecret'], sealedPattern, 'the webhook secret sealed')
    t.same(
      openWebhookSecret(stored!, SecretSealer.fromSettings(keyA, '')).secret,
      webhookSecret,
      'and it opens to the secret',
    )

    const backupFiles = filesUnder(path.join(dataDir, 'backups', 'acme'))
    t.ok(
      backupFiles.some((file) => file.endsWith('data.mdb')),
      'the backup holds a copy of the LMDB file',
    )
    t.same(filesContaining(dataDir, d), [], "no file of the data directory holds the private key's d")
    t.same(
      filesContaining(dataDir, webhookSecret),
      [],
      'no file of the data directory (backups included) holds the webhook secret',
    )
    t.same(filesContaining(dataDir, keyA), [], 'nor the secret key')
    t.notOk(stdout.includes(d) || stdout.includes(webhookSecret) || stdout.includes(keyA), 'the log holds none of them')

    await t.test('a restart with the same key signs and verifies as before', async (t) => {
      const again = await serve(dataDir, { PRICING_SECRET_KEY: keyA })
      t.teardown(() => again.stop())
      const client = clientOn(again, acme)
      t.equal((await client.get('/article/A-1')).status, 200, 'the token from before the restart is accepted')
      t.equal(kidOf(await client.refreshToken()), firstKid, 'new tokens are signed with the same key')
      const forged = await new SignJWT({ tid: 'acme', typ: 'key', scope: 'api' })
        .setProtectedHeader({ alg: 'EdDSA', kid: firstKid, typ: 'JWT' })
        .setIssuer(publicUrl)
        .setSubject(acme.clientId)
        .setAudience('acme')
        .setIssuedAt()
        .setExpirationTime('10m')
        .sign(await importJWK(privateJwk as JWK, 'EdDSA'))
      t.equal(
        (await again.request('GET', '/t/acme/article/A-1', { token: forged })).status,
        200,
        'the opened d is the real signing key (what the byte search looked for)',
      )
      const after = await deliveryOf(client, 'A-2')
      t.equal(
        header(after, 'x-signature-256'),
        signatureOf(webhookSecret, after.raw),
        'webhook deliveries are signed with the same secret',
      )
    })
  },
)

t.test(
  'a wrong, missing or malformed key stops the start with a message naming the setting, and changes nothing',
  async (t) => {
    const before = await storedSigningKeys(dataDir)
    const wrong = await failedStart(dataDir, { PRICING_SECRET_KEY: keyB })
    t.equal(wrong.code, 1, 'exit code 1')
    t.match(
      wrong.stderr,
      `pricing-service failed to start: signing key ${firstKid}: encrypted with the key of fingerprint ${fingerprintA}, not with PRICING_SECRET_KEY (fingerprint ${fingerprintB})`,
    )
    t.notOk(wrong.stdout.includes('"msg":"listening"'), 'it never listened')
    t.notOk(wrong.stderr.includes(keyB) || wrong.stdout.includes(keyB), 'the key is not shown')

    const missing = await failedStart(dataDir, {})
    t.equal(missing.code, 1)
    t.match(
      missing.stderr,
      `signing key ${firstKid}: encrypted with the key of fingerprint ${fingerprintA}, and PRICING_SECRET_KEY is not set: set it to that key`,
    )

    const malformedKey = `${keyA.slice(0, 20)}!`
    const malformed = await failedStart(dataDir, { PRICING_SECRET_KEY: malformedKey })
    t.equal(malformed.code, 1)
    t.match(
      malformed.stderr,
      'PRICING_SECRET_KEY: expected a 32-byte key as 64 hex digits or 44 characters of base64 (openssl rand -base64 32); the value given (21 characters, not shown) is neither',
    )
    t.notOk(malformed.stderr.includes(malformedKey), 'the malformed value is not shown')
    const short = await failedStart(dataDir, { PRICING_SECRET_KEY_PREVIOUS: 'abcd' })
    t.match(short.stderr, 'PRICING_SECRET_KEY_PREVIOUS: expected a 32-byte key')

    t.same(await storedSigningKeys(dataDir), before, 'no key made, none changed')
  },
)

t.test(
  'changing the key: with PRICING_SECRET_KEY_PREVIOUS everything is sealed again under the new key at start',
  async (t) => {
    const server = await serve(dataDir, { PRICING_SECRET_KEY: keyB, PRICING_SECRET_KEY_PREVIOUS: keyA })
    const client = clientOn(server, acme)
    t.equal((await client.get('/article/A-1')).status, 200, 'a token signed before the change is accepted')
    t.equal(kidOf(await client.refreshToken()), firstKid, 'the signing key is the same key, sealed anew')
    const delivery = await deliveryOf(client, 'B-1')
    t.equal(
      header(delivery, 'x-signature-256'),
      signatureOf(webhookSecret, delivery.raw),
      'the webhook secret is the same',
    )
    t.match(
      server.stdout,
      /"resealed":1,"encrypted":true,.*"msg":"signing keys stored again under the current secret key"/,
    )
    await server.stop()

    const keys = await storedSigningKeys(dataDir)
    t.same(
      keys.map((key) => key.sealed_private_jwk?.split(':')[1]),
      [fingerprintB],
      'the signing key under the new key',
    )
    const [stored] = await storedWebhooks(dataDir, 'acme')
    t.equal(String(stored!['sealedSecret']).split(':')[1], fingerprintB, 'the webhook secret under the new key')
    const oldOnly = await failedStart(dataDir, { PRICING_SECRET_KEY: keyA })
    t.equal(oldOnly.code, 1, 'the old key alone no longer opens them')
    t.match(oldOnly.stderr, `encrypted with the key of fingerprint ${fingerprintB}`)
    const newOnly = await serve(dataDir, { PRICING_SECRET_KEY: keyB })
    t.equal(
      (await clientOn(newOnly, acme).get('/article/B-1')).status,
      200,
      'the new key alone starts, and tokens verify',
    )
    await newOnly.stop()
  },
)

t.test(
  'plaintext data from before the key is sealed at the first start with one; the previous key alone stores it plaintext again',
  async (t) => {
    const dir = freshDataDir()
    const secret = `plain-${randomBytes(12).toString('hex')}`
    const plain = await serve(dir, {})
    const warnings = secretKeyLines(plain.stdout)
    t.equal(warnings.length, 1, 'without a key: one line about secrets at rest')
    t.match(
      warnings[0],
      /"level":40,.*"setting":"PRICING_SECRET_KEY".*"msg":"secrets at rest are not encrypted/,
      'a warning naming the setting',
    )
    const shop = await hookTenant(plain, 'shop')
    const hook = await expectStatus(shop.call('POST', '/webhooks', { url: `${rx.url}/shop`, secret }), 201, 'register')
    const kid = kidOf(shop.token)
    await plain.stop()
    const [plainKey] = await storedSigningKeys(dir)
    t.type(plainKey!.private_jwk?.['d'], 'string', 'without a key the private JWK is stored as it is')
    t.equal((await storedWebhooks(dir, 'shop'))[0]!['secret'], secret, 'and the webhook secret too')

    const sealed = await serve(dir, { PRICING_SECRET_KEY: keyA })
    t.equal(
      secretKeyLines(sealed.stdout).filter((line) => line.includes('"level":40')).length,
      0,
      'no warning with a key',
    )
    const client = clientOn(sealed, shop)
    t.equal((await client.get('/webhooks')).status, 200, 'the token from before is accepted')
    t.equal(kidOf(await client.refreshToken()), kid, 'the same signing key: no new key was made')
    const delivery = await deliveryOf(client, 'S-1')
    t.equal(header(delivery, 'x-signature-256'), signatureOf(secret, delivery.raw), 'the webhook secret is the same')
    await sealed.stop()
    const [sealedKey] = await storedSigningKeys(dir)
    t.equal(sealedKey!.kid, kid)
    t.equal(sealedKey!.private_jwk, undefined, 'the plaintext private JWK is gone from the record')
    t.equal(sealedKey!.sealed_private_jwk?.split(':')[1], fingerprintA, 'sealed under the key')
    const [sealedHook] = await storedWebhooks(dir, 'shop')
    t.equal(sealedHook!.id, hook.body.id)
    t.equal(sealedHook!['secret'], null, 'the plaintext webhook secret is gone from the record')
    t.equal(String(sealedHook!['sealedSecret']).split(':')[1], fingerprintA, 'sealed under the key')

    const unsealed = await serve(dir, { PRICING_SECRET_KEY_PREVIOUS: keyA })
    t.match(
      unsealed.stdout,
      /"level":40,.*PRICING_SECRET_KEY_PREVIOUS is set without PRICING_SECRET_KEY/,
      'a warning that encryption is being turned off',
    )
    await unsealed.stop()
    t.equal(
      (await storedSigningKeys(dir))[0]!.private_jwk?.['d'],
      plainKey!.private_jwk?.['d'],
      'the private key stored as it is again',
    )
    t.equal((await storedWebhooks(dir, 'shop'))[0]!['secret'], secret, 'and the webhook secret')
  },
)

t.test(
  'a webhook secret sealed under a key not given holds its deliveries, without loss, until a new secret is set',
  async (t) => {
    const dir = freshDataDir()
    const first = await serve(dir, { PRICING_SECRET_KEY: keyA })
    const shop = await hookTenant(first, 'copied')
    const hook = await expectStatus(
      shop.call('POST', '/webhooks', { url: `${rx.url}/copied`, secret: 'from-elsewhere' }),
      201,
      'register',
    )
    await first.stop()
    // As if the tenant's data came from a deployment with another key.
    const store = new TenantStore(path.join(dir, 'tenants', 'copied'))
    const [record] = store.webhooks()
    const foreign = sealWebhookSecret('from-elsewhere', hook.body.id, SecretSealer.fromSettings(keyB, ''))
    await store.putWebhooks([storedWebhookForm({ ...record!, secret: null }, foreign)])
    await store.close()

    const server = await serve(dir, { PRICING_SECRET_KEY: keyA })
    t.teardown(() => server.stop())
    t.match(
      server.stdout,
      /"level":50,.*"webhook":1,.*"msg":"webhook secret does not open with the secret key given/,
      'an error in the log',
    )
    const client = clientOn(server, shop)
    const held = await expectStatus(client.get(`/webhooks/${hook.body.id}`), 200, 'get webhook')
    t.match(
      held.body.last_delivery.error,
      `not delivered: the webhook's secret does not open (webhook ${hook.body.id}: encrypted with the key of fingerprint ${fingerprintB}, not with PRICING_SECRET_KEY (fingerprint ${fingerprintA})`,
    )
    const before = await lastSequence(client)
    await expectStatus(client.call('PUT', '/article/H-1', { name: 'held' }), 202, 'article H-1')
    const [entry] = await entriesAfter(client, before)
    await new Promise((resolve) => setTimeout(resolve, 1_000))
    t.equal(
      rx.requests.filter((request) => request.path === '/copied').length,
      0,
      'nothing is sent, neither unsigned nor wrongly signed',
    )
    await expectStatus(client.call('PUT', `/webhooks/${hook.body.id}`, { secret: 'new-secret' }), 200, 'a new secret')
    const delivery = await deliveredTo('copied', entry!.sequence)
    t.equal(
      header(delivery, 'x-signature-256'),
      signatureOf('new-secret', delivery.raw),
      'the held event goes out, signed with the new secret',
    )
  },
)
