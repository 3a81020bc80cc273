/**
 * Webhooks against the real server and a real HTTPS receiver (self-signed certificate trusted via
 * NODE_EXTRA_CA_CERTS): registration CRUD and its validation, the plan and the 25-webhook quota,
 * the delivery body, signature and headers, batching, entity-type filters, the change.events.enabled
 * setting, registration and reactivation as the starting point, retries with the scaled backoff,
 * the drop after 10 retries, time-outs and redirects as failures, the test event, and the refusal
 * of private receiver addresses (SSRF), and a position that falls behind the changelog capacity.
 * The contract is docs/api.md "Webhooks" and "Delivery".
 */
import t from 'tap'
import {
  entriesAfter,
  eventsOf,
  expectStatus,
  lastSequence,
  sequencesOf,
  waitForSequences,
  type ChangelogEntry,
} from '../helpers/changelog.js'
import {
  signatureOf,
  startHttpsReceiver,
  testCertificate,
  type HttpsReceiver,
  type ReceivedRequest,
} from '../helpers/https-receiver.js'
import { startServer, type TenantClient, type TestServer } from '../helpers/server.js'

interface Webhook {
  id: number
  url: string
  entity_type_filter: string | null
  active: boolean
  has_secret: boolean
  created_at: string
  updated_at: string
  last_delivery: { at: string; status: number | null; error: string | null } | null
}

const batchMs = 500
const retryScale = 0.01
/** The spec's retry delays in seconds, before retry 1 to 10. */
const retryDelaysS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 300]
/** Generous: a delivery takes the batch window plus a TLS round trip, on a loaded CI machine. */
const deliveryTimeoutMs = 20_000
const rfc3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/
const webhookFields = [
  'active',
  'created_at',
  'effective_price_per_sku',
  'entity_type_filter',
  'has_secret',
  'id',
  'last_delivery',
  'updated_at',
  'url',
]

let server: TestServer
let caPath = ''
let tenantCount = 0
const receivers: HttpsReceiver[] = []

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

function hookEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    NODE_EXTRA_CA_CERTS: caPath,
    PRICING_WEBHOOK_ALLOW_PRIVATE: 'true',
    PRICING_WEBHOOK_RETRY_SCALE: String(retryScale),
    PRICING_WEBHOOK_BATCH_MS: String(batchMs),
    PRICING_WEBHOOK_TIMEOUT_MS: '5000',
    ...extra,
  }
}

t.before(async () => {
  caPath = (await testCertificate()).caPath
  server = await startServer({ env: hookEnv() })
})
t.teardown(async () => {
  for (const receiver of receivers) await receiver.close()
  await server.dispose()
})

async function receiver(): Promise<HttpsReceiver> {
  const started = await startHttpsReceiver()
  receivers.push(started)
  return started
}

/** A fresh tenant (so webhooks of other tests stay out of the way), change events on unless told. */
async function hookTenant(
  on: TestServer = server,
  options: { tier?: string; events?: boolean } = {},
): Promise<TenantClient> {
  const client = await on.tenant(`hooks-${++tenantCount}`, { tier: options.tier ?? 'standard' })
  if (options.events ?? true) await setEvents(client, true)
  return client
}

async function setEvents(client: TenantClient, on: boolean): Promise<void> {
  await expectStatus(
    client.call('PUT', '/settings/change.events.enabled', { value: String(on) }),
    202,
    'change.events.enabled',
  )
}

async function register(client: TenantClient, body: Record<string, unknown>): Promise<Webhook> {
  return (await expectStatus(client.call('POST', '/webhooks', body), 201, 'register webhook')).body
}

async function putArticle(client: TenantClient, sku: string, name = `article ${sku}`): Promise<void> {
  await expectStatus(client.call('PUT', `/article/${encodeURIComponent(sku)}`, { name }), 202, `article ${sku}`)
}

/** Writes an article and answers its changelog entry. */
async function writeArticle(client: TenantClient, sku: string, name?: string): Promise<ChangelogEntry> {
  const before = await lastSequence(client)
  await putArticle(client, sku, name)
  const added = await entriesAfter(client, before)
  const mine = added.filter((entry) => entry.entity_type === 'article' && entry.entity_code === sku)
  if (mine.length !== 1) throw new Error(`expected one changelog entry for ${sku}, got ${JSON.stringify(added)}`)
  return mine[0]!
}

function header(request: ReceivedRequest, name: string): string | undefined {
  const value = request.headers[name]
  return Array.isArray(value) ? value.join(',') : value
}

function attemptOf(request: ReceivedRequest): number {
  return Number(header(request, 'x-delivery-attempt'))
}

/** Polls GET /webhooks/{id} until `predicate` holds. */
async function waitForWebhook(
  client: TenantClient,
  id: number,
  predicate: (hook: Webhook) => boolean,
  timeoutMs = deliveryTimeoutMs,
): Promise<Webhook> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const hook = (await expectStatus(client.get(`/webhooks/${id}`), 200, 'get webhook')).body as Webhook
    if (predicate(hook)) return hook
    if (Date.now() > deadline)
      throw new Error(`webhook ${id} never reached the expected state: ${JSON.stringify(hook)}`)
    await pause(50)
  }
}

async function listHooks(client: TenantClient): Promise<Webhook[]> {
  return (await expectStatus(client.get('/webhooks'), 200, 'list webhooks')).body
}

// ---------------------------------------------------------------------------------------------
// Registration

