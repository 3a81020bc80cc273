/**
 * `npm run bench:prior-price`: what `prior_price: true` adds to a 100-SKU price query, in process
 * (CPU time per query, no HTTP), on the engine bench's workload (bench/engine.ts: every price written
 * three times, the first superseded, one scheduled ahead; an inheriting list; 10 pricelists), beside
 * the plain query computed every time (`executeQuery` with an `as_of`):
 *  - cold: the prior-price cache emptied before every query, each SKU's history walked;
 *  - repeated: the same queries again after a pass that kept their prior prices (the hit rate of
 *    the timed pass printed beside it);
 *  - through the answer cache, as a storefront's repeated queries at now go (the shipped default):
 *    the plain query and the one with prior prices, each after passes that filled the cache, with
 *    the answer cache's hit rate beside them (each item kept with its prior price beside its bytes).
 * Medians of alternating rounds. Flags: --skus N (bench default), --rounds N (7), --queries N (100).
 * @module
 */
import { inProcessWorkload } from './in-process.js'
import { flagValue } from './flags.js'
import { defaultShape } from './workload.js'
import { answerCacheCounts, executeQuery, type QueryInput } from '../workers/execute.js'
import { clearPriorPriceCache, priorPriceCacheCounts, priorPriceQueryBytes } from '../workers/prior-price-query.js'

const argv = process.argv.slice(2)
const numberFlag = (name: string, fallback: number): number => Number(flagValue(argv, name) ?? fallback)
const shape = { ...defaultShape, skuCount: numberFlag('skus', defaultShape.skuCount) }
const roundCount = numberFlag('rounds', 7)
const queryCount = numberFlag('queries', 100)
const days = 30

const { catalog, book, codes, inputs, timed } = inProcessWorkload(shape, queryCount, 13)
let sink = 0
const plain = () => timed((input) => executeQuery(catalog, book, input).length)
const cold = () =>
  timed((input) => {
    clearPriorPriceCache(catalog)
    return priorPriceQueryBytes(catalog, book, input, days).length
  })
const withPrior = (input: QueryInput) => priorPriceQueryBytes(catalog, book, input, days).length
/** The queries once (their prior prices kept), then timed again. */
const repeated = () => {
  for (const input of inputs) sink += withPrior(input)
  before = { ...priorPriceCacheCounts }
  return timed(withPrior)
}
let before = { ...priorPriceCacheCounts }
/**
 * 16 of the queries asked at now (no as_of), as the main bench's repeated scenario asks its category
 * pages: the answer cache serves them, as it does a storefront's.
 */
const atNow = inputs.slice(0, 16).map((input) => ({ ...input, cacheable: true }))
const throughCache = (ask: (input: QueryInput) => number) => {
  // Passes until the cache serves every item: after repeats that missed (their first pass) it
  // stays aside for 1,024 queries, then serves a few and fills their items, and so on, as it would
  // in the first minutes of a storefront's traffic.
  for (let pass = 0; pass < 2_000; pass++) {
    const missed = answerCacheCounts.misses
    for (const input of atNow) sink += ask(input)
    if (answerCacheCounts.misses === missed && pass > 0) break
  }
  const counted = { ...answerCacheCounts }
  const figure = timed(ask, atNow)
  const hitsThen = answerCacheCounts.hits - counted.hits
  cacheShares.push(hitsThen / Math.max(1, hitsThen + answerCacheCounts.misses - counted.misses))
  return figure
}
const cacheShares: number[] = []
const plainCached = () => throughCache((input) => executeQuery(catalog, book, input, 'bench').length)
const priorCached = () => throughCache((input) => priorPriceQueryBytes(catalog, book, input, days, 'bench').length)

function median(values: readonly number[]): number {
  const sorted = [...values].sort((left, right) => left - right)
  return sorted[Math.floor(sorted.length / 2)]!
}

plain()
cold()
repeated()
const figures = {
  plain: [] as number[],
  cold: [] as number[],
  repeated: [] as number[],
  plainCached: [] as number[],
  priorCached: [] as number[],
}
const ratios = { cold: [] as number[], repeated: [] as number[], cached: [] as number[] }
let hits = 0
let looked = 0
for (let round = 0; round < roundCount; round++) {
  const plainFigure = plain()
  const coldFigure = cold()
  const repeatedFigure = repeated()
  hits += priorPriceCacheCounts.hits - before.hits
  looked += priorPriceCacheCounts.hits + priorPriceCacheCounts.misses - before.hits - before.misses
  figures.plain.push(plainFigure)
  figures.cold.push(coldFigure)
  figures.repeated.push(repeatedFigure)
  ratios.cold.push(coldFigure / plainFigure)
  ratios.repeated.push(repeatedFigure / plainFigure)
  const plainCachedFigure = plainCached()
  const priorCachedFigure = priorCached()
  figures.plainCached.push(plainCachedFigure)
  figures.priorCached.push(priorCachedFigure)
  ratios.cached.push(priorCachedFigure / plainCachedFigure)
}
process.stdout.write(
  `${shape.skuCount.toLocaleString('en-US')} SKUs, 100-SKU queries over ${codes.length} pricelists, CPU per query ` +
    `(medians of ${roundCount} alternating rounds): plain ${median(figures.plain).toFixed(0)} us; with prior prices, ` +
    `cold ${median(figures.cold).toFixed(0)} us (${median(ratios.cold).toFixed(2)}x), repeated ` +
    `${median(figures.repeated).toFixed(0)} us (${median(ratios.repeated).toFixed(2)}x, ` +
    `${((100 * hits) / Math.max(1, looked)).toFixed(1)}% of prior prices from the cache)\n` +
    `through the answer cache (queries at now, after passes that filled it; ` +
    `${(100 * median(cacheShares)).toFixed(1)}% of items from it): plain ${median(figures.plainCached).toFixed(0)} us, ` +
    `with prior prices ${median(figures.priorCached).toFixed(0)} us (${median(ratios.cached).toFixed(2)}x)\n`,
)
if (Number.isNaN(sink)) throw new Error('unreachable')
