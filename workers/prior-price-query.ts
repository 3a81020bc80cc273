/**
 * The price query with `prior_price: true`: the plain answer's items, each with its EU prior price
 * (engine/prior-price/prior-price.ts) as its last field, or null where no reduction is in force.
 * It reads the history without the price versions marked as errors (engine/prior-price/corrections.ts).
 * Unavailable entries are as in the plain answer.
 * @module
 */
import type { Catalog } from '../engine/catalog.js'
import type { PricedItem } from '../engine/pipeline.js'
import type { PriceReader } from '../engine/price-replica.js'
import { correctedPrices } from '../engine/prior-price/corrections.js'
import { priorPriceValid, type PriorPrice, type PriorPriceRequest } from '../engine/prior-price/prior-price.js'
import { formatInstant } from '../engine/time.js'
import type { QueryInput } from './execute.js'
import { answeredQuery, answerOptions } from './explain-query.js'
import { answerBytes } from './answer-bytes.js'
import { amountJson } from './render.js'

/** The prior price as JSON text (null: no reduction in force). */
export function priorPriceJson(prior: PriorPrice | null): string {
  if (prior === null) return 'null'
  return (
    `{"net":${amountJson(prior.net)},"gross":${amountJson(prior.gross)},` +
    `"in_force_at":"${formatInstant(prior.inForceAt)}","reduction_started_at":"${formatInstant(prior.reductionStartedAt)}"}`
  )
}

/** A prior price's text, the instants it holds between, and the change count it was computed at. */
interface CachedPrior {
  /** `,"prior_price":…`: the item's tail, as text (a single read's) and as UTF-8 (a query's). */
  readonly text: string
  readonly tail: Uint8Array
  readonly from: number
  readonly until: number
  readonly changeCount: number
}

/** Prior prices by catalogue, then by SKU, list, area, currency, rounding, quantity and days (bounded). */
const caches = new WeakMap<Catalog, Map<string, CachedPrior>>()
const cachedMax = 100_000

/** Prior prices answered from the cache and computed, on this thread (the bench reads them). */
export const priorPriceCacheCounts = { hits: 0, misses: 0 }

/** Empties a catalogue's cached prior prices (the bench's cold rounds). */
export function clearPriorPriceCache(catalog: Catalog): void {
  caches.delete(catalog)
}

/**
 * The prior price's text, kept while nothing is written (the price book's change count, which
 * counts catalogue writes too) and the instant asked stays between the moments around it.
 */
function cachedPrior(
  catalog: Catalog,
  prices: PriceReader,
  request: PriorPriceRequest,
  roundingCode: string | null,
): CachedPrior {
  let cache = caches.get(catalog)
  if (cache === undefined) {
    cache = new Map()
    caches.set(catalog, cache)
  }
  const { sku, pricelist, taxArea, options, at, days } = request
  const key = `${sku}\u0001${pricelist}\u0001${taxArea}\u0001${options.currency}\u0001${roundingCode ?? ''}\u0001${options.quantity}\u0001${days}`
  const changeCount = prices.changeCount
  const cached = cache.get(key)
  if (cached !== undefined && cached.changeCount === changeCount && at >= cached.from && at < cached.until) {
    priorPriceCacheCounts.hits++
    return cached
  }
  priorPriceCacheCounts.misses++
  // The history without the versions marked as errors (the book itself when none is).
  const { prior, from, until } = priorPriceValid(catalog, correctedPrices(catalog, prices), request)
  const text = `,"prior_price":${priorPriceJson(prior)}`
  const entry = { text, tail: encoder.encode(text), from, until, changeCount }
  if (cache.size >= cachedMax) cache.clear()
  cache.set(key, entry)
  return entry
}

const encoder = new TextEncoder()

/** The answer of a query with prior prices; `days` is the tenant's `omnibus.days` at the query's instant. */
export function priorPriceQueryBytes(catalog: Catalog, prices: PriceReader, input: QueryInput, days: number): Buffer {
  const { options, roundingCode, result } = answeredQuery(catalog, prices, input)
  const tails = result.items.map((item) => {
    const request = { sku: item.sku, pricelist: item.pricelist, taxArea: input.taxArea, options, at: input.at, days }
    return cachedPrior(catalog, prices, request, roundingCode).tail
  })
  return answerBytes(result.items, result.unavailable, tails)
}

/** A single read's item text with its prior price as its last field. */
export function withPriorPrice(
  catalog: Catalog,
  prices: PriceReader,
  read: {
    json: string
    item: PricedItem
    pricelist: string
    taxArea: string
    at: number
    rounding: string | null
    quantity: number
  },
  days: number,
): string {
  const { item } = read
  const { options, roundingCode } = answerOptions(catalog, item.currency, read.rounding, read.at, read.quantity)
  const request = { sku: item.sku, pricelist: read.pricelist, taxArea: read.taxArea, options, at: read.at, days }
  return `${read.json.slice(0, -1)}${cachedPrior(catalog, prices, request, roundingCode).text}}`
}
