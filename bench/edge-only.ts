/**
 * `npm run bench:edge`: the HTTP edge alone, quickly. The full bench needs a large tenant and many
 * minutes; the cost of the HTTP layer (framing checks, auth, routing, metrics, the answer's
 * writing) does not depend on the tenant's size, so this starts the compiled server with its
 * shipped defaults on a small tenant made through the API, captures its answers for the bare uWS
 * endpoint (bench/bare-server.ts), and runs the GET and 100-SKU query scenarios against both with
 * autocannon: server CPU per request, the ratio to the bare endpoint, req/s and p99.
 * `--server DIR` measures another build (e.g. the base commit compiled into its own folder) with
 * this same bench, so before and after are one command apart; `--against DIR` runs a second build
 * beside the first, on a copy of the data, each round measuring one then the other: the ratio of
 * each round's pair, whose two runs saw the same neighbours, is the steadiest before/after figure.
 * Flags: --skus N (5,000), --seconds S (5), --warmup S (2), --rounds N (2: the median is kept),
 * --connections N (64), --rate R (none: as fast as answered), --scenarios get,query-100, --server
 * DIR (this build), --cpu-prof (profile the server's main thread over the measured runs), --top N
 * (20), --data DIR (kept and reused).
 * CPU per request falls as the request rate rises (more requests per wake-up of the event loop),
 * and on a shared machine the rate reached varies from run to run: `--rate` holds both sides to
 * the same rate, which makes before and after comparable when neighbours load the machine.
 * Non-goal: the engine's cost (bench/engine.ts) or the answer cache's (bench/run.ts).
 * @module
 */
import { randomBytes } from 'node:crypto'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import autocannon, { type Request } from 'autocannon'
import type { BareAnswers, CapturedAnswer } from './bare-server.js'
import { formatSelfTimes, selfTimes, type CpuProfile } from './cpu-profile.js'
import { generate } from './generate.js'
import { clockTicksPerSecond, cpuTicks, threadTicks } from './proc.js'
import { loadResult, type LoadResult } from './scenarios.js'
import { exited, PricingServer, provisionTenant, request, spawnListening, TenantClient } from './server-process.js'
import {
  currencyCode,
  defaultShape,
  distinctSkus,
  pricelists,
  seededRandom,
  skuCode,
  taxAreaCode,
  type WorkloadShape,
} from './workload.js'
import { flagValue } from './flags.js'

const buildRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const argv = process.argv.slice(2)
const flag = (name: string): string | undefined => flagValue(argv, name)
const shape: WorkloadShape = { ...defaultShape, skuCount: Number(flag('skus') ?? 5_000) }
const seconds = Number(flag('seconds') ?? 5)
const warmupS = Number(flag('warmup') ?? 2)
const rounds = Number(flag('rounds') ?? 2)
const connections = Number(flag('connections') ?? 64)
const rate = flag('rate') === undefined ? undefined : Number(flag('rate'))
const wanted = (flag('scenarios') ?? 'get,query-100').split(',')
const serverRoot = path.resolve(flag('server') ?? buildRoot)
const againstRoot = flag('against') === undefined ? null : path.resolve(flag('against')!)
const profiling = argv.includes('--cpu-prof')
const top = Number(flag('top') ?? 20)
const slug = 'edge'
const clockTicks = clockTicksPerSecond()

interface EdgeScenario {
  readonly name: string
  readonly requests: Request[]
}

/** Distinct GET URLs and query bodies, as the full bench's scenarios (bench/scenarios.ts) make them. */
function scenarios(): EdgeScenario[] {
  const random = seededRandom(shape.seed + 1)
  const gets: Request[] = Array.from({ length: 1_000 }, () => {
    const sku = skuCode(Math.floor(random() * shape.skuCount))
    const pricelist = pricelists[Math.floor(random() * pricelists.length)]!.code
    return { method: 'GET', path: `/t/${slug}/price/${sku}/${pricelist}/${taxAreaCode}` }
  })
  const bodies = Array.from({ length: 4_096 }, () =>
    JSON.stringify({
      currency_code: currencyCode,
      pricelist_filter: {},
      skus: distinctSkus(random, shape.skuCount, 100),
      tax_area: taxAreaCode,
    }),
  )
  let next = 0
  const query: Request = {
    method: 'POST',
    path: `/t/${slug}/price/query`,
    headers: { 'content-type': 'application/json' },
    body: bodies[0],
    setupRequest: (built) => ({ ...built, body: bodies[next++ % bodies.length] }),
  }
  return [
    { name: 'get', requests: gets },
    { name: 'query-100', requests: [query] },
  ].filter((scenario) => wanted.includes(scenario.name))
}

