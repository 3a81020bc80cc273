/**
 * The EU prior price (Directive 98/6/EC, Article 6a, added by Directive 2019/2161): the lowest price
 * a SKU had on a pricelist, in a tax area and currency, over the `days` before the reduction now in
 * force began, derived from the complete history of its effective price (own and inherited
 * versions, rules, bundles, the list's window, VAT mappings and rates, FX publications), as the
 * price engine answers it at each moment.
 *
 * The effective price is piecewise constant: it can change only at a moment something it reads
 * changes (`changeMoments`). The walk goes back from the instant asked over those moments while the
 * price before each was higher or the same, and the reduction's start is the earliest of them at
 * which it went down: a progressive reduction keeps its first step's start, and a rise (80 -> 100 ->
 * 90) ends the walk (the reduction started at 90). The window is the `days` before that start, end
 * exclusive; the prior price is the lowest gross in force within it (net beside it), and the moment
 * it applied from (the latest such period, at the window's start if it began before). Prices
 * compare by gross, as the query picks its winner. No reduction in force (the price before the last
 * change was lower, or there was none): null.
 * @module
 */
import { compositeKey, keySeparator, type Catalog } from '../catalog.js'
import { fxKey } from '../fx.js'
import { pricelistDepthMax } from '../limits.js'
import { type AnswerOptions, PriceContext, priceItem, resolveBase } from '../pipeline.js'
import type { PriceReader } from '../price-replica.js'

const dayMs = 86_400_000

export interface PriorPriceRequest {
  readonly sku: string
  /** The pricelist the item was answered from. */
  readonly pricelist: string
  readonly taxArea: string
  readonly options: AnswerOptions
  /** The instant asked (the query's `as_of`, or now). */
  readonly at: number
  /** The tenant's `omnibus.days`. */
  readonly days: number
}

/** Scaled amounts, as the plain answer's. */
export interface PriorPrice {
  readonly net: number
  readonly gross: number
  /** When the lowest price applied from within the window (the latest such period). */
  readonly inForceAt: number
  readonly reductionStartedAt: number
}

/** One effective price: null where the SKU had none on the list then. */
type Effective = { readonly net: number; readonly gross: number } | null

/**
 * Price contexts by instant, for the prior prices of one query (one catalogue, one reader, one tax
 * area): the SKUs of a query read the same instants (the one asked, the lists' and rates' moments),
 * and a context keeps what it resolved at its instant (pricelists, VAT, FX) for the next SKU.
 */
export type ContextsByInstant = Map<number, PriceContext>

/** Effective prices evaluated for prior prices on this thread (the bench's floor counts them). */
export const priorPriceEvaluations = { count: 0 }

/** The SKU's effective price on the list at `at`, as a single read of that list answers it. */
export function effectivePriceAt(
  catalog: Catalog,
  prices: PriceReader,
  request: Omit<PriorPriceRequest, 'at' | 'days'>,
  at: number,
  contexts: ContextsByInstant | null = null,
): Effective {
  priorPriceEvaluations.count++
  let context = contexts?.get(at)
  if (context === undefined) {
    context = new PriceContext(catalog, prices, at, request.taxArea)
    contexts?.set(at, context)
  }
  const info = context.pricelist(request.pricelist)
  if (info === null || !context.isActive(info)) return null
  const resolved = resolveBase(context, request.pricelist, request.sku)
  if (typeof resolved === 'number') return null
  const item = priceItem(context, resolved, request.sku, request.options, request.pricelist)
  return typeof item === 'number' ? null : { net: item.net, gross: item.gross }
}

/** The prior price of the reduction in force at `request.at`, or null when none is. */
export function priorPrice(catalog: Catalog, prices: PriceReader, request: PriorPriceRequest): PriorPrice | null {
  return priorPriceValid(catalog, prices, request).prior
}

