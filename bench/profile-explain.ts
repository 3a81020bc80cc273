/**
 * `npm run bench:profile-explain`: where an explained price query spends its time, in process
 * (no HTTP, no other threads: the engine's and the trace writer's share alone). Builds the engine
 * bench's mixed workload (bench/engine.ts: breaks, an inheriting list, 10 pricelists), then runs
 * 100-SKU queries alternately plain (`executeQuery`, uncached: what a query with `as_of` costs),
 * through the full pipeline untraced on every candidate (the floor of the first explanation, which
 * ran it on every candidate; losers now come from the fast path: engine/explain/from-cells.ts)
 * and explained
 * (workers/explain-query.ts, as a price worker runs it), beside the floor of the explained answer's
 * format (./explain-floor.ts: the least work any implementation of it does); prints the median CPU time of each per
 * query and their ratios to the plain one, then profiles the explained ones under V8's sampling
 * profiler (the functions with the most self time; the profile goes to bench/results/profiles/).
 * Flags: --skus N (bench default), --rounds N (7), --queries N (200 per round), --top N (25),
 * --profile floor (profile the format's floor instead of the explained queries), --lean (the floor
 * of a leaner format: one amount per losing candidate, inputs hashed from compact bytes),
 * --against DIR (another compiled tree, e.g. the build before a change: its plain query on its own
 * book of the same workload, in this process, alternating round by round with this build's, and
 * the median ratio of the pairs: whether the change made the plain query slower).
 * @module
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { Session, type Profiler } from 'node:inspector'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { formatSelfTimes, selfTimes } from './cpu-profile.js'
import { flagValue } from './flags.js'
import { currencyCode, defaultShape, pricelists } from './workload.js'
import { PriceContext, priceItem, resolveBase, type AnswerOptions } from '../engine/pipeline.js'
import { executeQuery } from '../workers/execute.js'
import { explainQueryBytes } from '../workers/explain-query.js'
import { explainFloor } from './explain-floor.js'
import { inProcessWorkload } from './in-process.js'

const repositoryRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')
const argv = process.argv.slice(2)
const numberFlag = (name: string, fallback: number): number => Number(flagValue(argv, name) ?? fallback)
const shape = { ...defaultShape, skuCount: numberFlag('skus', defaultShape.skuCount) }
const roundCount = numberFlag('rounds', 7)
const queryCount = numberFlag('queries', 200)
const top = numberFlag('top', 25)
/** --lean: the floor of a leaner format (./explain-floor.ts). */
const lean = argv.includes('--lean')

const { nowMs, catalog, book, codes, timed } = inProcessWorkload(shape, queryCount, 11)
const plainRound = () => timed((input) => executeQuery(catalog, book, input).length)

/** The plain query of the build in `directory`, on its own book of the same workload. */
async function plainOf(directory: string): Promise<() => number> {
  const root = path.resolve(directory)
  const engine = (await import(path.join(root, 'bench', 'engine.js'))) as typeof import('./engine.js')
  const execute = (await import(path.join(root, 'workers', 'execute.js'))) as typeof import('../workers/execute.js')
  const otherCatalog = engine.buildCatalog(shape, pricelists, nowMs)
  const otherBook = engine.buildPriceBook(shape, pricelists, nowMs)
  return () => timed((input) => execute.executeQuery(otherCatalog, otherBook, input).length)
}

const against = flagValue(argv, 'against')
if (against !== undefined) {
  const otherRound = await plainOf(against)
  otherRound()
  plainRound()
  const pairs: number[] = []
  for (let round = 0; round < 3 * roundCount; round++) {
    // Which build goes first alternates, so that neither always runs on a warmer cache.
    const [mine, other] = round % 2 === 0 ? [plainRound(), otherRound()] : [0, otherRound()]
    pairs.push((mine === 0 ? plainRound() : mine) / other)
  }
  process.stdout.write(
    `plain query, this build / ${against}: ${median(pairs).toFixed(3)} (median of ${pairs.length} alternating pairs)\n`,
  )
}
const options: AnswerOptions = { currency: currencyCode, rounding: null, quantity: 1 }
const floorRound = () =>
  timed((input) => {
    const context = new PriceContext(catalog, book, input.at, input.taxArea)
    let priced = 0
    for (const sku of input.skus) {
      for (const code of input.pricelists) {
        const base = resolveBase(context, code, sku)
        if (typeof base !== 'number' && typeof priceItem(context, base, sku, options, code) !== 'number') priced++
      }
    }
    return priced
  })
