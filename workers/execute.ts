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
import { cachedPrior, priorLookup, priorTail, priorValidity, type PriorLookup } from './prior-price-cache.js'
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
  /**
   * The item with its prior price as its last field, for queries that ask for it (null until one
   * does), the omnibus days and the instants it holds between (./prior-price-cache.ts).
   */
  prior: Buffer | null
  priorDays: number
  priorFrom: number
  priorUntil: number
  readonly reason: string
  readonly gross: number
  /** The pricelist that gave it ('' when unavailable). */
  readonly pricelist: string
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

/**
 * Sets this thread's answer-cache bound and the share of repeated queries from which it serves
 * (0: it always serves); main.ts for the main thread, price-task.ts for a worker.
 */
export function setAnswerCacheItemsMax(count: number, minRepeatShare = cacheOnFrom): void {
  if (!(Number.isInteger(count) && count >= 0))
    throw new RangeError(`answer cache items must be a whole number >= 0, got ${count}`)
  if (!(minRepeatShare >= 0 && minRepeatShare <= 1))
    throw new RangeError(`answer cache repeat share must be from 0 to 1, got ${minRepeatShare}`)
  cachedItemsMax = count
  cacheOnFrom = minRepeatShare
  caches.clear()
}

/**
 * Whether the cache pays for itself. A query through the cache computes each SKU it misses with
 * what the cache needs besides the price (how long the answer holds, its rendered bytes), one SKU
 * at a time: several times the cost of the plain batch computation. So it pays only where queries
 * come back (a category page that many shoppers open) while their items are still held, and with
 * many distinct bodies (carts, searches) it would make every query slower.
 *
 * Per thread and tenant, every cacheable query leaves a fingerprint (its settings, SKU count and
 * three of its SKUs): a query repeats when its fingerprint came within the SKUs the cache holds
 * (half its bound, as it starts again empty when full). The cache serves while the share of
 * repeats (a moving average) is at least `cacheOnFrom` (`PRICING_ANSWER_CACHE_MIN_REPEAT_SHARE`),
 * and steps aside below it by `cacheOffMargin`: queries are then computed as without a cache, at
 * the cost of the fingerprint. While serving, repeated queries that still miss (writes keep ending
 * their items) put it aside too, for `holdAsideQueries`. A fingerprint that collides only moves
 * the decision; answers are always computed or served as the module comment says.
 * Measured: bench/results/latest.md, the query scenarios with the cache on and off.
 */
let cacheOnFrom = 0.8
/** Hysteresis: a share between the two keeps the cache as it is. */
const cacheOffMargin = 0.1
/** Weight of one query in the moving averages. */
const shareWeight = 1 / 8
/** Queries the cache stays aside after repeated queries kept missing. */
const holdAsideQueries = 1_024
/** Fingerprints kept per thread and tenant before the table starts again. */
const fingerprintsMax = 8_192

interface TenantCache {
  size: number
  byQuery: Map<string, Map<string, CachedItem>>
  /** Fingerprint -> the count of SKUs asked for (`skusSeen`) when it last came. */
  readonly fingerprints: Map<string, number>
  skusSeen: number
  /** Moving average of the share of queries that repeat. */
  repeatShare: number
  /** Moving average of the share of SKUs found, over repeated queries through the cache. */
  hitShare: number
  /** Whether every cacheable query goes through the cache. */
  serving: boolean
  /** Queries left to stay aside whatever the repeats (after repeats kept missing). */
  heldAside: number
}

const caches = new Map<string, TenantCache>()

function cacheFor(tenant: string): TenantCache {
  let cache = caches.get(tenant)
  if (cache === undefined) {
    // A new cache serves until the traffic shows that it does not pay: a few queries that do not repeat.
    cache = {
      size: 0,
      byQuery: new Map(),
      fingerprints: new Map(),
      skusSeen: 0,
      repeatShare: 1,
      hitShare: 1,
      serving: true,
      heldAside: 0,
    }
    caches.set(tenant, cache)
  } else if (cache.size > cachedItemsMax) {
    // Full: it starts again empty (the shares stay: they describe the traffic).
    cache.size = 0
    cache.byQuery = new Map()
  }
  return cache
}

function queryKeyOf(input: QueryInput): string {
  return `${input.taxArea}\u0001${input.currency}\u0001${input.rounding ?? ''}\u0001${input.quantity}\u0001${input.pricelists.join('\u0002')}`
}

