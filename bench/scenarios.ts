/**
 * HTTP scenarios with fixed parameters, each run against the pricing server and against the bare
 * endpoint with the same requests: req/s and latency from autocannon, and the server's CPU time per
 * request from /proc over the measured interval (the load generator shares the machine, so CPU per
 * request is the figure that compares across runs; req/s compares only within one run).
 * @module
 */
import autocannon, { type Request, type Result } from 'autocannon'
import { cpuTicks } from './proc.js'
import {
  currencyCode,
  distinctSkus,
  pricelists,
  seededRandom,
  skuCode,
  taxAreaCode,
  type WorkloadShape,
} from './workload.js'

export interface LoadParameters {
  readonly connections: number
  readonly durationS: number
  /** An unmeasured run first, so the JIT has compiled the path being measured. */
  readonly warmupS: number
  readonly clockTicks: number
  /**
   * Requests sent before the warm-up, unmeasured (0 or absent: none): one pass over a scenario's
   * distinct bodies, for a figure of a server that has answered each once (`warmPass`).
   */
  readonly warmupRequests?: number
}

export interface LoadResult {
  readonly requestCount: number
  readonly requestsPerSecond: number
  readonly latencyP50Ms: number
  readonly latencyP99Ms: number
  readonly latencyMaxMs: number
  readonly cpuMicrosPerRequest: number
  /** Server CPU time over the interval divided by its length: cores kept busy. */
  readonly cpuCores: number
  readonly non2xx: number
  readonly errors: number
}

export interface ScenarioDefinition {
  readonly name: string
  readonly title: string
  readonly requests: Request[]
  /** Distinct requests the load cycles through. */
  readonly distinctRequests: number
  /** Targets as ratios to the bare endpoint, and an absolute latency bound. */
  readonly cpuRatioMax: number
  readonly requestsRatioMin: number | null
  readonly latencyP99MaxMs: number | null
  /**
   * Measured after one unmeasured pass over its distinct bodies (a server that has answered each
   * once: what it keeps per SKU is kept), with that cache's hit rate beside the figure.
   */
  readonly warmPass?: boolean
  /** Its figure against another scenario's (the same bodies without an option): at most this ratio. */
  readonly against?: { readonly name: string; readonly cpuRatioMax: number }
}

/** Runs autocannon against `url` (warm-ups first) and reads the CPU ticks of `pid` around the measured run. */
export async function measureLoad(
  url: string,
  pid: number,
  requests: Request[],
  headers: Record<string, string>,
  parameters: LoadParameters,
  /** Called after the warm-up, just before the measured run (to read counters around it). */
  beforeMeasured: (() => Promise<void>) | null = null,
): Promise<LoadResult> {
  const options = { url, connections: parameters.connections, pipelining: 1, timeout: 30, headers, requests }
  if ((parameters.warmupRequests ?? 0) > 0) await autocannon({ ...options, amount: parameters.warmupRequests })
  if (parameters.warmupS > 0) await autocannon({ ...options, duration: parameters.warmupS })
  if (beforeMeasured !== null) await beforeMeasured()
  const ticksBefore = cpuTicks(pid)
  const started = performance.now()
  const result = await autocannon({ ...options, duration: parameters.durationS })
  return loadResult(result, (performance.now() - started) / 1000, (cpuTicks(pid) - ticksBefore) / parameters.clockTicks)
}

/** An autocannon result with the server CPU seconds spent over its `elapsedS`. */
export function loadResult(result: Result, elapsedS: number, cpuS: number): LoadResult {
  const requestCount = result['2xx'] + result.non2xx
  return {
    requestCount,
    requestsPerSecond: requestCount / elapsedS,
    latencyP50Ms: result.latency.p50,
    latencyP99Ms: result.latency.p99,
    latencyMaxMs: result.latency.max,
    cpuMicrosPerRequest: requestCount === 0 ? Number.NaN : (cpuS * 1e6) / requestCount,
    cpuCores: cpuS / elapsedS,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  }
}

/** Distinct GET URLs; each connection cycles through the list. */
const distinctGetCount = 1_000
/**
 * Distinct bodies of a query scenario (made before the load starts). They are handed out in turn
 * across all connections (one shared counter), so a body comes back only after every other one,
 * as storefronts' carts and category pages do: answer caches get no help from repeats.
 */
export const distinctQueryCount = 4_096
/**
 * Distinct bodies of the repeated scenario: a few category pages that many shoppers open, the
 * traffic an answer cache is for.
 */
export const repeatedQueryCount = 16