function progress(message: string): void {
  process.stderr.write(`[edge ${new Date().toISOString().slice(11, 19)}] ${message}\n`)
}

/** The real server's answer to a scenario's first request: the bare endpoint sends the same bytes. */
async function capture(server: PricingServer, token: string, scenario: EdgeScenario): Promise<CapturedAnswer> {
  const first = scenario.requests[0]!
  const answer = await request(`${server.url}${first.path}`, first.method ?? 'GET', { token, body: first.body })
  if (answer.status !== 200)
    throw new Error(`${scenario.name}: the server answered ${answer.status} ${answer.text.slice(0, 300)}`)
  const headers: Record<string, string> = {}
  for (const name of ['content-type', 'cache-control', 'etag', 'x-price-engine']) {
    const value = answer.headers.get(name)
    if (value !== null) headers[name] = value
  }
  return { body: answer.text, headers }
}

/** Per-thread ticks (bench/proc.ts) as the main thread's and all the others' together. */
function mainAndOthers(ticks: Map<string, number>): Map<string, number> {
  let others = 0
  for (const [name, count] of ticks) if (name !== 'main') others += count
  return new Map([
    ['main', ticks.get('main') ?? 0],
    ['others', others],
  ])
}

/** utime and stime of the whole process `pid`, in clock ticks (/proc/<pid>/stat fields 14 and 15). */
function userSystemTicks(pid: number): { user: number; system: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return { user: Number(fields[11]), system: Number(fields[12]) }
}

interface Measured extends LoadResult {
  /** The user-space share of `cpuMicrosPerRequest` (the rest is the kernel's: mostly the network). */
  readonly userMicrosPerRequest: number
}

/** autocannon against `url` (warm-up first, unmeasured), with the CPU ticks of `pid` around the measured run. */
async function measure(
  url: string,
  pid: number,
  requests: Request[],
  headers: Record<string, string>,
): Promise<Measured> {
  const options = {
    url,
    connections,
    pipelining: 1,
    timeout: 30,
    headers,
    requests,
    ...(rate === undefined ? {} : { overallRate: rate }),
  }
  if (warmupS > 0) await autocannon({ ...options, duration: warmupS })
  const before = userSystemTicks(pid)
  const started = performance.now()
  const result = await autocannon({ ...options, duration: seconds })
  const after = userSystemTicks(pid)
  const cpuS = (after.user + after.system - before.user - before.system) / clockTicks
  const load = loadResult(result, (performance.now() - started) / 1000, cpuS)
  return { ...load, userMicrosPerRequest: (((after.user - before.user) / clockTicks) * 1e6) / load.requestCount }
}

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((left, right) => left - right)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

const keptDir = flag('data')
const workDir = keptDir === undefined ? mkdtempSync(path.join(os.tmpdir(), 'pricing-edge-')) : path.resolve(keptDir)
mkdirSync(workDir, { recursive: true })
const profileDir = path.join(workDir, 'cpu-profiles')
rmSync(profileDir, { recursive: true, force: true })
const credentialsPath = path.join(workDir, 'credentials.json')
interface Credentials {
  readonly adminToken: string
  readonly clientId: string
  readonly clientSecret: string
  readonly skuCount: number
}
// Only what the bench needs set: the backup schedule off, so that no backup runs inside a window.
const env = { PRICING_BACKUP_INTERVAL_S: '0' }

