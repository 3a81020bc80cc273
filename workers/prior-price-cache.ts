/**
 * The prior prices a thread keeps (engine/prior-price/prior-price.ts): each as the tail an answered
 * item carries (`,"prior_price":…`), by SKU, list, tax area, currency, rounding, quantity and days,
 * with the instants between which it holds and the change count it was computed at. Shared by the
 * prior-price query (./prior-price-query.ts) and the answer cache (./execute.ts), which keeps each
 * item's bytes with its prior price beside the plain ones.
 * @module
 */
import type { Catalog } from '../engine/catalog.js'
import type { PriceReader } from '../engine/price-replica.js'
import { correctedPrices } from '../engine/prior-price/corrections.js'
import { priorPriceValid, type PriorPrice, type PriorPriceRequest } from '../engine/prior-price/prior-price.js'
import { formatInstant } from '../engine/time.js'
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
export interface CachedPrior {
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
export function cachedPrior(
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
