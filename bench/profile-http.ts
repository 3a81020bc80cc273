/**
 * `npm run bench:profile-http`: where the server spends its time on one HTTP scenario. Starts the
 * compiled server on the bench workload (generated into `--data DIR` once and reused by later runs
 * on the same directory; a fresh temporary directory otherwise), then runs the scenario under
 * `node --cpu-prof` with the shipped defaults, as `npm run bench` does (`--cache-off`: with
 * `PRICING_ANSWER_CACHE_ITEMS=0`), stops the server and prints
 * the functions with the most self time over the measured interval (start and warm-up left out),
 * summed over the main thread and the price workers (one profile each). The profile is kept in bench/results/profiles/ (open it in
 * Chrome's DevTools).
 * `--scenario ingest` profiles the price ingest of a fresh copy of the workload instead.
 * Flags: --scenario get|query-100|query-1000|query-100-prior|...|ingest (query-100), --skus N (100,000), --seconds S (8),
 * --connections N (64), --data DIR, --top N (25), --cache-off, --no-profile (the figures only),
 * --env NAME=VALUE (repeatable: a server setting besides the defaults, named in the figures' label),
 * --node-args "..." (options for the server's node, e.g. --perf-basic-prof for `perf record`).
 * @module
 */
import { randomBytes } from 'node:crypto'
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { byLayer, formatSelfTimes, selfTimes, type CpuProfile } from './cpu-profile.js'
import { generate } from './generate.js'
import { clockTicksPerSecond, cpuTicks } from './proc.js'
import { measureLoad, scenarioDefinitions } from './scenarios.js'
import { answerCacheCounts, PricingServer, provisionTenant, TenantClient } from './server-process.js'
import { defaultShape } from './workload.js'
import { flagValue, flagValues } from './flags.js'

const buildRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const repositoryRoot = path.resolve(buildRoot, '..')
const argv = process.argv.slice(2)
const flag = (name: string): string | undefined => flagValue(argv, name)
const scenarioName = flag('scenario') ?? 'query-100'
const shape = { ...defaultShape, skuCount: Number(flag('skus') ?? defaultShape.skuCount) }
const seconds = Number(flag('seconds') ?? 8)
const connections = Number(flag('connections') ?? 64)
const top = Number(flag('top') ?? 25)
const slug = 'bench'

interface Credentials {
  readonly adminToken: string
  readonly clientId: string
  readonly clientSecret: string
  readonly skuCount: number
}

const keptDir = flag('data')
const workDir = keptDir === undefined ? mkdtempSync(path.join(os.tmpdir(), 'pricing-profile-')) : path.resolve(keptDir)
mkdirSync(workDir, { recursive: true })
const credentialsPath = path.join(workDir, 'credentials.json')
const profileDir = path.join(workDir, 'cpu-profiles')
const cacheOff = argv.includes('--cache-off')
const profiling = !argv.includes('--no-profile')
// The shipped defaults but the FX feed (no network here), as `npm run bench` runs the server.
/** `--node-args "--perf-basic-prof"`: options for the server's node (labelled as settings are). */
const nodeArgs = (flag('node-args') ?? '').split(' ').filter((argument) => argument !== '')
const extraSettings = flagValues(argv, 'env').map((setting) => setting.split('=') as [string, string])
const env: Record<string, string> = {
  PRICING_FX_FEED_URL: '',
  ...(cacheOff ? { PRICING_ANSWER_CACHE_ITEMS: '0' } : {}),
  ...Object.fromEntries(extraSettings),
}
const labelled = [
  ...(cacheOff ? ['PRICING_ANSWER_CACHE_ITEMS=0'] : []),
  ...extraSettings.map(([name, value]) => `${name}=${value}`),
  ...nodeArgs,
]
const label = labelled.length > 0 ? ` (${labelled.join(', ')})` : ' (shipped defaults)'

