/**
 * `npm run bench` (and `bench:quick`): the engine-only benchmark, then a real server on a fresh
 * data directory: the generated workload through the public API (ingest rate), memory and restart
 * time, and the HTTP scenarios against the server and the bare uWS endpoint. Prints the tables,
 * writes bench/results/<timestamp>.json and regenerates bench/results/latest.md (quick runs:
 * <timestamp>-quick.json and latest-quick.md). Then webhook impact on the same server
 * (webhooks.ts) and the access log's cost (access-log.ts), and changelog reads from a large log on
 * a server of their own (changelog.ts).
 * Flags: --quick, --skus N, --duration S, --connections N, --seed N, --changelog-entries N.
 * @module
 */
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { runAccessLogBench } from './access-log.js'
import type { BareAnswers, CapturedAnswer } from './bare-server.js'
import { runChangelogBench } from './changelog.js'
import { runEngineBench } from './engine.js'
import { collectGarbage } from './gc.js'
import { batchItemCount, generate, ingestConcurrency } from './generate.js'
import { measureBackup } from './backup.js'
import { measureBinary } from './binary.js'
import { runClusterBench } from './cluster.js'
import { runIsolationBench } from './isolation.js'
import { runRestoreBench } from './restore.js'
import { runRetentionBench } from './retention.js'
import { clockTicksPerSecond, cpuTicks, memory } from './proc.js'
import {
  accessLogChecks,
  changelogChecks,
  clusterChecks,
  globalChecks,
  isolationChecks,
  renderResultsMarkdown,
  renderTerminal,
  restoreChecks,
  retentionChecks,
  scenarioChecks,
  type BenchResults,
  type RestartResult,
  type ScenarioResult,
  webhookChecks,
} from './report.js'
import {
  measureLoad,
  scenarioDefinitions,
  type LoadParameters,
  type LoadResult,
  type ScenarioDefinition,
} from './scenarios.js'
import {
  answerCacheCounts,
  exited,
  PricingServer,
  provisionTenant,
  request,
  spawnListening,
  TenantClient,
} from './server-process.js'
import { runWebhookBench, webhookServerEnv } from './webhooks.js'
import { defaultShape, priceVersionCount, type WorkloadShape } from './workload.js'

/** The compiled tree this file runs from (dist/ or PRICING_BUILD_DIR); its server is measured. */
const buildRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const repositoryRoot = path.resolve(buildRoot, '..')
const resultsDir = path.join(repositoryRoot, 'bench', 'results')
/** Synthetic changelogs of full runs are kept here between runs (gitignored), one folder per size. */
const changelogCacheRoot = path.join(repositoryRoot, 'bench', '.cache')
const tenantSlug = 'bench'
/** The bound on a restart with the full workload. */
const restartMsMax = 15_000
/** Pause before reading RSS, so that start-up garbage has a chance to be collected. */
const settleMs = 2_000

interface RunOptions {
  readonly quick: boolean
  readonly shape: WorkloadShape
  readonly load: LoadParameters
  readonly engineCaseMs: number
  readonly changelogEntries: number
}

function parseOptions(argv: readonly string[]): RunOptions {
  const quick = argv.includes('--quick')
  const numberFlag = (name: string, fallback: number): number => {
    const index = argv.indexOf(`--${name}`)
    if (index < 0) return fallback
    const value = Number(argv[index + 1])
    if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} needs a positive number`)
    return value
  }
  return {
    quick,
    shape: {
      ...defaultShape,
      skuCount: numberFlag('skus', quick ? 10_000 : defaultShape.skuCount),
      seed: numberFlag('seed', defaultShape.seed),
    },
    load: {
      connections: numberFlag('connections', 64),
      durationS: numberFlag('duration', quick ? 3 : 10),
      warmupS: quick ? 1 : 2,
      clockTicks: clockTicksPerSecond(),
    },
    engineCaseMs: quick ? 1_000 : 3_000,
    changelogEntries: numberFlag('changelog-entries', quick ? 200_000 : 10_000_000),
  }
}

function progress(message: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`)
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function restart(server: PricingServer): Promise<RestartResult> {
  const started = performance.now()
  await server.stop()
  const stopped = performance.now()
  await server.start()
  await server.waitReady()
  const ready = performance.now()
  return { stopMs: stopped - started, startToReadyMs: ready - stopped, totalMs: ready - started }
}

