/**
 * A whole diff walk (bench/diff-workload.ts) in a process of its own, for bench:diff-beside: the
 * diff's pages are hundreds of kilobytes of JSON to parse, and parsing them on the event loop that
 * also runs autocannon's GETs would add the client's own waits to the GETs' latency, which is to
 * measure the server. The child prints its Walk as JSON on stdout.
 * @module
 */
import { fileURLToPath } from 'node:url'
import { walkDiff, type DiffWalkOptions, type Walk } from './diff-workload.js'
import { runJsonChild } from './json-child.js'
import { request } from './server-process.js'

interface Job {
  /** The tenant's API root, `<server>/t/<slug>`. */
  readonly baseUrl: string
  readonly token: string
  readonly options: DiffWalkOptions
}

/** Walks every page of the diff in a child process. */
export function walkDiffInProcess(job: Job): Promise<Walk> {
  return runJsonChild<Walk>(fileURLToPath(import.meta.url), job, 'diff walk process')
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const job = JSON.parse(process.argv[2]!) as Job
  const walk = await walkDiff(job.options, async (body) => {
    const answer = await request(`${job.baseUrl}/price/diff`, 'POST', { body, token: job.token })
    if (answer.status !== 200) throw new Error(`POST /price/diff: ${answer.status} ${answer.text.slice(0, 500)}`)
    return answer
  })
  process.stdout.write(JSON.stringify(walk))
}
