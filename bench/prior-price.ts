/**
 * `npm run bench:prior-price`: what `prior_price: true` adds to a 100-SKU price query, in process
 * (CPU time per query, no HTTP), on the engine bench's workload (bench/engine.ts: every price written
 * three times, the first superseded, one scheduled ahead; an inheriting list; 10 pricelists), beside
 * the plain query computed every time (`executeQuery` with an `as_of`):
 *  - cold: the prior-price cache emptied before every query, each SKU's history walked; beside it
 *    the floor of a walk, on top of the plain query: reading each SKU's history (`changeMoments`,
 *    measured alone) and the effective prices it evaluated per SKU, each at the cost of one
 *    evaluation measured alone (`effectivePriceAt` at the instant asked);
 *  - kept: the same queries again after a pass that kept their prior prices (the hit rate of the
 *    timed pass printed beside it);
 *  - after writes: right after the kept pass, a new price (a reduction) written for 1% of the
 *    queries' SKUs, as an ERP's trickle of price changes: only their prior prices are computed
 *    again (the others checked against the book's per-SKU change counts); beside the plain query
 *    timed after as many writes;
 *  - through the answer cache, as a storefront's repeated queries at now go (the shipped default):
 *    the plain query and the one with prior prices, each after passes that filled the cache, with
 *    the answer cache's hit rate beside them (each item kept with its prior price beside its bytes).
 * Each figure with prior prices is paired with a plain one timed just before it (the machine's
 * speed drifts), and the medians of the rounds' ratios are printed. Flags: --skus N (bench default), --rounds N (15), --queries N (300 per pass).
 * @module
 */
import { inProcessWorkload } from './in-process.js'
import { flagValue } from './flags.js'
import { defaultShape, seededRandom } from './workload.js'
import { changeMoments, effectivePriceAt, priorPriceEvaluations } from '../engine/prior-price/prior-price.js'
import { answerCacheCounts, executeQuery, type QueryInput } from '../workers/execute.js'
import { answeredQuery } from '../workers/explain-query.js'
import { clearPriorPriceCache, priorPriceCacheCounts, priorPriceQueryBytes } from '../workers/prior-price-query.js'

const argv = process.argv.slice(2)
const numberFlag = (name: string, fallback: number): number => Number(flagValue(argv, name) ?? fallback)
const shape = { ...defaultShape, skuCount: numberFlag('skus', defaultShape.skuCount) }
const roundCount = numberFlag('rounds', 15)
const queryCount = numberFlag('queries', 300)
const days = 30
const writeShare = 0.01

const { catalog, book, codes, inputs, timed, nowMs } = inProcessWorkload(shape, queryCount, 13)
let sink = 0
const plainQuery = (input: QueryInput) => executeQuery(catalog, book, input).length
const plain = () => timed(plainQuery)
const withPrior = (input: QueryInput) => priorPriceQueryBytes(catalog, book, input, days).length
let evaluationsCold = 0
let itemsCold = 0
const cold = () => {
  const evaluated = priorPriceEvaluations.count
  const figure = timed((input) => {
    clearPriorPriceCache(catalog)
    return withPrior(input)
  })
  evaluationsCold += priorPriceEvaluations.count - evaluated
  itemsCold += itemCount
  return figure
}

/** Each query's answered items (SKU, list): what a prior price is asked for. */
const answered = inputs.map((input) => {
  const { options, result } = answeredQuery(catalog, book, input)
  return { input, options, items: result.items.map((item) => ({ sku: item.sku, pricelist: item.pricelist })) }
})
const itemCount = answered.reduce((sum, query) => sum + query.items.length, 0)

/** CPU us of one effective-price evaluation, as a walk makes them (contexts shared within a query). */
function evaluationCost(): number {
  const started = process.cpuUsage()
  for (const { input, options, items } of answered) {
    const contexts = new Map()
    for (const item of items) {
      const effective = effectivePriceAt(
        catalog,
        book,
        { ...item, taxArea: input.taxArea, options },
        input.at,
        contexts,
      )
      sink += effective?.gross ?? 0
    }
  }
  const used = process.cpuUsage(started)
  return (used.user + used.system) / itemCount
}

/** CPU us of reading one SKU's history: the moments its effective price may change at (`changeMoments`). */
function historyCost(): number {
  const started = process.cpuUsage()
  for (const { input, options, items } of answered)
    for (const item of items) sink += changeMoments(catalog, book, { ...item, taxArea: input.taxArea, options }).length
  const used = process.cpuUsage(started)
  return (used.user + used.system) / itemCount
}

let counted = { ...priorPriceCacheCounts }
const hitShares = { kept: [] as number[], afterWrites: [] as number[] }
const hitShare = () => {
  const hits = priorPriceCacheCounts.hits - counted.hits
  const looked = hits + priorPriceCacheCounts.misses - counted.misses
  return hits / Math.max(1, looked)
}
/** The queries once (their prior prices kept), then timed again. */
const kept = () => {
  for (const input of inputs) sink += withPrior(input)
  counted = { ...priorPriceCacheCounts }
  const figure = timed(withPrior)
  hitShares.kept.push(hitShare())
  return figure
}

