/**
 * `npm run bench:diff-beside`: does a whole-tenant POST /price/diff leave the main thread free for
 * single reads? The target: the p99 of single GETs while a client pages through a diff of
 * 1,000,000 (SKU, pricelist) items is within 3x of their p99 alone. This starts the compiled
 * server with its shipped defaults (as `npm start` has them, but the FX feed, which would fetch
 * from the internet), builds bench:diff's tenant through the API (bench/diff-workload.ts: 100,000
 * SKUs x 10 pricelists, the same tenant as the diff's 5 s target and the full bench, so that the
 * figures compare; scheduled prices, a parent, a VAT rate change and an FX publication between the
 * two instants), then measures GETs of many distinct (SKU, pricelist) pairs at a fixed moderate
 * rate alone for --seconds, and the same GETs for as long as a client (a process of its own:
 * bench/diff-walk-process.ts) walks the whole diff --walks times, one walk after the other. It
 * prints both p50/p99, their ratio, each walk's wall time, the main thread's share of the
 * server's CPU and the event loop's delay in each window, and the main thread's CPU per page: what
 * a page blocks the main thread for, apart from the machine's other load.
 * Flags: --skus N (100,000), --limit L (2,500: the diff's page size), --seconds S (10: the GETs
 * alone), --rate R (200 GET/s), --connections N (16), --distinct N (20,000 GET URLs), --walks N
 * (3), --currency C (EUR), --server DIR (another compiled tree's server, for a before figure).
 * @module
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import autocannon, { type Request } from 'autocannon'
import { walkDiffInProcess } from './diff-walk-process.js'
import { buildDiffTenant, describeWalk, type DiffWalkOptions, type Walk } from './diff-workload.js'
import { flagValue } from './flags.js'
import { clockTicksPerSecond, cpuTicks, threadTicks } from './proc.js'
import { loadResult, type LoadResult } from './scenarios.js'
import { PricingServer, provisionTenant, request } from './server-process.js'
import { pricelists, seededRandom, skuCode, taxAreaCode } from './workload.js'

const buildRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const argv = process.argv.slice(2)
const flag = (name: string): string | undefined => flagValue(argv, name)
const skuCount = Number(flag('skus') ?? 100_000)
const limit = Number(flag('limit') ?? 2_500)
const seconds = Number(flag('seconds') ?? 10)
const rate = Number(flag('rate') ?? 200)
const connections = Number(flag('connections') ?? 16)
const currency = flag('currency') ?? 'EUR'
/** Whole walks one after the other while the GETs run: one takes a few seconds, too few GETs for a p99. */
const walkCount = Number(flag('walks') ?? 3)
const serverRoot = path.resolve(flag('server') ?? buildRoot)
const clockTicks = clockTicksPerSecond()
const slug = 'bench'
/** Distinct GET URLs, handed out in turn: enough that the answer cache does not serve them all. */
const distinctGetCount = Number(flag('distinct') ?? 20_000)
/** The one setting changed from the shipped defaults: no exchange-rate fetch from the internet. */
const changedSettings = { PRICING_FX_FEED_URL: '' }

function progress(message: string): void {
  process.stderr.write(`[diff-beside ${new Date().toISOString().slice(11, 19)}] ${message}\n`)
}

/**
 * Single GETs of random (SKU, pricelist) pairs, at the moment of the request, handed out in turn by
 * one request's `setupRequest`: autocannon builds every entry of a `requests` array for each
 * connection, and 20,000 of them kept the bench's own event loop so busy that it measured itself.
 */
function getRequests(): Request[] {
  const random = seededRandom(20_261_128)
  const paths = Array.from({ length: distinctGetCount }, () => {
    const sku = skuCode(Math.floor(random() * skuCount))
    const pricelist = pricelists[Math.floor(random() * pricelists.length)]!.code
    return `/t/${slug}/price/${sku}/${pricelist}/${taxAreaCode}`
  })
  let next = 0
  return [
    { method: 'GET', path: paths[0], setupRequest: (built) => ({ ...built, path: paths[next++ % paths.length] }) },
  ]
}

/** The server's event loop delay since the last scrape of /metrics (which resets it), in ms. */
async function loopDelay(): Promise<{ maxMs: number; p99Ms: number }> {
  const text = (await request(`${server.url}/metrics`, 'GET')).text
  const seconds = (name: string): number =>
    Number(new RegExp(`^${name} ([0-9.e+-]+)$`, 'm').exec(text)?.[1] ?? Number.NaN)
  return {
    maxMs: seconds('nodejs_eventloop_lag_max_seconds') * 1000,
    p99Ms: seconds('nodejs_eventloop_lag_p99_seconds') * 1000,
  }
}

interface Window {
  readonly load: LoadResult
  /** The main thread's share of the server's CPU over the window. */
  readonly mainShare: number
  /** The main thread's CPU seconds over the window. */
  readonly mainCpuS: number
  readonly elapsedS: number
  /** The event loop's delay over the window (prom-client's monitor, reset by each /metrics scrape): max and p99, ms. */
  readonly loopDelayMaxMs: number
  readonly loopDelayP99Ms: number
  readonly walks: Walk[]
}

/**
 * GETs at `rate` from now until `during` resolves (or for `seconds` without it), with the server's
 * CPU per thread around them.
 */
