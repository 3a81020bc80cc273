/**
 * The in-process benches' workload (bench/profile-explain.ts, bench/prior-price.ts): the engine
 * bench's catalogue and price book (bench/engine.ts) and random 100-SKU queries over every
 * pricelist at one instant, with a timer of CPU time per query (the machine is shared).
 * @module
 */
import { buildCatalog, buildPriceBook } from './engine.js'
import { currencyCode, distinctSkus, pricelists, seededRandom, taxAreaCode, type WorkloadShape } from './workload.js'
import type { QueryInput } from '../workers/execute.js'

export interface InProcessWorkload {
  readonly nowMs: number
  readonly catalog: ReturnType<typeof buildCatalog>
  readonly book: ReturnType<typeof buildPriceBook>
  /** The pricelists' codes, sorted. */
  readonly codes: readonly string[]
  readonly inputs: readonly QueryInput[]
  /** CPU microseconds per query of `run` over the inputs. */
  timed(run: (input: QueryInput) => number, queries?: readonly QueryInput[]): number
}

/** `queryCount` 100-SKU queries (their SKUs drawn with the shape's seed plus `seedOffset`). */
export function inProcessWorkload(shape: WorkloadShape, queryCount: number, seedOffset: number): InProcessWorkload {
  const nowMs = Date.now()
  const catalog = buildCatalog(shape, pricelists, nowMs)
  const book = buildPriceBook(shape, pricelists, nowMs)
  const codes = pricelists.map((definition) => definition.code).sort()
  const random = seededRandom(shape.seed + seedOffset)
  const inputs: QueryInput[] = Array.from({ length: queryCount }, () => ({
    at: nowMs,
    cacheable: false,
    taxArea: taxAreaCode,
    skus: distinctSkus(random, shape.skuCount, 100),
    pricelists: codes,
    currency: currencyCode,
    rounding: null,
    sortOrder: null,
    quantity: 1,
  }))
  let sink = 0
  const timed = (run: (input: QueryInput) => number, queries: readonly QueryInput[] = inputs): number => {
    const started = process.cpuUsage()
    for (const input of queries) sink += run(input)
    const used = process.cpuUsage(started)
    if (Number.isNaN(sink)) throw new Error('unreachable')
    return (used.user + used.system) / queries.length
  }
  return { nowMs, catalog, book, codes, inputs, timed }
}
