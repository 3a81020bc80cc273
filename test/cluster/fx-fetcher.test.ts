/**
 * One FX fetcher for a cluster of three nodes on a real Redis (issue 10): only the node holding the
 * `fx-fetcher` lease fetches the feed (a local feed server serving the ECB fixture counts the
 * requests), the others take the feed it shares and apply it to their tenants (EUR/GBP from the
 * fixture on a tenant of another node), and when the fetcher is killed with SIGKILL another node
 * takes over within two lease intervals and fetches.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { sharedFixturesDir } from '../helpers/fixtures.js'
import { redisForTest } from '../helpers/redis.js'
import { until } from '../helpers/until.js'
import { startCluster } from '../helpers/cluster.js'
import type { TestServer } from '../helpers/server.js'

const leaseMs = 600
const intervalMs = 400

const fetchedLine = /"msg":"FX feed fetched"/g
const count = (text: string, pattern: RegExp): number => text.match(new RegExp(pattern.source, 'g'))?.length ?? 0

const redis = await redisForTest(t)
if (redis !== null) {
  let requests = 0
  const feed = http.createServer((_request, response) => {
    requests++
    response
      .writeHead(200, { 'content-type': 'text/xml' })
      .end(readFileSync(path.join(sharedFixturesDir, 'ecb/eurofxref-daily.xml')))
  })
  await new Promise<void>((resolve) => feed.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => feed.close(() => resolve())))
  const feedUrl = `http://127.0.0.1:${(feed.address() as AddressInfo).port}/daily`

  const env = {
    PRICING_FX_FEED_URL: feedUrl,
    PRICING_FX_FETCH_DELAY_MS: '0',
    PRICING_FX_FETCH_INTERVAL_MS: String(intervalMs),
  }
  const nodes = [
    ...(
      await startCluster(
        t,
        redis,
        ['a', 'b', 'c'].map((name) => ({ name, region: 'local', env })),
        leaseMs,
      )
    ).values(),
  ]
  const fetcherOf = (group: TestServer[]) =>
    group.filter((node) => node.stdout.includes('"msg":"cluster: this node fetches the FX feed"'))

  await t.test('only the lease holder fetches; the others apply what it shares', async (t) => {
    await until(
      () => fetcherOf(nodes).length === 1 && count(fetcherOf(nodes)[0]!.stdout, fetchedLine) >= 1,
      5_000,
      'a fetcher that fetched',
    )
    const fetcher = fetcherOf(nodes)[0]!
    const before = requests
    await new Promise((resolve) => setTimeout(resolve, 2_000))
    const during = requests - before
    t.ok(
      during >= 2 && during <= 7,
      `a fetch every ${intervalMs} ms interval or so in 2 s, by one node (${during} requests)`,
    )
    t.equal(fetcherOf(nodes).length, 1, 'one fetcher throughout')
    for (const node of nodes.filter((candidate) => candidate !== fetcher)) {
      t.equal(count(node.stdout, fetchedLine), 0, 'another node never fetched')
      t.ok(node.stdout.includes('"msg":"FX feed from the cluster\'s fetcher"'), 'and applied the shared feed')
    }
    // A tenant made on another node starts with the shared rates (fx.rate.auto.update is on by default).
    const follower = nodes.find((candidate) => candidate !== fetcher)!
    const client = await follower.tenant('fx-follower')
    const gbp = await client.get('/fx/rate?base=EUR&quote=GBP')
    t.equal(gbp.status, 200)
    t.equal(gbp.body.rate, 0.8477, "the fixture's EUR/GBP, fetched by another node")
  })

  await t.test('the fetcher killed: another node takes over within two lease intervals and fetches', async (t) => {
    const fetcher = fetcherOf(nodes)[0]!
    const rest = nodes.filter((node) => node !== fetcher)
    await fetcher.kill()
    const killed = Date.now()
    const took = await until(() => fetcherOf(rest).length === 1, leaseMs * 3, 'a new fetcher')
    t.ok(took <= leaseMs * 2, `a new fetcher ${took} ms after the kill (lease ${leaseMs} ms)`)
    const successor = fetcherOf(rest)[0]!
    const fetchedBefore = count(successor.stdout, fetchedLine)
    await until(
      () => count(successor.stdout, fetchedLine) > fetchedBefore,
      intervalMs * 3,
      'a fetch by the new fetcher',
    )
    t.pass(`it fetched ${Date.now() - killed} ms after the kill`)
    t.equal(fetcherOf(rest).length, 1, 'still one fetcher')
    nodes.splice(nodes.indexOf(fetcher), 1)
    await fetcher.dispose()
  })
}
