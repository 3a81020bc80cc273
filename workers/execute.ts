/**
 * Runs a price query against a tenant state and serialises the answer. The same code runs on the
 * main thread (small queries) and in the workers (large ones), so both answer identically.
 *
 * Answer cache (per thread): each SKU's rendered item is kept under the query's settings (tax
 * area, currency, rounding, quantity, selected pricelists) with
 *  - the tenant's change count (shared memory: every price or catalogue write moves it) and the
 *    replica sequence (a worker's catalogue may trail the count until its messages arrive), and
 *  - the instant until which it holds by time alone (the next scheduled version of anything it
 *    was computed from: the candidates' price runs, the SKU's VAT mapping and rate, FX rates).
 * A cached item is used only when all three still hold, so an answer never differs from a fresh
 * computation. Queries with an explicit `as_of` and SKUs resolved through inheritance, rules or
 * bundles are computed every time.
 * @module
 */
import { compositeKey, type Catalog } from '../engine/catalog.js'
import { PriceContext, Status, statusReasons, type AnswerOptions, type PricedItem } from '../engine/pipeline.js'
import { nextVersionAfter } from '../engine/temporal.js'
import type { PriceReader } from '../engine/price-replica.js'
import { bestWithValidity, chainCurrencies, queryPrices, selectCandidates, type Validity } from '../engine/query.js'
import { resolveProfile } from '../engine/rounding.js'
import { answerBytes, answerBytesView } from './answer-bytes.js'
import { itemJson, jsonString } from './render.js'

export interface QueryInput {
  readonly at: number
  /** False when the request named `as_of`: historical answers are not cached. */
  readonly cacheable: boolean
  readonly taxArea: string
  readonly skus: readonly string[]
  readonly pricelists: readonly string[]
  readonly currency: string
  readonly rounding: string | null
  readonly sortOrder: 'ASC' | 'DESC' | null
  readonly quantity: number
}

interface CachedItem {
  /** The rendered item as UTF-8, or null when unavailable. */
  readonly json: Buffer | null
  readonly reason: string
  readonly gross: number
  /** The instant it was computed for: a cached item serves later instants only. */
  readonly at: number
  readonly changeCount: number
  readonly sequence: number
  readonly until: number
  /** The last query that answered it (duplicate SKUs in one query are answered once). */
  stamp: number
}

let queryStamp = 0

/**
 * This thread's answer-cache counts, in SKUs: served from the cache, or computed (uncacheable
 * queries count as computed). A worker reports each task's share with its answer; the main thread's
 * counts, with the workers' added, are the `pricing_query_answer_cache_items_total` metric.
 */
export const answerCacheCounts = { hits: 0, misses: 0 }

/**
 * Cached items per thread and tenant (about 350 B each: 50,000 is ~17 MiB); beyond this the
 * tenant's cache starts again empty. 0: no cache. Set at start (`PRICING_ANSWER_CACHE_ITEMS`).
 */
let cachedItemsMax = 50_000

/** Sets this thread's answer-cache bound (main.ts for the main thread, price-task.ts for a worker). */
export function setAnswerCacheItemsMax(count: number): void {
  if (!(Number.isInteger(count) && count >= 0)) throw new RangeError(`answer cache items must be a whole number >= 0, got ${count}`)
  cachedItemsMax = count
  caches.clear()
}

const caches = new Map<string, { size: number; byQuery: Map<string, Map<string, CachedItem>> }>()

function cacheFor(tenant: string): { size: number; byQuery: Map<string, Map<string, CachedItem>> } {
  let cache = caches.get(tenant)
  if (cache === undefined || cache.size > cachedItemsMax) {
    cache = { size: 0, byQuery: new Map() }
    caches.set(tenant, cache)
  }
  return cache
}

/**
 * The answer as JSON text. `sequence` is the catalogue state's replication sequence (0 on the main
 * thread). `view`: the answer may be a view of this thread's scratch buffer, valid until the next
 * query here (a worker copies it into its answer arena at once).
 */
export function executeQuery(catalog: Catalog, prices: PriceReader, input: QueryInput, tenant = '', sequence = 0, view = false): string | Buffer {
  const profile = resolveProfile(catalog, input.rounding ?? undefined, input.currency, input.at)
  const rounding = profile === null || profile === 'not_found' ? null : profile.compiled
  const context = new PriceContext(catalog, prices, input.at, input.taxArea)
  const options: AnswerOptions = { currency: input.currency, rounding, quantity: input.quantity }
  if (!input.cacheable || tenant === '' || cachedItemsMax === 0) {
    answerCacheCounts.misses += input.skus.length
    const result = queryPrices(context, { skus: input.skus, pricelists: input.pricelists, options, sortOrder: input.sortOrder })
    return view ? answerBytesView(result.items, result.unavailable) : answerBytes(result.items, result.unavailable)
  }
  return cachedQuery(context, input, options, tenant, sequence)
}