t.test(
  'POST /webhooks answers 201 with the webhook; the secret is never answered, has_secret says it is set',
  async (t) => {
    const client = await hookTenant()
    const secret = 'very-secret-value-42'
    const before = Date.now()
    const created = await expectStatus(
      client.call('POST', '/webhooks', { url: 'https://localhost:9/hooks', secret }),
      201,
      'register',
    )
    const hook = created.body as Webhook
    t.same(Object.keys(hook).sort(), webhookFields, 'exactly the documented fields')
    t.ok(Number.isInteger(hook.id) && hook.id > 0, 'id is a positive integer')
    t.equal(hook.url, 'https://localhost:9/hooks')
    t.equal(hook.entity_type_filter, null, 'no filter means all types (null)')
    t.equal(hook.active, true, 'active by default')
    t.equal(hook.has_secret, true)
    t.equal(hook.last_delivery, null, 'nothing delivered yet')
    t.match(hook.created_at, rfc3339)
    t.match(hook.updated_at, rfc3339)
    t.ok(
      Date.parse(hook.created_at) >= before - 1000 && Date.parse(hook.created_at) <= Date.now() + 1000,
      'created_at is now',
    )
    t.notOk(created.text.includes(secret), 'the secret is not in the answer')

    const plain = await register(client, {
      url: 'https://localhost:9/plain',
      entity_type_filter: 'price',
      active: false,
    })
    t.ok(plain.id > hook.id, 'ids increase')
    t.equal(plain.has_secret, false)
    t.equal(plain.entity_type_filter, 'price')
    t.equal(plain.active, false, 'active:false registers an inactive webhook')

    const list = await expectStatus(client.get('/webhooks'), 200, 'list')
    t.ok(Array.isArray(list.body), 'a bare array')
    t.same(
      list.body.map((item: Webhook) => item.id),
      [hook.id, plain.id],
      'ordered by id',
    )
    t.same(list.body[0], hook, 'listed as registered')
    t.notOk(list.text.includes(secret), 'the secret is not listed')
    const one = await expectStatus(client.get(`/webhooks/${hook.id}`), 200, 'get')
    t.same(one.body, hook, 'GET /webhooks/{id} answers the same webhook')
    t.notOk(one.text.includes(secret), 'the secret is not read back')
  },
)

t.test(
  'PUT /webhooks/{id} replaces only the given fields; secret null removes it, filter null means all types',
  async (t) => {
    const client = await hookTenant()
    const hook = await register(client, { url: 'https://localhost:9/a', secret: 's1' })

    const filtered = await expectStatus(
      client.call('PUT', `/webhooks/${hook.id}`, { entity_type_filter: 'article' }),
      200,
      'put filter',
    )
    t.same(Object.keys(filtered.body).sort(), webhookFields)
    t.equal(filtered.body.entity_type_filter, 'article')
    t.equal(filtered.body.url, hook.url, 'url unchanged')
    t.equal(filtered.body.has_secret, true, 'secret unchanged')
    t.equal(filtered.body.active, true)
    t.equal(filtered.body.id, hook.id)
    t.equal(filtered.body.created_at, hook.created_at, 'created_at unchanged')
    t.ok(Date.parse(filtered.body.updated_at) >= Date.parse(hook.updated_at), 'updated_at moves forward')

    const unsigned = await expectStatus(
      client.call('PUT', `/webhooks/${hook.id}`, { secret: null }),
      200,
      'put secret null',
    )
    t.equal(unsigned.body.has_secret, false, 'secret: null removes the secret')
    t.equal(unsigned.body.entity_type_filter, 'article', 'filter unchanged')

    const moved = await expectStatus(
      client.call('PUT', `/webhooks/${hook.id}`, {
        url: 'https://localhost:9/b',
        secret: 's2',
        entity_type_filter: null,
      }),
      200,
      'put several',
    )
    t.equal(moved.body.url, 'https://localhost:9/b')
    t.equal(moved.body.has_secret, true)
    t.equal(moved.body.entity_type_filter, null, 'entity_type_filter: null means all types')
    t.notOk(moved.text.includes('s2"'), 'the new secret is not answered')

    const read = await expectStatus(client.get(`/webhooks/${hook.id}`), 200, 'get')
    t.same(read.body, moved.body, 'GET shows the stored update')
  },
)

t.test('POST /webhooks refuses invalid bodies with 400 validation_failed and stores nothing', async (t) => {
  const client = await hookTenant()
  const url = 'https://localhost:9/x'
  const bad: [string, unknown][] = [
    ['http:// URL', { url: 'http://localhost:9/x' }],
    ['URL with user and password', { url: 'https://user:pass@localhost:9/x' }],
    ['URL with a user name', { url: 'https://user@localhost:9/x' }],
    ['URL of 2,049 characters', { url: 'https://localhost:9/' + 'a'.repeat(2049 - 'https://localhost:9/'.length) }],
    ['not a URL', { url: 'https://' }],
    ['URL not a string', { url: 42 }],
    ['missing url', { secret: 'x' }],
    ['unknown entity_type_filter', { url, entity_type_filter: 'nonsense' }],
    ['unknown field', { url, colour: 'blue' }],
    ['empty secret', { url, secret: '' }],
    ['secret of 257 characters', { url, secret: 's'.repeat(257) }],
    ['active not a boolean', { url, active: 'yes' }],
    ['not an object', [url]],
  ]
  for (const [what, body] of bad) {
    const answer = await client.call('POST', '/webhooks', body)
    t.equal(answer.status, 400, `${what}: 400`)
    t.equal(answer.body?.code, 'validation_failed', `${what}: validation_failed`)
  }
  t.same(await listHooks(client), [], 'nothing stored')

  const longest = 'https://localhost:9/' + 'a'.repeat(2048 - 'https://localhost:9/'.length)
  const edge = await register(client, { url: longest, secret: 's'.repeat(256), entity_type_filter: 'article_taxclass' })
  t.equal(edge.url.length, 2048, 'a URL of exactly 2,048 characters is accepted')
  t.equal(edge.has_secret, true, 'a secret of 256 characters is accepted')
  const bundle = await register(client, { url, entity_type_filter: 'bundle_rule' })
  t.equal(bundle.entity_type_filter, 'bundle_rule', 'bundle_rule is a changelog entity type')
})

