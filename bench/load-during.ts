/**
 * Load for exactly as long as an operation takes: autocannon runs one second alone, then while
 * `during` runs, and stops when it resolves. Restore and retention (issue 8) measure query latency
 * this way, so the figure is not diluted by load before or after.
 * @module
 */
import autocannon, { type Request } from 'autocannon'
import { cpuTicks } from './proc.js'
import { loadResult, type LoadParameters, type LoadResult } from './scenarios.js'

/** Runs `requests` from a second before `during` until it resolves. */
export async function loadDuring<T>(
  url: string,
  pid: number,
  requests: Request[],
  headers: Record<string, string>,
  load: LoadParameters,
  during: () => Promise<T>,
): Promise<{ load: LoadResult; run: T }> {
  const ticksBefore = cpuTicks(pid)
  const started = performance.now()
  const instance = autocannon({
    url,
    connections: load.connections,
    pipelining: 1,
    timeout: 30,
    headers,
    requests,
    duration: 600,
  })
  // A second of load first, so the operation starts under it.
  await new Promise((resolve) => setTimeout(resolve, 1_000))
  const run = await during()
  instance.stop()
  const result = await instance
  return {
    run,
    load: loadResult(result, (performance.now() - started) / 1000, (cpuTicks(pid) - ticksBefore) / load.clockTicks),
  }
}