/**
 * Records the query's fingerprint and answers whether it goes through the cache (see cacheOnFrom);
 * `repeated.value` says whether it repeats.
 */
function throughCache(cache: TenantCache, queryKey: string, skus: readonly string[]): boolean {
  const count = skus.length
  const fingerprint = `${queryKey}\u0003${count}\u0003${skus[0] ?? ''}\u0003${skus[count >> 1] ?? ''}\u0003${skus[count - 1] ?? ''}`
  const last = cache.fingerprints.get(fingerprint)
  repeated.value = last !== undefined && cache.skusSeen - last <= cachedItemsMax / 2
  if (cache.fingerprints.size >= fingerprintsMax) cache.fingerprints.clear()
  cache.fingerprints.set(fingerprint, cache.skusSeen)
  cache.skusSeen += count
  cache.repeatShare += ((repeated.value ? 1 : 0) - cache.repeatShare) * shareWeight
  if (cache.heldAside > 0) {
    cache.heldAside--
    return false
  }
  if (cache.serving && cache.repeatShare < cacheOnFrom - cacheOffMargin) cache.serving = false
  else if (!cache.serving && cache.repeatShare >= cacheOnFrom) {
    cache.serving = true
    cache.hitShare = 1
  }
  return cache.serving
}

const repeated = { value: false }

/** Records the share of a repeated query's SKUs the cache found; puts it aside when repeats keep missing. */
function recordHitShare(cache: TenantCache, found: number, looked: number): void {
  if (looked === 0 || !repeated.value || cacheOnFrom === 0) return
  cache.hitShare += (found / looked - cache.hitShare) * shareWeight
  if (cache.hitShare < cacheOnFrom - cacheOffMargin) {
    cache.serving = false
    cache.heldAside = holdAsideQueries
  }
}

/**
 * The answer as JSON text. `sequence` is the catalogue state's replication sequence (0 on the main
 * thread). `view`: the answer may be a view of this thread's scratch buffer, valid until the next
 * query here (a worker copies it into its answer arena at once).
 */
export function executeQuery(
  catalog: Catalog,
  prices: PriceReader,
  input: QueryInput,
  tenant = '',
  sequence = 0,
  view = false,
): string | Buffer {
  const { context, options } = pricing(catalog, prices, input)
  const queryKey = input.cacheable && tenant !== '' && cachedItemsMax > 0 ? queryKeyOf(input) : ''
  if (queryKey === '' || !throughCache(cacheFor(tenant), queryKey, input.skus)) {
    answerCacheCounts.misses += input.skus.length
    const result = queryPrices(context, {
      skus: input.skus,
      pricelists: input.pricelists,
      options,
      sortOrder: input.sortOrder,
    })
    return view ? answerBytesView(result.items, result.unavailable) : answerBytes(result.items, result.unavailable)
  }
  return cachedQuery(context, input, options, tenant, sequence, queryKey)
}

/**
 * A query with prior prices through the answer cache, each item kept with its prior price beside
 * its plain bytes (the main thread's: the prior price reads the tenant's book); null where the
 * cache does not serve the query (an `as_of`, a cache turned off by traffic that does not repeat).
 */
export function cachedPriorQuery(
  catalog: Catalog,
  prices: PriceReader,
  input: QueryInput,
  tenant: string,
  days: number,
): Buffer | null {
  if (!input.cacheable || cachedItemsMax <= 0) return null
  const queryKey = queryKeyOf(input)
  if (!throughCache(cacheFor(tenant), queryKey, input.skus)) return null
  const { context, options, roundingCode } = pricing(catalog, prices, input)
  return cachedQuery(context, input, options, tenant, 0, queryKey, { days, roundingCode })
}

/**
 * The context and options a query is priced in: its rounding profile resolved at its instant (a
 * profile missing then, which the route answered 404 for before, rounds nothing).
 */
function pricing(catalog: Catalog, prices: PriceReader, input: QueryInput) {
  const profile = resolveProfile(catalog, input.rounding ?? undefined, input.currency, input.at)
  const resolved = profile === null || profile === 'not_found' ? null : profile
  const context = new PriceContext(catalog, prices, input.at, input.taxArea)
  const options: AnswerOptions = {
    currency: input.currency,
    rounding: resolved?.compiled ?? null,
    quantity: input.quantity,
  }
  return { context, options, roundingCode: resolved?.code ?? null }
}

