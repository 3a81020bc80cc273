/**
 * Engine-only benchmark (no HTTP, no workers): builds one tenant's Catalog and PriceBook in
 * process, then times resolutions of (SKU, pricelist) through the full pipeline (resolveBase +
 * priceItem) and through queryPrices, so that the HTTP figures can be split into engine cost and
 * everything else. Each case runs for a fixed time after a warm-up. Two workloads of the same size:
 *  - `mixed`, the HTTP workload's shape: 10% of the prices with quantity breaks, and CHILD-1
 *    inheriting from NET-1 (the target: at least 3 million resolutions/s in a query);
 *  - `common`: every price the pricelist's own, no breaks, no rules (the target: 15 million).
 * Queries draw their SKU sets from 256 distinct random sets.
 * @module
 */
import { Catalog, compositeKey, type CatalogType, type EntityValues, type Pricelist } from '../engine/catalog.js'
import { parseAmount } from '../engine/money.js'
import { priceItem, PriceContext, resolveBase, type AnswerOptions } from '../engine/pipeline.js'
import {
  breakKindFixed,
  breakKindPercent,
  PriceBook,
  type PriceContent,
  type PriceVersion,
  type QuantityBreak,
} from '../engine/prices.js'
import { queryPrices } from '../engine/query.js'
import { executeQuery, setAnswerCacheItemsMax, type QueryInput } from '../workers/execute.js'
import {
  currencyCode,
  distinctSkus,
  priceOf,
  pricelists,
  seededRandom,
  skuCode,
  taxAreaCode,
  vatClasses,
  vatClassOf,
  versionStartMs,
  hasOwnPrice,
  priceVersionCount,
  type BreakInput,
  type PricelistDefinition,
  type WorkloadShape,
} from './workload.js'

export interface EngineCase {
  readonly name: string
  readonly title: string
  /** (SKU, pricelist) resolutions per second. */
  readonly resolutionsPerSecond: number
  /** Microseconds per operation (one resolution, or one query). */
  readonly microsPerOperation: number
  readonly operationCount: number
}

export interface EngineResult {
  readonly skuCount: number
  readonly priceVersionCount: number
  readonly buildMs: number
  readonly cases: EngineCase[]
}

/** queryPrices resolutions per second that issue 12 asks for, by workload. */
export const queryResolutionsPerSecondMin = { common: 15_000_000, mixed: 3_000_000 } as const
/** Distinct SKU sets a query case draws from. */
const querySetCount = 256

/** The common case's pricelists: the same codes, every one top-level with its own prices. */
export const commonPricelists: readonly PricelistDefinition[] = pricelists.map((definition) => ({
  code: definition.code,
  vatMode: definition.vatMode ?? 'NET',
  parentCode: null,
}))

const actor = 'bench'

function put<K extends CatalogType>(
  catalog: Catalog,
  type: K,
  key: string,
  value: EntityValues[K],
  nowMs: number,
): void {
  const change = catalog.plan(type, key, value, nowMs, nowMs, actor)
  if (change === null) throw new Error(`${type} ${key}: nothing to write`)
  catalog.apply(change.type, change.key, change.versions)
}

function scaled(value: number): number {
  const amount = parseAmount(value)
  if (amount === null) throw new Error(`not an amount: ${value}`)
  return amount
}

function toBreak(input: BreakInput): QuantityBreak {
  return input.percent_of_base !== undefined
    ? { quantity: scaled(input.quantity_break), kind: breakKindPercent, value: scaled(input.percent_of_base) }
    : { quantity: scaled(input.quantity_break), kind: breakKindFixed, value: scaled(input.fixed_price!) }
}

export function buildCatalog(
  shape: WorkloadShape,
  definitions: readonly PricelistDefinition[],
  nowMs: number,
): Catalog {
  const catalog = new Catalog()
  put(catalog, 'currency', currencyCode, { is_active: true, vat_precision: 2 }, nowMs)
  put(catalog, 'tax_area', taxAreaCode, { name: 'Sweden', is_active: true, valid_from: null, valid_to: null }, nowMs)
  for (const vatClass of vatClasses) {
    put(catalog, 'vat_class', vatClass.code, { name: vatClass.code, description: null }, nowMs)
    put(catalog, 'vat_rate', compositeKey(taxAreaCode, vatClass.code), { rate: String(vatClass.rate) }, nowMs)
  }
  for (let index = 0; index < shape.skuCount; index++) {
    const sku = skuCode(index)
    put(
      catalog,
      'article',
      sku,
      { name: `Article ${index}`, type: 'product', metadata: { group: [`G${index % 50}`] } },
      nowMs,
    )
    put(
      catalog,
      'article_taxclass',
      compositeKey(sku, taxAreaCode),
      { vat_class_code: vatClassOf(shape, index) },
      nowMs,
    )
  }
  for (const definition of definitions) {
    const pricelist: Pricelist = {
      currency_code: currencyCode,
      vat_mode: definition.vatMode,
      name: definition.code,
      description: null,
      parent_code: definition.parentCode,
      start_date: null,
      end_date: null,
      metadata: {},
      price_rules: [],
    }
    put(catalog, 'pricelist', definition.code, pricelist, nowMs)
  }
  return catalog
}