t.test(
  'PUT /webhooks/{id} needs at least one field, checks each like POST, and a refused update changes nothing',
  async (t) => {
    const client = await hookTenant()
    const hook = await register(client, { url: 'https://localhost:9/x', secret: 'keep', entity_type_filter: 'article' })
    const bad: [string, unknown][] = [
      ['empty body', {}],
      ['http:// URL', { url: 'http://localhost:9/y' }],
      ['URL with user and password', { url: 'https://u:p@localhost:9/y' }],
      ['url null', { url: null }],
      ['unknown filter', { entity_type_filter: 'nope' }],
      ['unknown field', { colour: 'red' }],
      ['empty secret', { secret: '' }],
      ['active not a boolean', { active: 1 }],
    ]
    for (const [what, body] of bad) {
      const answer = await client.call('PUT', `/webhooks/${hook.id}`, body)
      t.equal(answer.status, 400, `${what}: 400`)
      t.equal(answer.body?.code, 'validation_failed', `${what}: validation_failed`)
    }
    const read = await expectStatus(client.get(`/webhooks/${hook.id}`), 200, 'get')
    t.same(read.body, hook, 'the webhook is unchanged')
  },
)

t.test('a webhook id is a positive integer (400 otherwise) and an unknown id answers 404', async (t) => {
  const client = await hookTenant()
  const hook = await register(client, { url: 'https://localhost:9/x' })
  for (const id of ['abc', '1.5', '0', '-1', '1x']) {
    for (const [method, path, body] of [
      ['GET', `/webhooks/${id}`, undefined],
      ['PUT', `/webhooks/${id}`, { active: true }],
      ['DELETE', `/webhooks/${id}`, undefined],
      ['POST', `/webhooks/${id}/test`, undefined],
    ] as const) {
      const answer = await client.call(method, path, body)
      t.equal(answer.status, 400, `${method} ${path}: 400`)
      t.equal(answer.body?.code, 'validation_failed', `${method} ${path}: validation_failed`)
    }
  }
  const unknown = hook.id + 1000
  for (const [method, path, body] of [
    ['GET', `/webhooks/${unknown}`, undefined],
    ['PUT', `/webhooks/${unknown}`, { active: true }],
    ['DELETE', `/webhooks/${unknown}`, undefined],
    ['POST', `/webhooks/${unknown}/test`, undefined],
  ] as const) {
    const answer = await client.call(method, path, body)
    t.equal(answer.status, 404, `${method} ${path}: 404`)
    t.equal(answer.body?.code, 'not_found', `${method} ${path}: not_found`)
  }
  const other = await hookTenant()
  t.equal((await other.get(`/webhooks/${hook.id}`)).status, 404, "another tenant's webhook is not found")
  t.same(await listHooks(other), [], "another tenant's webhooks are not listed")
})

t.test(
  'a starter tenant may list webhooks but not register one nor turn change events on (403 plan_forbidden)',
  async (t) => {
    const client = await hookTenant(server, { tier: 'starter', events: false })
    const refused = await client.call('POST', '/webhooks', { url: 'https://localhost:9/x' })
    t.equal(refused.status, 403)
    t.equal(refused.body?.code, 'plan_forbidden')
    t.same(await listHooks(client), [], 'listing is allowed and nothing was stored')
    const setting = await client.call('PUT', '/settings/change.events.enabled', { value: 'true' })
    t.equal(setting.status, 403)
    t.equal(setting.body?.code, 'plan_forbidden')
    t.equal((await client.get('/settings/change.events.enabled')).status, 404, 'the refused setting was not stored')
    t.equal(
      (await client.call('PUT', '/settings/change.events.enabled', { value: 'false' })).status,
      202,
      'false is always accepted',
    )
  },
)

t.test(
  'a tenant moved to a plan without webhooks can read its webhooks but not test them, and its events are skipped',
  async (t) => {
    const client = await hookTenant()
    const rx = await receiver()
    const hook = await register(client, { url: `${rx.url}/plan` })
    await expectStatus(server.admin('PATCH', `/admin/tenants/${client.slug}`, { tier: 'starter' }), 200, 'downgrade')
    t.equal((await client.get(`/webhooks/${hook.id}`)).status, 200, 'reading is allowed')
    t.equal((await client.get('/webhooks')).body.length, 1, 'listing is allowed')
    const test = await client.call('POST', `/webhooks/${hook.id}/test`)
    t.equal(test.status, 403, 'testing needs the plan')
    t.equal(test.body?.code, 'plan_forbidden')
    const skipped = await writeArticle(client, 'SKIPPED')

    await expectStatus(server.admin('PATCH', `/admin/tenants/${client.slug}`, { tier: 'standard' }), 200, 'upgrade')
    const later = await writeArticle(client, 'LATER')
    const requests = await waitForSequences(rx, [later.sequence], deliveryTimeoutMs)
    t.notOk(
      sequencesOf(requests).includes(skipped.sequence),
      'the event recorded while the plan lacked webhooks is skipped',
    )
    t.notOk(
      eventsOf(requests).some((event) => event.entity_type === 'test'),
      'the refused test sent nothing',
    )
  },
)

t.test('a tenant holds at most 25 webhooks, active or not (422 quota_exceeded)', async (t) => {
  const client = await hookTenant()
  const ids: number[] = []
  for (let index = 0; index < 25; index++)
    ids.push((await register(client, { url: `https://localhost:9/q${index}` })).id)
  await expectStatus(client.call('DELETE', `/webhooks/${ids[0]}`), 200, 'deactivate one')
  const refused = await client.call('POST', '/webhooks', { url: 'https://localhost:9/q25' })
  t.equal(refused.status, 422)
  t.equal(refused.body?.code, 'quota_exceeded')
  const list = await listHooks(client)
  t.equal(list.length, 25, 'the refused webhook was not stored')
  t.equal(list.filter((hook) => !hook.active).length, 1, 'the inactive one still counts')
  t.equal(
    (await client.call('PUT', `/webhooks/${ids[0]}`, { active: true })).status,
    200,
    'reactivating within the quota is allowed',
  )
})

// ---------------------------------------------------------------------------------------------
// Delivery