try {
  let credentials: Credentials | null = existsSync(credentialsPath)
    ? (JSON.parse(readFileSync(credentialsPath, 'utf8')) as Credentials)
    : null
  if (credentials !== null && credentials.skuCount !== shape.skuCount)
    throw new Error(`${workDir} holds ${credentials.skuCount} SKUs, not ${shape.skuCount}`)
  const adminToken = credentials?.adminToken ?? randomBytes(16).toString('hex')
  const server = new PricingServer({
    entry: path.join(buildRoot, 'server', 'start.js'),
    dataDir: path.join(workDir, 'data'),
    adminToken,
    env,
    shippedDefaults: true,
  })
  if (credentials === null) {
    await server.start()
    await server.waitReady()
    const client = await provisionTenant(server, slug)
    process.stderr.write(`[profile-http] generating ${shape.skuCount.toLocaleString('en-US')} SKUs\n`)
    await generate(client, shape, () => cpuTicks(server.pid) / clockTicksPerSecond())
    await server.stop()
    credentials = { adminToken, clientId: client.clientId, clientSecret: client.clientSecret, skuCount: shape.skuCount }
    writeFileSync(credentialsPath, JSON.stringify(credentials))
  }
  rmSync(profileDir, { recursive: true, force: true })
  let summary: string
  let answerCacheAfter: Promise<{ hits: number; misses: number }> = Promise.resolve({ hits: 0, misses: 0 })
  let priorBefore = { hits: 0, misses: 0 }
  let priorShare = ''
  let window: { fromEndUs: number; untilEndUs: number }
  if (scenarioName === 'ingest') {
    // The price ingest of a fresh workload (the data directory's tenant is left alone).
    const fresh = new PricingServer({
      entry: server.options.entry,
      dataDir: path.join(workDir, 'ingest-data'),
      adminToken,
      env,
    })
    rmSync(path.join(workDir, 'ingest-data'), { recursive: true, force: true })
    await fresh.start({}, [...nodeArgs, '--cpu-prof', `--cpu-prof-dir=${profileDir}`])
    await fresh.waitReady()
    const client = await provisionTenant(fresh, slug)
    const generated = await generate(client, shape, () => cpuTicks(fresh.pid) / clockTicksPerSecond())
    const ingestEnded = performance.now()
    await fresh.stop()
    const stopped = performance.now()
    rmSync(path.join(workDir, 'ingest-data'), { recursive: true, force: true })
    const ingest = generated.ingest
    window = {
      fromEndUs: (stopped - ingestEnded + ingest.elapsedMs) * 1000,
      untilEndUs: (stopped - ingestEnded) * 1000,
    }
    summary = `ingest: ${Math.round(ingest.itemsPerSecond).toLocaleString('en-US')} price versions/s, ${ingest.serverCpuMicrosPerItem.toFixed(1)} us CPU/version under the profiler`
  } else {
    await server.start({}, [...nodeArgs, ...(profiling ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [])])
    await server.waitReady()
    const client = new TenantClient(server, slug, credentials.clientId, credentials.clientSecret)
    const token = await client.refreshToken()
    const scenario = scenarioDefinitions(slug, shape).find((definition) => definition.name === scenarioName)
    if (scenario === undefined) throw new Error(`no scenario ${scenarioName}`)
    const warmupS = 2
    const loadStarted = performance.now()
    const load = await measureLoad(
      server.url,
      server.pid,
      scenario.requests,
      { authorization: `Bearer ${token}` },
      {
        connections,
        durationS: seconds,
        warmupS,
        clockTicks: clockTicksPerSecond(),
        // A scenario measured after one pass over its bodies (query-100-prior) makes it first.
        warmupRequests: scenario.warmPass === true ? scenario.distinctRequests : 0,
      },
      async () => {
        priorBefore = await answerCacheCounts(server.url, 'pricing_prior_price_cache_total')
      },
    )
    const loadEnded = performance.now()
    answerCacheAfter = answerCacheCounts(server.url)
    await answerCacheAfter
    const priorAfter = await answerCacheCounts(server.url, 'pricing_prior_price_cache_total')
    const priorHits = priorAfter.hits - priorBefore.hits
    const priorLooked = priorHits + priorAfter.misses - priorBefore.misses
    priorShare = priorLooked === 0 ? '' : `, prior prices kept ${((priorHits / priorLooked) * 100).toFixed(1)}%`
    await server.stop()
    const stopped = performance.now()
    // The measured interval, counted back from the process's end (where the profile ends).
    window = { fromEndUs: (stopped - loadStarted - warmupS * 1000) * 1000, untilEndUs: (stopped - loadEnded) * 1000 }
    summary = `${scenarioName}${label}: ${Math.round(load.requestsPerSecond).toLocaleString('en-US')} req/s, p99 ${load.latencyP99Ms} ms, ${load.cpuMicrosPerRequest.toFixed(1)} us CPU/request${profiling ? ' under the profiler' : ''}`
    if (!profiling) {
      const { hits, misses } = await answerCacheAfter
      process.stdout.write(
        `${summary}, answer cache hits ${misses + hits === 0 ? 0 : ((hits / (hits + misses)) * 100).toFixed(1)}%${priorShare}\n`,
      )
      process.exit(0)
    }
  }
  // One profile per thread: the main thread's and each price worker's.
  const written = readdirSync(profileDir)
    .filter((name) => name.endsWith('.cpuprofile'))
    .sort()
  if (written.length === 0) throw new Error('the server wrote no CPU profile')
  const keptProfiles = path.join(repositoryRoot, 'bench', 'results', 'profiles')
  mkdirSync(keptProfiles, { recursive: true })
  const stamp = new Date().toISOString().replace(/[:.]/g, '-')
  const byFrame = new Map<string, number>()
  const threads: string[] = []
  let samples = 0
  for (const [index, name] of written.entries()) {
    const profile = JSON.parse(readFileSync(path.join(profileDir, name), 'utf8')) as CpuProfile
    const kept = path.join(keptProfiles, `http-${scenarioName}-${stamp}-thread-${index}.cpuprofile`)
    renameSync(path.join(profileDir, name), kept)
    const thread = selfTimes(profile, repositoryRoot, window)
    threads.push(`${path.relative(repositoryRoot, kept)} (${thread.samples} samples)`)
    samples += thread.samples
    for (const entry of thread.frames)
      byFrame.set(entry.frame, (byFrame.get(entry.frame) ?? 0) + entry.share * thread.samples)
  }
  const frames = [...byFrame]
    .sort((left, right) => right[1] - left[1])
    .map(([frame, count]) => ({ frame, share: samples === 0 ? 0 : count / samples }))
  process.stdout.write(`${summary}; self time over the measured interval\n`)
  process.stdout.write(`profiles:\n${threads.map((line) => `  ${line}\n`).join('')}`)
  process.stdout.write(
    `top ${top} functions by self time, all threads (${samples} samples; idle threads count as (idle) or (program)):\n`,
  )
  process.stdout.write(formatSelfTimes(frames, top))
  process.stdout.write('busy time by layer (all threads, idle left out):\n')
  process.stdout.write(formatSelfTimes(byLayer(frames), 16))
} finally {
  if (keptDir === undefined) rmSync(workDir, { recursive: true, force: true })
}