/** Every pair's versions installed as one run, as after a restart. */
export function buildPriceBook(
  shape: WorkloadShape,
  definitions: readonly PricelistDefinition[],
  nowMs: number,
): PriceBook {
  const book = new PriceBook()
  for (let skuIndex = 0; skuIndex < shape.skuCount; skuIndex++) {
    const sku = skuCode(skuIndex)
    for (let pricelistIndex = 0; pricelistIndex < definitions.length; pricelistIndex++) {
      if (!hasOwnPrice(shape, skuIndex, definitions[pricelistIndex]!)) continue
      const versions: PriceVersion[] = []
      for (let version = 0; version < shape.versionCount; version++) {
        const price = priceOf(shape, skuIndex, pricelistIndex, version)
        const content: PriceContent = {
          sales: scaled(price.sales),
          fields: null,
          breaks: price.breaks === null ? null : price.breaks.map(toBreak),
        }
        versions.push({ from: versionStartMs(shape, version, nowMs), content, writtenAt: nowMs, writtenBy: actor })
      }
      book.apply(definitions[pricelistIndex]!.code, sku, versions)
    }
  }
  return book
}

/**
 * executeQuery (the query and its answer bytes, as a thread answers it) on the mixed workload, with
 * the answer cache as shipped and off, on many distinct bodies (carts: the cache finds few SKUs)
 * and on 16 (category pages): what the cache costs and gains without HTTP around it.
 */
function answerCacheCases(
  state: { catalog: Catalog; book: PriceBook },
  codes: readonly string[],
  shape: WorkloadShape,
  durationMs: number,
  random: () => number,
): EngineCase[] {
  const nowMs = Date.now()
  const distinct = Array.from({ length: 4_096 }, () => distinctSkus(random, shape.skuCount, 100))
  const repeated = distinct.slice(0, 16)
  let bytes = 0
  const run = (bodies: string[][]) => (index: number) => {
    const input: QueryInput = {
      at: nowMs,
      cacheable: true,
      taxArea: taxAreaCode,
      skus: bodies[index % bodies.length]!,
      pricelists: codes,
      currency: currencyCode,
      rounding: null,
      sortOrder: null,
      quantity: 1,
    }
    bytes += executeQuery(state.catalog, state.book, input, 'bench').length
  }
  const measured = (name: string, title: string, bodies: string[][], items: number) => {
    setAnswerCacheItemsMax(items)
    return engineCase(name, title, 100 * codes.length, timed(durationMs, run(bodies)))
  }
  const cases = [
    measured('execute-100-distinct-off', 'executeQuery 100 SKUs, 4,096 distinct bodies, answer cache off', distinct, 0),
    measured(
      'execute-100-distinct',
      'executeQuery 100 SKUs, 4,096 distinct bodies, answer cache as shipped',
      distinct,
      answerCacheItemsDefault,
    ),
    measured('execute-100-repeated-off', 'executeQuery 100 SKUs, 16 distinct bodies, answer cache off', repeated, 0),
    measured(
      'execute-100-repeated',
      'executeQuery 100 SKUs, 16 distinct bodies, answer cache as shipped',
      repeated,
      answerCacheItemsDefault,
    ),
  ]
  setAnswerCacheItemsMax(answerCacheItemsDefault)
  if (bytes === 0) throw new Error('no answers')
  return cases
}

/** The answer cache's shipped bound (platform/config.ts). */
const answerCacheItemsDefault = 50_000

/** Present when node runs with --expose-gc (the bench scripts do): a clean heap before each case. */
const collectGarbage = (globalThis as { gc?: () => void }).gc

/** Runs `operation` repeatedly for `durationMs` (after a warm-up of a quarter of it). */
function timed(durationMs: number, operation: (index: number) => void): { count: number; elapsedMs: number } {
  collectGarbage?.()
  const run = (limitMs: number) => {
    const started = performance.now()
    let count = 0
    let elapsedMs = 0
    while (elapsedMs < limitMs) {
      for (let step = 0; step < 64; step++) operation(count++)
      elapsedMs = performance.now() - started
    }
    return { count, elapsedMs }
  }
  run(durationMs / 4)
  return run(durationMs)
}

