/**
 * Big queries do not stall small ones (issue 12, point 3). GETs on 16 connections run alone, then
 * the same GETs again while 1,000-SKU queries run on 8 other connections (two load generators at
 * once, the queries' in a process of its own); the GETs' p99 with the queries beside them must stay within 3x of their p99 alone. The
 * queries go to the worker pool above its size threshold, so the main thread keeps answering GETs.
 * @module
 */
import { measureLoadInProcess } from './load-process.js'
import { measureLoad, scenarioDefinitions, type LoadParameters, type LoadResult } from './scenarios.js'
import type { PricingServer, TenantClient } from './server-process.js'
import type { WorkloadShape } from './workload.js'

/** The GETs' p99 with big queries beside them, at most this multiple of their p99 alone. */
export const isolationP99RatioMax = 3
export const isolationGetConnections = 16
export const isolationQueryConnections = 8

export interface IsolationResult {
  readonly getAlone: LoadResult
  readonly getWithQueries: LoadResult
  readonly queries: LoadResult
  /** getWithQueries p99 / getAlone p99. */
  readonly p99Ratio: number
}

export interface IsolationOptions {
  readonly shape: WorkloadShape
  readonly load: LoadParameters
  readonly slug: string
  readonly progress: (message: string) => void
}

export async function runIsolationBench(
  server: PricingServer,
  client: TenantClient,
  options: IsolationOptions,
): Promise<IsolationResult> {
  const definitions = scenarioDefinitions(options.slug, options.shape)
  const gets = definitions.find((definition) => definition.name === 'get')!.requests
  const headers = { authorization: `Bearer ${await client.refreshToken()}` }
  options.progress(`isolation: GETs alone on ${isolationGetConnections} connections`)
  const getAlone = await measureLoad(server.url, server.pid, gets, headers, {
    ...options.load,
    connections: isolationGetConnections,
  })
  options.progress(`isolation: GETs with 1,000-SKU queries on ${isolationQueryConnections} more connections`)
  const [getWithQueries, queries] = await Promise.all([
    measureLoad(server.url, server.pid, gets, headers, { ...options.load, connections: isolationGetConnections }),
    // In a process of its own (bench/load-process.ts), as a second client would be.
    measureLoadInProcess({
      url: server.url,
      pid: server.pid,
      slug: options.slug,
      shape: options.shape,
      scenario: 'query-1000',
      headers,
      load: { ...options.load, connections: isolationQueryConnections },
    }),
  ])
  return {
    getAlone,
    getWithQueries,
    queries,
    p99Ratio: getWithQueries.latencyP99Ms / Math.max(getAlone.latencyP99Ms, 1),
  }
}
