/**
 * Webhook delivery across restarts and crashes (docs/api.md "Delivery", Durability): pending
 * deliveries survive SIGKILL whether the receiver was failing or the batch window had not closed,
 * the retry state (X-Delivery-Attempt) resumes instead of starting over, and what a receiver
 * acknowledged before a clean restart is not sent again. Real server, real HTTPS receiver.
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
  startHttpsReceiver,
  testCertificate,
  type HttpsReceiver,
  type ReceivedRequest,
} from '../helpers/https-receiver.js'
import { startServer, type TenantClient, type TestServer } from '../helpers/server.js'

const batchMs = 500
const retryScale = 0.01
/** The whole retry schedule (1+2+...+256+300 s) at this scale: a delivery is dropped after about this long. */
const retryBudgetMs = 811 * 1000 * retryScale
const deliveryTimeoutMs = 30_000

let server: TestServer
let tenantCount = 0
const receivers: HttpsReceiver[] = []

t.before(async () => {
  const { caPath } = await testCertificate()
  server = await startServer({
    env: {
      NODE_EXTRA_CA_CERTS: caPath,
      PRICING_WEBHOOK_ALLOW_PRIVATE: 'true',
      PRICING_WEBHOOK_RETRY_SCALE: String(retryScale),
      PRICING_WEBHOOK_BATCH_MS: String(batchMs),
      PRICING_WEBHOOK_TIMEOUT_MS: '5000',
    },
  })
})
t.teardown(async () => {
  for (const receiver of receivers) await receiver.close()
  await server.dispose()
})

async function receiver(port?: number): Promise<HttpsReceiver> {
  const started = await startHttpsReceiver(port === undefined ? {} : { port })
  receivers.push(started)
  return started
}

async function priceTenant(): Promise<TenantClient> {
  const client = await server.tenant(`durable-${++tenantCount}`, { tier: 'standard' })
  await expectStatus(
    client.call('PUT', '/settings/change.events.enabled', { value: 'true' }),
    202,
    'change.events.enabled',
  )
  await expectStatus(client.call('PUT', '/currency/EUR', { is_active: true, vat_precision: 2 }), 202, 'currency')
  await expectStatus(
    client.call('PUT', '/pricelist/RETAIL', { currency_code: 'EUR', vat_mode: 'NET' }),
    202,
    'pricelist',
  )
  return client
}

async function register(client: TenantClient, url: string): Promise<number> {
  return (await expectStatus(client.call('POST', '/webhooks', { url }), 201, 'register webhook')).body.id
}

/** Single price writes and one batch: `count` changes in all. */
async function writePrices(client: TenantClient, prefix: string, count: number): Promise<void> {
  const singles = Math.min(3, count)
  for (let index = 0; index < singles; index++) {
    await expectStatus(
      client.call('PUT', `/price/${prefix}-${index}/RETAIL`, { price: { sales: 10 + index } }),
      202,
      `price ${prefix}-${index}`,
    )
  }
  if (count === singles) return
  const items = Array.from({ length: count - singles }, (_, offset) => ({
    sku: `${prefix}-${singles + offset}`,
    pricelist: 'RETAIL',
    price: String(20 + offset),
  }))
  const batch = await expectStatus(client.call('POST', '/price/batch', items), 202, 'price batch')
  if (batch.body.failed.length > 0) throw new Error(`price batch failed: ${batch.text}`)
}

function attemptOf(request: ReceivedRequest): number {
  return Number(request.headers['x-delivery-attempt'])
}

/** Each distinct event received, by sequence (a redelivery after a crash is allowed: at-least-once). */
function distinctEvents(requests: readonly ReceivedRequest[]): ChangelogEntry[] {
  const bySequence = new Map<number, ChangelogEntry>()
  for (const event of eventsOf(requests)) bySequence.set(event.sequence, event)
  return [...bySequence.values()].sort((a, b) => a.sequence - b.sequence)
}

async function killAndStart(client: TenantClient): Promise<void> {
  await server.kill()
  await server.start()
  await client.refreshToken()
}

t.test('changes acknowledged while the receiver fails are all delivered after a SIGKILL and restart', async (t) => {
  const client = await priceTenant()
  const rx = await receiver()
  rx.respondWith(() => ({ status: 500 }))
  await register(client, `${rx.url}/failing`)
  const registeredAt = await lastSequence(client)
  await writePrices(client, 'FAIL', 3)
  await rx.waitFor((requests) => requests.length >= 2, deliveryTimeoutMs)
  await writePrices(client, 'MORE', 40)
  await server.kill()
  rx.respondWith(() => ({ status: 200 }))
  await server.start()
  await client.refreshToken()

  const expected = await entriesAfter(client, registeredAt)
  t.equal(expected.length, 43, 'every acknowledged write is in the changelog')
  const requests = await waitForSequences(
    rx,
    expected.map((entry) => entry.sequence),
    retryBudgetMs + deliveryTimeoutMs,
  )
  t.same(distinctEvents(requests), expected, 'exactly the acknowledged changes arrived, as GET /changelog answers them')
})

t.test(
  'changes acknowledged while the receiver is down arrive once it is back after a SIGKILL and restart',
  async (t) => {
    const client = await priceTenant()
    const first = await receiver()
    const port = Number(new URL(first.url).port)
    await register(client, `${first.url}/down`)
    const registeredAt = await lastSequence(client)
    await first.close()
    await writePrices(client, 'DOWN', 10)
    await killAndStart(client)
    const rx = await receiver(port)
    const expected = await entriesAfter(client, registeredAt)
    t.equal(expected.length, 10)
    const requests = await waitForSequences(
      rx,
      expected.map((entry) => entry.sequence),
      retryBudgetMs + deliveryTimeoutMs,
    )
    t.same(distinctEvents(requests), expected, 'every acknowledged change arrived')
  },
)