function engineCase(
  name: string,
  title: string,
  resolutionsPerOperation: number,
  measured: { count: number; elapsedMs: number },
): EngineCase {
  return {
    name,
    title,
    resolutionsPerSecond: (measured.count * resolutionsPerOperation * 1000) / measured.elapsedMs,
    microsPerOperation: (measured.elapsedMs * 1000) / measured.count,
    operationCount: measured.count,
  }
}

export function runEngineBench(shape: WorkloadShape, durationMs: number): EngineResult {
  const nowMs = Date.now()
  const buildStarted = performance.now()
  const mixed = { catalog: buildCatalog(shape, pricelists, nowMs), book: buildPriceBook(shape, pricelists, nowMs) }
  const buildMs = performance.now() - buildStarted
  const commonShape = { ...shape, breakShare: 0 }
  const common = {
    catalog: buildCatalog(commonShape, commonPricelists, nowMs),
    book: buildPriceBook(commonShape, commonPricelists, nowMs),
  }
  const options: AnswerOptions = { currency: currencyCode, rounding: null, quantity: 1 }
  const random = seededRandom(shape.seed + 4)
  const pairs = Array.from({ length: 4_096 }, () => ({
    sku: skuCode(Math.floor(random() * shape.skuCount)),
    pricelist: pricelists[Math.floor(random() * pricelists.length)]!.code,
  }))
  let sink = 0
  const resolveOne = (context: PriceContext, index: number): void => {
    const pair = pairs[index & 4_095]!
    const resolved = resolveBase(context, pair.pricelist, pair.sku)
    if (typeof resolved === 'number') throw new Error(`no price for ${pair.sku} on ${pair.pricelist}`)
    const priced = priceItem(context, resolved, pair.sku, options)
    if (typeof priced === 'number') throw new Error(`not priced: ${pair.sku} on ${pair.pricelist}`)
    sink += priced.gross
  }
  const codes = pricelists.map((pricelist) => pricelist.code).sort()
  const skuSets = (count: number) =>
    Array.from({ length: querySetCount }, () => distinctSkus(random, shape.skuCount, count))
  const sets100 = skuSets(100)
  const sets1000 = skuSets(1_000)
  const query = (state: { catalog: Catalog; book: PriceBook }, sets: string[][]) => (index: number) => {
    const context = new PriceContext(state.catalog, state.book, nowMs, taxAreaCode)
    const result = queryPrices(context, {
      skus: sets[index % querySetCount]!,
      pricelists: codes,
      options,
      sortOrder: null,
    })
    if (result.unavailable.length > 0) throw new Error(`unavailable: ${JSON.stringify(result.unavailable[0])}`)
    sink += result.items.length
  }
  const shared = new PriceContext(mixed.catalog, mixed.book, nowMs, taxAreaCode)
  const lists = codes.length
  const cases: EngineCase[] = [
    engineCase(
      'single',
      'resolveBase + priceItem, new context per call (a GET)',
      1,
      timed(durationMs, (index) => resolveOne(new PriceContext(mixed.catalog, mixed.book, nowMs, taxAreaCode), index)),
    ),
    engineCase(
      'single-shared',
      'resolveBase + priceItem, one warm context',
      1,
      timed(durationMs, (index) => resolveOne(shared, index)),
    ),
    engineCase(
      'query-100-common',
      `queryPrices 100 SKUs x ${lists} pricelists, common case (own prices, no breaks)`,
      100 * lists,
      timed(durationMs, query(common, sets100)),
    ),
    engineCase(
      'query-1000-common',
      `queryPrices 1,000 SKUs x ${lists} pricelists, common case`,
      1_000 * lists,
      timed(durationMs, query(common, sets1000)),
    ),
    engineCase(
      'query-100-mixed',
      `queryPrices 100 SKUs x ${lists} pricelists, 10% breaks, one inheriting list`,
      100 * lists,
      timed(durationMs, query(mixed, sets100)),
    ),
    engineCase(
      'query-1000-mixed',
      `queryPrices 1,000 SKUs x ${lists} pricelists, 10% breaks, one inheriting list`,
      1_000 * lists,
      timed(durationMs, query(mixed, sets1000)),
    ),
  ]
  cases.push(...answerCacheCases(mixed, codes, shape, durationMs, random))
  if (Number.isNaN(sink)) throw new Error('unreachable: keeps the results alive')
  return { skuCount: shape.skuCount, priceVersionCount: priceVersionCount(shape), buildMs, cases }
}
