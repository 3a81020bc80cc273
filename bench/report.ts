/**
 * The results of one bench run: their shape (what results/<timestamp>.json holds), the checks
 * against the targets, and two renderings of the same tables: aligned text for the
 * terminal and the generated results markdown. Non-goal: comparing runs (compare the JSON files).
 * @module
 */
import { changelogP99MaxMs, writeBatchItems, writeLanes, type ChangelogResult } from './changelog.js'
import { accessLogCostMax, defaultSample, type AccessLogResult } from './access-log.js'
import {
  isolationGetConnections,
  isolationP99RatioMax,
  isolationQueryConnections,
  type IsolationResult,
} from './isolation.js'
import { queryResolutionsPerSecondMin, type EngineResult } from './engine.js'
import type { IngestResult } from './generate.js'
import type { BackupResult } from './backup.js'
import type { BinaryResult } from './binary.js'
import type { ClusterBenchResult } from './cluster.js'
import { restoreP99RatioMax, type RestoreBenchResult } from './restore.js'
import { retentionP99RatioMax, type RetentionBenchResult } from './retention.js'
import type { Memory } from './proc.js'
import { distinctQueryCount, type LoadResult, type ScenarioDefinition } from './scenarios.js'
import { dispatchShareMax, webhookRatioMin, type WebhookResult } from './webhooks.js'

export interface RestartResult {
  /** SIGTERM until the process exited. */
  readonly stopMs: number
  /** Spawn until /readyz answered 200. */
  readonly startToReadyMs: number
  readonly totalMs: number
}

export interface ScenarioResult {
  readonly name: string
  readonly title: string
  readonly responseBytes: number
  readonly real: LoadResult
  readonly bare: LoadResult
  /**
   * Share of the scenario's query SKUs the answer cache served (over the measured run; warm-up
   * included in results before 2026-11-29); null: no query.
   */
  readonly cacheHitRate: number | null
  /** Share of its prior prices served from the kept ones over the measured run; null: none asked (or absent). */
  readonly priorHitRate?: number | null
  /** Distinct requests the load cycles through. */
  readonly distinctRequests?: number
  /**
   * The same requests on the same data with the answer cache off (`PRICING_ANSWER_CACHE_ITEMS=0`,
   * a server started with that one setting changed); null for the GET, absent in earlier results.
   */
  readonly cacheOff?: LoadResult | null
  /**
   * The same requests on the server as shipped, in rounds alternating with the cache-off server
   * (bench/run.ts runCacheOff); absent in earlier results.
   */
  readonly defaultAgain?: LoadResult | null
  /** The median over those rounds of default CPU per request / cache-off CPU per request. */
  readonly cacheRatio?: number | null
  readonly cpuRatio: number
  readonly requestsRatio: number
  readonly targets: Pick<ScenarioDefinition, 'cpuRatioMax' | 'requestsRatioMin' | 'latencyP99MaxMs' | 'against'>
}

export interface Check {
  readonly figure: string
  readonly measured: string
  readonly target: string
  readonly pass: boolean
}

export interface BenchResults {
  readonly generatedAt: string
  readonly quick: boolean
  readonly environment: Record<string, string | number>
  readonly parameters: Record<string, string | number>
  readonly engine: EngineResult
  readonly referenceMs: number
  readonly ingest: IngestResult
  readonly memory: {
    /** Each point read twice: as found, then after a full GC (bench/gc.ts); the figures use the second. */
    readonly emptyBeforeGc: Memory
    readonly empty: Memory
    readonly afterIngestBeforeGc: Memory
    readonly afterIngest: Memory
    readonly afterRestartBeforeGc: Memory
    readonly afterRestart: Memory
    /** VmRSS after a restart / stored price versions. */
    readonly bytesPerVersion: number
    /** (VmRSS after a restart - VmRSS of the empty server) / stored price versions. */
    readonly bytesPerVersionDelta: number
    /** (VmRSS right after the ingest, no restart - VmRSS of the empty server) / stored price versions. */
    readonly liveBytesPerVersionDelta: number
    readonly anonBytesPerVersionDelta: number
  }
  readonly restartEmpty: RestartResult
  readonly restart: RestartResult
  /** A backup of the full tenant (backup.ts); absent in results of earlier builds. */
  readonly backup?: BackupResult
  /** The single executable (binary.ts); absent in results of earlier builds. */
  readonly binary?: BinaryResult
  readonly scenarios: ScenarioResult[]
  /** Changelog reads from the middle of a large log during ingest (changelog.ts). */
  readonly changelog: ChangelogResult
  /** Query and ingest throughput with webhooks and a slow receiver vs none (webhooks.ts). */
  readonly webhooks: WebhookResult
  /** GET throughput and CPU with the access log on vs off (access-log.ts). */
  readonly accessLog: AccessLogResult
  /** GETs alone and beside 1,000-SKU queries (isolation.ts). */
  readonly isolation: IsolationResult
  /** Restore of the full tenant, alone and under query load (restore.ts); absent in earlier results. */
  readonly restore?: RestoreBenchResult
  /** A history-retention pass over 3M versions (retention.ts); absent in earlier results. */
  readonly retention?: RetentionBenchResult
  /** Reads on one node vs a home and two replicas, replica lag under ingest (cluster.ts); absent in earlier results. */
  readonly cluster?: ClusterBenchResult
  readonly checks: Check[]
}