/** The real server's answer to a scenario's first request: the bare endpoint sends the same bytes. */
async function capture(
  server: PricingServer,
  client: TenantClient,
  scenario: ScenarioDefinition,
): Promise<CapturedAnswer> {
  const first = scenario.requests[0]!
  const answer = await request(`${server.url}${first.path}`, first.method ?? 'GET', {
    token: client.token,
    body: first.body,
  })
  if (answer.status !== 200)
    throw new Error(`${scenario.name}: the real server answered ${answer.status} ${answer.text.slice(0, 300)}`)
  const headers: Record<string, string> = {}
  for (const name of ['content-type', 'cache-control', 'etag']) {
    const value = answer.headers.get(name)
    if (value !== null) headers[name] = value
  }
  return { body: answer.text, headers }
}

async function runScenarios(
  server: PricingServer,
  client: TenantClient,
  options: RunOptions,
  workDir: string,
): Promise<ScenarioResult[]> {
  const definitions = scenarioDefinitions(tenantSlug, options.shape)
  // The token issuer is the server's URL, whose port changes at every restart: a fresh token.
  await client.refreshToken()
  const captured = await Promise.all(definitions.map((definition) => capture(server, client, definition)))
  const answers: BareAnswers = { get: captured[0]!, queries: { '100': captured[1]!, '1000': captured[2]! } }
  const answersPath = path.join(workDir, 'bare-answers.json')
  writeFileSync(answersPath, JSON.stringify(answers))
  const bare = await spawnListening(path.join(buildRoot, 'bench', 'bare-server.js'), [answersPath], {}, /"port":(\d+)/)
  try {
    const results: ScenarioResult[] = []
    for (const [index, definition] of definitions.entries()) {
      const headers = { authorization: `Bearer ${await client.refreshToken()}` }
      progress(`scenario ${definition.name}: server`)
      const warmupRequests = definition.warmPass === true ? definition.distinctRequests : 0
      if (warmupRequests > 0) progress(`scenario ${definition.name}: one pass over its bodies first`)
      // The caches' counts around the measured run (after the warm-up).
      let countsBefore = { hits: 0, misses: 0 }
      let priorBefore = { hits: 0, misses: 0 }
      const real = await measureLoad(
        server.url,
        server.pid,
        definition.requests,
        headers,
        { ...options.load, warmupRequests },
        async () => {
          countsBefore = await answerCacheCounts(server.url)
          priorBefore = await answerCacheCounts(server.url, priorMetric)
        },
      )
      const countsAfter = await answerCacheCounts(server.url)
      const priorAfter = await answerCacheCounts(server.url, priorMetric)
      const hits = countsAfter.hits - countsBefore.hits
      const looked = hits + countsAfter.misses - countsBefore.misses
      const priorHits = priorAfter.hits - priorBefore.hits
      const priorLooked = priorHits + priorAfter.misses - priorBefore.misses
      progress(`scenario ${definition.name}: bare endpoint`)
      const bareResult = await measureLoad(
        `http://127.0.0.1:${bare.port}`,
        bare.child.pid!,
        definition.requests,
        headers,
        options.load,
      )
      results.push({
        name: definition.name,
        title: definition.title,
        responseBytes: Buffer.byteLength(captured[index]!.body),
        real,
        bare: bareResult,
        cacheHitRate: looked > 0 ? hits / looked : null,
        priorHitRate: priorLooked > 0 ? priorHits / priorLooked : null,
        distinctRequests: definition.distinctRequests,
        cpuRatio: real.cpuMicrosPerRequest / bareResult.cpuMicrosPerRequest,
        requestsRatio: real.requestsPerSecond / bareResult.requestsPerSecond,
        targets: {
          cpuRatioMax: definition.cpuRatioMax,
          requestsRatioMin: definition.requestsRatioMin,
          latencyP99MaxMs: definition.latencyP99MaxMs,
          ...(definition.against === undefined ? {} : { against: definition.against }),
        },
      })
    }
    const { off, again, ratios } = await runCacheOff(server, client, definitions, options)
    return results.map((result, index) => ({
      ...result,
      cacheOff: off[index]!,
      defaultAgain: again[index]!,
      cacheRatio: ratios[index]!,
    }))
  } finally {
    bare.child.kill('SIGTERM')
    await exited(bare.child)
  }
}

/** Alternating rounds of the cache comparison per query scenario, and each round's length. */
const cacheRounds = { count: 6, seconds: 3 }

