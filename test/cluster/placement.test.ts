/**
 * Placement, forwarding and read replicas in a cluster of three nodes on a real Redis (issue 10):
 * nodes a and b serve region `eu`, node c serves `us`. The shared directory makes a tenant and a
 * key created on c known to a and b, and a token issued by one node valid on the others. The home
 * of `eu` (a or b) takes its writes; a write sent to the other node is forwarded there, a read
 * there is served by its replica once it has applied the sequence the caller names in
 * `X-Min-Sequence` (else forwarded to the home); c, which does not serve `eu`, forwards. A tenant of a region no node serves
 * is refused (503). The home killed with SIGKILL: writes answer 503 with Retry-After until the
 * standby takes over, and every acknowledged price is there.
 */
import t from 'tap'
import { putPricelist, setupReference } from '../helpers/price-fixtures.js'
import { noRedis, redisServerPath, RedisServer } from '../helpers/redis.js'
import { eventually, until } from '../helpers/until.js'
import { adminToken, startServer, TenantClient, type TestServer } from '../helpers/server.js'

const leaseMs = 1_000
const executable = redisServerPath()
const homeLine = (region: string) => new RegExp(`"region":"${region}"[^\\n]*"msg":"cluster: this node is the home of the region`)

if (executable === null) {
  t.skip(noRedis, () => {})
} else {
  const redis = await RedisServer.start(executable)
  t.teardown(() => redis.stop())
  const nodes = new Map<string, TestServer>()
  for (const [name, region] of [['a', 'eu'], ['b', 'eu'], ['c', 'us']] as const) {
    nodes.set(
      name,
      await startServer({
        env: {
          PRICING_REDIS_URL: redis.url,
          PRICING_NODE_ID: `node-${name}`,
          PRICING_REGION: region,
          PRICING_LEASE_TTL_MS: String(leaseMs),
          // One public address for the deployment (behind a load balancer): tokens name it as issuer.
          PRICING_PUBLIC_URL: 'http://pricing.test',
          PRICING_FX_FETCH_DELAY_MS: '3600000',
        },
      }),
    )
  }
  t.teardown(async () => {
    for (const node of nodes.values()) await node.dispose()
  })
  const node = (name: string) => nodes.get(name)!
  const homeOf = (region: string, names: string[]) => names.filter((name) => homeLine(region).test(node(name).stdout))

  await until(() => homeOf('eu', ['a', 'b']).length === 1 && homeOf('us', ['c']).length === 1, leaseMs * 5, 'homes for eu and us')
  const home = node(homeOf('eu', ['a', 'b'])[0]!)
  const standby = home === node('a') ? node('b') : node('a')
  const homeId = home === node('a') ? 'node-a' : 'node-b'
  let client: TenantClient
  let acknowledged = 0

  await t.test('a tenant and a key made on one node are known on every node; a token of one node is valid on another', async (t) => {
    const created = await node('c').request('POST', '/admin/tenants', { body: { slug: 'shop', tier: 'standard', region: 'eu' }, token: adminToken })
    t.equal(created.status, 201)
    const key = await node('c').request('POST', '/admin/tenants/shop/keys', { body: { name: 'k' }, token: adminToken })
    t.equal(key.status, 201)
    for (const name of ['a', 'b']) {
      await eventually(async () => ((await node(name).request('GET', '/admin/tenants/shop', { token: adminToken })).status === 200 ? true : undefined), 5_000, `shop on ${name}`)
    }
    const fromC = new TenantClient(node('c'), 'shop', key.body.client_id, key.body.client_secret)
    await fromC.refreshToken()
    // c's token, used on the standby, for a read the standby sends on or serves: never a 401.
    const answer = await standby.request('GET', '/t/shop/pricelist', { token: fromC.token })
    t.equal(answer.status, 200, "another node's token is accepted")
    client = new TenantClient(standby, 'shop', key.body.client_id, key.body.client_secret)
    client.token = fromC.token
  })

  await t.test('writes sent to a node that is not the home are forwarded there and acknowledged with their sequence', async (t) => {
    await setupReference(client)
    await putPricelist(client, 'RETAIL', { currency_code: 'EUR', vat_mode: 'NET' })
    for (let index = 1; index <= 20; index++) {
      const written = await client.call('PUT', `/price/SKU-${index}/RETAIL`, { price: { sales: `${index}.0005` } })
      t.equal(written.status, 202, `price ${index}`)
      t.equal(written.headers.get('x-pricing-node'), homeId, 'answered by the home')
      t.ok(written.headers.get('x-ratelimit-remaining') !== null, "with the home's rate-limit headers")
      acknowledged = Number(written.headers.get('x-sequence'))
    }
    t.ok(acknowledged > 20, `the home answered with its sequence (${acknowledged})`)
  })

  await t.test('a read names the sequence it has seen: the replica serves it once applied, never older data', async (t) => {
    const headers = { 'x-min-sequence': String(acknowledged) }
    const served = await eventually(async () => {
      const answer = await standby.request('GET', '/t/shop/price/SKU-20/RETAIL', { token: client.token, headers })
      return answer.status === 200 && answer.headers.get('x-pricing-node') === null ? answer : undefined
    }, 5_000, 'the replica at the sequence')
    t.equal(served.body.price.sales, 20.0005, 'the value written last, from the replica')
    t.ok(Number(served.headers.get('x-sequence')) >= acknowledged)
    t.equal(served.headers.get('x-replica-lag'), '0')
    t.equal(served.headers.get('x-pricing-node'), null, 'served by the replica itself')
    // A sequence the replica has not reached: the home answers instead of an older copy.
    const ahead = await standby.request('GET', '/t/shop/price/SKU-20/RETAIL', { token: client.token, headers: { 'x-min-sequence': String(acknowledged + 1_000) } })
    t.equal(ahead.status, 200)
    t.equal(ahead.headers.get('x-pricing-node'), homeId)
    // Node c does not serve eu: the home answers its reads.
    const elsewhere = await node('c').request('GET', '/t/shop/price/SKU-1/RETAIL', { token: client.token })
    t.equal(elsewhere.status, 200)
    t.equal(elsewhere.body.price.sales, 1.0005)
    t.equal(elsewhere.headers.get('x-pricing-node'), homeId)
  })

  await t.test('a tenant of a region no node serves is refused with 503', async (t) => {
    t.equal((await node('a').request('POST', '/admin/tenants', { body: { slug: 'moon', tier: 'standard', region: 'moon' }, token: adminToken })).status, 201)
    const key = await node('a').request('POST', '/admin/tenants/moon/keys', { body: { name: 'k' }, token: adminToken })
    const moon = new TenantClient(node('a'), 'moon', key.body.client_id, key.body.client_secret)
    await moon.refreshToken()
    const answer = await moon.get('/pricelist')
    t.equal(answer.status, 503)
    t.equal(answer.body.code, 'region_unavailable')
    t.match(answer.body.message, 'No node of this deployment serves region moon')
    t.ok(Number(answer.headers.get('retry-after')) >= 1)
  })

  await t.test('the home killed: writes answer 503 until the standby takes over; nothing acknowledged is lost', async (t) => {
    await home.kill()
    const killed = Date.now()
    const refused = await standby.request('PUT', '/t/shop/price/SKU-99/RETAIL', { body: { price: { sales: 1 } }, token: client.token })
    t.equal(refused.status, 503, 'a write right after the kill is refused, not lost')
    t.equal(refused.body.code, 'region_unavailable')
    await until(() => homeLine('eu').test(standby.stdout), leaseMs * 5, 'the standby as home')
    t.pass(`the standby took over ${Date.now() - killed} ms after the kill`)
    const written = await eventually(async () => {
      const answer = await standby.request('PUT', '/t/shop/price/SKU-99/RETAIL', { body: { price: { sales: '99.5' } }, token: client.token, })
      if (answer.status === 503) t.ok(Number(answer.headers.get('retry-after')) >= 1, 'a refused write says when to retry')
      return answer.status === 202 ? answer : undefined
    }, leaseMs * 5, 'a write accepted by the new home')
    t.ok(Number(written.headers.get('x-sequence')) > acknowledged, 'the new home continues the sequence')
    for (let index = 1; index <= 20; index++) {
      const answer = await standby.request('GET', `/t/shop/price/SKU-${index}/RETAIL`, { token: client.token })
      t.equal(answer.body?.price?.sales, Number(`${index}.0005`), `acknowledged price ${index} is there`)
      t.equal(answer.headers.get('x-pricing-node'), null, 'on the new home itself')
    }
  })
}
