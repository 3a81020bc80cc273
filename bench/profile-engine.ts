/**
 * `npm run bench:profile`: where queryPrices spends its time. Builds the engine bench's workload
 * (engine.ts; `--mixed` for the one with breaks and an inheriting list, else the common case), runs
 * queries of 100 and 1,000 SKUs over the 10 pricelists for a few seconds under V8's sampling
 * profiler (node:inspector), writes the profile to bench/results/profiles/ (open it in Chrome's
 * DevTools) and prints the functions with the most self time.
 * Flags: --mixed, --skus N, --seconds S, --top N.
 * @module
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { Session, type Profiler } from 'node:inspector'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { formatSelfTimes, selfTimes } from './cpu-profile.js'
import { PriceContext, type AnswerOptions } from '../engine/pipeline.js'
import { queryPrices } from '../engine/query.js'
import { buildCatalog, buildPriceBook, commonPricelists } from './engine.js'
import { currencyCode, defaultShape, distinctSkus, pricelists, seededRandom, taxAreaCode } from './workload.js'

const repositoryRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')
const argv = process.argv.slice(2)
const numberFlag = (name: string, fallback: number): number => {
  const index = argv.indexOf(`--${name}`)
  return index < 0 ? fallback : Number(argv[index + 1])
}
const mixed = argv.includes('--mixed')
const shape = {
  ...defaultShape,
  skuCount: numberFlag('skus', defaultShape.skuCount),
  breakShare: mixed ? defaultShape.breakShare : 0,
}
const seconds = numberFlag('seconds', 4)
const top = numberFlag('top', 20)

const definitions = mixed ? pricelists : commonPricelists
const nowMs = Date.now()
const catalog = buildCatalog(shape, definitions, nowMs)
const book = buildPriceBook(shape, definitions, nowMs)
const codes = definitions.map((definition) => definition.code).sort()
const options: AnswerOptions = { currency: currencyCode, rounding: null, quantity: 1 }
const random = seededRandom(shape.seed + 4)
const sets = [100, 1_000].map((count) => Array.from({ length: 256 }, () => distinctSkus(random, shape.skuCount, count)))

let sink = 0
function run(ms: number): number {
  let resolutions = 0
  const started = performance.now()
  for (let index = 0; performance.now() - started < ms; index++) {
    const skus = sets[index & 1]![(index >> 1) & 255]!
    const context = new PriceContext(catalog, book, nowMs, taxAreaCode)
    sink += queryPrices(context, { skus, pricelists: codes, options, sortOrder: null }).items.length
    resolutions += skus.length * codes.length
  }
  return (resolutions / (performance.now() - started)) * 1000
}

function post<T>(session: Session, method: string, params?: object): Promise<T> {
  return new Promise((resolve, reject) =>
    session.post(method, params ?? {}, (error, result) => (error ? reject(error) : resolve(result as T))),
  )
}

run(1_000)
const session = new Session()
session.connect()
await post(session, 'Profiler.enable')
await post(session, 'Profiler.setSamplingInterval', { interval: 100 })
await post(session, 'Profiler.start')
const rate = run(seconds * 1_000)
const { profile } = await post<{ profile: Profiler.Profile }>(session, 'Profiler.stop')
session.disconnect()

const directory = path.join(repositoryRoot, 'bench', 'results', 'profiles')
mkdirSync(directory, { recursive: true })
const file = path.join(
  directory,
  `engine-${mixed ? 'mixed' : 'common'}-${new Date().toISOString().replace(/[:.]/g, '-')}.cpuprofile`,
)
writeFileSync(file, JSON.stringify(profile))

const { samples, frames } = selfTimes(profile, repositoryRoot)
process.stdout.write(
  `${mixed ? 'mixed' : 'common'} case, ${shape.skuCount.toLocaleString('en-US')} SKUs: ${Math.round(rate).toLocaleString('en-US')} resolutions/s under the profiler\n`,
)
process.stdout.write(
  `top ${top} functions by self time (${samples} samples), profile: ${path.relative(repositoryRoot, file)}\n`,
)
process.stdout.write(formatSelfTimes(frames, top))
if (Number.isNaN(sink)) throw new Error('unreachable')