t.test(
  'a delivery is one signed POST of {webhook_id, delivered_at, events} with the entries GET /changelog answers',
  async (t) => {
    const client = await hookTenant()
    const rx = await receiver()
    const secret = 'hmac-key-1'
    const hook = await register(client, { url: `${rx.url}/deliver?x=1`, secret })
    const before = await lastSequence(client)
    const sent = Date.now()
    // Three writes at once land well inside the 500 ms window, so they arrive together.
    await Promise.all(['B-1', 'B-2', 'B-3'].map((sku) => putArticle(client, sku)))
    const expected = await entriesAfter(client, before)
    t.equal(expected.length, 3, 'three changelog entries')
    const requests = await waitForSequences(
      rx,
      expected.map((entry) => entry.sequence),
      deliveryTimeoutMs,
    )
    t.equal(requests.length, 1, 'one POST')
    const request = requests[0]!
    t.equal(request.method, 'POST')
    t.equal(request.path, '/deliver?x=1', 'sent to the registered URL, query included')
    t.match(header(request, 'content-type') ?? '', /^application\/json/)
    t.equal(header(request, 'user-agent'), 'pricing-service-webhooks/1')
    t.equal(header(request, 'x-webhook-id'), String(hook.id))
    t.equal(header(request, 'x-delivery-attempt'), '1')
    t.equal(
      header(request, 'x-signature-256'),
      signatureOf(secret, request.raw),
      'X-Signature-256 is the HMAC of the raw body',
    )
    t.not(header(request, 'x-signature-256'), signatureOf('another-key', request.raw))
    t.same(Object.keys(request.body).sort(), ['delivered_at', 'events', 'webhook_id'])
    t.equal(request.body.webhook_id, hook.id)
    t.match(request.body.delivered_at, rfc3339)
    t.ok(
      Date.parse(request.body.delivered_at) >= sent - 1000 &&
        Date.parse(request.body.delivered_at) <= request.at + 1000,
      'delivered_at is the sending time',
    )
    t.same(request.body.events, expected, 'events are the changelog entries, in sequence order')
    t.ok(
      request.at - sent >= batchMs - 50,
      `sent after the batch window (${request.at - sent} ms after the first write)`,
    )

    const delivered = await waitForWebhook(client, hook.id, (item) => item.last_delivery !== null)
    t.equal(delivered.last_delivery!.status, 200, 'last_delivery shows the answer')
    t.equal(delivered.last_delivery!.error, null)
    t.match(delivered.last_delivery!.at, rfc3339)
  },
)

t.test(
  'without a secret there is no X-Signature-256; a new secret signs the next deliveries, secret null stops signing',
  async (t) => {
    const client = await hookTenant()
    const rx = await receiver()
    const hook = await register(client, { url: `${rx.url}/sig` })
    const first = await writeArticle(client, 'S-1')
    const [unsigned] = await waitForSequences(rx, [first.sequence], deliveryTimeoutMs)
    t.equal(header(unsigned!, 'x-signature-256'), undefined, 'no signature without a secret')

    await expectStatus(client.call('PUT', `/webhooks/${hook.id}`, { secret: 'rotated' }), 200, 'set secret')
    const second = await writeArticle(client, 'S-2')
    const signed = (await waitForSequences(rx, [second.sequence], deliveryTimeoutMs)).find((request) =>
      sequencesOf([request]).includes(second.sequence),
    )!
    t.equal(header(signed, 'x-signature-256'), signatureOf('rotated', signed.raw), 'signed with the new secret')

    await expectStatus(client.call('PUT', `/webhooks/${hook.id}`, { secret: null }), 200, 'remove secret')
    const third = await writeArticle(client, 'S-3')
    const plain = (await waitForSequences(rx, [third.sequence], deliveryTimeoutMs)).find((request) =>
      sequencesOf([request]).includes(third.sequence),
    )!
    t.equal(header(plain, 'x-signature-256'), undefined, 'no signature after secret: null')
  },
)

t.test('writes further apart than the batch window arrive in separate POSTs', async (t) => {
  const client = await hookTenant()
  const rx = await receiver()
  await register(client, { url: `${rx.url}/apart` })
  const first = await writeArticle(client, 'W-1')
  const firstWritten = Date.now()
  await waitForSequences(rx, [first.sequence], deliveryTimeoutMs)
  const gap = batchMs + 200 - (Date.now() - firstWritten)
  if (gap > 0) await pause(gap)
  const second = await writeArticle(client, 'W-2')
  const requests = await waitForSequences(rx, [second.sequence], deliveryTimeoutMs)
  t.equal(requests.length, 2, 'two POSTs')
  t.same(
    requests.map((request) => sequencesOf([request])),
    [[first.sequence], [second.sequence]],
    'each POST carries its own write',
  )
})

t.test('a backlog of more than 1,000 events goes out in POSTs of at most 1,000, in sequence order', async (t) => {
  const client = await hookTenant()
  const rx = await receiver()
  await register(client, { url: `${rx.url}/bulk`, entity_type_filter: 'article' })
  const before = await lastSequence(client)
  const items = Array.from({ length: 1500 }, (_, index) => ({ sku: `BULK-${index}`, name: `bulk ${index}` }))
  const batch = await expectStatus(client.call('POST', '/article/batch', items), 202, 'article batch')
  t.same(batch.body.failed, [], 'all written')
  const expected = (await entriesAfter(client, before)).map((entry) => entry.sequence)
  t.equal(expected.length, 1500)
  const requests = await waitForSequences(rx, expected, deliveryTimeoutMs)
  t.equal(requests.length, 2, 'two POSTs')
  t.same(
    requests.map((request) => request.body.events.length),
    [1000, 500],
    'the first carries 1,000 events, the second the rest',
  )
  t.same(sequencesOf(requests), expected, 'every event once, in sequence order')
})

