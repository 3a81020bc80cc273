/**
 * Cluster-wide rate limits (issue 10) with three nodes of one region on a real Redis: a client
 * hammering all three nodes for 10 seconds gets the tenant's limit once, not once per node:
 * burst + rate x time, within +-10%. The nodes take tokens from Redis in leases; the test also
 * counts the Redis commands the bucket script ran, far fewer than the requests.
 */
import { spawnSync } from 'node:child_process'
import t from 'tap'
import { redisForTest } from '../helpers/redis.js'
import { eventually, until } from '../helpers/until.js'
import { homeLine, startCluster } from '../helpers/cluster.js'
import { adminToken, TenantClient } from '../helpers/server.js'

const leaseMs = 1_000
const rate = 100
const burst = 200
const windowMs = 10_000

/** How many times Redis ran scripts (EVALSHA) so far, from INFO commandstats. */
function scriptCalls(port: number): number {
  const info = spawnSync('redis-cli', ['-p', String(port), 'info', 'commandstats'], { encoding: 'utf8' }).stdout
  let calls = 0
  for (const match of info.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)) calls += Number(match[1])
  return calls
}

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
  const first = nodes[0]!
  const created = await first.request('POST', '/admin/tenants', {
    body: { slug: 'busy', tier: 'standard', region: 'eu', limits: { query_rate: rate, query_burst: burst } },
    token: adminToken,
  })
  // Set-up: failures throw (an assertion at the top level after an await ends tap's root test early).
  if (created.status !== 201) throw new Error(`tenant create: ${created.status} ${created.text}`)
  const key = await first.request('POST', '/admin/tenants/busy/keys', { body: { name: 'k' }, token: adminToken })
  const clients = nodes.map((node) => new TenantClient(node, 'busy', key.body.client_id, key.body.client_secret))
  await clients[0]!.refreshToken()
  for (const client of clients) client.token = clients[0]!.token
  // Every node has the tenant and serves its reads itself (home or ready replica).
  for (const client of clients) {
    await eventually(
      async () => {
        const answer = await client.get('/pricelist')
        return answer.status === 200 && answer.headers.get('x-pricing-node') === null ? true : undefined
      },
      10_000,
      `the tenant served on ${client.server.url}`,
    )
  }
  // The probes above spent tokens: let the bucket fill up again before measuring.
  await new Promise((resolve) => setTimeout(resolve, (burst / rate) * 1000 + 500))

  await t.test('three nodes hammered for 10 s: the tenant gets its limit once, within 10%', async (t) => {
    const counts = { allowed: 0, refused: 0, other: 0 }
    const scriptsBefore = scriptCalls(redis.port)
    const started = Date.now()
    const worker = async (client: TenantClient): Promise<void> => {
      while (Date.now() - started < windowMs) {
        const answer = await client.get('/pricelist')
        if (answer.status === 200) counts.allowed++
        else if (answer.status === 429) counts.refused++
        else counts.other++
      }
    }
    await Promise.all(clients.flatMap((client) => [worker(client), worker(client), worker(client)]))
    const elapsedS = (Date.now() - started) / 1000
    const expected = burst + rate * elapsedS
    t.equal(counts.other, 0, 'every answer was 200 or 429')
    t.ok(
      counts.refused > counts.allowed,
      `the client asked for far more than the limit (${counts.allowed + counts.refused} requests)`,
    )
    const ratio = counts.allowed / expected
    t.ok(
      ratio >= 0.9 && ratio <= 1.1,
      `${counts.allowed} allowed in ${elapsedS.toFixed(1)} s against ${expected.toFixed(0)} (burst ${burst} + ${rate}/s): ${(ratio * 100).toFixed(1)}%`,
    )
    const scripts = scriptCalls(redis.port) - scriptsBefore
    t.ok(
      scripts < (counts.allowed + counts.refused) / 2,
      `${scripts} bucket scripts in Redis for ${counts.allowed + counts.refused} requests: leases, not a round trip per request`,
    )
  })
}
