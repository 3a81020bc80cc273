/**
 * The cluster on this machine (issue 10): a home node and, later, two replicas of its region on a
 * real Redis (Debian's redis-server on a free loopback port).
 *
 * 0. Ingest on the home: the generator's price phase (every commit published to Redis before
 *    its answer), versions per second and server CPU per version.
 * 1. Reads on one node: the GET scenario (1,000 distinct URLs) against the home alone.
 * 2. Reads on three: the same GETs split over the home and two replicas (the same connections in
 *    all), each node's CPU read around the run: requests per second, CPU per request, the ratio to
 *    one node. On a 2-core machine three nodes and the load generators share two cores, so the
 *    ratio says what replicas cost here, not what they gain on machines of their own.
 * 3. Replica lag under ingest: price batches of 1,000 at 10 a second (10,000 versions/s) to the
 *    home for 10 s; each replica reports the publish-to-apply time of the commits it applied
 *    (`pricing_replica_apply_lag_seconds`): median, p99, maximum.
 * 4. Failover: the home killed with SIGKILL; the time until one of the replicas acknowledges a
 *    write (it took the lease and read the stream to its end), against the lease TTL (2 s here).
 * @module
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { cpuTicks } from './proc.js'
import { loadResult, scenarioDefinitions, type LoadParameters, type LoadResult } from './scenarios.js'
import { exited, PricingServer, provisionTenant, request, TenantClient } from './server-process.js'
import { generate, type IngestResult } from './generate.js'
import { pricelists, skuCode, type WorkloadShape } from './workload.js'
import autocannon, { type Request } from 'autocannon'

export interface ClusterBenchResult {
  /** Why the cluster was not measured (no redis-server), else null. */
  readonly skipped: string | null
  readonly skuCount: number
  /** The generator's price phase on the home: every commit published to Redis before its answer. */
  readonly homeIngest: IngestResult | null
  readonly oneNode: LoadResult | null
  readonly threeNodes: LoadResult | null
  /** threeNodes / oneNode requests per second. */
  readonly readRatio: number | null
  readonly ingest: {
    readonly versionsPerSecond: number
    readonly commits: number
    readonly lagP50Ms: number
    readonly lagP99Ms: number
    readonly lagMaxMs: number
  } | null
  /** The home killed: milliseconds until a replica acknowledged a write; absent in earlier results. */
  readonly failover?: { readonly leaseTtlMs: number; readonly takeoverMs: number } | null
}

const region = 'local'
const ingestRatePerS = 10_000
const ingestBatch = 1_000
const ingestSeconds = 10
const leaseTtlMs = 2_000

function redisServer(): string | null {
  for (const candidate of [
    process.env['PRICING_REDIS_SERVER'],
    '/usr/bin/redis-server',
    '/usr/local/bin/redis-server',
  ]) {
    if (candidate !== undefined && candidate !== '' && existsSync(candidate)) return candidate
  }
  const which = spawnSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' })
  return which.status === 0 ? which.stdout.trim() : null
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as net.AddressInfo).port
      server.close(() => resolve(port))
    })
  })
}

async function startRedis(executable: string): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort()
  const child = spawn(executable, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: 'ignore',
  })
  const deadline = Date.now() + 10_000
  for (;;) {
    const pong = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => socket.write('PING\r\n'))
      socket.once('data', (chunk) => {
        socket.destroy()
        resolve(chunk.toString().startsWith('+PONG'))
      })
      socket.once('error', () => resolve(false))
    })
    if (pong) return { child, url: `redis://127.0.0.1:${port}` }
    if (Date.now() > deadline) throw new Error('redis-server did not answer')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

