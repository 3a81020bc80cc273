/**
 * A load generator in a process of its own: `measureLoad` of one named scenario, run by a child
 * process, which prints its LoadResult as JSON on stdout. The isolation scenario runs its big
 * queries here, so that the GETs' load generator does not share an event loop with the one that
 * receives 200 KB answers: the GETs' latency then measures the server, not the generator's own
 * queue (two clients of a pricing service are two processes, too). The child rebuilds the
 * scenario's requests from the same seed (functions cannot cross a process boundary).
 * @module
 */
import { fileURLToPath } from 'node:url'
import { runJsonChild } from './json-child.js'
import { measureLoad, scenarioDefinitions, type LoadParameters, type LoadResult } from './scenarios.js'
import type { WorkloadShape } from './workload.js'

interface Job {
  readonly url: string
  readonly pid: number
  readonly slug: string
  readonly shape: WorkloadShape
  readonly scenario: string
  readonly headers: Record<string, string>
  readonly load: LoadParameters
}

/** Runs `measureLoad` for `job.scenario` in a child process. */
export function measureLoadInProcess(job: Job): Promise<LoadResult> {
  return runJsonChild<LoadResult>(fileURLToPath(import.meta.url), job, `load process for ${job.scenario}`)
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const job = JSON.parse(process.argv[2]!) as Job
  const definition = scenarioDefinitions(job.slug, job.shape).find((candidate) => candidate.name === job.scenario)
  if (definition === undefined) throw new Error(`no scenario ${job.scenario}`)
  const result = await measureLoad(job.url, job.pid, definition.requests, job.headers, job.load)
  process.stdout.write(JSON.stringify(result))
}