function cachedQuery(
  context: PriceContext,
  input: QueryInput,
  options: AnswerOptions,
  tenant: string,
  sequence: number,
  queryKey: string,
  prior: PriorAsk | null = null,
): Buffer {
  const changeCount = context.prices.changeCount
  const cache = cacheFor(tenant)
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
  let lookup: PriorLookup | null = null
  for (const sku of input.skus) {
    let item = items.get(sku)
    if (item !== undefined && item.stamp === stamp) continue
    if (
      item === undefined ||
      item.changeCount !== changeCount ||
      item.sequence !== sequence ||
      !(input.at < item.until) ||
      input.at < item.at
    ) {
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
    if (prior !== null && item.json !== null && !priorHolds(item, context.at, prior)) {
      lookup ??= priorLookup(context.catalog, context.prices, {
        taxArea: context.taxArea,
        options,
        at: context.at,
        days: prior.days,
        roundingCode: prior.roundingCode,
      })
      withPrior(lookup, item, sku)
    }
    found.push(item)
  }
  answerCacheCounts.misses += misses
  answerCacheCounts.hits += found.length - misses
  recordHitShare(cache, found.length - misses, found.length)
  return assemble(found, input.sortOrder, prior !== null)
}

/** What a query with prior prices adds to the cached path: the days, and the rounding profile's code. */
interface PriorAsk {
  readonly days: number
  readonly roundingCode: string | null
}

/** Whether the item's bytes with its prior price hold at `at` (the item itself holds). */
function priorHolds(item: CachedItem, at: number, ask: PriorAsk): boolean {
  return item.prior !== null && item.priorDays === ask.days && at >= item.priorFrom && at < item.priorUntil
}

/** Keeps the item's bytes with its prior price. */
function withPrior(lookup: PriorLookup, item: CachedItem, sku: string): void {
  const kept = cachedPrior(lookup, sku, item.pricelist)
  const json = item.json!
  item.prior = Buffer.concat([json.subarray(0, json.length - 1), priorTail(lookup, kept), closeBrace])
  item.priorDays = lookup.question.days
  const { from, until } = priorValidity(lookup, kept)
  item.priorFrom = from
  item.priorUntil = until
}

function renderCached(
  sku: string,
  best: PricedItem | Status,
  at: number,
  changeCount: number,
  sequence: number,
  until: number,
): CachedItem {
  if (typeof best === 'number') {
    const reason = statusReasons[best]
    return {
      json: null,
      prior: null,
      priorDays: 0,
      priorFrom: 0,
      priorUntil: 0,
      reason: '{"sku":' + jsonString(sku) + ',"reason":"' + reason + '"}',
      gross: 0,
      pricelist: '',
      at,
      changeCount,
      sequence,
      until,
      stamp: 0,
    }
  }
  // Bytes once: answers are concatenated from these without encoding the text again.
  return {
    json: Buffer.from(itemJson(best, best.pricelist), 'utf8'),
    prior: null,
    priorDays: 0,
    priorFrom: 0,
    priorUntil: 0,
    reason: '',
    gross: best.gross,
    pricelist: best.pricelist,
    at,
    changeCount,
    sequence,
    until,
    stamp: 0,
  }
}

/** The next publication date after `at` of any rate a conversion into `currency` may use. */
function fxValidity(catalog: Catalog, currencies: readonly string[], currency: string, at: number): number {
  let until = Number.POSITIVE_INFINITY
  const involved = new Set(currencies)
  if (involved.size === 1 && involved.has(currency)) return until
  involved.add(currency)
  for (const code of involved)
    until = Math.min(until, nextVersionAfter(catalog.versions('fx_rate', compositeKey('EUR', code)), at))
  return until
}

const itemsOpen = Buffer.from('{"items":[')
const unavailableOpen = Buffer.from('],"unavailable":[')
const answerClose = Buffer.from(']}')
const comma = Buffer.from(',')

const closeBrace = Buffer.from('}')

/** The answer bytes from cached items (with their prior prices when asked), in request order or sorted by gross (stable). */
function assemble(found: CachedItem[], sortOrder: 'ASC' | 'DESC' | null, withPriorPrices = false): Buffer {
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
    parts.push(withPriorPrices ? available[index]!.prior! : available[index]!.json!)
  }
  parts.push(unavailableOpen, Buffer.from(missing.join(','), 'utf8'), answerClose)
  return Buffer.concat(parts)
}