async function until(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs = 60_000,
  explain: () => Promise<string> = async () => '',
): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`cluster bench: ${what} not within ${timeoutMs} ms${await explain()}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** GETs against several nodes at once, the connections split between them; CPU summed over the nodes. */
async function loadAcross(
  nodes: readonly PricingServer[],
  requests: Request[],
  headers: Record<string, string>,
  load: LoadParameters,
): Promise<LoadResult> {
  const per = Math.max(1, Math.round(load.connections / nodes.length))
  const options = (node: PricingServer) => ({
    url: node.url,
    connections: per,
    pipelining: 1,
    timeout: 30,
    headers,
    requests,
  })
  if (load.warmupS > 0) await Promise.all(nodes.map((node) => autocannon({ ...options(node), duration: load.warmupS })))
  const ticks = nodes.map((node) => cpuTicks(node.pid))
  const started = performance.now()
  const results = await Promise.all(nodes.map((node) => autocannon({ ...options(node), duration: load.durationS })))
  const elapsedS = (performance.now() - started) / 1000
  const cpuS = nodes.reduce((sum, node, index) => sum + (cpuTicks(node.pid) - ticks[index]!), 0) / load.clockTicks
  // One result of all: counts added, latency the worst node's.
  const merged = { ...results[0]! }
  merged['2xx'] = results.reduce((sum, result) => sum + result['2xx'], 0)
  merged.non2xx = results.reduce((sum, result) => sum + result.non2xx, 0)
  merged.errors = results.reduce((sum, result) => sum + result.errors, 0)
  merged.timeouts = results.reduce((sum, result) => sum + result.timeouts, 0)
  merged.latency = {
    ...results[0]!.latency,
    p50: Math.max(...results.map((result) => result.latency.p50)),
    p99: Math.max(...results.map((result) => result.latency.p99)),
    max: Math.max(...results.map((result) => result.latency.max)),
  }
  return loadResult(merged, elapsedS, cpuS)
}

function metricValue(text: string, name: string, labels: string): number {
  const escaped = labels.replace(/[{}".]/g, (character) => `\\${character}`)
  const match = new RegExp(`^${name}${escaped} ([0-9.eE+-]+)$`, 'm').exec(text)
  return match === null ? Number.NaN : Number(match[1])
}

export async function runClusterBench(options: {
  readonly entry: string
  readonly shape: WorkloadShape
  readonly load: LoadParameters
  readonly progress: (message: string) => void
}): Promise<ClusterBenchResult> {
  const executable = redisServer()
  const shape = { ...options.shape, skuCount: Math.min(options.shape.skuCount, 20_000) }
  if (executable === null)
    return {
      skipped: 'no redis-server (apt-get install -y redis-server)',
      skuCount: shape.skuCount,
      homeIngest: null,
      oneNode: null,
      threeNodes: null,
      readRatio: null,
      ingest: null,
    }
  const redis = await startRedis(executable)
  const workDir = mkdtempSync(path.join(os.tmpdir(), 'pricing-bench-cluster-'))
  const node = (id: string) =>
    new PricingServer({
      entry: options.entry,
      dataDir: path.join(workDir, id),
      adminToken: 'bench-admin-token-0123456789abcdef',
      env: {
        PRICING_REDIS_URL: redis.url,
        PRICING_NODE_ID: id,
        PRICING_REGION: region,
        PRICING_PUBLIC_URL: 'http://pricing.bench',
        PRICING_LEASE_TTL_MS: String(leaseTtlMs),
        PRICING_BACKUP_INTERVAL_S: '0',
      },
    })
  const nodes: PricingServer[] = []
  try {
    const home = node('home')
    nodes.push(home)
    await home.start()
    await home.waitReady()
    await until(
      'the home lease',
      async () =>
        JSON.parse((await request(`${home.url}/readyz`, 'GET')).text).cluster?.home_regions?.includes(region) === true,
    )
    const client = await provisionTenant(home, 'cluster')
    options.progress(`cluster: ${shape.skuCount.toLocaleString('en')} SKUs on the home node`)
    const generated = await generate(client, shape, () => cpuTicks(home.pid) / options.load.clockTicks)
    const gets = scenarioDefinitions('cluster', shape).find((definition) => definition.name === 'get')!.requests
    const headers = { authorization: `Bearer ${await client.refreshToken()}` }
    options.progress('cluster: GETs on the home alone')
    const oneNode = await loadAcross([home], gets, headers, options.load)
    for (const id of ['replica-1', 'replica-2']) {
      const replica = node(id)
      nodes.push(replica)
      await replica.start()
      await replica.waitReady()
      // Ready as a replica: it answers a GET itself, not through the home.
      await until(`${id} serving reads`, async () => {
        const answer = await fetch(`${replica.url}${gets[0]!.path}`, { headers })
        await answer.arrayBuffer()
        return answer.status === 200 && answer.headers.get('x-pricing-node') === null
      })
    }
    options.progress('cluster: GETs on the home and two replicas')
    const threeNodes = await loadAcross(nodes, gets, headers, options.load)
    options.progress(
      `cluster: ${ingestRatePerS.toLocaleString('en')} versions/s to the home for ${ingestSeconds} s; replica lag`,
    )
    const pricelist = pricelists[0]!.code
    const started = performance.now()
    let written = 0
    const inFlight: Promise<void>[] = []
    const failures: Error[] = []
    for (let batch = 0; batch < (ingestRatePerS / ingestBatch) * ingestSeconds; batch++) {
      const due = started + (batch * ingestBatch * 1000) / ingestRatePerS
      const wait = due - performance.now()
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
      const items = Array.from({ length: ingestBatch }, (_, index) => ({
        sku: skuCode((batch * ingestBatch + index) % shape.skuCount),
        pricelist,
        price: `${10 + batch}.${String(index).padStart(4, '0')}`,
      }))
      // A refused batch is thrown after the loop: a rejection left waiting in the queue would end
      // the process before `finally` stops the nodes and Redis.
      inFlight.push(
        client.expect(202, 'POST', '/price/batch', items).then(
          () => void (written += ingestBatch),
          (error: Error) => void failures.push(error),
        ),
      )
      if (inFlight.length >= 8) await inFlight.shift()
      if (failures.length > 0) break
    }
    await Promise.all(inFlight)
    if (failures.length > 0) throw failures[0]!
    const elapsedS = (performance.now() - started) / 1000
    const sequence = Number((await client.call('GET', '/pricelist')).headers.get('x-sequence'))
    const lags = { p50: 0, p99: 0, max: 0, commits: 0 }
    for (const replica of nodes.slice(1)) {
      let last = ''
      await until(
        `${replica.options.dataDir.split(path.sep).at(-1)} at the home's sequence ${sequence}`,
        async () => {
          const answer = await fetch(`${replica.url}/t/cluster/pricelist`, {
            headers: { ...headers, 'x-min-sequence': String(sequence) },
          })
          await answer.arrayBuffer()
          last = `${answer.status}, X-Sequence ${answer.headers.get('x-sequence')}, X-Pricing-Node ${answer.headers.get('x-pricing-node')}`
          return answer.headers.get('x-pricing-node') === null
        },
        60_000,
        // What the replica and the home say about themselves, and what they logged, for whoever reads the failure.
        async () => {
          const ready = await request(`${replica.url}/readyz`, 'GET').catch((error: Error) => ({ text: error.message }))
          const homeReady = await request(`${home.url}/readyz`, 'GET').catch((error: Error) => ({
            text: error.message,
          }))
          const logged = (server: PricingServer) =>
            server.problems.map((line) => line.slice(0, 600)).join('\n') || '(none)'
          return `\nlast answer: ${last}\nits /readyz: ${ready.text}\nits warnings and errors:\n${logged(replica)}\nthe home's /readyz: ${homeReady.text}\nthe home's warnings and errors:\n${logged(home)}`
        },
      )
      const text = (await request(`${replica.url}/metrics`, 'GET')).text
      lags.p50 = Math.max(lags.p50, metricValue(text, 'pricing_replica_apply_lag_seconds', '{quantile="0.5"}') * 1000)
      lags.p99 = Math.max(lags.p99, metricValue(text, 'pricing_replica_apply_lag_seconds', '{quantile="0.99"}') * 1000)
      lags.max = Math.max(lags.max, metricValue(text, 'pricing_replica_apply_lag_seconds', '{quantile="1"}') * 1000)
      lags.commits = Math.max(lags.commits, metricValue(text, 'pricing_replica_applied_last_minute', ''))
    }
    // Nothing left behind: a home that could not publish a commit is degraded (a bench run found one).
    const homeCluster = JSON.parse((await request(`${home.url}/readyz`, 'GET')).text).cluster as {
      degraded: boolean
      reasons: string[]
    }
    if (homeCluster.degraded)
      throw new Error(
        `cluster bench: the home is degraded after the ingest: ${homeCluster.reasons.join('; ')}\n${home.problems.join('\n')}`,
      )
    options.progress('cluster: the home killed (SIGKILL); time until a replica acknowledges a write')
    const killed = performance.now()
    await home.kill()
    const write = [{ sku: skuCode(0), pricelist, price: '1.2345' }]
    const replicaClients = nodes.slice(1).map((replica) =>
      Object.assign(new TenantClient(replica, client.slug, client.clientId, client.clientSecret), {
        token: client.token,
      }),
    )
    await until(
      'a replica acknowledging writes after the home was killed',
      async () => {
        for (const replicaClient of replicaClients)
          if ((await replicaClient.call('POST', '/price/batch', write)).status === 202) return true
        return false
      },
      leaseTtlMs * 10,
    )
    const takeoverMs = performance.now() - killed
    return {
      skipped: null,
      skuCount: shape.skuCount,
      homeIngest: generated.ingest,
      oneNode,
      threeNodes,
      readRatio: threeNodes.requestsPerSecond / oneNode.requestsPerSecond,
      ingest: {
        versionsPerSecond: written / elapsedS,
        commits: lags.commits,
        lagP50Ms: lags.p50,
        lagP99Ms: lags.p99,
        lagMaxMs: lags.max,
      },
      failover: { leaseTtlMs, takeoverMs },
    }
  } finally {
    for (const server of nodes) await server.stop().catch(() => undefined)
    redis.child.kill('SIGKILL')
    await exited(redis.child)
    rmSync(workDir, { recursive: true, force: true })
  }
}