t.test('each webhook gets only the entity type of its filter; a null filter gets every type', async (t) => {
  const client = await hookTenant()
  const rx = await receiver()
  await register(client, { url: `${rx.url}/articles`, entity_type_filter: 'article' })
  await register(client, { url: `${rx.url}/areas`, entity_type_filter: 'tax_area' })
  await register(client, { url: `${rx.url}/all` })
  const before = await lastSequence(client)
  await putArticle(client, 'F-1')
  await expectStatus(client.call('PUT', '/tax-area/SE', { name: 'Sweden' }), 202, 'tax area SE')
  await expectStatus(client.call('PUT', '/vat/class/standard', { name: 'standard' }), 202, 'VAT class')
  await putArticle(client, 'F-2')
  await expectStatus(client.call('PUT', '/tax-area/DE', { name: 'Germany' }), 202, 'tax area DE')
  const entries = await entriesAfter(client, before)
  t.same(
    entries.map((entry) => entry.entity_type),
    ['article', 'tax_area', 'vat_class', 'article', 'tax_area'],
    'the writes as recorded',
  )
  const ofType = (type: string): number[] =>
    entries.filter((entry) => entry.entity_type === type).map((entry) => entry.sequence)
  // Deliveries go out in sequence order, so once a webhook's last matching entry arrived, every earlier one was considered.
  const requests = await waitForSequences(
    rx,
    entries.map((entry) => entry.sequence),
    deliveryTimeoutMs,
  )
  const at = (path: string): ReceivedRequest[] => requests.filter((request) => request.path === path)
  await rx.waitFor((all) => {
    const seen = (path: string): number[] => sequencesOf(all.filter((request) => request.path === path))
    return (
      ofType('article').every((s) => seen('/articles').includes(s)) &&
      ofType('tax_area').every((s) => seen('/areas').includes(s))
    )
  }, deliveryTimeoutMs)
  t.same(sequencesOf(at('/articles')), ofType('article'), 'the article webhook got the articles only')
  t.same(sequencesOf(at('/areas')), ofType('tax_area'), 'the tax_area webhook got the tax areas only')
  t.same(
    sequencesOf(at('/all')),
    entries.map((entry) => entry.sequence),
    'the unfiltered webhook got everything',
  )
})

t.test(
  'nothing is delivered while change.events.enabled is off, nor afterwards for changes recorded while it was off',
  async (t) => {
    const client = await hookTenant(server, { events: false })
    const rx = await receiver()
    await register(client, { url: `${rx.url}/off`, entity_type_filter: 'article' })
    const whileOff = await writeArticle(client, 'OFF-1')
    await pause(batchMs * 2 + 500)
    t.equal(rx.requests.length, 0, 'no delivery while off')

    await setEvents(client, true)
    const whileOn = await writeArticle(client, 'ON-1')
    let requests = await waitForSequences(rx, [whileOn.sequence], deliveryTimeoutMs)
    t.notOk(sequencesOf(requests).includes(whileOff.sequence), 'the change recorded while off is never sent')

    await setEvents(client, false)
    const offAgain = await writeArticle(client, 'OFF-2')
    await setEvents(client, true)
    const onAgain = await writeArticle(client, 'ON-2')
    requests = await waitForSequences(rx, [onAgain.sequence], deliveryTimeoutMs)
    t.same(sequencesOf(requests), [whileOn.sequence, onAgain.sequence], 'only the changes recorded while on')
    t.notOk(sequencesOf(requests).includes(offAgain.sequence))
  },
)

t.test('a webhook receives only the changes recorded after its registration', async (t) => {
  const client = await hookTenant()
  const rx = await receiver()
  const earlier = await writeArticle(client, 'EARLY')
  await register(client, { url: `${rx.url}/late` })
  const after = await writeArticle(client, 'AFTER')
  const requests = await waitForSequences(rx, [after.sequence], deliveryTimeoutMs)
  t.same(sequencesOf(requests), [after.sequence], 'only the change after registration')
  t.notOk(sequencesOf(requests).includes(earlier.sequence))
})

t.test(
  'DELETE deactivates (200, active false, still listed, nothing more delivered); active true resumes with later changes only',
  async (t) => {
    const client = await hookTenant()
    const rx = await receiver()
    const hook = await register(client, { url: `${rx.url}/gone` })
    // A second webhook shows when the deactivated one would have received the change.
    await register(client, { url: `${rx.url}/control` })
    const first = await writeArticle(client, 'D-1')
    await waitForSequences(rx, [first.sequence], deliveryTimeoutMs)
    await rx.waitFor(
      (requests) => requests.filter((request) => request.path === '/gone').length === 1,
      deliveryTimeoutMs,
    )

    const deleted = await expectStatus(client.call('DELETE', `/webhooks/${hook.id}`), 200, 'delete')
    t.same(Object.keys(deleted.body).sort(), webhookFields)
    t.equal(deleted.body.active, false, 'DELETE answers the webhook, inactive')
    const listed = (await listHooks(client)).find((item) => item.id === hook.id)
    t.equal(listed?.active, false, 'still listed, inactive')
    t.equal((await client.get(`/webhooks/${hook.id}`)).body.active, false)

    const whileInactive = await writeArticle(client, 'D-2')
    await rx.waitFor(
      (requests) =>
        sequencesOf(requests.filter((request) => request.path === '/control')).includes(whileInactive.sequence),
      deliveryTimeoutMs,
    )
    await pause(batchMs + 500)
    t.same(
      sequencesOf(rx.requests.filter((request) => request.path === '/gone')),
      [first.sequence],
      'nothing more for the inactive webhook',
    )

    const reactivated = await expectStatus(
      client.call('PUT', `/webhooks/${hook.id}`, { active: true }),
      200,
      'reactivate',
    )
    t.equal(reactivated.body.active, true)
    const afterwards = await writeArticle(client, 'D-3')
    await rx.waitFor(
      (requests) => sequencesOf(requests.filter((request) => request.path === '/gone')).includes(afterwards.sequence),
      deliveryTimeoutMs,
    )
    t.same(
      sequencesOf(rx.requests.filter((request) => request.path === '/gone')),
      [first.sequence, afterwards.sequence],
      'after reactivation only the later change, not the one recorded while inactive',
    )
  },
)

t.test('DELETE stops a delivery that is being retried', async (t) => {
  const client = await hookTenant()
  const rx = await receiver()
  rx.respondWith(() => ({ status: 500 }))
  const hook = await register(client, { url: `${rx.url}/stop` })
  await writeArticle(client, 'STOP')
  await rx.waitFor((requests) => requests.length >= 2, deliveryTimeoutMs)
  await expectStatus(client.call('DELETE', `/webhooks/${hook.id}`), 200, 'delete')
  const atDelete = rx.requests.length
  // Unstopped, the retries at 10, 20, 40, ... 640 ms (scale 0.01) would add several more attempts by now.
  await pause(2000)
  t.ok(
    rx.requests.length <= atDelete + 1,
    `at most the attempt in flight after DELETE (${atDelete} before, ${rx.requests.length} after)`,
  )
})