/** A prior price with what it holds for (see `priorPriceValid`). */
export interface PriorPriceValid {
  readonly prior: PriorPrice | null
  /** The instants between which it is the same answer: `from` inclusive, `until` exclusive. */
  readonly from: number
  readonly until: number
  /** The SKUs whose prices and articles it read: the one asked, and its bundle components. */
  readonly skus: readonly string[]
  /** Their ids in the reader (-1: none). */
  readonly skuIds: readonly number[]
  /** Their catalogue records, as it read them (`skuRecords`), and whether they include the articles. */
  readonly records: SkuRecords
  readonly readsArticles: boolean
  /** The catalogue's shared revision it read (`sharedRevision`). */
  readonly shared: number
}

/**
 * The prior price, and the instants between which it is the same answer (`from` inclusive, `until`
 * exclusive): from the last moment at or before the instant asked to the next one after it, as long
 * as nothing is written (the moments and the prices at them stay). `contexts`: the query's (see
 * `ContextsByInstant`), or null for contexts of this call alone; `shared`: the catalogue's
 * `sharedRevision`, when the caller read it already.
 */
export function priorPriceValid(
  catalog: Catalog,
  prices: PriceReader,
  request: PriorPriceRequest,
  contexts: ContextsByInstant | null = null,
  shared = sharedRevision(catalog),
): PriorPriceValid {
  const { moments, skus, skuIds, records, readsArticles } = momentsOf(catalog, prices, request, shared)
  let from = Number.NEGATIVE_INFINITY
  let until = Number.POSITIVE_INFINITY
  for (const moment of moments) {
    if (moment <= request.at) from = moment
    else {
      until = moment
      break
    }
  }
  const prior = walk(catalog, prices, request, moments, contexts ?? new Map())
  return { prior, from, until, skus, skuIds, records, readsArticles, shared }
}

function walk(
  catalog: Catalog,
  prices: PriceReader,
  request: PriorPriceRequest,
  moments: readonly number[],
  contexts: ContextsByInstant,
): PriorPrice | null {
  const priceAt = (at: number) => effectivePriceAt(catalog, prices, request, at, contexts)
  let current = priceAt(request.at)
  if (current === null) return null
  let start = Number.NaN
  // Back over the moments (latest first) while the price before each was higher or the same.
  for (let index = moments.length - 1; index >= 0; index--) {
    const moment = moments[index]!
    if (moment > request.at) continue
    const before = priceAt(moment - 1)
    if (before === null || before.gross < current.gross) break
    if (before.gross > current.gross) start = moment
    current = before
  }
  if (Number.isNaN(start)) return null
  return lowestBefore(priceAt, moments, start, start - request.days * dayMs)
}

/** The lowest gross in force in [from, start), with the moment it applied from (the latest period). */
function lowestBefore(
  priceAt: (at: number) => Effective,
  moments: readonly number[],
  start: number,
  from: number,
): PriorPrice {
  let lowest: Effective = null
  let inForceAt = from
  // The periods of the window: from its start, then from each moment inside it.
  const starts = [from, ...moments.filter((moment) => moment > from && moment < start)]
  for (const periodStart of starts) {
    const price = priceAt(periodStart)
    if (price !== null && (lowest === null || price.gross <= lowest.gross)) {
      lowest = price
      inForceAt = periodStart
    }
  }
  // The price just before the start is in force in the window, so there is one.
  const found = lowest!
  return { net: found.net, gross: found.gross, inForceAt, reductionStartedAt: start }
}

/**
 * Every instant, sorted and distinct, at which something the SKU's effective price on the list
 * reads may change: the versions of the list and of every ancestor it ever had (with their windows'
 * edges), the SKU's prices and bundle rules on them and its components' prices, the article (rules
 * read it), the SKU's VAT mappings in the area and the area's rates, the FX publications and the
 * versions of every currency involved, the rounding profiles' and the tax area's versions.
 * Over-inclusive is harmless (the walk sees no change there).
 */