async function window(token: string, during: (() => Promise<Walk[]>) | null): Promise<Window> {
  // A scrape resets the event loop delay's histogram: the next one covers this window alone.
  await loopDelay()
  const threadsBefore = threadTicks(server.pid)
  const cpuBefore = cpuTicks(server.pid)
  const started = performance.now()
  const instance = autocannon({
    url: server.url,
    connections,
    pipelining: 1,
    timeout: 30,
    headers: { authorization: `Bearer ${token}` },
    requests,
    overallRate: rate,
    duration: during === null ? seconds : 600,
  })
  const walks = during === null ? [] : await during()
  if (during !== null) instance.stop()
  const result = await instance
  const elapsedS = (performance.now() - started) / 1000
  const load = loadResult(result, elapsedS, (cpuTicks(server.pid) - cpuBefore) / clockTicks)
  if (load.non2xx + load.errors > 0) throw new Error(`${load.non2xx + load.errors} GETs failed`)
  const threadsAfter = threadTicks(server.pid)
  let main = 0
  let total = 0
  for (const [name, ticks] of threadsAfter) {
    const spent = ticks - (threadsBefore.get(name) ?? 0)
    total += spent
    if (name === 'main') main = spent
  }
  const delay = await loopDelay()
  return {
    load,
    mainShare: total === 0 ? 0 : main / total,
    mainCpuS: main / clockTicks,
    elapsedS,
    loopDelayMaxMs: delay.maxMs,
    loopDelayP99Ms: delay.p99Ms,
    walks,
  }
}

function describeWindow(name: string, measured: Window): string {
  const load = measured.load
  return (
    `${name.padEnd(18)} GET p50 ${load.latencyP50Ms.toFixed(1)} ms, p99 ${load.latencyP99Ms.toFixed(1)} ms, ` +
    `max ${load.latencyMaxMs.toFixed(0)} ms; ${Math.round(load.requestsPerSecond)} req/s, ` +
    `${load.requestCount.toLocaleString('en-US')} GETs; server ${load.cpuCores.toFixed(2)} cores, ` +
    `main thread ${(100 * measured.mainShare).toFixed(0)}%; event loop delay p99 ` +
    `${measured.loopDelayP99Ms.toFixed(1)} ms, max ${measured.loopDelayMaxMs.toFixed(1)} ms\n`
  )
}

const requests = getRequests()
const workDir = mkdtempSync(path.join(os.tmpdir(), 'pricing-diff-beside-'))
const server = new PricingServer({
  entry: path.join(serverRoot, 'server', 'start.js'),
  dataDir: path.join(workDir, 'data'),
  adminToken: randomBytes(16).toString('hex'),
  env: changedSettings,
  shippedDefaults: true,
})
try {
  await server.start()
  await server.waitReady()
  const client = await provisionTenant(server, slug)
  const nowMs = Date.now()
  progress(`building ${skuCount.toLocaleString('en-US')} SKUs x ${pricelists.length} pricelists through the API`)
  const built = performance.now()
  const { from, to } = await buildDiffTenant(client, { skuCount, nowMs, serverCpuSeconds: () => 0 })
  const buildS = (performance.now() - built) / 1000
  const token = await client.refreshToken()
  const options: DiffWalkOptions = { currency, from, to, limit }
  const walk = () => walkDiffInProcess({ baseUrl: client.baseUrl, token, options })
  progress('warming up: a diff walk and GETs')
  await walk()
  await autocannon({
    url: server.url,
    connections,
    requests,
    overallRate: rate,
    duration: 2,
    headers: {
      authorization: `Bearer ${token}`,
    },
  })
  progress(`GETs alone for ${seconds} s`)
  const alone = await window(token, null)
  progress(`GETs beside ${walkCount} whole diff walks`)
  const beside = await window(token, async () => {
    const walks: Walk[] = []
    for (let index = 0; index < walkCount; index++) walks.push(await walk())
    return walks
  })
  const items = skuCount * pricelists.length
  process.stdout.write(
    `server ${path.relative(process.cwd(), serverRoot) || '.'} with the shipped defaults but ` +
      `${Object.keys(changedSettings).join(', ')} (no FX fetch); ${os.availableParallelism()} cores, load average ` +
      `${os.loadavg()[0]!.toFixed(1)}\n` +
      `tenant: ${skuCount.toLocaleString('en-US')} SKUs x ${pricelists.length} pricelists = ` +
      `${items.toLocaleString('en-US')} items, built in ${buildS.toFixed(0)} s; diff pages of ${limit} SKUs in ` +
      `${currency}; GETs of ${distinctGetCount.toLocaleString('en-US')} distinct pairs at ${rate}/s over ` +
      `${connections} connections\n`,
  )
  process.stdout.write(describeWindow('alone', alone))
  process.stdout.write(describeWindow('beside the diff', beside))
  for (const [index, done] of beside.walks.entries())
    process.stdout.write(describeWalk(`diff walk ${index + 1}/${beside.walks.length}`, done))
  // The main thread's CPU the pages took: beside's, less what the GETs took alone at the same rate.
  const pages = beside.walks.reduce((sum, done) => sum + done.pages, 0)
  const pagesMainS = beside.mainCpuS - (alone.mainCpuS * beside.elapsedS) / alone.elapsedS
  process.stdout.write(
    `main thread CPU per diff page: ${((1000 * pagesMainS) / pages).toFixed(1)} ms (${pages} pages)\n`,
  )
  const ratio = beside.load.latencyP99Ms / alone.load.latencyP99Ms
  process.stdout.write(`p99 beside / alone: ${ratio.toFixed(2)}x (target at most 3x)\n`)
} finally {
  await server.stop()
  rmSync(workDir, { recursive: true, force: true })
}