t.test(
  'a receiver failing 3 times then answering 200 gets 4 attempts numbered 1-4, spaced by at least the scaled backoff',
  async (t) => {
    const client = await hookTenant()
    const rx = await receiver()
    const secret = 'retry-secret'
    rx.respondWith((_request, index) => ({ status: index < 3 ? 500 : 200 }))
    const hook = await register(client, { url: `${rx.url}/retry`, secret })
    const entry = await writeArticle(client, 'R-1')
    const requests = await rx.waitFor((all) => all.length >= 4, deliveryTimeoutMs)
    t.same(requests.map(attemptOf), [1, 2, 3, 4], 'X-Delivery-Attempt 1 to 4')
    t.ok(
      requests.every((request) => sequencesOf([request]).join() === String(entry.sequence)),
      'every attempt carries the same event',
    )
    t.ok(
      requests.every((request) => header(request, 'x-signature-256') === signatureOf(secret, request.raw)),
      'every attempt is signed',
    )
    for (let index = 1; index < requests.length; index++) {
      const minimum = retryDelaysS[index - 1]! * 1000 * retryScale
      const gap = requests[index]!.at - requests[index - 1]!.at
      t.ok(
        gap >= minimum * 0.9 - 2,
        `retry ${index} came ${gap} ms after the previous attempt (at least ${minimum} ms)`,
      )
    }
    const next = await writeArticle(client, 'R-2')
    const all = await waitForSequences(rx, [next.sequence], deliveryTimeoutMs)
    t.equal(all.length, 5, 'the succeeded delivery is not sent again')
    t.same(sequencesOf([all[4]!]), [next.sequence], 'the next POST carries only the next change')
    t.equal(attemptOf(all[4]!), 1, 'a new delivery starts at attempt 1')
    const hookState = await waitForWebhook(client, hook.id, (item) => item.last_delivery?.status === 200)
    t.equal(hookState.last_delivery!.error, null)
  },
)

t.test('a delivery being retried holds back later events until it succeeds', async (t) => {
  const client = await hookTenant()
  const rx = await receiver()
  let healthy = false
  rx.respondWith(() => ({ status: healthy ? 200 : 503 }))
  await register(client, { url: `${rx.url}/hold` })
  const first = await writeArticle(client, 'H-1')
  await rx.waitFor((requests) => requests.length >= 1, deliveryTimeoutMs)
  const second = await writeArticle(client, 'H-2')
  const secondDone = Date.now()
  // One more failed attempt after the second write was recorded, then the receiver recovers.
  await rx.waitFor((requests) => requests.some((request) => request.at > secondDone), deliveryTimeoutMs)
  healthy = true
  const requests = await waitForSequences(rx, [second.sequence], deliveryTimeoutMs)
  const firstAttempts = requests.filter((request) => sequencesOf([request]).includes(first.sequence))
  t.ok(firstAttempts.length >= 2, 'the first delivery was retried')
  for (const request of firstAttempts)
    t.same(sequencesOf([request]), [first.sequence], 'a retry carries only its own events')
  const last = requests[requests.length - 1]!
  t.same(
    sequencesOf([last]),
    [second.sequence],
    'the later event comes in its own POST after the retried one succeeded',
  )
  t.equal(attemptOf(last), 1)
  t.equal(requests.filter((request) => sequencesOf([request]).includes(second.sequence)).length, 1, 'once')
})

t.test(
  'a receiver that always fails gets exactly 11 attempts (first + 10 retries), then the delivery is dropped and the webhook goes on',
  async (t) => {
    const client = await hookTenant()
    const rx = await receiver()
    let healthy = false
    rx.respondWith(() => ({ status: healthy ? 200 : 500 }))
    const hook = await register(client, { url: `${rx.url}/drop` })
    const dropped = await writeArticle(client, 'X-1')
    const total = retryDelaysS.reduce((sum, delay) => sum + delay, 0) * 1000 * retryScale
    const requests = await rx.waitFor((all) => all.length >= 11, total + 30_000)
    const failing = requests.slice(0, 11)
    t.same(failing.map(attemptOf), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], 'X-Delivery-Attempt 1 to 11')
    t.ok(
      failing.every((request) => sequencesOf([request]).join() === String(dropped.sequence)),
      'every attempt carries the same event',
    )
    for (let index = 1; index < failing.length; index++) {
      const minimum = retryDelaysS[index - 1]! * 1000 * retryScale
      const gap = failing[index]!.at - failing[index - 1]!.at
      t.ok(
        gap >= minimum * 0.9 - 2,
        `retry ${index} came ${gap} ms after the previous attempt (at least ${minimum} ms)`,
      )
    }
    const afterDrop = await waitForWebhook(
      client,
      hook.id,
      (item) => item.last_delivery !== null && rx.requests.length >= 11,
    )
    t.equal(afterDrop.active, true, 'the webhook stays active')
    t.equal(afterDrop.last_delivery!.status, 500, 'last_delivery shows the failing status')
    t.type(afterDrop.last_delivery!.error, 'string', 'and an error text')

    // Delivery is in order and one at a time, so the next change is only sent once the first is dropped.
    healthy = true
    const next = await writeArticle(client, 'X-2')
    const all = await waitForSequences(rx, [next.sequence], deliveryTimeoutMs)
    t.equal(
      all.filter((request) => sequencesOf([request]).includes(dropped.sequence)).length,
      11,
      'no 12th attempt: the delivery was dropped',
    )
    const last = all[all.length - 1]!
    t.same(sequencesOf([last]), [next.sequence], 'later events are delivered, without the dropped one')
    t.equal(attemptOf(last), 1)
    const recovered = await waitForWebhook(client, hook.id, (item) => item.last_delivery?.status === 200)
    t.equal(recovered.last_delivery!.error, null)

    const metrics = await server.request('GET', '/metrics')
    // The metric's name is not part of the contract: any webhook series that names the drop (in its name or a label).
    const line = metrics.text
      .split('\n')
      .find((text) => /^[a-z_]*webhook[a-z_]*(\{[^}]*\})? [1-9]/.test(text) && /drop/.test(text))
    t.ok(line !== undefined, 'the drop is counted in /metrics')
    const dispatch = /^pricing_webhook_dispatch_seconds_total (\S+)$/m.exec(metrics.text)
    t.ok(dispatch !== null && Number(dispatch[1]) > 0, `the dispatcher's main-thread time is counted: ${dispatch?.[1]}`)
  },
)