try {
  let credentials: Credentials | null = existsSync(credentialsPath)
    ? (JSON.parse(readFileSync(credentialsPath, 'utf8')) as Credentials)
    : null
  if (credentials !== null && credentials.skuCount !== shape.skuCount)
    throw new Error(`${workDir} holds ${credentials.skuCount} SKUs, not ${shape.skuCount}`)
  const adminToken = credentials?.adminToken ?? randomBytes(16).toString('hex')
  const server = new PricingServer({
    entry: path.join(serverRoot, 'server', 'start.js'),
    dataDir: path.join(workDir, 'data'),
    adminToken,
    env,
  })
  if (credentials === null) {
    await server.start()
    await server.waitReady()
    const client = await provisionTenant(server, slug)
    progress(
      `generating ${shape.skuCount.toLocaleString('en-US')} SKUs x ${pricelists.length} pricelists x ${shape.versionCount} versions`,
    )
    await generate(client, shape, () => cpuTicks(server.pid) / clockTicksPerSecond())
    await server.stop()
    credentials = { adminToken, clientId: client.clientId, clientSecret: client.clientSecret, skuCount: shape.skuCount }
    writeFileSync(credentialsPath, JSON.stringify(credentials))
  }
  await server.start({}, profiling ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [])
  await server.waitReady()
  const client = new TenantClient(server, slug, credentials.clientId, credentials.clientSecret)
  const token = await client.refreshToken()
  const definitions = scenarios()
  const captured = new Map<string, CapturedAnswer>()
  for (const definition of definitions) captured.set(definition.name, await capture(server, token, definition))
  const answers: BareAnswers = {
    get: captured.get('get') ?? { body: '{}', headers: {} },
    queries: captured.has('query-100') ? { '100': captured.get('query-100')! } : {},
  }
  const answersPath = path.join(workDir, 'bare-answers.json')
  writeFileSync(answersPath, JSON.stringify(answers))
  const bare = await spawnListening(path.join(buildRoot, 'bench', 'bare-server.js'), [answersPath], {}, /"port":(\d+)/)
  const headers = { authorization: `Bearer ${token}` }
  let other: { server: PricingServer; headers: Record<string, string> } | null = null
  if (againstRoot !== null) {
    const otherDir = path.join(workDir, 'data-against')
    rmSync(otherDir, { recursive: true, force: true })
    cpSync(path.join(workDir, 'data'), otherDir, { recursive: true, filter: (source) => !source.endsWith('.lock') })
    const otherServer = new PricingServer({
      entry: path.join(againstRoot, 'server', 'start.js'),
      dataDir: otherDir,
      adminToken,
      env,
    })
    await otherServer.start()
    await otherServer.waitReady()
    const otherToken = await new TenantClient(
      otherServer,
      slug,
      credentials.clientId,
      credentials.clientSecret,
    ).refreshToken()
    other = { server: otherServer, headers: { authorization: `Bearer ${otherToken}` } }
  }
  // The measured runs of the server, as intervals before its end (the profile ends there).
  const measured: { started: number; ended: number; requests: number }[] = []
  const lines: string[] = []
  try {
    for (const definition of definitions) {
      const real: Measured[] = []
      const base: Measured[] = []
      const against: Measured[] = []
      // Alternating, so that a neighbour's load on the shared machine hits both sides alike.
      for (let round = 0; round < rounds; round++) {
        progress(`${definition.name} round ${round + 1}/${rounds}: server`)
        const started = performance.now() + warmupS * 1000
        const threadsBefore = mainAndOthers(threadTicks(server.pid))
        const result = await measure(server.url, server.pid, definition.requests, headers)
        real.push(result)
        measured.push({ started, ended: performance.now(), requests: result.requestCount })
        // Per thread, warm-up included (the split, not the total, is the point here).
        const threadsAfter = mainAndOthers(threadTicks(server.pid))
        const split = [...threadsAfter]
          .map(([name, ticks]) => [name, ticks - (threadsBefore.get(name) ?? 0)] as const)
          .filter(([, ticks]) => ticks > 0)
        const total = split.reduce((sum, [, ticks]) => sum + ticks, 0)
        progress(
          `  server threads: ${split
            .sort((left, right) => right[1] - left[1])
            .map(([name, ticks]) => `${name} ${((100 * ticks) / total).toFixed(0)}%`)
            .join(', ')}`,
        )
        if (other !== null) {
          progress(`${definition.name} round ${round + 1}/${rounds}: --against server`)
          against.push(await measure(other.server.url, other.server.pid, definition.requests, other.headers))
        }
        progress(`${definition.name} round ${round + 1}/${rounds}: bare endpoint`)
        base.push(await measure(`http://127.0.0.1:${bare.port}`, bare.child.pid!, definition.requests, headers))
      }
      const failures = real.reduce((sum, result) => sum + result.non2xx + result.errors, 0)
      if (failures > 0) throw new Error(`${definition.name}: ${failures} requests failed on the server`)
      const realUs = median(real.map((result) => result.cpuMicrosPerRequest))
      const bareUs = median(base.map((result) => result.cpuMicrosPerRequest))
      const figures = (results: readonly Measured[]): string =>
        `${median(results.map((result) => result.cpuMicrosPerRequest))
          .toFixed(1)
          .padStart(6)} us/request ` +
        `(user ${median(results.map((result) => result.userMicrosPerRequest)).toFixed(1)}; ` +
        `runs ${results.map((result) => result.cpuMicrosPerRequest.toFixed(1)).join(', ')}; ` +
        `${Math.round(median(results.map((result) => result.requestsPerSecond)))} req/s, p99 ${median(results.map((result) => result.latencyP99Ms))} ms)`
      lines.push(
        `${definition.name.padEnd(10)} server ${figures(real)}  bare ${figures(base)}  ratio ${(realUs / bareUs).toFixed(2)}x`,
      )
      if (other !== null) {
        const againstUs = median(against.map((result) => result.cpuMicrosPerRequest))
        const paired = median(
          real.map((result, index) => result.cpuMicrosPerRequest / against[index]!.cpuMicrosPerRequest),
        )
        lines.push(
          `${''.padEnd(10)} against ${figures(against)}  ratio to bare ${(againstUs / bareUs).toFixed(2)}x; ` +
            `server/against per round: median ${paired.toFixed(3)}`,
        )
      }
    }
  } finally {
    bare.child.kill('SIGTERM')
    await exited(bare.child)
    await server.stop()
    await other?.server.stop()
  }
  const stopped = performance.now()
  const against = againstRoot === null ? '' : `, against ${path.relative(process.cwd(), againstRoot) || '.'}`
  process.stdout.write(
    `server ${path.relative(process.cwd(), serverRoot) || '.'}${against}; ${shape.skuCount.toLocaleString('en-US')} SKUs, ${connections} connections${rate === undefined ? '' : ` at ${rate} req/s`}, ${seconds} s x ${rounds} rounds (median)${profiling ? ', under the profiler' : ''}\n`,
  )
  process.stdout.write(lines.map((line) => `${line}\n`).join(''))
  if (profiling) {
    // The main thread's profile is the one written by the process's first thread; the price
    // workers' hold the engine, which is not the edge. Only the measured intervals count.
    const written = readdirSync(profileDir)
      .filter((name) => name.endsWith('.cpuprofile'))
      .sort()
    const mainName = written.find((name) => /\.\d+\.\d+\.0\.\d+\.cpuprofile$/.test(name)) ?? written[0]
    if (mainName === undefined) throw new Error('the server wrote no CPU profile')
    const profile = JSON.parse(readFileSync(path.join(profileDir, mainName), 'utf8')) as CpuProfile
    const byFrame = new Map<string, number>()
    let samples = 0
    let busyUs = 0
    let requests = 0
    for (const interval of measured) {
      const window = { fromEndUs: (stopped - interval.started) * 1000, untilEndUs: (stopped - interval.ended) * 1000 }
      const thread = selfTimes(profile, path.resolve(serverRoot, '..'), window)
      samples += thread.samples
      requests += interval.requests
      const idle = thread.frames.find((entry) => entry.frame === '(idle)')?.share ?? 0
      busyUs += (1 - idle) * (interval.ended - interval.started) * 1000
      for (const entry of thread.frames)
        byFrame.set(entry.frame, (byFrame.get(entry.frame) ?? 0) + entry.share * thread.samples)
    }
    const frames = [...byFrame]
      .sort((left, right) => right[1] - left[1])
      .map(([frame, count]) => ({ frame, share: samples === 0 ? 0 : count / samples }))
    process.stdout.write(
      `main thread ${path.join(profileDir, mainName)}: not idle ${(busyUs / requests).toFixed(1)} us/request; top ${top} by self time over the measured runs (${samples} samples)\n`,
    )
    process.stdout.write(formatSelfTimes(frames, top))
  }
} finally {
  if (keptDir === undefined && !profiling) rmSync(workDir, { recursive: true, force: true })
}
