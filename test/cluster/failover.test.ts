/**
 * How long a region is without a writer, and how quietly nodes leave, on a real Redis: the home
 * of `eu` killed with SIGKILL is replaced by a standby within TTL + TTL/3 (the figure README.md
 * and docs/cluster.md give), measured until the standby acknowledges a write; then each node
 * left, the new home among them, stops on SIGTERM with exit 0 and without a warning in its log.
 */
import t from 'tap'
import { putPricelist, setupReference } from '../helpers/price-fixtures.js'
import { redisForTest } from '../helpers/redis.js'
import { eventually, until } from '../helpers/until.js'
import { homeLine, startCluster } from '../helpers/cluster.js'
import { adminToken, TenantClient } from '../helpers/server.js'
import { logRecords } from '../helpers/logs.js'

// Long enough that the lease's own arithmetic, not this machine's noise, decides the measured time.
const leaseMs = 3_000

const redis = await redisForTest(t)
if (redis !== null) {
  const nodes = [
    ...(
      await startCluster(
        t,
        redis,
        ['a', 'b', 'c'].map((name) => ({ name, region: 'eu' })),
        leaseMs,
      )
    ).values(),
  ]
  await until(() => nodes.filter((node) => homeLine('eu').test(node.stdout)).length === 1, leaseMs * 5, 'a home for eu')
  const home = nodes.find((node) => homeLine('eu').test(node.stdout))!
  const standbys = nodes.filter((node) => node !== home)
  // Set-up: failures throw (an assertion at the top level after an await ends tap's root test early).
  const created = await home.request('POST', '/admin/tenants', {
    body: { slug: 'shop', tier: 'standard', region: 'eu' },
    token: adminToken,
  })
  if (created.status !== 201) throw new Error(`tenant create: ${created.status} ${created.text}`)
  const key = await home.request('POST', '/admin/tenants/shop/keys', { body: { name: 'k' }, token: adminToken })
  const writer = new TenantClient(home, 'shop', key.body.client_id, key.body.client_secret)
  await writer.refreshToken()
  await setupReference(writer)
  await putPricelist(writer, 'RETAIL', { currency_code: 'EUR', vat_mode: 'NET' })
  if ((await writer.call('PUT', '/price/SKU-1/RETAIL', { price: { sales: '1.25' } })).status !== 202)
    throw new Error('first write')

  await t.test('a home killed with SIGKILL: a standby acknowledges writes within TTL + TTL/3', async (t) => {
    // Right after a lease renewal would be the worst case; any moment is fine for the bound.
    await home.kill()
    const killed = Date.now()
    const clients = standbys.map((node) => {
      const client = new TenantClient(node, 'shop', key.body.client_id, key.body.client_secret)
      client.token = writer.token
      return client
    })
    const written = await eventually(
      async () => {
        for (const client of clients) {
          const answer = await client.call('PUT', '/price/SKU-2/RETAIL', { price: { sales: '2.5' } })
          if (answer.status === 202) return answer
        }
        return undefined
      },
      leaseMs * 4,
      'a write acknowledged by a standby',
    )
    const elapsed = Date.now() - killed
    t.ok(written.headers.get('x-sequence') !== null)
    // Before a standby asked the dead home's address it also waited a whole TTL after seeing its
    // registration gone: 1.67 to 2.33 x TTL. Half a TTL above the bound is room for a slow machine.
    t.ok(
      elapsed < leaseMs * 1.5,
      `a standby writes ${elapsed} ms after the kill (TTL ${leaseMs} ms; bound ${(leaseMs * 4) / 3} ms)`,
    )
  })

  await t.test('a clean SIGTERM logs no warning, on the home and on a standby', async (t) => {
    for (const node of standbys) {
      const role = homeLine('eu').test(node.stdout) ? 'the home' : 'a standby'
      const before = logRecords(node.stdout).length
      t.equal(await node.stop(), 0, `${role} exits 0`)
      const records = logRecords(node.stdout).slice(before)
      t.ok(
        records.some((record) => record['msg'] === 'closed'),
        `${role} logged its stop (${records.length} records)`,
      )
      const loud = records.filter((record) => Number(record['level']) >= 40)
      t.same(
        loud.map((record) => record['msg']),
        [],
        `${role} logged no warning or error on its way out`,
      )
    }
  })
}
