/**
 * `npm run bench:prior-price`: what `prior_price: true` adds to a 100-SKU price query, in process
 * (CPU time per query, no HTTP), on the engine bench's workload (bench/engine.ts: every price written
 * three times, the first superseded, one scheduled ahead; an inheriting list; 10 pricelists), beside
 * the plain query computed every time (`executeQuery` with an `as_of`):
 *  - cold: the prior-price cache emptied before every query, each SKU's history walked;
 *  - repeated: the same queries again after a pass that kept their prior prices (the hit rate of
 *    the timed pass printed beside it).
 * Medians of alternating rounds. Flags: --skus N (bench default), --rounds N (7), --queries N (100).
 * @module
 */
import { inProcessWorkload } from './in-process.js'
import { flagValue } from './flags.js'
import { defaultShape } from './workload.js'
import { executeQuery, type QueryInput } from '../workers/execute.js'
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

function median(values: readonly number[]): number {
  const sorted = [...values].sort((left, right) => left - right)
  return sorted[Math.floor(sorted.length / 2)]!
}

plain()
cold()
repeated()
const figures = { plain: [] as number[], cold: [] as number[], repeated: [] as number[] }
const ratios = { cold: [] as number[], repeated: [] as number[] }
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
}
process.stdout.write(
  `${shape.skuCount.toLocaleString('en-US')} SKUs, 100-SKU queries over ${codes.length} pricelists, CPU per query ` +
    `(medians of ${roundCount} alternating rounds): plain ${median(figures.plain).toFixed(0)} us; with prior prices, ` +
    `cold ${median(figures.cold).toFixed(0)} us (${median(ratios.cold).toFixed(2)}x), repeated ` +
    `${median(figures.repeated).toFixed(0)} us (${median(ratios.repeated).toFixed(2)}x, ` +
    `${((100 * hits) / Math.max(1, looked)).toFixed(1)}% of prior prices from the cache)\n`,
)
if (Number.isNaN(sink)) throw new Error('unreachable')