const integer = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 })
const oneDecimal = new Intl.NumberFormat('en-US', { minimumFractionDigits: 1, maximumFractionDigits: 1 })
const twoDecimals = new Intl.NumberFormat('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })
export const formatInteger = (value: number): string => integer.format(value)
const formatMiB = (bytes: number): string => `${oneDecimal.format(bytes / 1_048_576)} MiB`
const formatSeconds = (ms: number): string => `${twoDecimals.format(ms / 1000)} s`

/** Default / cache-off CPU per request: the median of the alternating rounds' ratios where there are some. */
function cacheRatio(scenario: ScenarioResult): number {
  if (scenario.cacheRatio !== undefined && scenario.cacheRatio !== null) return scenario.cacheRatio
  return scenario.real.cpuMicrosPerRequest / scenario.cacheOff!.cpuMicrosPerRequest
}

export function scenarioChecks(scenario: ScenarioResult, _index = 0, all: readonly ScenarioResult[] = []): Check[] {
  const { real, targets } = scenario
  const checks: Check[] = [
    {
      figure: `${scenario.name}: server CPU per request vs bare`,
      measured: `${twoDecimals.format(scenario.cpuRatio)}x`,
      target: `<= ${targets.cpuRatioMax}x`,
      pass: scenario.cpuRatio <= targets.cpuRatioMax,
    },
  ]
  if (targets.requestsRatioMin !== null) {
    checks.push({
      figure: `${scenario.name}: req/s vs bare`,
      measured: `${Math.round(scenario.requestsRatio * 100)}%`,
      target: `>= ${Math.round(targets.requestsRatioMin * 100)}%`,
      pass: scenario.requestsRatio >= targets.requestsRatioMin,
    })
  }
  if (targets.latencyP99MaxMs !== null) {
    checks.push({
      figure: `${scenario.name}: p99 latency`,
      measured: `${real.latencyP99Ms} ms`,
      target: `< ${targets.latencyP99MaxMs} ms`,
      pass: real.latencyP99Ms < targets.latencyP99MaxMs,
    })
  }
  const repeated = scenario.distinctRequests !== undefined && scenario.distinctRequests < distinctQueryCount
  if (scenario.cacheHitRate !== null && !repeated) {
    checks.push({
      figure: `${scenario.name}: answer cache hits (${distinctQueryCount} distinct bodies)`,
      measured: `${(scenario.cacheHitRate * 100).toFixed(1)}%`,
      target: '<= 5%',
      pass: scenario.cacheHitRate <= 0.05,
    })
  }
  const off = scenario.cacheOff
  if (off !== undefined && off !== null) {
    const ratio = cacheRatio(scenario)
    checks.push(
      repeated
        ? {
            figure: `${scenario.name}: CPU per request, default vs answer cache off (a cache helps repeats; hit rate ${((scenario.cacheHitRate ?? 0) * 100).toFixed(1)}%)`,
            measured: `${twoDecimals.format(ratio)}x`,
            target: '< 0.8x',
            pass: ratio < 0.8,
          }
        : {
            figure: `${scenario.name}: CPU per request, default vs answer cache off (a cache never costs a miss)`,
            measured: `${twoDecimals.format(ratio)}x`,
            target: '<= 1.10x',
            pass: ratio <= 1.1,
          },
    )
  }
  const against = targets.against === undefined ? undefined : all.find((other) => other.name === targets.against!.name)
  if (targets.against !== undefined && against !== undefined) {
    const ratio = real.cpuMicrosPerRequest / against.real.cpuMicrosPerRequest
    const prior =
      scenario.priorHitRate === undefined || scenario.priorHitRate === null
        ? ''
        : `; ${(scenario.priorHitRate * 100).toFixed(1)}% of prior prices kept`
    checks.push({
      figure: `${scenario.name}: CPU per request vs ${against.name} (the same bodies without the option${prior})`,
      measured: `${twoDecimals.format(ratio)}x`,
      target: `<= ${twoDecimals.format(targets.against.cpuRatioMax)}x`,
      pass: ratio <= targets.against.cpuRatioMax,
    })
  }
  checks.push({
    figure: `${scenario.name}: non-2xx answers and errors`,
    measured: formatInteger(real.non2xx + real.errors),
    target: '0',
    pass: real.non2xx + real.errors === 0,
  })
  return checks
}

/** Issue 12: ingest through the API, and RSS growth per version after a live ingest and after a restart. */
const ingestItemsPerSecondMin = 250_000
const liveBytesPerVersionMax = 150
const restartBytesPerVersionMax = 100

export function globalChecks(results: Omit<BenchResults, 'checks'>, restartMsMax: number): Check[] {
  const { memory, ingest } = results
  const engineChecks = results.engine.cases
    .filter((entry) => entry.name.startsWith('query-'))
    .map((entry) => {
      const minimum = entry.name.endsWith('-common')
        ? queryResolutionsPerSecondMin.common
        : queryResolutionsPerSecondMin.mixed
      return {
        figure: `engine: ${entry.title}, resolutions/s`,
        measured: formatInteger(entry.resolutionsPerSecond),
        target: `>= ${formatInteger(minimum)}`,
        pass: entry.resolutionsPerSecond >= minimum,
      }
    })
  return [
    ...engineChecks,
    {
      figure: 'ingest: price versions/s (POST /price/batch, 2,500-item batches, durable 202)',
      measured: formatInteger(ingest.itemsPerSecond),
      target: `>= ${formatInteger(ingestItemsPerSecondMin)}`,
      pass: ingest.itemsPerSecond >= ingestItemsPerSecondMin,
    },
    {
      figure: 'RSS growth per price version right after the live ingest (vs the empty server; both after a full GC)',
      measured: `${oneDecimal.format(memory.liveBytesPerVersionDelta)} B`,
      target: `<= ${liveBytesPerVersionMax} B`,
      pass: memory.liveBytesPerVersionDelta <= liveBytesPerVersionMax,
    },
    {
      figure: 'RSS growth per price version after a restart (vs the empty server; both after a full GC)',
      measured: `${oneDecimal.format(memory.bytesPerVersionDelta)} B`,
      target: `<= ${restartBytesPerVersionMax} B`,
      pass: memory.bytesPerVersionDelta <= restartBytesPerVersionMax,
    },
    {
      figure: 'restart with the full workload until ready',
      measured: formatSeconds(results.restart.totalMs),
      target: `< ${restartMsMax / 1000} s`,
      pass: results.restart.totalMs < restartMsMax,
    },
  ]
}

export function changelogChecks(changelog: ChangelogResult): Check[] {
  const checks: Check[] = changelog.reads.map((read) => ({
    figure: `${read.name}: p99 latency, ${formatInteger(changelog.log.entryCount)}-entry log, during ingest`,
    measured: `${read.load.latencyP99Ms} ms`,
    target: `< ${changelogP99MaxMs} ms`,
    pass: read.load.latencyP99Ms < changelogP99MaxMs,
  }))
  const failures = changelog.reads.reduce(
    (sum, read) => sum + read.load.non2xx + read.load.errors + read.writes.refused,
    0,
  )
  checks.push({
    figure: 'changelog: non-2xx reads, errors and refused write batches',
    measured: formatInteger(failures),
    target: '0',
    pass: failures === 0,
  })
  return checks
}

export function webhookChecks(webhooks: WebhookResult): Check[] {
  const ratio = (figure: string, value: number): Check => ({
    figure: `webhooks: ${figure} with ${webhooks.webhookCount} webhooks vs none (means of alternating phases)`,
    measured: `${Math.round(value * 100)}%`,
    target: `>= ${Math.round(webhookRatioMin * 100)}%`,
    pass: value >= webhookRatioMin,
  })
  return [
    ratio(`${webhooks.queryScenario} req/s`, webhooks.queryRatio),
    ratio('ingest price versions/s', webhooks.ingestRatio),
    {
      figure: 'webhooks: dispatcher main-thread time, share of the phases with webhooks',
      measured: `${(webhooks.dispatchShare * 100).toFixed(2)}%`,
      target: `< ${dispatchShareMax * 100}%`,
      pass: webhooks.dispatchShare < dispatchShareMax,
    },
    {
      figure: 'webhooks: events the receiver got (delivery ran)',
      measured: formatInteger(webhooks.receivedEvents),
      target: '> 0',
      pass: webhooks.receivedEvents > 0,
    },
  ]
}

export function isolationChecks(isolation: IsolationResult): Check[] {
  return [
    {
      figure: `isolation: GET p99 with 1,000-SKU queries on ${isolationQueryConnections} connections vs GETs alone (${isolationGetConnections} connections; p99s below 1 ms, autocannon's resolution, count as 1 ms)`,
      measured: `${twoDecimals.format(isolation.p99Ratio)}x (${isolation.getWithQueries.latencyP99Ms} vs ${isolation.getAlone.latencyP99Ms} ms)`,
      target: `<= ${isolationP99RatioMax}x`,
      pass: isolation.p99Ratio <= isolationP99RatioMax,
    },
  ]
}

function isolationTable(isolation: IsolationResult): Table {
  const row = (label: string, load: IsolationResult['getAlone']) => [
    label,
    formatInteger(load.requestsPerSecond),
    String(load.latencyP50Ms),
    String(load.latencyP99Ms),
    String(load.latencyMaxMs),
    formatInteger(load.non2xx + load.errors),
  ]
  return {
    header: ['load', 'req/s', 'p50 ms', 'p99 ms', 'max ms', 'non-2xx + errors'],
    rightAligned: [false, true, true, true, true, true],
    rows: [
      row(`GET alone, ${isolationGetConnections} connections`, isolation.getAlone),
      row(`GET beside the queries, ${isolationGetConnections} connections`, isolation.getWithQueries),
      row(`1,000-SKU queries, ${isolationQueryConnections} connections`, isolation.queries),
    ],
  }
}

const loadRow = (label: string, load: LoadResult): string[] => [
  label,
  formatInteger(load.requestsPerSecond),
  String(load.latencyP50Ms),
  String(load.latencyP99Ms),
  String(load.latencyMaxMs),
  formatInteger(load.non2xx + load.errors),
]

export function restoreChecks(restore: RestoreBenchResult): Check[] {
  const during = restore.queriesDuringRestore
  return [
    {
      figure: `restore under load: 100-SKU query p99 during the restore vs without (${formatInteger(restore.changedPairs)} pairs differ)`,
      measured: `${twoDecimals.format(restore.p99Ratio)}x (${during.latencyP99Ms} vs ${restore.queriesAlone.latencyP99Ms} ms)`,
      target: `<= ${restoreP99RatioMax}x`,
      pass: restore.p99Ratio <= restoreP99RatioMax,
    },
    {
      figure: 'restore under load: non-2xx answers and errors of the queries',
      measured: formatInteger(during.non2xx + during.errors),
      target: '0',
      pass: during.non2xx + during.errors === 0,
    },
  ]
}

export function retentionChecks(retention: RetentionBenchResult): Check[] {
  const during = retention.queriesDuringPass
  return [
    {
      figure: 'retention pass: 100-SKU query p99 on the bench tenant during the pass vs without',
      measured: `${twoDecimals.format(retention.p99Ratio)}x (${during.latencyP99Ms} ms)`,
      target: `<= ${retentionP99RatioMax}x`,
      pass: retention.p99Ratio <= retentionP99RatioMax,
    },
    {
      figure: 'retention pass: non-2xx answers and errors of the queries',
      measured: formatInteger(during.non2xx + during.errors),
      target: '0',
      pass: during.non2xx + during.errors === 0,
    },
    {
      figure:
        'retention pass: memory and disk fall (price columns, server RssAnon after a GC, compacted copy of the tenant)',
      measured: `${formatMiB(retention.priceBytesBefore)} -> ${formatMiB(retention.priceBytesAfter)}; ${formatMiB(retention.rssAnonBeforeBytes)} -> ${formatMiB(retention.rssAnonAfterBytes)}; ${formatMiB(retention.backupBeforeBytes)} -> ${formatMiB(retention.backupAfterBytes)}`,
      target: 'all fall',
      pass:
        retention.priceBytesAfter < retention.priceBytesBefore &&
        retention.rssAnonAfterBytes < retention.rssAnonBeforeBytes &&
        retention.backupAfterBytes < retention.backupBeforeBytes,
    },
  ]
}

function restoreTable(restore: RestoreBenchResult, retention: RetentionBenchResult | undefined): Table {
  const rows = [
    loadRow('100-SKU queries, no restore', restore.queriesAlone),
    loadRow(`100-SKU queries during the restore (from 1 s before it to its end)`, restore.queriesDuringRestore),
  ]
  if (retention !== undefined)
    rows.push(
      loadRow('100-SKU queries during the retention pass (from 1 s before it to its end)', retention.queriesDuringPass),
    )
  return {
    header: ['load', 'req/s', 'p50 ms', 'p99 ms', 'max ms', 'non-2xx + errors'],
    rightAligned: [false, true, true, true, true, true],
    rows,
  }
}

function dataSafetyTable(restore: RestoreBenchResult | undefined, retention: RetentionBenchResult | undefined): Table {
  const rows: string[][] = []
  if (restore !== undefined) {
    rows.push([
      `restore of the full tenant, ${formatInteger(restore.changedPairs)} pairs differing: alone, request to completed (server)`,
      `${formatSeconds(restore.alone.elapsedMs)} (${formatSeconds(restore.alone.serverMs)})`,
    ])
    rows.push([
      'the same restore under the 100-SKU query load',
      `${formatSeconds(restore.underLoad.elapsedMs)} (${formatSeconds(restore.underLoad.serverMs)})`,
    ])
  }
  if (retention !== undefined) {
    rows.push([
      'retention pass: versions before / removed / pairs / steps',
      `${formatInteger(retention.versionsBefore)} / ${formatInteger(retention.versionsRemoved)} / ${formatInteger(retention.pairs)} / ${formatInteger(retention.steps)}`,
    ])
    rows.push([
      'retention pass: time / versions examined per second',
      `${formatSeconds(retention.passMs)} / ${formatInteger(retention.versionsPerSecond)}`,
    ])
    rows.push([
      "the tenant's price columns before / after the pass",
      `${formatMiB(retention.priceBytesBefore)} / ${formatMiB(retention.priceBytesAfter)}`,
    ])
    rows.push([
      'server RSS before / after the pass (after a full GC, no load); of it RssAnon',
      `${formatMiB(retention.rssBeforeBytes)} / ${formatMiB(retention.rssAfterBytes)}; ${formatMiB(retention.rssAnonBeforeBytes)} / ${formatMiB(retention.rssAnonAfterBytes)}`,
    ])
    rows.push([
      'the tenant as a compacted copy before / after; its live data file after',
      `${formatMiB(retention.backupBeforeBytes)} / ${formatMiB(retention.backupAfterBytes)}; ${formatMiB(retention.dataFileBytes)}`,
    ])
  }
  return { header: ['figure', 'value'], rightAligned: [false, true], rows }
}

export function accessLogChecks(accessLog: AccessLogResult): Check[] {
  const atDefault = accessLog.samples.find((result) => result.sample === defaultSample)!
  const every = accessLog.samples.find((result) => result.sample === 1)!
  const cost = 1 - atDefault.requestsRatio
  return [
    {
      figure: `access log: ${accessLog.scenario} req/s lost with it on at the default sample ${defaultSample} (alternating slices on one process)`,
      measured: `${(cost * 100).toFixed(1)}%`,
      target: `<= ${accessLogCostMax * 100}%`,
      pass: cost <= accessLogCostMax,
    },
    {
      figure: `access log: lines written per request at the default sample (it ran; about ${defaultSample})`,
      measured: twoDecimals.format(atDefault.linesPerRequest),
      target: `>= ${defaultSample / 2}`,
      pass: atDefault.linesPerRequest >= defaultSample / 2,
    },
    {
      figure: 'access log: lines written per request at sample 1 (every answer)',
      measured: twoDecimals.format(every.linesPerRequest),
      target: '>= 0.99',
      pass: every.linesPerRequest >= 0.99,
    },
  ]
}

type Table = { header: string[]; rows: string[][]; rightAligned: boolean[] }

function scenarioTable(scenarios: readonly ScenarioResult[]): Table {
  return {
    header: [
      'scenario',
      'distinct requests',
      'req/s',
      'p50 ms',
      'p99 ms',
      'CPU us/req',
      'cores',
      'answer cache hits',
      'prior prices kept',
      'bare req/s',
      'bare CPU us/req',
      'CPU ratio',
      'req/s ratio',
      'rounds: default CPU us/req',
      'rounds: cache off CPU us/req',
      'rounds: cache off p99 ms',
      'CPU default / cache off (median of rounds)',
    ],
    // The scenario's name left, every figure right.
    rightAligned: [false, ...Array<boolean>(16).fill(true)],
    rows: scenarios.map((scenario) => [
      scenario.name,
      scenario.distinctRequests === undefined ? '' : formatInteger(scenario.distinctRequests),
      formatInteger(scenario.real.requestsPerSecond),
      String(scenario.real.latencyP50Ms),
      String(scenario.real.latencyP99Ms),
      oneDecimal.format(scenario.real.cpuMicrosPerRequest),
      twoDecimals.format(scenario.real.cpuCores),
      scenario.cacheHitRate === null ? '' : `${(scenario.cacheHitRate * 100).toFixed(1)}%`,
      scenario.priorHitRate === undefined || scenario.priorHitRate === null
        ? ''
        : `${(scenario.priorHitRate * 100).toFixed(1)}%`,
      formatInteger(scenario.bare.requestsPerSecond),
      oneDecimal.format(scenario.bare.cpuMicrosPerRequest),
      `${twoDecimals.format(scenario.cpuRatio)}x`,
      `${Math.round(scenario.requestsRatio * 100)}%`,
      ...(scenario.cacheOff === undefined || scenario.cacheOff === null
        ? ['', '', '', '']
        : [
            scenario.defaultAgain === undefined || scenario.defaultAgain === null
              ? ''
              : oneDecimal.format(scenario.defaultAgain.cpuMicrosPerRequest),
            oneDecimal.format(scenario.cacheOff.cpuMicrosPerRequest),
            String(scenario.cacheOff.latencyP99Ms),
            `${twoDecimals.format(cacheRatio(scenario))}x`,
          ]),
    ]),
  }
}

function figureTable(results: BenchResults): Table {
  const { memory, ingest } = results
  const rss = (value: Memory) =>
    `${formatMiB(value.rssBytes)} (anon ${formatMiB(value.rssAnonBytes)}, file ${formatMiB(value.rssFileBytes)})`
  return {
    header: ['figure', 'value'],
    rightAligned: [false, false],
    rows: [
      ['price versions stored', formatInteger(ingest.priceVersionCount)],
      [
        'ingest: price versions/s',
        `${formatInteger(ingest.itemsPerSecond)} (${formatInteger(ingest.requestCount)} requests in ${formatSeconds(ingest.elapsedMs)})`,
      ],
      [
        'ingest: server CPU per version',
        `${oneDecimal.format(ingest.serverCpuMicrosPerItem)} us (${twoDecimals.format(ingest.serverCores)} cores)`,
      ],
      ['reference data, articles, mappings', formatSeconds(results.referenceMs)],
      [
        'RSS empty server (after restart): as found / after a full GC',
        `${rss(memory.emptyBeforeGc)} / ${rss(memory.empty)}`,
      ],
      [
        'RSS after ingest: as found / after a full GC',
        `${rss(memory.afterIngestBeforeGc)} / ${rss(memory.afterIngest)}`,
      ],
      [
        'RSS after restart: as found / after a full GC',
        `${rss(memory.afterRestartBeforeGc)} / ${rss(memory.afterRestart)}`,
      ],
      ['bytes per version: RSS after restart / versions', oneDecimal.format(memory.bytesPerVersion)],
      [
        'bytes per version: delta to empty server, after restart (both after a GC)',
        `${oneDecimal.format(memory.bytesPerVersionDelta)} (anon ${oneDecimal.format(memory.anonBytesPerVersionDelta)})`,
      ],
      [
        'bytes per version: delta to empty server, right after the live ingest (both after a GC)',
        oneDecimal.format(memory.liveBytesPerVersionDelta),
      ],
      [
        'restart, full workload: stop / start to ready / total',
        `${formatSeconds(results.restart.stopMs)} / ${formatSeconds(results.restart.startToReadyMs)} / ${formatSeconds(results.restart.totalMs)}`,
      ],
      ['restart, empty server: total', formatSeconds(results.restartEmpty.totalMs)],
      ...(results.backup === undefined
        ? []
        : [
            [
              'backup of the full tenant (POST, LMDB compacted copy, verified): time / size / live data file',
              `${formatSeconds(results.backup.elapsedMs)} / ${formatMiB(results.backup.backupBytes)} / ${formatMiB(results.backup.dataFileBytes)}`,
            ],
          ]),
    ],
  }
}

function engineTable(engine: EngineResult): Table {
  return {
    header: ['engine case', 'resolutions/s', 'us per operation'],
    rightAligned: [false, true, true],
    rows: engine.cases.map((entry) => [
      entry.title,
      formatInteger(entry.resolutionsPerSecond),
      twoDecimals.format(entry.microsPerOperation),
    ]),
  }
}

function changelogTable(changelog: ChangelogResult): Table {
  const { log } = changelog
  const types = Object.entries(log.typeCounts)
    .sort((a, b) => b[1] - a[1])
    .map(([type, count]) => `${type} ${formatInteger(count)}`)
    .join(', ')
  const source = log.fromCache ? `, cached run; copied in ${formatSeconds(log.copyMs)}` : ''
  return {
    header: ['figure', 'value'],
    rightAligned: [false, false],
    rows: [
      ['log entries (TenantStore.commit, log only)', `${formatInteger(log.entryCount)} (${types})`],
      [
        'log generation',
        `${formatSeconds(log.generationMs)} (${formatInteger(log.entriesPerSecond)} entries/s${source})`,
      ],
      ['log on disk', `${formatMiB(log.diskBytes)} (${oneDecimal.format(log.diskBytes / log.entryCount)} B per entry)`],
      ['server start to ready on the log', formatSeconds(changelog.startToReadyMs)],
    ],
  }
}

function changelogReadTable(changelog: ChangelogResult): Table {
  return {
    header: [
      'read',
      'req/s',
      'p50 ms',
      'p99 ms',
      'max ms',
      'page KiB',
      'server cores',
      'ingest items/s',
      'batch p50 ms',
      'batch p99 ms',
    ],
    rightAligned: [false, true, true, true, true, true, true, true, true, true],
    rows: changelog.reads.map((read) => [
      read.name,
      formatInteger(read.load.requestsPerSecond),
      String(read.load.latencyP50Ms),
      String(read.load.latencyP99Ms),
      String(read.load.latencyMaxMs),
      oneDecimal.format(read.responseBytes / 1024),
      twoDecimals.format(read.load.cpuCores),
      formatInteger(read.writes.itemsPerSecond),
      oneDecimal.format(read.writes.batchP50Ms),
      oneDecimal.format(read.writes.batchP99Ms),
    ]),
  }
}

function webhookTable(webhooks: WebhookResult): Table {
  const row = (label: string, phase: WebhookResult['phases'][number]) => [
    label,
    formatInteger(phase.ingest.itemsPerSecond),
    oneDecimal.format(phase.ingest.serverCpuMicrosPerItem),
    formatInteger(phase.query.requestsPerSecond),
    String(phase.query.latencyP50Ms),
    String(phase.query.latencyP99Ms),
    oneDecimal.format(phase.query.cpuMicrosPerRequest),
  ]
  const percent = (value: number) => `${Math.round(value * 100)}%`
  const activeLabel = `${webhooks.webhookCount} active, receiver answers after ${formatSeconds(webhooks.receiverDelayMs)}`
  return {
    header: [
      'phase: webhooks',
      'ingest versions/s',
      'ingest CPU us/version',
      `${webhooks.queryScenario} req/s`,
      'p50 ms',
      'p99 ms',
      'CPU us/req',
    ],
    rightAligned: [false, true, true, true, true, true, true],
    rows: [
      ...webhooks.phases.map((phase, index) => row(`${index + 1}: ${phase.webhooks ? activeLabel : 'none'}`, phase)),
      [
        'mean with / mean without',
        percent(webhooks.ingestRatio),
        percent(webhooks.ingestCpuRatio),
        percent(webhooks.queryRatio),
        '',
        '',
        percent(webhooks.queryCpuRatio),
      ],
      [
        'receiver got',
        `${formatInteger(webhooks.receivedEvents)} events in ${formatInteger(webhooks.receivedPosts)} POSTs`,
        '',
        '',
        '',
        '',
        '',
      ],
      [
        'dispatcher main-thread time',
        `${(webhooks.dispatchShare * 100).toFixed(2)}% of the phases with webhooks`,
        `${webhooks.dispatchMicrosPerVersion.toFixed(2)} us/version`,
        '',
        '',
        '',
        '',
      ],
    ],
  }
}

function accessLogTable(accessLog: AccessLogResult): Table {
  const percent = (value: number) => `${(value * 100).toFixed(1)}%`
  return {
    header: [
      'access log',
      'windows',
      'req/s',
      'p50 ms',
      'p99 ms',
      'CPU us/req',
      'cores',
      'stdout lines',
      'lines/req',
      'req/s vs off (rounds)',
      'CPU vs off',
    ],
    rightAligned: [false, true, true, true, true, true, true, true, true, true, true],
    rows: accessLog.samples.flatMap((result) => {
      const row = (label: string, windows: typeof result.on, ratios: string[]) => [
        label,
        String(windows.windowCount),
        formatInteger(windows.requestsPerSecond),
        oneDecimal.format(windows.latencyP50Ms),
        oneDecimal.format(windows.latencyP99Ms),
        oneDecimal.format(windows.cpuMicrosPerRequest),
        twoDecimals.format(windows.cpuCores),
        formatInteger(windows.lineCount),
        twoDecimals.format(windows.lineCount / windows.requestCount),
        ...ratios,
      ]
      const name = result.sample === defaultSample ? `sample ${result.sample} (default)` : `sample ${result.sample}`
      return [
        row(`${name}: off`, result.off, ['', '']),
        row(`${name}: on`, result.on, [
          `${percent(result.requestsRatio)} (${percent(result.requestsRatioMin)}..${percent(result.requestsRatioMax)})`,
          percent(result.cpuRatio),
        ]),
      ]
    }),
  }
}

function binaryTable(binary: BinaryResult): Table {
  return {
    header: ['figure', 'single executable', 'checkout (node dist/server/start.js)'],
    rightAligned: [false, true, true],
    rows: [
      ['size / build time (npm run build:binary)', `${formatMiB(binary.bytes)} / ${formatSeconds(binary.buildMs)}`, ''],
      [
        'first start, empty data directory',
        formatSeconds(binary.binary.firstStartMs),
        formatSeconds(binary.checkout.firstStartMs),
      ],
      ['restart on that data', formatSeconds(binary.binary.restartMs), formatSeconds(binary.checkout.restartMs)],
    ],
  }
}

export function clusterTable(cluster: ClusterBenchResult): Table {
  if (cluster.skipped !== null)
    return { header: ['figure', 'value'], rightAligned: [false, false], rows: [['not measured', cluster.skipped]] }
  const load = (result: LoadResult | null): string[] =>
    result === null
      ? ['', '', '']
      : [
          formatInteger(result.requestsPerSecond),
          `${oneDecimal.format(result.cpuMicrosPerRequest)} us`,
          `${result.latencyP99Ms} ms`,
        ]
  const ingest = cluster.ingest
  return {
    header: ['figure', 'req/s (or value)', 'server CPU / request', 'p99'],
    rightAligned: [false, true, true, true],
    rows: [
      ...(cluster.homeIngest === null || cluster.homeIngest === undefined
        ? []
        : [
            [
              `ingest on the home, generator's price batches (${formatInteger(cluster.homeIngest.priceVersionCount)} versions), versions/s`,
              formatInteger(cluster.homeIngest.itemsPerSecond),
              `${oneDecimal.format(cluster.homeIngest.serverCpuMicrosPerItem)} us / version`,
              '',
            ],
          ]),
      ['GETs on the home alone', ...load(cluster.oneNode)],
      ['GETs on the home + 2 replicas (same connections, split)', ...load(cluster.threeNodes)],
      [
        'three nodes / one node, req/s',
        cluster.readRatio === null ? '' : `${twoDecimals.format(cluster.readRatio)}x`,
        '',
        '',
      ],
      ...(ingest === null
        ? []
        : [
            ['ingest to the home, versions/s', formatInteger(ingest.versionsPerSecond), '', ''],
            [
              `replica lag, publish to applied (${formatInteger(ingest.commits)} commits): median / max`,
              `${oneDecimal.format(ingest.lagP50Ms)} ms / ${oneDecimal.format(ingest.lagMaxMs)} ms`,
              '',
              `${oneDecimal.format(ingest.lagP99Ms)} ms`,
            ],
          ]),
      ...(cluster.failover === null || cluster.failover === undefined
        ? []
        : [
            [
              `failover: home killed (SIGKILL) until a replica acknowledges a write (lease TTL ${formatInteger(cluster.failover.leaseTtlMs)} ms)`,
              `${formatInteger(cluster.failover.takeoverMs)} ms`,
              '',
              '',
            ],
          ]),
    ],
  }
}

export function clusterChecks(cluster: ClusterBenchResult): Check[] {
  if (cluster.ingest === null) return []
  return [
    {
      figure: 'cluster: ingest held at 10,000 versions/s to the home',
      measured: formatInteger(cluster.ingest.versionsPerSecond),
      target: '>= 9,500',
      pass: cluster.ingest.versionsPerSecond >= 9_500,
    },
    {
      figure: 'cluster: replica lag p99 under that ingest',
      measured: `${oneDecimal.format(cluster.ingest.lagP99Ms)} ms`,
      target: '< 1,000 ms',
      pass: cluster.ingest.lagP99Ms < 1_000,
    },
    ...(cluster.failover === null || cluster.failover === undefined
      ? []
      : [
          {
            // docs/cluster.md: a killed home is replaced within TTL + TTL/3; half a TTL of room for the stream's catch-up and a busy machine.
            figure: 'cluster: a killed home replaced (a replica acknowledges writes)',
            measured: `${formatInteger(cluster.failover.takeoverMs)} ms`,
            target: `< ${formatInteger(cluster.failover.leaseTtlMs * 1.5)} ms (1.5 x TTL)`,
            pass: cluster.failover.takeoverMs < cluster.failover.leaseTtlMs * 1.5,
          },
        ]),
  ]
}

export function checkTable(checks: readonly Check[]): Table {
  return {
    header: ['target', 'measured', 'target value', 'result'],
    rightAligned: [false, true, false, false],
    rows: checks.map((check) => [check.figure, check.measured, check.target, check.pass ? 'PASS' : 'FAIL']),
  }
}

export function renderText(table: Table): string {
  const widths = table.header.map((cell, column) =>
    Math.max(cell.length, ...table.rows.map((row) => row[column]!.length)),
  )
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, column) =>
        table.rightAligned[column] ? cell.padStart(widths[column]!) : cell.padEnd(widths[column]!),
      )
      .join('  ')
      .trimEnd()
  return [line(table.header), widths.map((width) => '-'.repeat(width)).join('  '), ...table.rows.map(line)].join('\n')
}

