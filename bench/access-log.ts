/**
 * The access log's cost: the GET scenario (scenarios.ts, 1,000 distinct price URLs) on the bench
 * server and data with the access log on, against the same with it off, for two samples: the
 * default (10% of 2xx answers, every 4xx and 5xx; the target) and 1 (every answer; reported).
 *
 * Method. For each sample, one load run that does not stop, on one server process, cut into
 * windows in rounds of off, on, on, off; the log is switched between windows with
 * PUT /admin/access-log, and the first moments after a switch are not counted. Why so: on this
 * 2-core machine, GET req/s and CPU per request move by ±8% between windows of the same state (the
 * load generator shares the cores, the host's load changes), more than the cost being measured, and
 * they move the same way with the server pinned to a core of its own. So many short windows, placed
 * symmetrically to cancel a drift, and averaged; one process and one load run remove the
 * differences between processes (JIT, heap layout) and between runs (connection set-up). Each sample
 * has its own run with its own "off" windows, so the costlier sample's after-effects never land on
 * the other's. A first round warms every path up and is not counted. A state's figure is its
 * windows' answers over their time; each round's ratio is kept too, to show the spread. The
 * server's stdout is read by this process, as a log shipper would read it, so req/s includes that
 * reading.
 * The checks (report.ts): req/s at the default sample at most 5% below off; the lines written while
 * on must cover the requests (about 0.1 and 1 per request), else the log was not on.
 * @module
 */
import autocannon from 'autocannon'
import { cpuTicks } from './proc.js'
import { request, type PricingServer, type TenantClient } from './server-process.js'
import { scenarioDefinitions, type LoadParameters } from './scenarios.js'
import type { WorkloadShape } from './workload.js'

/** The access log may cost at most this share of GET req/s at its default sample (issue 15). */
export const accessLogCostMax = 0.05
/** The server's default (platform/config.ts accessLogSample); the bench asks the server to be sure. */
export const defaultSample = 0.1
/** The samples measured: the default (the target) and every answer. */
const samples: readonly number[] = [defaultSample, 1]
/** The scenario measured. */
const getScenario = 'get'
/** One round; symmetric, so that a drift within a round cancels. */
const roundPlan: readonly boolean[] = [false, true, true, false]
/** Time after each switch (and at the start of a window after none) that is not counted. */
const settleMs = 300
/** Latency histogram: 0.1 ms buckets up to 10 s (the run's time-out is far below). */
const latencyBucketMs = 0.1
const latencyBucketCount = 100_000

/** What the counted windows of one state add up to. */
export interface AccessLogWindows {
  readonly windowCount: number
  readonly requestCount: number
  readonly requestsPerSecond: number
  readonly latencyP50Ms: number
  readonly latencyP99Ms: number
  readonly cpuMicrosPerRequest: number
  readonly cpuCores: number
  /** stdout lines the server wrote during these windows. */
  readonly lineCount: number
  readonly non2xx: number
}

/** One sample against off, from the same run. */
export interface AccessLogSampleResult {
  readonly sample: number
  readonly on: AccessLogWindows
  readonly off: AccessLogWindows
  /** req/s on over req/s off, and CPU per request on over off. */
  readonly requestsRatio: number
  readonly cpuRatio: number
  /** The lowest and highest per-round req/s ratio (the spread). */
  readonly requestsRatioMin: number
  readonly requestsRatioMax: number
  /** Lines per request while on: about the sample. */
  readonly linesPerRequest: number
  /** Every counted window in the order run. */
  readonly windows: readonly {
    readonly on: boolean
    readonly requestsPerSecond: number
    readonly cpuMicrosPerRequest: number
  }[]
}

export interface AccessLogResult {
  readonly scenario: string
  readonly rounds: number
  readonly windowMs: number
  readonly settleMs: number
  /** The default sample first. */
  readonly samples: readonly AccessLogSampleResult[]
}