const explainRound = () => timed((query) => explainQueryBytes(catalog, book, { query, excluded: [] }).bytes.length)
/** The least work of the explained answer's format (./explain-floor.ts). */
const formatFloorRound = () => timed((query) => explainFloor(catalog, book, query, lean))

function median(values: readonly number[]): number {
  const sorted = [...values].sort((left, right) => left - right)
  return sorted[Math.floor(sorted.length / 2)]!
}

function post<T>(session: Session, method: string, params?: object): Promise<T> {
  return new Promise((resolve, reject) =>
    session.post(method, params ?? {}, (error, result) => (error ? reject(error) : resolve(result as T))),
  )
}

plainRound()
floorRound()
formatFloorRound()
explainRound()
const figures = { plain: [] as number[], floor: [] as number[], formatFloor: [] as number[], explained: [] as number[] }
const ratios = {
  floor: [] as number[],
  formatFloor: [] as number[],
  explained: [] as number[],
  toFormatFloor: [] as number[],
}
for (let round = 0; round < roundCount; round++) {
  const plain = plainRound()
  const floor = floorRound()
  const formatFloor = formatFloorRound()
  const explained = explainRound()
  figures.plain.push(plain)
  figures.floor.push(floor)
  figures.formatFloor.push(formatFloor)
  figures.explained.push(explained)
  ratios.floor.push(floor / plain)
  ratios.formatFloor.push(formatFloor / plain)
  ratios.explained.push(explained / plain)
  ratios.toFormatFloor.push(explained / formatFloor)
}
process.stdout.write(
  `${shape.skuCount.toLocaleString('en-US')} SKUs, 100-SKU queries over ${codes.length} pricelists, CPU per query: ` +
    `plain ${median(figures.plain).toFixed(0)} us, full pipeline on every candidate ${median(figures.floor).toFixed(0)} us ` +
    `(${median(ratios.floor).toFixed(2)}x), the ${lean ? 'lean ' : ''}format's floor ${median(figures.formatFloor).toFixed(0)} us ` +
    `(${median(ratios.formatFloor).toFixed(2)}x), explained ${median(figures.explained).toFixed(0)} us ` +
    `(${median(ratios.explained).toFixed(2)}x; ${median(ratios.toFormatFloor).toFixed(2)}x the format's floor; ` +
    `medians of ${roundCount} alternating rounds)\n`,
)

const session = new Session()
session.connect()
await post(session, 'Profiler.enable')
await post(session, 'Profiler.setSamplingInterval', { interval: 100 })
await post(session, 'Profiler.start')
const profiled = flagValue(argv, 'profile') === 'floor' ? formatFloorRound : explainRound
for (let round = 0; round < 3; round++) profiled()
const { profile } = await post<{ profile: Profiler.Profile }>(session, 'Profiler.stop')
session.disconnect()
const directory = path.join(repositoryRoot, 'bench', 'results', 'profiles')
mkdirSync(directory, { recursive: true })
const file = path.join(directory, `explain-${new Date().toISOString().replace(/[:.]/g, '-')}.cpuprofile`)
writeFileSync(file, JSON.stringify(profile))
const { samples, frames } = selfTimes(profile, repositoryRoot)
process.stdout.write(`top ${top} by self time (${samples} samples), profile: ${path.relative(repositoryRoot, file)}\n`)
process.stdout.write(formatSelfTimes(frames, top))
