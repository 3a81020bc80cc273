/**
 * The access log's cost: the GET scenario (scenarios.ts, 1,000 distinct price URLs) on the bench
 * server and data with the access log off and on (PRICING_ACCESS_LOG=true with the default sample:
 * 10% of 2xx answers, every 4xx and 5xx), in four phases: off, on, on, off. The configuration is read at
 * start, so the server restarts before every phase, and every phase runs on a fresh process after
 * the same warm-up; placed symmetrically, a drift over the run (machine load) cancels. The server's
 * stdout is read by this process, as a log shipper would read it, so req/s includes that reading.
 * The check: the mean req/s with the log on is at most 5% below the mean with it off; the lines
 * the server wrote in the phases with it on must cover their requests, else the log was not on.
 * @module
 */
import { measureLoad, scenarioDefinitions, type LoadParameters, type LoadResult } from './scenarios.js'
import type { PricingServer, TenantClient } from './server-process.js'
import type { WorkloadShape } from './workload.js'

/** The access log may cost at most this share of GET req/s (issue 15). */
export const accessLogCostMax = 0.05
/** The scenario measured in every phase. */
const getScenario = 'get'
/** Off, on, on, off. */
const phasePlan: readonly boolean[] = [false, true, true, false]
/** Lines of the last batch reach stdout at most 100 ms after the load ends (server/access-log.ts). */
const flushWaitMs = 300

export interface AccessLogPhase {
  readonly accessLog: boolean
  readonly load: LoadResult
  /** stdout lines the server wrote during the phase (warm-up included). */
  readonly lineCount: number
}

export interface AccessLogResult {
  readonly scenario: string
  /** In the order run (phasePlan). */
  readonly phases: readonly AccessLogPhase[]
  /** Mean with the access log on / mean with it off: req/s, and server CPU per request. */
  readonly requestsRatio: number
  readonly cpuRatio: number
  /** Lines written in the phases with the log on / requests measured in them (warm-up lines make it > 1). */
  readonly linesPerRequest: number
}

export interface AccessLogOptions {
  readonly shape: WorkloadShape
  readonly load: LoadParameters
  readonly slug: string
  readonly progress: (message: string) => void
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Runs on the bench server after the other scenarios (the workload is stored). Leaves the server
 * running with the access log off, as it found it.
 */
export async function runAccessLogBench(server: PricingServer, client: TenantClient, options: AccessLogOptions): Promise<AccessLogResult> {
  const scenario = scenarioDefinitions(options.slug, options.shape).find((definition) => definition.name === getScenario)!
  const phases: AccessLogPhase[] = []
  for (const [index, accessLog] of phasePlan.entries()) {
    options.progress(`access log ${accessLog ? 'on' : 'off'} (phase ${index + 1} of ${phasePlan.length}): restart, ${getScenario}`)
    await server.stop()
    await server.start(accessLog ? { PRICING_ACCESS_LOG: 'true' } : {})
    await server.waitReady()
    const headers = { authorization: `Bearer ${await client.refreshToken()}` }
    const linesBefore = server.stdoutLineCount
    const load = await measureLoad(server.url, server.pid, scenario.requests, headers, options.load)
    await sleep(flushWaitMs)
    phases.push({ accessLog, load, lineCount: server.stdoutLineCount - linesBefore })
  }
  await server.stop()
  await server.start()
  await server.waitReady()
  const mean = (on: boolean, figure: (phase: AccessLogPhase) => number): number => {
    const chosen = phases.filter((phase) => phase.accessLog === on)
    return chosen.reduce((sum, phase) => sum + figure(phase), 0) / chosen.length
  }
  const onPhases = phases.filter((phase) => phase.accessLog)
  return {
    scenario: getScenario,
    phases,
    requestsRatio: mean(true, (phase) => phase.load.requestsPerSecond) / mean(false, (phase) => phase.load.requestsPerSecond),
    cpuRatio: mean(true, (phase) => phase.load.cpuMicrosPerRequest) / mean(false, (phase) => phase.load.cpuMicrosPerRequest),
    linesPerRequest: onPhases.reduce((sum, phase) => sum + phase.lineCount, 0) / onPhases.reduce((sum, phase) => sum + phase.load.requestCount, 0),
  }
}