export function changeMoments(
  catalog: Catalog,
  prices: PriceReader,
  request: Pick<PriorPriceRequest, 'sku' | 'pricelist' | 'taxArea' | 'options'>,
): number[] {
  return momentsOf(catalog, prices, request).moments
}

/** What the moments of one SKU's prior price read (see `PriorPriceValid`). */
interface Moments {
  readonly moments: number[]
  readonly skus: string[]
  readonly skuIds: number[]
  readonly records: SkuRecords
  readonly readsArticles: boolean
}

function momentsOf(
  catalog: Catalog,
  prices: PriceReader,
  request: Pick<PriorPriceRequest, 'sku' | 'pricelist' | 'taxArea' | 'options'>,
  shared = sharedRevision(catalog),
): Moments {
  const side = listSide(catalog, request.pricelist, request.taxArea, request.options.currency, shared)
  let count = 0
  const add = (moment: number) => {
    if (count === scratch.length) {
      const grown = new Float64Array(scratch.length * 2)
      grown.set(scratch)
      scratch = grown
    }
    scratch[count++] = moment
  }
  const addVersions = (versions: readonly { from: number }[] | undefined) => {
    if (versions !== undefined) for (const version of versions) add(version.from)
  }
  for (const moment of side.moments) add(moment)
  const skus = [request.sku]
  if (catalog.keys('bundle_rule').length > 0)
    for (const code of side.lists) {
      const bundle = catalog.versions('bundle_rule', compositeKey(request.sku, code))
      addVersions(bundle)
      for (const version of bundle ?? [])
        for (const component of version.value?.components ?? [])
          if (!skus.includes(component.sku)) skus.push(component.sku)
    }
  const records = skuRecords(catalog, skus, request.taxArea, side.readsArticles)
  for (const versions of records) addVersions(versions as readonly { from: number }[] | undefined)
  const skuIds: number[] = []
  for (const sku of skus) {
    const skuId = prices.skuId(sku)
    skuIds.push(skuId)
    if (skuId < 0) continue
    for (const code of side.lists) {
      const pricelistId = prices.pricelistId(code)
      if (pricelistId < 0) continue
      for (let at = prices.nextChangeAfter(pricelistId, skuId, Number.NEGATIVE_INFINITY); at < Infinity; ) {
        add(at)
        at = prices.nextChangeAfter(pricelistId, skuId, at)
      }
    }
  }
  const readsArticles = side.readsArticles
  return { moments: sortedDistinct(scratch.subarray(0, count)), skus, skuIds, records, readsArticles }
}

/** Where the moments are gathered (a typed array sorts numbers in place, without a comparator). */
let scratch = new Float64Array(256)

/** Finite instants, sorted and distinct (the array is sorted in place). */
function sortedDistinct(moments: Float64Array | number[]): number[] {
  if (moments instanceof Float64Array) moments.sort()
  else moments.sort((left, right) => left - right)
  const distinct: number[] = []
  for (const moment of moments)
    if (Number.isFinite(moment) && moment !== distinct[distinct.length - 1]) distinct.push(moment)
  return distinct
}

/**
 * The per-SKU catalogue records a prior price reads, in order: the VAT mapping of the SKU asked in
 * the tax area, then each SKU's article where a list's rules read it (`articles`; a price without
 * rules reads no article, and an article is a record of 100,000s: not read for nothing). The
 * catalogue replaces a version list on each write of its record, so the lists themselves say
 * whether anything was written since.
 */
export type SkuRecords = readonly (readonly unknown[] | undefined)[]

export function skuRecords(catalog: Catalog, skus: readonly string[], taxArea: string, articles: boolean): SkuRecords {
  const records: (readonly unknown[] | undefined)[] = [
    catalog.versions('article_taxclass', compositeKey(skus[0]!, taxArea)),
  ]
  if (articles) for (const sku of skus) records.push(catalog.versions('article', sku))
  return records
}

