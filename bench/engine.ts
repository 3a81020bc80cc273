/**
 * Engine-only benchmark (no HTTP, no workers): builds one tenant's Catalog and PriceBook in
 * process with the bench workload's shape, then times resolutions of (SKU, pricelist) through the
 * full pipeline (resolveBase + priceItem) and through queryPrices, so that the HTTP figures can be
 * split into engine cost and everything else. Each case runs for a fixed time after a warm-up.
 * @module
 */
import { Catalog, compositeKey, type CatalogType, type EntityValues, type Pricelist } from '../engine/catalog.js'
import { parseAmount } from '../engine/money.js'
import { priceItem, PriceContext, resolveBase, type AnswerOptions } from '../engine/pipeline.js'
import { breakKindFixed, breakKindPercent, PriceBook, type PriceContent, type PriceVersion, type QuantityBreak } from '../engine/prices.js'
import { queryPrices } from '../engine/query.js'
import {
  currencyCode, distinctSkus, priceOf, pricelists, seededRandom, skuCode, taxAreaCode, vatClasses, vatClassOf, versionStartMs,
  type BreakInput, type WorkloadShape,
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

const actor = 'bench'

function put<K extends CatalogType>(catalog: Catalog, type: K, key: string, value: EntityValues[K], nowMs: number): void {
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

function buildCatalog(shape: WorkloadShape, nowMs: number): Catalog {
  const catalog = new Catalog()
  put(catalog, 'currency', currencyCode, { is_active: true, vat_precision: 2 }, nowMs)
  put(catalog, 'tax_area', taxAreaCode, { name: 'Sweden', is_active: true, valid_from: null, valid_to: null }, nowMs)
  for (const vatClass of vatClasses) {
    put(catalog, 'vat_class', vatClass.code, { name: vatClass.code, description: null }, nowMs)
    put(catalog, 'vat_rate', compositeKey(taxAreaCode, vatClass.code), { rate: String(vatClass.rate) }, nowMs)
  }
  for (let index = 0; index < shape.skuCount; index++) {
    const sku = skuCode(index)
    put(catalog, 'article', sku, { name: `Article ${index}`, type: 'product', metadata: { group: [`G${index % 50}`] } }, nowMs)
    put(catalog, 'article_taxclass', compositeKey(sku, taxAreaCode), { vat_class_code: vatClassOf(shape, index) }, nowMs)
  }
  for (const definition of pricelists) {
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
function buildPriceBook(shape: WorkloadShape, nowMs: number): PriceBook {
  const book = new PriceBook()
  for (let skuIndex = 0; skuIndex < shape.skuCount; skuIndex++) {
    const sku = skuCode(skuIndex)
    for (let pricelistIndex = 0; pricelistIndex < pricelists.length; pricelistIndex++) {
      const versions: PriceVersion[] = []
      for (let version = 0; version < shape.versionCount; version++) {
        const price = priceOf(shape, skuIndex, pricelistIndex, version)
        const content: PriceContent = { sales: scaled(price.sales), fields: null, breaks: price.breaks === null ? null : price.breaks.map(toBreak) }
        versions.push({ from: versionStartMs(shape, version, nowMs), content, writtenAt: nowMs, writtenBy: actor })
      }
      book.apply(pricelists[pricelistIndex]!.code, sku, versions)
    }
  }
  return book
}

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

function engineCase(name: string, title: string, resolutionsPerOperation: number, measured: { count: number; elapsedMs: number }): EngineCase {
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
  const catalog = buildCatalog(shape, nowMs)
  const book = buildPriceBook(shape, nowMs)
  const buildMs = performance.now() - buildStarted
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
  const skuLists = (count: number) => Array.from({ length: 16 }, () => distinctSkus(random, shape.skuCount, count))
  const query = (lists: string[][]) => (index: number) => {
    const context = new PriceContext(catalog, book, nowMs, taxAreaCode)
    sink += queryPrices(context, { skus: lists[index & 15]!, pricelists: codes, options, sortOrder: null }).items.length
  }
  const shared = new PriceContext(catalog, book, nowMs, taxAreaCode)
  const cases = [
    engineCase('single', 'resolveBase + priceItem, new context per call (a GET)', 1,
      timed(durationMs, (index) => resolveOne(new PriceContext(catalog, book, nowMs, taxAreaCode), index))),
    engineCase('single-shared', 'resolveBase + priceItem, one warm context', 1, timed(durationMs, (index) => resolveOne(shared, index))),
    engineCase('query-100', `queryPrices 100 SKUs x ${codes.length} pricelists`, 100 * codes.length, timed(durationMs, query(skuLists(100)))),
    engineCase('query-1000', `queryPrices 1,000 SKUs x ${codes.length} pricelists`, 1_000 * codes.length, timed(durationMs, query(skuLists(1_000)))),
  ]
  if (Number.isNaN(sink)) throw new Error('unreachable: keeps the results alive')
  return { skuCount: shape.skuCount, priceVersionCount: shape.skuCount * pricelists.length * shape.versionCount, buildMs, cases }
}