/**
 * What the answer cache costs and gains: a second server with the answer cache off
 * (`PRICING_ANSWER_CACHE_ITEMS=0`, that one setting changed) on a copy of the data directory,
 * beside the server as shipped (both started afresh), and each query scenario sent to both in
 * rounds: one unmeasured round each (their VAT columns and rows fill), then rounds in which the
 * side that goes first alternates. A shared machine's speed drifts by a third over minutes; the median of each
 * round's ratio is the figure that drift does not swamp. `off` and `again` hold the two sides'
 * mean figures over the rounds (the main table's figures come from the longer run before).
 */
async function runCacheOff(
  server: PricingServer,
  client: TenantClient,
  definitions: readonly ScenarioDefinition[],
  options: RunOptions,
): Promise<{ off: (LoadResult | null)[]; again: (LoadResult | null)[]; ratios: (number | null)[] }> {
  await server.stop()
  const copyDir = `${server.options.dataDir}-cache-off`
  rmSync(copyDir, { recursive: true, force: true })
  cpSync(server.options.dataDir, copyDir, { recursive: true })
  const other = new PricingServer({
    ...server.options,
    dataDir: copyDir,
    env: { ...server.options.env, ...cacheOffSetting },
  })
  await server.start()
  await server.waitReady()
  await other.start()
  await other.waitReady()
  const off: (LoadResult | null)[] = []
  const again: (LoadResult | null)[] = []
  const ratios: (number | null)[] = []
  try {
    const otherClient = new TenantClient(other, client.slug, client.clientId, client.clientSecret)
    const headers = { authorization: `Bearer ${await client.refreshToken()}` }
    const otherHeaders = { authorization: `Bearer ${await otherClient.refreshToken()}` }
    const load = { ...options.load, durationS: cacheRounds.seconds, warmupS: 1 }
    for (const definition of definitions) {
      if (definition.requests[0]!.method !== 'POST') {
        off.push(null)
        again.push(null)
        ratios.push(null)
        continue
      }
      progress(
        `scenario ${definition.name}: shipped defaults and answer cache off, ${cacheRounds.count} alternating rounds`,
      )
      const defaults: LoadResult[] = []
      const offs: LoadResult[] = []
      const onDefault = () => measureLoad(server.url, server.pid, definition.requests, headers, load)
      const onOff = () => measureLoad(other.url, other.pid, definition.requests, otherHeaders, load)
      // One round each unmeasured first: both fill their VAT columns and rows before any figure
      // (and, for a scenario measured after a pass over its bodies, make that pass).
      const first = { ...load, warmupRequests: definition.warmPass === true ? definition.distinctRequests : 0 }
      await measureLoad(server.url, server.pid, definition.requests, headers, first)
      await measureLoad(other.url, other.pid, definition.requests, otherHeaders, first)
      // Which side goes first alternates (ABBA): drift within a round favours neither.
      for (let round = 0; round < cacheRounds.count; round++) {
        if (round % 2 === 0) {
          defaults.push(await onDefault())
          offs.push(await onOff())
        } else {
          offs.push(await onOff())
          defaults.push(await onDefault())
        }
      }
      again.push(meanLoad(defaults))
      off.push(meanLoad(offs))
      const perRound = defaults
        .map((result, round) => result.cpuMicrosPerRequest / offs[round]!.cpuMicrosPerRequest)
        .sort((a, b) => a - b)
      ratios.push((perRound[(perRound.length - 1) >> 1]! + perRound[perRound.length >> 1]!) / 2)
    }
  } finally {
    await other.stop()
    rmSync(copyDir, { recursive: true, force: true })
  }
  return { off, again, ratios }
}

/** The mean of load results (requests summed, rates and CPU per request weighted by requests). */
function meanLoad(results: readonly LoadResult[]): LoadResult {
  const requests = results.reduce((sum, result) => sum + result.requestCount, 0)
  const weighted = (figure: (result: LoadResult) => number) =>
    results.reduce((sum, result) => sum + figure(result) * result.requestCount, 0) / requests
  return {
    requestCount: requests,
    requestsPerSecond: results.reduce((sum, result) => sum + result.requestsPerSecond, 0) / results.length,
    latencyP50Ms: Math.max(...results.map((result) => result.latencyP50Ms)),
    latencyP99Ms: Math.max(...results.map((result) => result.latencyP99Ms)),
    latencyMaxMs: Math.max(...results.map((result) => result.latencyMaxMs)),
    cpuMicrosPerRequest: weighted((result) => result.cpuMicrosPerRequest),
    cpuCores: results.reduce((sum, result) => sum + result.cpuCores, 0) / results.length,
    non2xx: results.reduce((sum, result) => sum + result.non2xx, 0),
    errors: results.reduce((sum, result) => sum + result.errors, 0),
  }
}