function queryRequests(
  slug: string,
  shape: WorkloadShape,
  skuCount: number,
  seed: number,
  bodyCount = distinctQueryCount,
  extra: Readonly<Record<string, unknown>> = {},
): Request[] {
  const random = seededRandom(seed)
  const bodies = Array.from({ length: bodyCount }, () =>
    JSON.stringify({
      currency_code: currencyCode,
      pricelist_filter: {},
      skus: distinctSkus(random, shape.skuCount, skuCount),
      tax_area: taxAreaCode,
      ...extra,
    }),
  )
  let next = 0
  const request: Request = {
    method: 'POST',
    path: `/t/${slug}/price/query`,
    headers: { 'content-type': 'application/json' },
    body: bodies[0],
    setupRequest: (built) => ({ ...built, body: bodies[next++ % bodies.length] }),
  }
  return [request]
}

export function scenarioDefinitions(slug: string, shape: WorkloadShape): ScenarioDefinition[] {
  const random = seededRandom(shape.seed + 1)
  const gets: Request[] = Array.from({ length: distinctGetCount }, () => {
    const sku = skuCode(Math.floor(random() * shape.skuCount))
    const pricelist = pricelists[Math.floor(random() * pricelists.length)]!.code
    return { method: 'GET', path: `/t/${slug}/price/${sku}/${pricelist}/${taxAreaCode}` }
  })
  return [
    {
      name: 'get',
      title: 'GET taxed price (1 SKU, 1 pricelist)',
      requests: gets,
      distinctRequests: distinctGetCount,
      cpuRatioMax: 1.3,
      requestsRatioMin: 0.5,
      latencyP99MaxMs: null,
    },
    {
      name: 'query-100',
      title: `POST /price/query 100 SKUs x ${pricelists.length} pricelists, ${distinctQueryCount.toLocaleString('en-US')} distinct bodies`,
      requests: queryRequests(slug, shape, 100, shape.seed + 2),
      distinctRequests: distinctQueryCount,
      cpuRatioMax: 5,
      requestsRatioMin: null,
      latencyP99MaxMs: 25,
    },
    {
      name: 'query-1000',
      title: `POST /price/query 1,000 SKUs x ${pricelists.length} pricelists, ${distinctQueryCount.toLocaleString('en-US')} distinct bodies`,
      requests: queryRequests(slug, shape, 1_000, shape.seed + 3),
      distinctRequests: distinctQueryCount,
      cpuRatioMax: 8,
      requestsRatioMin: null,
      latencyP99MaxMs: 150,
    },
    {
      name: 'query-100-repeated',
      title: `POST /price/query 100 SKUs x ${pricelists.length} pricelists, ${repeatedQueryCount} distinct bodies (category pages)`,
      requests: queryRequests(slug, shape, 100, shape.seed + 4, repeatedQueryCount),
      distinctRequests: repeatedQueryCount,
      cpuRatioMax: 5,
      requestsRatioMin: null,
      latencyP99MaxMs: 25,
    },
    {
      // query-100's bodies with the EU prior price (issue 30: it adds at most 20% to the plain
      // query), after one pass over them: each SKU's prior price kept, as on a storefront that has
      // run a while (the prior-price cache's hit rate beside it; bench:prior-price has the cold cost).
      name: 'query-100-prior',
      title: `POST /price/query 100 SKUs x ${pricelists.length} pricelists with prior_price, the ${distinctQueryCount.toLocaleString('en-US')} bodies of query-100, after one pass over them`,
      requests: queryRequests(slug, shape, 100, shape.seed + 2, distinctQueryCount, { prior_price: true }),
      distinctRequests: distinctQueryCount,
      cpuRatioMax: 6,
      requestsRatioMin: null,
      latencyP99MaxMs: null,
      warmPass: true,
      against: { name: 'query-100', cpuRatioMax: 1.2 },
    },
    {
      // The same bodies with the EU prior price (issue 30: it adds at most 20% to the plain query).
      name: 'query-100-repeated-prior',
      title: `POST /price/query 100 SKUs x ${pricelists.length} pricelists with prior_price, the ${repeatedQueryCount} bodies of query-100-repeated`,
      requests: queryRequests(slug, shape, 100, shape.seed + 4, repeatedQueryCount, { prior_price: true }),
      distinctRequests: repeatedQueryCount,
      cpuRatioMax: 6,
      requestsRatioMin: null,
      latencyP99MaxMs: 30,
      against: { name: 'query-100-repeated', cpuRatioMax: 1.2 },
    },
  ]
}