t.test('a webhook whose position falls behind the changelog capacity goes on at the oldest held entry', async (t) => {
  const client = await server.tenant(`hooks-${++tenantCount}`, { tier: 'standard', limits: { changelog_capacity: 10 } })
  await setEvents(client, true)
  const rx = await receiver()
  let healthy = false
  const accepted: ReceivedRequest[] = []
  rx.respondWith((request) => {
    if (healthy) accepted.push(request)
    return { status: healthy ? 200 : 500 }
  })
  await register(client, { url: `${rx.url}/behind` })
  const first = await writeArticle(client, 'B-0')
  await rx.waitFor((all) => all.length >= 1, deliveryTimeoutMs)
  // While the first delivery is being retried, one batch of 30 pushes everything before it out.
  const batch = Array.from({ length: 30 }, (_, index) => ({ sku: `B-${index + 1}`, name: `behind ${index + 1}` }))
  t.same((await expectStatus(client.call('POST', '/article/batch', batch), 202, 'article batch')).body, {
    accepted: 30,
    failed: [],
  })
  const held = (await expectStatus(client.get('/changelog?limit=1000'), 200, 'changelog')).body
    .items as ChangelogEntry[]
  t.equal(held.length, 10, 'the log holds its capacity')
  const newest = held.map((entry) => entry.sequence)
  healthy = true
  const requests = await waitForSequences(rx, newest, deliveryTimeoutMs)
  const sent = new Set(sequencesOf(requests))
  const delivered = new Set(sequencesOf(accepted))
  // The retries of the first delivery (about 8 s at this scale) outlast the batch: it succeeds.
  t.ok(delivered.has(first.sequence), 'the delivery in progress is still sent, although its entry was evicted')
  const skipped = Array.from({ length: newest[0]! - first.sequence - 1 }, (_, index) => first.sequence + 1 + index)
  t.equal(skipped.length, 20, 'twenty entries were evicted before they were delivered')
  t.same(
    skipped.filter((sequence) => sent.has(sequence)),
    [],
    'evicted entries are never sent',
  )
  t.same(
    newest.filter((sequence) => !delivered.has(sequence)),
    [],
    'every held entry after the gap is delivered',
  )
  t.same(
    sequencesOf(accepted),
    [first.sequence, ...newest],
    'in order: the delivery in progress, then the held entries',
  )
})

t.test('a redirect answer fails the attempt and is not followed', async (t) => {
  const client = await hookTenant()
  const rx = await receiver()
  rx.respondWith((_request, index) => ({ status: index === 0 ? 302 : 200 }))
  const hook = await register(client, { url: `${rx.url}/moved` })
  const entry = await writeArticle(client, 'M-1')
  const requests = await rx.waitFor((all) => all.length >= 2, deliveryTimeoutMs)
  t.same(
    requests.map((request) => request.path),
    ['/moved', '/moved'],
    'the Location is not followed; the same URL is retried',
  )
  t.same(requests.map(attemptOf), [1, 2], 'the redirect counted as a failed attempt')
  t.same(sequencesOf(requests), [entry.sequence, entry.sequence])
  await waitForWebhook(client, hook.id, (item) => item.last_delivery?.status === 200)
  t.notOk(rx.requests.some((request) => request.path === '/redirected'))
})

t.test(
  'POST /webhooks/{id}/test answers 202 and sends one signed test event, also when inactive or with change events off',
  async (t) => {
    const client = await hookTenant(server, { events: false })
    const rx = await receiver()
    const secret = 'test-secret'
    const hook = await register(client, { url: `${rx.url}/ping`, secret, active: false })
    const sent = Date.now()
    const answer = await client.call('POST', `/webhooks/${hook.id}/test`)
    t.equal(answer.status, 202)
    const [request] = await rx.waitFor((all) => all.length >= 1, deliveryTimeoutMs)
    t.equal(request!.method, 'POST')
    t.equal(request!.path, '/ping')
    t.equal(header(request!, 'x-signature-256'), signatureOf(secret, request!.raw), 'signed like any delivery')
    t.equal(header(request!, 'x-webhook-id'), String(hook.id))
    t.equal(header(request!, 'x-delivery-attempt'), '1')
    t.equal(header(request!, 'user-agent'), 'pricing-service-webhooks/1')
    t.same(Object.keys(request!.body).sort(), ['delivered_at', 'events', 'webhook_id'])
    t.equal(request!.body.webhook_id, hook.id)
    t.equal(request!.body.events.length, 1, 'one event')
    const event = request!.body.events[0]
    t.same(Object.keys(event).sort(), [
      'change_type',
      'changed_at',
      'changed_by',
      'composite_key',
      'content_hash',
      'entity_code',
      'entity_type',
      'sequence',
    ])
    t.equal(event.sequence, 0)
    t.equal(event.entity_type, 'test')
    t.equal(event.change_type, 'updated')
    t.equal(event.entity_code, 'test')
    t.equal(event.composite_key, null)
    t.match(event.changed_at, rfc3339)
    t.ok(Date.parse(event.changed_at) >= sent - 1000, 'changed_at is now')
    t.type(event.changed_by, 'string')
    t.type(event.content_hash, 'string')

    const state = await waitForWebhook(client, hook.id, (item) => item.last_delivery !== null)
    t.equal(state.last_delivery!.status, 200, 'last_delivery reflects the test')
    t.equal(state.last_delivery!.error, null)
    t.ok(Date.parse(state.last_delivery!.at) >= sent - 1000)
    t.equal(state.active, false, 'testing does not activate the webhook')
  },
)

