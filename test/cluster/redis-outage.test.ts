/**
 * Redis away and back, with three nodes of region `eu` on a real Redis (issue 10): while Redis is
 * stopped, the nodes say they are degraded on /readyz and /metrics; the home goes on taking its
 * tenant's writes and queues them for the replica, the standby goes on serving reads from its
 * replica. When Redis returns, the queued commits are published, the replica catches up to the
 * home's sequence, and the degraded state clears.
 */
import t from 'tap'
import { putPricelist, setupReference } from '../helpers/price-fixtures.js'
import { redisForTest } from '../helpers/redis.js'
import { eventually, until } from '../helpers/until.js'
import { homeLine, startCluster } from '../helpers/cluster.js'
import { adminToken, TenantClient } from '../helpers/server.js'

const leaseMs = 1_000

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
  const standby = nodes.find((node) => node !== home)!
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
  const first = await writer.call('PUT', '/price/SKU-1/RETAIL', { price: { sales: '1.25' } })
  const reader = new TenantClient(standby, 'shop', key.body.client_id, key.body.client_secret)
  reader.token = writer.token
  const replicaAt = async (sequence: number) =>
    eventually(
      async () => {
        const answer = await reader.call('GET', '/price/SKU-1/RETAIL', undefined, {
          'x-min-sequence': String(sequence),
        })
        return answer.status === 200 && answer.headers.get('x-pricing-node') === null ? answer : undefined
      },
      10_000,
      `the replica at ${sequence}`,
    )
  await replicaAt(Number(first.headers.get('x-sequence')))

  await t.test(
    'Redis stopped: the nodes degraded; the home keeps writing and queues; the replica keeps reading',
    async (t) => {
      await redis.stop()
      const ready = await eventually(
        async () => {
          const answer = await home.request('GET', '/readyz')
          return answer.body?.cluster?.redis === 'down' ? answer : undefined
        },
        5_000,
        'the home sees Redis down',
      )
      t.equal(ready.status, 200, 'still ready: it serves')
      t.equal(ready.body.cluster.degraded, true)
      t.match(ready.body.cluster.reasons[0], 'Redis unreachable')
      t.same(ready.body.cluster.home_regions, ['eu'], 'and still the home of eu')
      t.match((await standby.request('GET', '/metrics')).text, /\npricing_cluster_redis_up 0\n/)
      // Past the lease's TTL: no renewal was possible, the home still writes for its region.
      await new Promise((resolve) => setTimeout(resolve, leaseMs * 1.5))
      const written = await writer.call('PUT', '/price/SKU-1/RETAIL', { price: { sales: '2.5' } })
      t.equal(written.status, 202, 'a write on the home during the outage')
      const queued = await home.request('GET', '/readyz')
      t.equal(queued.body.cluster.queued_commits, 1, 'queued for the replica')
      const stale = await reader.get('/price/SKU-1/RETAIL')
      t.equal(stale.status, 200, 'the standby serves reads from its replica')
      t.equal(stale.body.price.sales, 1.25, 'as of what reached it')
      t.equal(stale.headers.get('x-pricing-node'), null)
    },
  )

  await t.test('Redis back: the queue is published, the replica catches up, the degraded state clears', async (t) => {
    await redis.start()
    const sequence = Number((await writer.call('GET', '/price/SKU-1/RETAIL')).headers.get('x-sequence'))
    const caughtUp = await replicaAt(sequence)
    t.equal(caughtUp.body.price.sales, 2.5, 'the write made during the outage reached the replica')
    for (const node of nodes) {
      const ready = await eventually(
        async () => {
          const answer = await node.request('GET', '/readyz')
          return answer.body?.cluster?.degraded === false ? answer : undefined
        },
        5_000,
        'not degraded',
      )
      t.equal(ready.body.cluster.redis, 'up')
      t.equal(ready.body.cluster.queued_commits, 0)
    }
    t.match((await home.request('GET', '/metrics')).text, /\npricing_cluster_home_regions\{region="eu"\} 1\n/)
    t.match((await standby.request('GET', '/metrics')).text, /\npricing_replica_lag_sequences\{tenant="shop"\} 0\n/)
  })
}