/** 10000000 -> '10m' (the cache folder's name). */
function sizeLabel(count: number): string {
  return count % 1_000_000 === 0 ? `${count / 1_000_000}m` : String(count)
}

function gitCommit(): string {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: repositoryRoot, encoding: 'utf8' }).trim()
  } catch {
    return 'unknown'
  }
}

function environment(options: RunOptions): Record<string, string | number> {
  const cpus = os.cpus()
  return {
    commit: gitCommit(),
    node: process.version,
    cpu: cpus[0]?.model.trim() ?? 'unknown',
    cores: cpus.length,
    clockTicks: options.load.clockTicks,
    // Other work on the machine skews req/s (and a little CPU per request): read it with the figures.
    loadAverageAtStart: os.loadavg()[0]!.toFixed(2),
  }
}

function parameters(options: RunOptions): Record<string, string | number> {
  const { shape, load } = options
  return {
    skus: shape.skuCount,
    pricelists: 10,
    versions: shape.versionCount,
    breakShare: shape.breakShare,
    seed: shape.seed,
    connections: load.connections,
    pipelining: 1,
    durationS: load.durationS,
    warmupS: load.warmupS,
    ingestBatch: batchItemCount,
    ingestConcurrency,
    engineCaseMs: options.engineCaseMs,
    changelogEntries: options.changelogEntries,
    serverSettings: Object.entries(changedSettings)
      .map(([name, value]) => `${name}=${JSON.stringify(value)}`)
      .join(', '),
  }
}

/**
 * Settings of the measured server other than the shipped defaults (besides port, address, data
 * directory and admin token): no network here for the ECB feed, and the webhook phase's receiver
 * listens on loopback. Neither is on a measured path.
 */
const changedSettings: Record<string, string> = { PRICING_FX_FEED_URL: '', PRICING_WEBHOOK_ALLOW_PRIVATE: 'true' }
const cacheOffSetting = { PRICING_ANSWER_CACHE_ITEMS: '0' }

/** The prior prices' cache counts (workers/prior-price-cache.ts). */
const priorMetric = 'pricing_prior_price_cache_total'

type ServerPhase = Omit<
  BenchResults,
  'generatedAt' | 'quick' | 'environment' | 'parameters' | 'engine' | 'changelog' | 'checks'
>

async function serverPhase(options: RunOptions): Promise<ServerPhase> {
  const workDir = mkdtempSync(path.join(os.tmpdir(), 'pricing-bench-'))
  // The shipped defaults (answer cache, automatic backups, retention passes as `npm start` has
  // them) but the settings in `changedSettings`, which the tables name.
  const env = { ...(await webhookServerEnv()), ...changedSettings }
  const server = new PricingServer({
    entry: path.join(buildRoot, 'server', 'start.js'),
    dataDir: path.join(workDir, 'data'),
    adminToken: randomBytes(16).toString('hex'),
    env,
    shippedDefaults: true,
  })
  try {
    await server.start()
    await server.waitReady()
    const client = await provisionTenant(server, tenantSlug)
    const restartEmpty = await restart(server)
    await sleep(settleMs)
    const emptyBeforeGc = memory(server.pid)
    await collectGarbage(server.pid)
    await sleep(settleMs)
    const empty = memory(server.pid)
    // A fresh process for the ingest: once opened, the inspector (for the GC) costs CPU even after
    // it is closed again (about 20-30% on the worker queries here).
    await restart(server)
    await client.refreshToken()
    progress(`generating ${priceVersionCount(options.shape).toLocaleString('en-US')} price versions through the API`)
    const generated = await generate(client, options.shape, () => cpuTicks(server.pid) / options.load.clockTicks)
    await sleep(settleMs)
    const afterIngestBeforeGc = memory(server.pid)
    await collectGarbage(server.pid)
    await sleep(settleMs)
    const afterIngest = memory(server.pid)
    progress('restarting with the full workload')
    const restarted = await restart(server)
    await sleep(settleMs)
    const afterRestartBeforeGc = memory(server.pid)
    await collectGarbage(server.pid)
    await sleep(settleMs)
    const afterRestart = memory(server.pid)
    progress('backup of the full tenant')
    const backup = await measureBackup(server, tenantSlug)
    // And a fresh process for the load scenarios, for the same reason.
    await restart(server)
    const versions = generated.ingest.priceVersionCount
    const scenarios = await runScenarios(server, client, options, workDir)
    const isolation = await runIsolationBench(server, client, {
      shape: options.shape,
      load: options.load,
      slug: tenantSlug,
      progress,
    })
    const webhooks = await runWebhookBench(server, client, {
      shape: options.shape,
      load: options.load,
      slug: tenantSlug,
      progress,
    })
    const accessLog = await runAccessLogBench(server, client, {
      shape: options.shape,
      load: options.load,
      rounds: options.quick ? 3 : 12,
      windowMs: 1_000,
      slug: tenantSlug,
      progress,
    })
    const restore = await runRestoreBench(server, client, {
      shape: options.shape,
      load: options.load,
      slug: tenantSlug,
      progress,
    })
    const retention = await runRetentionBench(server, client, {
      shape: options.shape,
      load: options.load,
      slug: tenantSlug,
      queriesAlone: restore.queriesAlone,
      progress,
    })
    return {
      referenceMs: generated.referenceMs,
      ingest: generated.ingest,
      memory: {
        emptyBeforeGc,
        empty,
        afterIngestBeforeGc,
        afterIngest,
        afterRestartBeforeGc,
        afterRestart,
        bytesPerVersion: afterRestart.rssBytes / versions,
        bytesPerVersionDelta: (afterRestart.rssBytes - empty.rssBytes) / versions,
        liveBytesPerVersionDelta: (afterIngest.rssBytes - empty.rssBytes) / versions,
        anonBytesPerVersionDelta: (afterRestart.rssAnonBytes - empty.rssAnonBytes) / versions,
      },
      restartEmpty,
      restart: restarted,
      backup,
      scenarios,
      webhooks,
      accessLog,
      isolation,
      restore,
      retention,
    }
  } finally {
    await server.stop()
    rmSync(workDir, { recursive: true, force: true })
  }
}