export interface AccessLogOptions {
  readonly shape: WorkloadShape
  readonly load: LoadParameters
  /** Rounds counted per sample, after one round of warm-up. */
  readonly rounds: number
  readonly windowMs: number
  readonly slug: string
  readonly progress: (message: string) => void
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Counts of one window, taken while the load runs. */
interface Window {
  readonly on: boolean
  readonly round: number
  readonly answers: number
  readonly non2xx: number
  readonly elapsedS: number
  readonly cpuS: number
  readonly lineCount: number
  readonly latencies: Uint32Array
}

/**
 * Runs on the bench server after the other scenarios (the workload is stored). Restarts it first
 * and leaves it running with the access log off.
 */
export async function runAccessLogBench(
  server: PricingServer,
  client: TenantClient,
  options: AccessLogOptions,
): Promise<AccessLogResult> {
  const scenario = scenarioDefinitions(options.slug, options.shape).find(
    (definition) => definition.name === getScenario,
  )!
  await server.stop()
  await server.start()
  await server.waitReady()
  const headers = { authorization: `Bearer ${await client.refreshToken()}` }
  const configured = await switchTo(server, null)
  if (configured.sample !== defaultSample)
    throw new Error(
      `the server's default access-log sample is ${configured.sample}, the bench expects ${defaultSample}`,
    )
  const results: AccessLogSampleResult[] = []
  for (const sample of samples) {
    options.progress(
      `access log, sample ${sample}: ${options.rounds} rounds of off, on, on, off (${options.windowMs} ms windows) after a warm-up round`,
    )
    const windowCount = (options.rounds + 1) * roundPlan.length
    const durationS = Math.ceil((windowCount * (options.windowMs + settleMs + 200)) / 1000) + 30
    const run = autocannon({
      url: server.url,
      connections: options.load.connections,
      pipelining: 1,
      timeout: 30,
      headers,
      requests: scenario.requests,
      duration: durationS,
    })
    // Counters the windows read; the latency histogram is swapped at the start of each window.
    let answers = 0
    let non2xx = 0
    const uncounted = new Uint32Array(latencyBucketCount)
    let latencies = uncounted
    run.on('response', (_client, statusCode, _bytes, latencyMs) => {
      answers++
      if (statusCode < 200 || statusCode > 299) non2xx++
      latencies[Math.min(latencyBucketCount - 1, Math.floor(latencyMs / latencyBucketMs))]!++
    })
    const windows: Window[] = []
    let current = false
    for (let round = 0; round <= options.rounds; round++) {
      for (const on of roundPlan) {
        if (on !== current) {
          await switchTo(server, on ? sample : null)
          current = on
        }
        await sleep(settleMs)
        const before = {
          answers,
          non2xx,
          at: performance.now(),
          ticks: cpuTicks(server.pid),
          lines: server.stdoutLineCount,
        }
        latencies = new Uint32Array(latencyBucketCount)
        await sleep(options.windowMs)
        const counted = latencies
        latencies = uncounted
        const window: Window = {
          on,
          round,
          answers: answers - before.answers,
          non2xx: non2xx - before.non2xx,
          elapsedS: (performance.now() - before.at) / 1000,
          cpuS: (cpuTicks(server.pid) - before.ticks) / options.load.clockTicks,
          // Lines reach stdout within the log's 100 ms flush interval: these count the lines of
          // answers from about 100 ms before the window to 100 ms before its end, as many.
          lineCount: server.stdoutLineCount - before.lines,
          latencies: counted,
        }
        if (round > 0) windows.push(window)
      }
    }
    run.stop()
    await run
    results.push(compare(sample, windows, options.rounds))
    await switchTo(server, null)
    current = false
  }
  return { scenario: getScenario, rounds: options.rounds, windowMs: options.windowMs, settleMs, samples: results }
}

/** PUT /admin/access-log on the running server (null: off); answers its settings. */
async function switchTo(server: PricingServer, sample: number | null): Promise<{ enabled: boolean; sample: number }> {
  const body = sample === null ? { enabled: false } : { enabled: true, sample }
  const answer = await request(`${server.url}/admin/access-log`, 'PUT', { token: server.options.adminToken, body })
  if (answer.status !== 200) throw new Error(`PUT /admin/access-log answered ${answer.status} ${answer.text}`)
  return JSON.parse(answer.text) as { enabled: boolean; sample: number }
}

function compare(sample: number, windows: readonly Window[], rounds: number): AccessLogSampleResult {
  const on = summarize(windows.filter((window) => window.on))
  const off = summarize(windows.filter((window) => !window.on))
  const perRound: number[] = []
  for (let round = 1; round <= rounds; round++) {
    const within = windows.filter((window) => window.round === round)
    perRound.push(
      summarize(within.filter((window) => window.on)).requestsPerSecond /
        summarize(within.filter((window) => !window.on)).requestsPerSecond,
    )
  }
  return {
    sample,
    on,
    off,
    requestsRatio: on.requestsPerSecond / off.requestsPerSecond,
    cpuRatio: on.cpuMicrosPerRequest / off.cpuMicrosPerRequest,
    requestsRatioMin: Math.min(...perRound),
    requestsRatioMax: Math.max(...perRound),
    linesPerRequest: on.lineCount / on.requestCount,
    windows: windows.map((window) => ({
      on: window.on,
      requestsPerSecond: window.answers / window.elapsedS,
      cpuMicrosPerRequest: (window.cpuS * 1e6) / window.answers,
    })),
  }
}

function summarize(windows: readonly Window[]): AccessLogWindows {
  let requestCount = 0
  let elapsedS = 0
  let cpuS = 0
  const latencies = new Uint32Array(latencyBucketCount)
  for (const window of windows) {
    requestCount += window.answers
    elapsedS += window.elapsedS
    cpuS += window.cpuS
    for (let bucket = 0; bucket < latencyBucketCount; bucket++) latencies[bucket]! += window.latencies[bucket]!
  }
  return {
    windowCount: windows.length,
    requestCount,
    requestsPerSecond: requestCount / elapsedS,
    latencyP50Ms: percentile(latencies, 0.5),
    latencyP99Ms: percentile(latencies, 0.99),
    cpuMicrosPerRequest: (cpuS * 1e6) / requestCount,
    cpuCores: cpuS / elapsedS,
    lineCount: windows.reduce((sum, window) => sum + window.lineCount, 0),
    non2xx: windows.reduce((sum, window) => sum + window.non2xx, 0),
  }
}

/** The upper edge of the bucket holding the `share` quantile, in ms. */
function percentile(histogram: Uint32Array, share: number): number {
  let total = 0
  for (const count of histogram) total += count
  const wanted = Math.ceil(total * share)
  let seen = 0
  for (let bucket = 0; bucket < histogram.length; bucket++) {
    seen += histogram[bucket]!
    if (seen >= wanted) return Math.round((bucket + 1) * latencyBucketMs * 10) / 10
  }
  return Number.NaN
}