t.test('a failing test delivery is not retried and shows in last_delivery', async (t) => {
  const client = await hookTenant()
  const rx = await receiver()
  rx.respondWith((_request, index) => ({ status: index === 0 ? 500 : 200 }))
  const hook = await register(client, { url: `${rx.url}/ping` })
  t.equal((await client.call('POST', `/webhooks/${hook.id}/test`)).status, 202)
  const failed = await waitForWebhook(client, hook.id, (item) => item.last_delivery !== null)
  t.equal(failed.last_delivery!.status, 500)
  t.type(failed.last_delivery!.error, 'string')
  // Retries (scale 0.01) would come at 10, 20, 40, ... ms.
  await pause(1500)
  t.equal(rx.requests.length, 1, 'sent once, no retries')
  t.equal((await client.call('POST', `/webhooks/${hook.id}/test`)).status, 202)
  await rx.waitFor((all) => all.length >= 2, deliveryTimeoutMs)
  const succeeded = await waitForWebhook(client, hook.id, (item) => item.last_delivery?.status === 200)
  t.equal(succeeded.last_delivery!.error, null)
  t.ok(
    rx.requests.every((request) => request.body?.events?.[0]?.entity_type === 'test'),
    'only test events were sent',
  )
})

t.test('an unreachable receiver shows in last_delivery with a null status', async (t) => {
  const client = await hookTenant()
  const rx = await startHttpsReceiver()
  const url = `${rx.url}/closed`
  await rx.close()
  const hook = await register(client, { url })
  t.equal((await client.call('POST', `/webhooks/${hook.id}/test`)).status, 202)
  const state = await waitForWebhook(client, hook.id, (item) => item.last_delivery !== null)
  t.equal(state.last_delivery!.status, null, 'no answer, no status')
  t.type(state.last_delivery!.error, 'string')
})

// ---------------------------------------------------------------------------------------------
// Time-outs: a server with a short per-attempt time-out.

t.test(
  'a receiver that hangs or answers after PRICING_WEBHOOK_TIMEOUT_MS fails the attempt, which is retried',
  async (t) => {
    const timeoutMs = 300
    const quick = await startServer({ env: hookEnv({ PRICING_WEBHOOK_TIMEOUT_MS: String(timeoutMs) }) })
    t.teardown(() => quick.dispose())
    const client = await hookTenant(quick)
    const rx = await receiver()
    rx.respondWith((_request, index) =>
      index === 0
        ? { status: 200, hang: true }
        : index === 1
          ? { status: 200, delayMs: timeoutMs + 1500 }
          : { status: 200 },
    )
    const hook = await register(client, { url: `${rx.url}/slow` })
    const entry = await writeArticle(client, 'T-1')
    const requests = await rx.waitFor((all) => all.length >= 3, deliveryTimeoutMs)
    t.same(requests.map(attemptOf), [1, 2, 3], 'the hanging and the late answer each failed an attempt')
    t.same(sequencesOf(requests), [entry.sequence, entry.sequence, entry.sequence])
    t.ok(
      requests[1]!.at - requests[0]!.at >= timeoutMs * 0.7,
      `the hanging attempt was given up after the time-out (${requests[1]!.at - requests[0]!.at} ms)`,
    )
    t.ok(
      requests[2]!.at - requests[1]!.at >= timeoutMs * 0.7,
      `the late answer was given up after the time-out (${requests[2]!.at - requests[1]!.at} ms)`,
    )
    const state = await waitForWebhook(client, hook.id, (item) => item.last_delivery?.status === 200)
    t.equal(state.last_delivery!.error, null)
    await pause(batchMs)
    t.equal(rx.requests.length, 3, 'no further attempt after the success')
  },
)

// ---------------------------------------------------------------------------------------------
// SSRF: a server that does not allow private addresses.

t.test(
  'without PRICING_WEBHOOK_ALLOW_PRIVATE, loopback, private, link-local and similar receivers are refused (400 webhook_url_forbidden)',
  async (t) => {
    const strict = await startServer({ env: { NODE_EXTRA_CA_CERTS: caPath } })
    t.teardown(() => strict.dispose())
    const client = await hookTenant(strict)
    const forbidden = [
      'https://127.0.0.1:8443/hook',
      'https://localhost:8443/hook',
      'https://10.1.2.3/',
      'https://[::1]/',
      'https://169.254.169.254/latest/meta-data',
      'https://192.168.1.10/',
      'https://172.16.0.1/',
      'https://100.64.0.1/',
      'https://0.0.0.0/',
      'https://224.0.0.1/',
      'https://[fd12:3456::1]/',
      'https://[fe80::1]/',
      'https://[::ffff:127.0.0.1]/',
      'https://127.1.2.3/',
    ]
    for (const url of forbidden) {
      const answer = await client.call('POST', '/webhooks', { url })
      t.equal(answer.status, 400, `${url}: 400`)
      t.equal(answer.body?.code, 'webhook_url_forbidden', `${url}: webhook_url_forbidden`)
    }
    t.same(await listHooks(client), [], 'nothing stored')

    // There is no network: these are only registered, never delivered to.
    const publicV4 = await client.call('POST', '/webhooks', { url: 'https://93.184.216.34/x' })
    t.equal(publicV4.status, 201, `a public IPv4 literal is accepted (${publicV4.text})`)
    const publicV6 = await client.call('POST', '/webhooks', { url: 'https://[2606:2800:220:1:248:1893:25c8:1946]/x' })
    t.equal(publicV6.status, 201, `a public IPv6 literal is accepted (${publicV6.text})`)
    const base = publicV6.status === 201 ? publicV6 : publicV4
    if (base.status !== 201) return
    const moved = await client.call('PUT', `/webhooks/${base.body.id}`, { url: 'https://10.0.0.1/x' })
    t.equal(moved.status, 400, 'a PUT to a private address is refused too')
    t.equal(moved.body?.code, 'webhook_url_forbidden')
    t.equal((await client.get(`/webhooks/${base.body.id}`)).body.url, base.body.url, 'the refused PUT changed nothing')
  },
)