function writeResults(results: BenchResults): string {
  mkdirSync(resultsDir, { recursive: true })
  const stamp = results.generatedAt.replace(/[:.]/g, '-')
  const suffix = results.quick ? '-quick' : ''
  const jsonPath = path.join(resultsDir, `${stamp}${suffix}.json`)
  writeFileSync(jsonPath, `${JSON.stringify(results, null, 2)}\n`)
  writeFileSync(path.join(resultsDir, `latest${suffix}.md`), renderResultsMarkdown(results))
  return jsonPath
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2))
  const generatedAt = new Date().toISOString()
  const machine = environment(options)
  progress(`engine-only benchmark (${options.shape.skuCount.toLocaleString('en-US')} SKUs)`)
  const engine = runEngineBench(options.shape, options.engineCaseMs)
  const phase = await serverPhase(options)
  const changelog = await runChangelogBench({
    buildRoot,
    entryCount: options.changelogEntries,
    seed: options.shape.seed,
    // Quick runs write their small log in about a second; the full one takes minutes.
    cacheDir: options.quick ? null : path.join(changelogCacheRoot, `changelog-${sizeLabel(options.changelogEntries)}`),
    load: options.load,
    progress,
  })
  progress('the single executable: build, size, start-up beside the checkout')
  const binary = await measureBinary(buildRoot)
  progress('a cluster on Redis: reads on one node and on three, replica lag under ingest')
  const cluster = await runClusterBench({
    entry: path.join(buildRoot, 'server', 'start.js'),
    shape: options.shape,
    load: options.load,
    progress,
  })
  machine['loadAverageAtEnd'] = os.loadavg()[0]!.toFixed(2)
  const partial = {
    generatedAt,
    quick: options.quick,
    environment: machine,
    parameters: parameters(options),
    engine,
    ...phase,
    changelog,
    binary,
    cluster,
  }
  const checks = [
    ...globalChecks(partial, restartMsMax),
    ...phase.scenarios.flatMap(scenarioChecks),
    ...changelogChecks(changelog),
    ...webhookChecks(phase.webhooks),
    ...accessLogChecks(phase.accessLog),
    ...isolationChecks(phase.isolation),
    ...(phase.restore === undefined ? [] : restoreChecks(phase.restore)),
    ...(phase.retention === undefined ? [] : retentionChecks(phase.retention)),
    ...clusterChecks(cluster),
  ]
  const results: BenchResults = { ...partial, checks }
  process.stdout.write(`\n${renderTerminal(results)}\n`)
  progress(`wrote ${path.relative(repositoryRoot, writeResults(results))}`)
}

await main()
