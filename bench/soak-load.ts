/**
 * One minute of the soak's read load in a process of its own: autocannon at a fixed rate over one
 * of the bench's request sets, rebuilt here from the same seed (requests cannot cross a process
 * boundary). In the soak's own process, beside the price writer and the webhook receiver, one
 * event loop could not send more than about half of the GETs asked for; a client per kind is what
 * a pricing service sees anyway.
 * @module
 */
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import { runJsonChild } from './json-child.js'
import { scenarioDefinitions } from './scenarios.js'
import type { WorkloadShape } from './workload.js'

export interface SoakLoad {
  readonly url: string
  readonly slug: string
  readonly shape: WorkloadShape
  /** The scenario's name (`get`, `query-100`). */
  readonly scenario: string
  readonly headers: Record<string, string>
  readonly connections: number
  readonly overallRate: number
  readonly durationS: number
}

/** One kind's minute: requests answered, their p99, and non-2xx, failed or timed-out requests. */
export interface KindMinute {
  readonly requests: number
  readonly p99Ms: number
  readonly errors: number
}

/** Runs `load` in a child process and answers its figures. */
export function runSoakLoad(load: SoakLoad): Promise<KindMinute> {
  return runJsonChild<KindMinute>(fileURLToPath(import.meta.url), load, `soak load process for ${load.scenario}`)
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const load = JSON.parse(process.argv[2]!) as SoakLoad
  const scenario = scenarioDefinitions(load.slug, load.shape).find((definition) => definition.name === load.scenario)
  if (scenario === undefined) throw new Error(`no scenario ${load.scenario}`)
  const result = await autocannon({
    url: load.url,
    pipelining: 1,
    timeout: 30,
    duration: load.durationS,
    headers: load.headers,
    connections: load.connections,
    requests: scenario.requests,
    overallRate: load.overallRate,
  })
  const minute: KindMinute = {
    requests: result['2xx'] + result.non2xx,
    p99Ms: result.latency.p99,
    errors: result.errors + result.timeouts + result.non2xx,
  }
  process.stdout.write(JSON.stringify(minute))
}
