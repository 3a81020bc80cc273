/**
 * Placement, forwarding and read replicas in a cluster of three nodes on a real Redis (issue 10):
 * nodes a and b serve region `eu`, node c serves `us`. The shared directory makes a tenant and a
 * key created on c known to a and b, and a token issued by one node valid on the others. The home
 * of `eu` (a or b) takes its writes; a write sent to the other node is forwarded there, a read
 * there is served by its replica once it has applied the sequence the caller names in
 * `X-Min-Sequence` (else forwarded to the home); c, which does not serve `eu`, forwards. A tenant of a region no node serves
 * is refused (503). A node that joins later starts from a backup copy of the home's data and then
 * follows the log. The home killed with SIGKILL: writes answer 503 with Retry-After until a
 * standby takes over, and every acknowledged price is there.
 */
import { spawnSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { putPricelist, setupReference } from '../helpers/price-fixtures.js'
import { redisForTest } from '../helpers/redis.js'
import { eventually, until } from '../helpers/until.js'
import { clusterEnv, homeLine, startCluster } from '../helpers/cluster.js'
import { adminToken, startServer, TenantClient } from '../helpers/server.js'

const leaseMs = 1_000

const redis = await redisForTest(t)
if (redis !== null) {
  const nodes = await startCluster(
    t,
    redis,
    [
      { name: 'a', region: 'eu' },
      { name: 'b', region: 'eu' },
      { name: 'c', region: 'us' },
    ],
    leaseMs,
  )
  const node = (name: string) => nodes.get(name)!
  const copiedLine = /"tenant":"shop"[^\n]*"msg":"cluster: replica starts from the home's backup copy"/
  const homeOf = (region: string, names: string[]) => names.filter((name) => homeLine(region).test(node(name).stdout))

  await until(
    () => homeOf('eu', ['a', 'b']).length === 1 && homeOf('us', ['c']).length === 1,
    leaseMs * 5,
    'homes for eu and us',
  )
  const home = node(homeOf('eu', ['a', 'b'])[0]!)
  const standby = home === node('a') ? node('b') : node('a')
  const homeId = home === node('a') ? 'node-a' : 'node-b'
  let client: TenantClient
  let acknowledged = 0

  await t.test(
    'a tenant and a key made on one node are known on every node; a token of one node is valid on another',
    async (t) => {
      const created = await node('c').request('POST', '/admin/tenants', {
        body: { slug: 'shop', tier: 'standard', region: 'eu' },
        token: adminToken,
      })
      t.equal(created.status, 201)
      const key = await node('c').request('POST', '/admin/tenants/shop/keys', {
        body: { name: 'k' },
        token: adminToken,
      })
      t.equal(key.status, 201)
      for (const name of ['a', 'b']) {
        await eventually(
          async () =>
            (await node(name).request('GET', '/admin/tenants/shop', { token: adminToken })).status === 200
              ? true
              : undefined,
          5_000,
          `shop on ${name}`,
        )
      }
      const fromC = new TenantClient(node('c'), 'shop', key.body.client_id, key.body.client_secret)
      await fromC.refreshToken()
      // c's token, used on the standby, for a read the standby sends on or serves: never a 401.
      const answer = await standby.request('GET', '/t/shop/pricelist', { token: fromC.token })
      t.equal(answer.status, 200, "another node's token is accepted")
      client = new TenantClient(standby, 'shop', key.body.client_id, key.body.client_secret)
      client.token = fromC.token
    },
  )

  await t.test(
    'writes sent to a node that is not the home are forwarded there and acknowledged with their sequence',
    async (t) => {
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
    },
  )

  await t.test(
    'a read names the sequence it has seen: the replica serves it once applied, never older data',
    async (t) => {
      const headers = { 'x-min-sequence': String(acknowledged) }
      const served = await eventually(
        async () => {
          const answer = await standby.request('GET', '/t/shop/price/SKU-20/RETAIL', { token: client.token, headers })
          return answer.status === 200 && answer.headers.get('x-pricing-node') === null ? answer : undefined
        },
        5_000,
        'the replica at the sequence',
      )
      t.equal(served.body.price.sales, 20.0005, 'the value written last, from the replica')
      t.ok(Number(served.headers.get('x-sequence')) >= acknowledged)
      t.equal(served.headers.get('x-replica-lag'), '0')
      t.equal(served.headers.get('x-pricing-node'), null, 'served by the replica itself')
      // A sequence the replica has not reached: the home answers instead of an older copy.
      const ahead = await standby.request('GET', '/t/shop/price/SKU-20/RETAIL', {
        token: client.token,
        headers: { 'x-min-sequence': String(acknowledged + 1_000) },
      })
      t.equal(ahead.status, 200)
      t.equal(ahead.headers.get('x-pricing-node'), homeId)
      // Node c does not serve eu: the home answers its reads.
      const elsewhere = await node('c').request('GET', '/t/shop/price/SKU-1/RETAIL', { token: client.token })
      t.equal(elsewhere.status, 200)
      t.equal(elsewhere.body.price.sales, 1.0005)
      t.equal(elsewhere.headers.get('x-pricing-node'), homeId)
    },
  )

  await t.test(
    'a node that joins later starts its replica from a backup copy of the home, then follows the log',
    async (t) => {
      const refused = await home.request('GET', '/cluster/tenants/shop/snapshot', { token: 'not-the-secret' })
      t.equal(refused.status, 401, 'the copy is only for nodes with the cluster secret')
      const late = await startServer({ env: clusterEnv(redis, { name: 'd', region: 'eu' }, leaseMs) })
      nodes.set('d', late)
      // Log lines reach stdout asynchronously: the line may follow readiness by a moment.
      await until(
        () => copiedLine.test(late.stdout) && late.stdout.includes('"msg":"ready"'),
        5_000,
        'the copy and readiness logged',
      )
      t.ok(late.stdout.indexOf('backup copy') < late.stdout.indexOf('"msg":"ready"'), 'copied before loading')
      const more = await client.call('PUT', '/price/SKU-21/RETAIL', { price: { sales: '21.5' } })
      t.equal(more.status, 202)
      const sequence = Number(more.headers.get('x-sequence'))
      const served = await eventually(
        async () => {
          const answer = await late.request('GET', '/t/shop/price/SKU-21/RETAIL', {
            token: client.token,
            headers: { 'x-min-sequence': String(sequence) },
          })
          return answer.status === 200 && answer.headers.get('x-pricing-node') === null ? answer : undefined
        },
        5_000,
        'the late replica at the sequence',
      )
      t.equal(served.body.price.sales, 21.5, 'a write after the copy, from the log')
      const early = await late.request('GET', '/t/shop/price/SKU-1/RETAIL', { token: client.token })
      t.equal(early.body.price.sales, 1.0005, 'a write before the copy, from the copy')
      acknowledged = sequence
    },
  )

  await t.test('a node away longer than Redis keeps the log: its copy is moved aside and copied anew', async (t) => {
    const late = node('d')
    t.equal(await late.stop(), 0)
    for (let index = 22; index <= 26; index++)
      t.equal((await client.call('PUT', `/price/SKU-${index}/RETAIL`, { price: { sales: `${index}.25` } })).status, 202)
    const sequence = Number((await client.get('/price/SKU-26/RETAIL')).headers.get('x-sequence'))
    // The standby follows the stream live and must have read these commits before they are trimmed
    // (a loaded machine can keep it behind): the gap under test is node d's, not the standby's.
    await eventually(
      async () => {
        const answer = await standby.request('GET', '/t/shop/price/SKU-26/RETAIL', {
          token: client.token,
          headers: { 'x-min-sequence': String(sequence) },
        })
        return answer.status === 200 && answer.headers.get('x-pricing-node') === null ? answer : undefined
      },
      5_000,
      'the standby at the sequence before the trim',
    )
    // Redis keeps only the newest commit now: the log no longer goes on from the copy's sequence.
    const trimmed = spawnSync('redis-cli', ['-p', String(redis.port), 'XTRIM', 'pricing:log:shop', 'MAXLEN', '1'], {
      encoding: 'utf8',
    })
    t.ok(Number(trimmed.stdout) >= 5, `the stream trimmed (${trimmed.stdout.trim()} commits dropped)`)
    await late.start(true)
    const moved =
      /"verdict":"gap"[^\n]*"msg":"cluster: this node's copy of the tenant does not fit the home's log; moved aside, a new copy follows"/
    await until(
      () => moved.test(late.stdout) && copiedLine.test(late.stdout),
      5_000,
      'the copy moved aside and fetched anew',
    )
    t.ok(
      readdirSync(path.join(late.dataDir, 'tenants')).some((name) => name.startsWith('shop.gap-')),
      'the old copy kept beside the new one',
    )
    const served = await eventually(
      async () => {
        const answer = await late.request('GET', '/t/shop/price/SKU-26/RETAIL', {
          token: client.token,
          headers: { 'x-min-sequence': String(sequence) },
        })
        return answer.status === 200 && answer.headers.get('x-pricing-node') === null ? answer : undefined
      },
      5_000,
      'the new copy at the sequence',
    )
    t.equal(served.body.price.sales, 26.25, 'a write made while the node was away')
    acknowledged = sequence
  })

  await t.test('a tenant of a region no node serves is refused with 503', async (t) => {
    t.equal(
      (
        await node('a').request('POST', '/admin/tenants', {
          body: { slug: 'moon', tier: 'standard', region: 'moon' },
          token: adminToken,
        })
      ).status,
      201,
    )
    const key = await node('a').request('POST', '/admin/tenants/moon/keys', { body: { name: 'k' }, token: adminToken })
    const moon = new TenantClient(node('a'), 'moon', key.body.client_id, key.body.client_secret)
    await moon.refreshToken()
    const answer = await moon.get('/pricelist')
    t.equal(answer.status, 503)
    t.equal(answer.body.code, 'region_unavailable')
    t.match(answer.body.message, 'No node of this deployment serves region moon')
    t.ok(Number(answer.headers.get('retry-after')) >= 1)
  })

  await t.test(
    'the home killed: writes answer 503 until the standby takes over; nothing acknowledged is lost',
    async (t) => {
      await home.kill()
      const killed = Date.now()
      const refused = await standby.request('PUT', '/t/shop/price/SKU-99/RETAIL', {
        body: { price: { sales: 1 } },
        token: client.token,
      })
      t.equal(refused.status, 503, 'a write right after the kill is refused, not lost')
      t.equal(refused.body.code, 'region_unavailable')
      await until(
        () => homeLine('eu').test(standby.stdout) || homeLine('eu').test(node('d').stdout),
        leaseMs * 5,
        'a standby as home',
      )
      t.pass(`a standby took over ${Date.now() - killed} ms after the kill`)
      const written = await eventually(
        async () => {
          const answer = await standby.request('PUT', '/t/shop/price/SKU-99/RETAIL', {
            body: { price: { sales: '99.5' } },
            token: client.token,
          })
          if (answer.status === 503)
            t.ok(Number(answer.headers.get('retry-after')) >= 1, 'a refused write says when to retry')
          return answer.status === 202 ? answer : undefined
        },
        leaseMs * 5,
        'a write accepted by the new home',
      )
      t.ok(Number(written.headers.get('x-sequence')) > acknowledged, 'the new home continues the sequence')
      for (let index = 1; index <= 20; index++) {
        const answer = await standby.request('GET', `/t/shop/price/SKU-${index}/RETAIL`, {
          token: client.token,
          headers: { 'x-min-sequence': String(acknowledged) },
        })
        t.equal(answer.body?.price?.sales, Number(`${index}.0005`), `acknowledged price ${index} is there`)
      }
      const later: [string, number][] = [
        ['SKU-21', 21.5],
        ['SKU-22', 22.25],
        ['SKU-23', 23.25],
        ['SKU-24', 24.25],
        ['SKU-25', 25.25],
        ['SKU-26', 26.25],
      ]
      for (const [sku, sales] of later) {
        const answer = await standby.request('GET', `/t/shop/price/${sku}/RETAIL`, {
          token: client.token,
          headers: { 'x-min-sequence': String(acknowledged) },
        })
        t.equal(answer.body?.price?.sales, sales, `acknowledged ${sku} is there`)
      }
    },
  )
}