const random = seededRandom(shape.seed + 29)
const querySkus = [...new Set(inputs.flatMap((input) => input.skus))]
/** A reduction of 1 unit, in force from a moment ago, for `writeShare` of the queries' SKUs on a list each. */
function writeSome(): void {
  const count = Math.max(1, Math.round(querySkus.length * writeShare))
  for (let written = 0; written < count; written++) {
    const sku = querySkus[Math.floor(random() * querySkus.length)]!
    const pricelist = codes.find((code) => book.versions(code, sku).length > 0)
    if (pricelist === undefined) continue
    const versions = book.versions(pricelist, sku)
    const inForce = versions.filter((version) => version.from <= nowMs).at(-1)
    if (inForce?.content === null || inForce === undefined) continue
    const from = nowMs - 1_000 - written
    const reduced = { ...inForce, from, content: { ...inForce.content, sales: inForce.content.sales - 1 } }
    book.apply(
      pricelist,
      sku,
      [...versions.filter((version) => version.from !== from), reduced].sort((a, b) => a.from - b.from),
    )
  }
}
/** With the prior prices kept (the pass of `kept` just before), some SKUs written, then the queries timed. */
const afterWrites = () => {
  writeSome()
  counted = { ...priorPriceCacheCounts }
  const figure = timed(withPrior)
  hitShares.afterWrites.push(hitShare())
  return figure
}

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
  const before = { ...answerCacheCounts }
  const figure = timed(ask, atNow)
  const hitsThen = answerCacheCounts.hits - before.hits
  cacheShares.push(hitsThen / Math.max(1, hitsThen + answerCacheCounts.misses - before.misses))
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
kept()
evaluationCost()
historyCost()
evaluationsCold = 0
itemsCold = 0
const names = [
  'plain',
  'cold',
  'floor',
  'kept',
  'plainAfterWrites',
  'afterWrites',
  'plainCached',
  'priorCached',
] as const
const figures = Object.fromEntries(names.map((name) => [name, [] as number[]])) as Record<
  (typeof names)[number],
  number[]
>
const ratios = { cold: [] as number[], floor: [] as number[], kept: [] as number[], afterWrites: [] as number[] }
const cachedRatios: number[] = []
const evaluations: number[] = []
const histories: number[] = []
const oneDecimal = (values: readonly number[]) => median(values).toFixed(1)
for (let round = 0; round < roundCount; round++) {
  const plainFigure = plain()
  const coldFigure = cold()
  const evaluation = evaluationCost()
  const history = historyCost()
  const plainBeforeKept = plain()
  const keptFigure = kept()
  // The plain query after as many writes: what the writes cost it (its rows filled again) is in both.
  writeSome()
  const plainBeforeWrites = plain()
  const afterWritesFigure = afterWrites()
  // The floor of a walk: the plain query, each SKU's history read, and the effective prices evaluated.
  const perQuery = itemCount / answered.length
  const floorFigure = plainFigure + ((evaluationsCold / itemsCold) * evaluation + history) * perQuery
  figures.plain.push(plainFigure)
  figures.cold.push(coldFigure)
  figures.floor.push(floorFigure)
  evaluations.push(evaluation)
  histories.push(history)
  figures.kept.push(keptFigure)
  figures.afterWrites.push(afterWritesFigure)
  ratios.cold.push(coldFigure / plainFigure)
  ratios.floor.push(coldFigure / floorFigure)
  ratios.kept.push(keptFigure / plainBeforeKept)
  ratios.afterWrites.push(afterWritesFigure / plainBeforeWrites)
  figures.plainAfterWrites.push(plainBeforeWrites)
  const plainCachedFigure = plainCached()
  const priorCachedFigure = priorCached()
  figures.plainCached.push(plainCachedFigure)
  figures.priorCached.push(priorCachedFigure)
  cachedRatios.push(priorCachedFigure / plainCachedFigure)
}
const us = (values: readonly number[]) => `${median(values).toFixed(0)} us`
const times = (values: readonly number[]) => `${median(values).toFixed(2)}x`
const percent = (values: readonly number[]) => `${(100 * median(values)).toFixed(1)}%`
process.stdout.write(
  `${shape.skuCount.toLocaleString('en-US')} SKUs, 100-SKU queries over ${codes.length} pricelists, CPU per query ` +
    `(medians of ${roundCount} alternating rounds):\n` +
    `  plain ${us(figures.plain)}\n` +
    `  with prior prices kept: ${us(figures.kept)} (${times(ratios.kept)} the plain; ${percent(hitShares.kept)} from the cache)\n` +
    `  after writes (a reduction for ${(writeShare * 100).toFixed(0)}% of the queries' SKUs before each pass, the plain ` +
    `one's and its own): ${us(figures.afterWrites)} (${times(ratios.afterWrites)} the plain query after as many ` +
    `writes, ${us(figures.plainAfterWrites)}; ${percent(hitShares.afterWrites)} from the cache)\n` +
    `  cold, every history walked: ${us(figures.cold)} (${times(ratios.cold)}); ` +
    `${(evaluationsCold / itemsCold).toFixed(2)} effective prices evaluated per SKU, ` +
    `each ${oneDecimal(evaluations)} us, and the history read ${oneDecimal(histories)} us per SKU; floor (the plain ` +
    `query, those reads and evaluations) ${us(figures.floor)}: cold is ${times(ratios.floor)} its floor\n` +
    `  through the answer cache (queries at now, after passes that filled it; ${percent(cacheShares)} of items from it): ` +
    `plain ${us(figures.plainCached)}, with prior prices ${us(figures.priorCached)} (${times(cachedRatios)})\n`,
)
if (Number.isNaN(sink)) throw new Error('unreachable')