/**
 * What the moments read besides the SKU's own records, the same for every SKU on a list in a tax
 * area and currency: the list and its ancestors, and the moments of their versions, the area's VAT
 * rates, the FX rates and currencies involved, the rounding profiles and the tax area.
 */
interface ListSide {
  readonly lists: readonly string[]
  readonly moments: readonly number[]
  /** Whether a version of one of the lists has rules (they read the article: its versions are moments). */
  readonly readsArticles: boolean
}

/** List sides by catalogue, kept while no shared record is written (`sharedRevision`). */
const listSides = new WeakMap<Catalog, { revision: number; byKey: Map<string, ListSide> }>()

/**
 * Writes of every catalogue type but the per-SKU ones (articles and their VAT mappings): while it
 * stays, so does every list side; a SKU's own records are compared one by one by who keeps a prior
 * price (workers/prior-price-cache.ts).
 */
export function sharedRevision(catalog: Catalog): number {
  return catalog.revisionTotal() - recordsRevision(catalog)
}

/** Writes of the per-SKU catalogue types a prior price reads (articles and their VAT mappings). */
export function recordsRevision(catalog: Catalog): number {
  return catalog.revision('article') + catalog.revision('article_taxclass')
}

function listSide(catalog: Catalog, pricelist: string, taxArea: string, currency: string, revision: number): ListSide {
  let kept = listSides.get(catalog)
  if (kept === undefined || kept.revision !== revision) {
    kept = { revision, byKey: new Map() }
    listSides.set(catalog, kept)
  }
  const key = `${pricelist}${keySeparator}${taxArea}${keySeparator}${currency}`
  let side = kept.byKey.get(key)
  if (side === undefined) {
    side = listSideOf(catalog, pricelist, taxArea, currency)
    kept.byKey.set(key, side)
  }
  return side
}

function listSideOf(catalog: Catalog, pricelist: string, taxArea: string, currency: string): ListSide {
  const moments: number[] = []
  const addVersions = (versions: readonly { from: number }[] | undefined) => {
    for (const version of versions ?? []) moments.push(version.from)
  }
  const lists = pricelistClosure(catalog, pricelist)
  const currencies = new Set<string>([currency])
  let readsArticles = false
  for (const code of lists) {
    for (const version of catalog.versions('pricelist', code) ?? []) {
      moments.push(version.from)
      const value = version.value
      if (value === null) continue
      if (value.price_rules.length > 0) readsArticles = true
      if (value.start_date !== null) moments.push(value.start_date)
      if (value.end_date !== null) moments.push(value.end_date)
      currencies.add(value.currency_code)
    }
  }
  const ratePrefix = `${taxArea}${keySeparator}`
  for (const key of catalog.keys('vat_rate'))
    if (key.startsWith(ratePrefix)) addVersions(catalog.versions('vat_rate', key))
  for (const code of currencies) {
    if (code !== 'EUR') addVersions(catalog.versions('fx_rate', fxKey(code)))
    addVersions(catalog.versions('currency', code))
  }
  // The rounding profile asked for is resolved at the instant asked: its versions bound a cached answer.
  for (const key of catalog.keys('rounding_profile')) addVersions(catalog.versions('rounding_profile', key))
  addVersions(catalog.versions('tax_area', taxArea))
  return { lists: [...lists], moments: sortedDistinct(moments), readsArticles }
}

/** The pricelist and every ancestor any of their versions named, bounded like the chains. */
function pricelistClosure(catalog: Catalog, code: string): Set<string> {
  const found = new Set<string>([code])
  let frontier = [code]
  for (let depth = 0; depth <= pricelistDepthMax && frontier.length > 0; depth++) {
    const next: string[] = []
    for (const current of frontier)
      for (const version of catalog.versions('pricelist', current) ?? []) {
        const parent = version.value?.parent_code ?? null
        if (parent !== null && !found.has(parent)) {
          found.add(parent)
          next.push(parent)
        }
      }
    frontier = next
  }
  return found
}
