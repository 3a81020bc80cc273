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

/** The SKU's effective price on the list at `at`, as a single read of that list answers it. */
export function effectivePriceAt(
  catalog: Catalog,
  prices: PriceReader,
  request: Omit<PriorPriceRequest, 'at' | 'days'>,
  at: number,
): Effective {
  const context = new PriceContext(catalog, prices, at, request.taxArea)
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

/**
 * The prior price, and the instants between which it is the same answer (`from` inclusive, `until`
 * exclusive): from the last moment at or before the instant asked to the next one after it, as long
 * as nothing is written (the moments and the prices at them stay).
 */
export function priorPriceValid(
  catalog: Catalog,
  prices: PriceReader,
  request: PriorPriceRequest,
): { prior: PriorPrice | null; from: number; until: number } {
  const moments = changeMoments(catalog, prices, request)
  let from = Number.NEGATIVE_INFINITY
  let until = Number.POSITIVE_INFINITY
  for (const moment of moments) {
    if (moment <= request.at) from = moment
    else {
      until = moment
      break
    }
  }
  return { prior: walk(catalog, prices, request, moments), from, until }
}

function walk(
  catalog: Catalog,
  prices: PriceReader,
  request: PriorPriceRequest,
  moments: readonly number[],
): PriorPrice | null {
  const priceAt = (at: number) => effectivePriceAt(catalog, prices, request, at)
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
  const moments = new Set<number>()
  const addVersions = (versions: readonly { from: number }[] | undefined) => {
    for (const version of versions ?? []) moments.add(version.from)
  }
  const lists = pricelistClosure(catalog, request.pricelist)
  const currencies = new Set<string>([request.options.currency])
  const skus = new Set<string>([request.sku])
  for (const code of lists) {
    const versions = catalog.versions('pricelist', code) ?? []
    for (const version of versions) {
      moments.add(version.from)
      const value = version.value
      if (value === null) continue
      if (value.start_date !== null) moments.add(value.start_date)
      if (value.end_date !== null) moments.add(value.end_date)
      currencies.add(value.currency_code)
    }
    const bundle = catalog.versions('bundle_rule', compositeKey(request.sku, code))
    addVersions(bundle)
    for (const version of bundle ?? []) for (const component of version.value?.components ?? []) skus.add(component.sku)
  }
  for (const sku of skus) {
    addVersions(catalog.versions('article', sku))
    const skuId = prices.skuId(sku)
    if (skuId < 0) continue
    for (const code of lists) {
      const pricelistId = prices.pricelistId(code)
      if (pricelistId < 0) continue
      for (let at = prices.nextChangeAfter(pricelistId, skuId, Number.NEGATIVE_INFINITY); at < Infinity; ) {
        moments.add(at)
        at = prices.nextChangeAfter(pricelistId, skuId, at)
      }
    }
  }
  addVersions(catalog.versions('article_taxclass', compositeKey(request.sku, request.taxArea)))
  const ratePrefix = `${request.taxArea}${keySeparator}`
  for (const key of catalog.keys('vat_rate'))
    if (key.startsWith(ratePrefix)) addVersions(catalog.versions('vat_rate', key))
  for (const currency of currencies) {
    if (currency !== 'EUR') addVersions(catalog.versions('fx_rate', fxKey(currency)))
    addVersions(catalog.versions('currency', currency))
  }
  // The rounding profile asked for is resolved at the instant asked: its versions bound a cached answer.
  for (const key of catalog.keys('rounding_profile')) addVersions(catalog.versions('rounding_profile', key))
  addVersions(catalog.versions('tax_area', request.taxArea))
  return [...moments].filter((moment) => Number.isFinite(moment)).sort((left, right) => left - right)
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