/** The server's settings other than the shipped defaults, as the tables' titles name them. */
function settingsLabel(results: BenchResults): string {
  const changed = results.parameters['serverSettings']
  return typeof changed === 'string' && changed !== '' ? ` but ${changed}` : ''
}

function renderMarkdown(table: Table): string {
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`
  const rule = `|${table.rightAligned.map((right) => (right ? ' ---: ' : ' --- ')).join('|')}|`
  return [line(table.header), rule, ...table.rows.map(line)].join('\n')
}

function tables(results: BenchResults): { title: string; table: Table }[] {
  return [
    {
      title: `HTTP scenarios, the shipped defaults${settingsLabel(results)} (server vs bare uWS endpoint, same requests; "rounds": a second server with \`PRICING_ANSWER_CACHE_ITEMS=0\` on a copy of the data, the query scenarios sent to both, one unmeasured round each, then 6 rounds of 3 s with the side that goes first alternating)`,
      table: scenarioTable(results.scenarios),
    },
    { title: 'Ingest, memory, restart', table: figureTable(results) },
    { title: 'Engine only (no HTTP)', table: engineTable(results.engine) },
    { title: 'Changelog: the log', table: changelogTable(results.changelog) },
    {
      title: `Changelog reads from the middle (${results.changelog.readConnections} connections) during ingest (${writeLanes} x ${writeBatchItems}-item price batches in flight)`,
      table: changelogReadTable(results.changelog),
    },
    {
      title: 'Webhook impact (same server and data, change.events.enabled on in every phase)',
      table: webhookTable(results.webhooks),
    },
    {
      title: `Access log cost (${results.accessLog.scenario} scenario on one server process; per sample, one load run in ${results.accessLog.rounds} rounds of off, on, on, off windows of ${results.accessLog.windowMs} ms, switched by PUT /admin/access-log, ${results.accessLog.settleMs} ms uncounted before each window)`,
      table: accessLogTable(results.accessLog),
    },
    ...(results.binary === undefined
      ? []
      : [
          {
            title: `The single executable (Node.js ${results.binary.nodeVersion}): spawn to /readyz 200, median of 3`,
            table: binaryTable(results.binary),
          },
        ]),
    ...(results.cluster === undefined
      ? []
      : [
          {
            title: `A cluster on Redis on this machine (${formatInteger(results.cluster.skuCount)} SKUs; three nodes and the load generators share the machine's cores)`,
            table: clusterTable(results.cluster),
          },
        ]),
    {
      title: 'Big queries beside small ones (two load generators at once; server CPU is the whole process)',
      table: isolationTable(results.isolation),
    },
    ...(results.restore === undefined
      ? []
      : [
          {
            title: 'Restore and history retention: figures',
            table: dataSafetyTable(results.restore, results.retention),
          },
          {
            title: 'Restore and history retention: 100-SKU queries on the bench tenant meanwhile',
            table: restoreTable(results.restore, results.retention),
          },
        ]),
    { title: 'Targets', table: checkTable(results.checks) },
  ]
}

export function renderTerminal(results: BenchResults): string {
  return tables(results)
    .map(({ title, table }) => `${title}\n\n${renderText(table)}\n`)
    .join('\n')
}

export function renderResultsMarkdown(results: BenchResults): string {
  const environment = Object.entries(results.environment)
    .map(([name, value]) => `${name} ${value}`)
    .join(', ')
  const parameters = Object.entries(results.parameters)
    .map(([name, value]) => `${name}=${value}`)
    .join(', ')
  const sections = tables(results).map(({ title, table }) => `## ${title}\n\n${renderMarkdown(table)}\n`)
  return [
    `# Bench results${results.quick ? ' (quick)' : ''}`,
    '',
    `Generated by \`npm run bench${results.quick ? ':quick' : ''}\` at ${results.generatedAt}; do not edit, run the bench again.`,
    'What each figure means: bench/README.md.',
    '',
    `Environment: ${environment}.`,
    '',
    `Parameters: ${parameters}.`,
    '',
    ...sections,
  ].join('\n')
}