t.test('changes acknowledged inside the batch window survive a SIGKILL right after the answer', async (t) => {
  const client = await priceTenant()
  const rx = await receiver()
  const id = await register(client, `${rx.url}/window`)
  const registeredAt = await lastSequence(client)
  const started = Date.now()
  await writePrices(client, 'FAST', 25)
  await server.kill()
  const killedAfter = Date.now() - started
  const beforeKill = rx.requests.length
  t.comment(`killed ${killedAfter} ms after the first write; ${beforeKill} POST(s) had arrived`)
  await server.start()
  await client.refreshToken()
  const expected = await entriesAfter(client, registeredAt)
  t.equal(expected.length, 25, 'every acknowledged write is in the changelog')
  const requests = await waitForSequences(
    rx,
    expected.map((entry) => entry.sequence),
    deliveryTimeoutMs,
  )
  t.same(distinctEvents(requests), expected, 'the pending batch was delivered after the restart')
  t.ok(
    requests.every((request) => request.body?.webhook_id === id),
    'each POST names the webhook',
  )
})

for (const kind of ['clean restart', 'SIGKILL'] as const) {
  t.test(
    `the retry state resumes after a ${kind}: X-Delivery-Attempt continues and the delivery is still dropped after 11 attempts`,
    async (t) => {
      const client = await priceTenant()
      const rx = await receiver()
      let healthy = false
      rx.respondWith(() => ({ status: healthy ? 200 : 500 }))
      await register(client, `${rx.url}/resume`)
      const registeredAt = await lastSequence(client)
      await writePrices(client, 'RETRY', 1)
      const [entry] = await entriesAfter(client, registeredAt)
      await rx.waitFor((requests) => requests.some((request) => attemptOf(request) >= 3), deliveryTimeoutMs)
      if (kind === 'SIGKILL') await server.kill()
      else await server.stop()
      const before = rx.requests.slice()
      await server.start()
      await client.refreshToken()
      const maxBefore = Math.max(...before.map(attemptOf))
      t.same(
        before.map(attemptOf),
        before.map((_request, index) => index + 1),
        'attempts before the restart are numbered 1, 2, 3, ...',
      )

      const all = await rx.waitFor(
        (requests) => requests.some((request) => attemptOf(request) >= 11),
        retryBudgetMs + deliveryTimeoutMs,
      )
      const after = all.slice(before.length)
      t.ok(after.length > 0, 'attempts continued after the restart')
      const numbers = after.map(attemptOf)
      // A SIGKILL may lose the record of the attempt in flight, which is then sent again with its number.
      const floor = kind === 'SIGKILL' ? Math.min(maxBefore, 3) : maxBefore
      t.ok(
        numbers[0]! >= floor,
        `the first attempt after the restart is numbered ${numbers[0]} (attempts before: 1-${maxBefore}), not 1`,
      )
      t.ok(
        numbers.every((number, index) => index === 0 || number === numbers[index - 1]! + 1),
        `then counts up by one: ${numbers.join(', ')}`,
      )
      t.ok(
        all.every((request) => sequencesOf([request]).join() === String(entry!.sequence)),
        'every attempt carries the same event',
      )

      // Delivery is in order, so the next change only goes out once the retried one is dropped.
      healthy = true
      const before2 = await lastSequence(client)
      await writePrices(client, 'NEXT', 1)
      const [next] = await entriesAfter(client, before2)
      const final = await waitForSequences(rx, [next!.sequence], deliveryTimeoutMs)
      const attempts = final.filter((request) => sequencesOf([request]).includes(entry!.sequence)).map(attemptOf)
      t.equal(Math.max(...attempts), 11, 'the last attempt is the 11th (first + 10 retries), none after')
      t.equal(attemptOf(final[final.length - 1]!), 1, 'the next delivery starts at attempt 1')
    },
  )
}

t.test('events acknowledged by the receiver before a clean restart are not delivered again', async (t) => {
  const client = await priceTenant()
  const rx = await receiver()
  const id = await register(client, `${rx.url}/once`)
  const registeredAt = await lastSequence(client)
  await writePrices(client, 'ONCE', 5)
  const delivered = await entriesAfter(client, registeredAt)
  await waitForSequences(
    rx,
    delivered.map((entry) => entry.sequence),
    deliveryTimeoutMs,
  )
  // The receiver's 200 is recorded once last_delivery shows it.
  const deadline = Date.now() + deliveryTimeoutMs
  while ((await client.get(`/webhooks/${id}`)).body?.last_delivery?.status !== 200) {
    if (Date.now() > deadline) throw new Error('last_delivery never showed the success')
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  const beforeRestart = rx.requests.length
  await server.restart()
  await client.refreshToken()

  const marker = await lastSequence(client)
  await writePrices(client, 'AFTER', 1)
  const [after] = await entriesAfter(client, marker)
  const requests = await waitForSequences(rx, [after!.sequence], deliveryTimeoutMs)
  const resent = requests.slice(beforeRestart)
  t.same(sequencesOf(resent), [after!.sequence], 'after the restart only the new change is sent')
  for (const entry of delivered) {
    t.equal(
      sequencesOf(requests).filter((sequence) => sequence === entry.sequence).length,
      1,
      `sequence ${entry.sequence} delivered once`,
    )
  }
})