function cachedQuery(context: PriceContext, input: QueryInput, options: AnswerOptions, tenant: string, sequence: number): Buffer {
  const changeCount = context.prices.changeCount
  const cache = cacheFor(tenant)
  const queryKey = `${input.taxArea}\u0001${input.currency}\u0001${input.rounding ?? ''}\u0001${input.quantity}\u0001${input.pricelists.join('\u0002')}`
  let items = cache.byQuery.get(queryKey)
  if (items === undefined) {
    items = new Map()
    cache.byQuery.set(queryKey, items)
  }
  const selected = selectCandidates(context, input.pricelists, input.currency)
  const fxUntil = fxValidity(context.catalog, chainCurrencies(context, selected), input.currency, input.at)
  const found: CachedItem[] = []
  // Duplicates are answered once. A cached item carries the stamp of the last query that used it,
  // so the common case needs no Set; SKUs that are not cached go through a small Set instead.
  const stamp = ++queryStamp
  const uncached = new Set<string>()
  const validity: Validity = { until: 0 }
  let misses = 0
  for (const sku of input.skus) {
    let item = items.get(sku)
    if (item !== undefined && item.stamp === stamp) continue
    if (item === undefined || item.changeCount !== changeCount || item.sequence !== sequence || !(input.at < item.until) || input.at < item.at) {
      if (uncached.has(sku)) continue
      misses++
      const best = bestWithValidity(context, sku, selected, options, validity)
      item = renderCached(sku, best, input.at, changeCount, sequence, Math.min(validity.until, fxUntil))
      // NaN (not cacheable) fails `at < until` above, so such an item is recomputed every time.
      if (Number.isNaN(item.until)) {
        uncached.add(sku)
      } else {
        if (!items.has(sku)) cache.size++
        items.set(sku, item)
      }
    }
    item.stamp = stamp
    found.push(item)
  }
  answerCacheCounts.misses += misses
  answerCacheCounts.hits += found.length - misses
  return assemble(found, input.sortOrder)
}

function renderCached(sku: string, best: PricedItem | Status, at: number, changeCount: number, sequence: number, until: number): CachedItem {
  if (typeof best === 'number') {
    const reason = statusReasons[best]
    return { json: null, reason: '{"sku":' + jsonString(sku) + ',"reason":"' + reason + '"}', gross: 0, at, changeCount, sequence, until, stamp: 0 }
  }
  // Bytes once: answers are concatenated from these without encoding the text again.
  return { json: Buffer.from(itemJson(best, best.pricelist), 'utf8'), reason: '', gross: best.gross, at, changeCount, sequence, until, stamp: 0 }
}

/** The next publication date after `at` of any rate a conversion into `currency` may use. */
function fxValidity(catalog: Catalog, currencies: readonly string[], currency: string, at: number): number {
  let until = Number.POSITIVE_INFINITY
  const involved = new Set(currencies)
  if (involved.size === 1 && involved.has(currency)) return until
  involved.add(currency)
  for (const code of involved) until = Math.min(until, nextVersionAfter(catalog.versions('fx_rate', compositeKey('EUR', code)), at))
  return until
}

const itemsOpen = Buffer.from('{"items":[')
const unavailableOpen = Buffer.from('],"unavailable":[')
const answerClose = Buffer.from(']}')
const comma = Buffer.from(',')

/** The answer bytes from cached items, in request order or sorted by gross (stable). */
function assemble(found: CachedItem[], sortOrder: 'ASC' | 'DESC' | null): Buffer {
  const available: CachedItem[] = []
  const missing: string[] = []
  for (const item of found) {
    if (item.json !== null) available.push(item)
    else missing.push(item.reason)
  }
  if (sortOrder !== null) {
    const direction = sortOrder === 'ASC' ? 1 : -1
    available.sort((left, right) => direction * (left.gross - right.gross))
  }
  const parts: Buffer[] = [itemsOpen]
  for (let index = 0; index < available.length; index++) {
    if (index > 0) parts.push(comma)
    parts.push(available[index]!.json!)
  }
  parts.push(unavailableOpen, Buffer.from(missing.join(','), 'utf8'), answerClose)
  return Buffer.concat(parts)
}
