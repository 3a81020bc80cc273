/**
 * The prior prices a thread keeps (engine/prior-price/prior-price.ts): each as the tail an answered
 * item carries (`,"prior_price":…`), by SKU, then list, tax area, currency, rounding, quantity and
 * days, with the instants between which it holds and what it read as it was then, so that a write
 * ends only the prior prices that read what it wrote (`holds`). Shared by the prior-price query
 * (./prior-price-query.ts) and the answer cache (./execute.ts), which keeps each item's bytes with
 * its prior price beside the plain ones.
 * @module
 */
import type { Catalog } from '../engine/catalog.js'
import type { PriceReader } from '../engine/price-replica.js'
import { correctedPrices } from '../engine/prior-price/corrections.js'
import {
  priorPriceValid,
  sharedRevision,
  skuRecords,
  type ContextsByInstant,
  type SkuRecords,
  type PriorPrice,
  type PriorPriceRequest,
} from '../engine/prior-price/prior-price.js'
import { formatInstant } from '../engine/time.js'
import type { ItemTail } from './answer-bytes.js'
import { amountJson } from './render.js'

/** The prior price as JSON text (null: no reduction in force). */
export function priorPriceJson(prior: PriorPrice | null): string {
  if (prior === null) return 'null'
  return (
    `{"net":${amountJson(prior.net)},"gross":${amountJson(prior.gross)},` +
    `"in_force_at":"${formatInstant(prior.inForceAt)}","reduction_started_at":"${formatInstant(prior.reductionStartedAt)}"}`
  )
}

/** A prior price's bytes, what it was asked for, and what it holds while (see `holds`). */
export interface CachedPrior extends ItemTail {
  // `,"prior_price":…`: the item's tail as UTF-8, in its cache's arena (`priorTail`, `priorText`).
  /** The instants it holds between while nothing it read is written. */
  readonly from: number
  readonly until: number
  // What it was asked for (the SKU is where it is kept).
  readonly pricelist: string
  readonly taxArea: string
  readonly currency: string
  readonly roundingCode: string | null
  readonly quantity: number
  readonly days: number
  // What it read, as it was then.
  /** The reader it was computed from (a restored tenant's book is another). */
  readonly prices: PriceReader
  /** The catalogue's writes of the types every SKU reads (`sharedRevision`). */
  readonly shared: number
  /** The price book's change count, and the catalogue's writes of every type (`revisionTotal`). */
  readonly changeCount: number
  readonly revisionTotal: number
  /** The SKUs whose records it read: the one asked, and its bundle components. */
  readonly skus: readonly string[]
  /** Their price-book ids (-1: none then; it holds while the SKU still has none). */
  readonly skuIds: readonly number[]
  /** Their VAT mapping's and articles' version lists as it read them (a write replaces one). */
  readonly records: SkuRecords
  readonly readsArticles: boolean
  /** The index of the SKU's next kept prior price in `entries` (another list, area...), or -1. */
  next: number
}

/** The prior price's tail bytes (a view of its cache's arena). */
export function priorTail(kept: CachedPrior): Uint8Array {
  return kept.arena.subarray(kept.tailStart, kept.tailEnd)
}

/** The prior price's tail as text (a single read's). */
export function priorText(kept: CachedPrior): string {
  return decoder.decode(priorTail(kept))
}

/**
 * The prior prices kept for one catalogue. A SKU's first is found by its price-book id (a SKU
 * without one: by code), the others (other lists, areas, currencies...) chained from it. Their
 * tails lie side by side in an arena: an answer copies each from there without touching an object
 * per tail. A stale one's place is taken by the fresh one (its old bytes stay as garbage). Bounded:
 * beyond `cachedMax` entries or `arenaMax` bytes the catalogue's cache starts again empty.
 */
interface PriorCache {
  readonly entries: CachedPrior[]
  /** Per SKU id, its first entry's index + 1 (0: none). */
  firstById: Int32Array
  readonly firstByCode: Map<string, number>
  arena: Uint8Array
  arenaUsed: number
}

const caches = new WeakMap<Catalog, PriorCache>()
/** About 500 B each with its tail: 200,000 is ~100 MiB at most, a prior price for each SKU of a large catalogue. */
const cachedMax = 200_000
const arenaMax = 64 * 1024 * 1024

function newCache(): PriorCache {
  return {
    entries: [],
    firstById: new Int32Array(1024),
    firstByCode: new Map(),
    arena: new Uint8Array(64 * 1024),
    arenaUsed: 0,
  }
}

/** Prior prices answered from the cache and computed, on this thread (the bench reads them). */
export const priorPriceCacheCounts = { hits: 0, misses: 0 }

/** Empties a catalogue's cached prior prices (the bench's cold rounds). */
export function clearPriorPriceCache(catalog: Catalog): void {
  caches.delete(catalog)
}

/**
 * The prior prices of one query (or single read): the state they are asked in, read once, and the
 * price contexts their walks share. Made by `priorLookup`, then one `cachedPrior` per item.
 */
export interface PriorLookup {
  readonly catalog: Catalog
  readonly prices: PriceReader
  /** What every item asks alike: the tax area, the answer options, the instant and the days. */
  readonly question: PriorQuestion
  /** The history without the versions marked as errors (the book itself when none is). */
  readonly corrected: PriceReader
  readonly shared: number
  readonly changeCount: number
  readonly revisionTotal: number
  readonly contexts: ContextsByInstant
}

/** A prior price's request without its SKU and list, and the rounding profile's code. */
export interface PriorQuestion extends Omit<PriorPriceRequest, 'sku' | 'pricelist'> {
  readonly roundingCode: string | null
}

export function priorLookup(catalog: Catalog, prices: PriceReader, question: PriorQuestion): PriorLookup {
  return {
    catalog,
    prices,
    question,
    corrected: correctedPrices(catalog, prices),
    shared: sharedRevision(catalog),
    changeCount: prices.changeCount,
    revisionTotal: catalog.revisionTotal(),
    contexts: new Map(),
  }
}

/**
 * The SKU's prior price on the list. A kept one serves while the instant asked stays between the
 * moments around it and nothing it read was written: no catalogue record every SKU reads (lists,
 * rates, profiles, corrections, settings), and none of its SKUs' prices, articles or VAT mapping.
 * So a write of one SKU's price leaves every other SKU's prior prices kept.
 */
export function cachedPrior(
  lookup: PriorLookup,
  sku: string,
  /** The list the item was answered from. */
  pricelist: string,
  /** The SKU's price-book id, when the caller has it (-1: none). */
  skuId = lookup.prices.skuId(sku),
): CachedPrior {
  const { catalog, question } = lookup
  let cache = caches.get(catalog)
  if (cache === undefined || cache.entries.length >= cachedMax || cache.arenaUsed >= arenaMax) {
    cache = newCache()
    caches.set(catalog, cache)
  }
  const { entries } = cache
  let index = firstOf(cache, skuId, sku)
  while (index >= 0) {
    const entry = entries[index]!
    if (asks(entry, question, pricelist)) {
      if (holds(entry, lookup)) {
        priorPriceCacheCounts.hits++
        return entry
      }
      break
    }
    index = entry.next
  }
  priorPriceCacheCounts.misses++
  const { roundingCode, ...asked } = question
  const request: PriorPriceRequest = { ...asked, sku, pricelist }
  const valid = priorPriceValid(catalog, lookup.corrected, request, lookup.contexts, lookup.shared)
  const { prior, from, until, skus, skuIds } = valid
  const tailStart = cache.arenaUsed
  const tailEnd = appendTail(cache, `,"prior_price":${priorPriceJson(prior)}`)
  const entry: CachedPrior = {
    arena: cache.arena,
    tailStart,
    tailEnd,
    from,
    until,
    pricelist,
    taxArea: question.taxArea,
    currency: question.options.currency,
    roundingCode,
    quantity: question.options.quantity,
    days: question.days,
    prices: lookup.prices,
    shared: lookup.shared,
    changeCount: lookup.changeCount,
    revisionTotal: lookup.revisionTotal,
    skus,
    // A corrected view numbers the book's SKUs as the book does.
    skuIds,
    records: valid.records,
    readsArticles: valid.readsArticles,
    next: -1,
  }
  if (index >= 0) {
    // The stale one's place, in its chain.
    entry.next = entries[index]!.next
    entries[index] = entry
  } else {
    entry.next = firstOf(cache, skuId, sku)
    setFirst(cache, skuId, sku, entries.length)
    entries.push(entry)
  }
  return entry
}

function firstOf(cache: PriorCache, skuId: number, sku: string): number {
  if (skuId < 0) return cache.firstByCode.get(sku) ?? -1
  return skuId < cache.firstById.length ? cache.firstById[skuId]! - 1 : -1
}

function setFirst(cache: PriorCache, skuId: number, sku: string, index: number): void {
  if (skuId < 0) {
    cache.firstByCode.set(sku, index)
    return
  }
  if (skuId >= cache.firstById.length) {
    let length = cache.firstById.length * 2
    while (skuId >= length) length *= 2
    const grown = new Int32Array(length)
    grown.set(cache.firstById)
    cache.firstById = grown
  }
  cache.firstById[skuId] = index + 1
}

/** Appends the tail's UTF-8 to the arena (a larger one when full: kept tails keep the old); answers its end. */
function appendTail(cache: PriorCache, text: string): number {
  const room = text.length * 3
  if (cache.arenaUsed + room > cache.arena.length) {
    let length = cache.arena.length * 2
    while (cache.arenaUsed + room > length) length *= 2
    const grown = new Uint8Array(length)
    grown.set(cache.arena.subarray(0, cache.arenaUsed))
    cache.arena = grown
  }
  cache.arenaUsed += encoder.encodeInto(text, cache.arena.subarray(cache.arenaUsed)).written
  return cache.arenaUsed
}

/** Whether a kept prior price answers the same question (the SKU aside). */
function asks(entry: CachedPrior, question: PriorQuestion, pricelist: string): boolean {
  return (
    entry.pricelist === pricelist &&
    entry.taxArea === question.taxArea &&
    entry.currency === question.options.currency &&
    entry.roundingCode === question.roundingCode &&
    entry.quantity === question.options.quantity &&
    entry.days === question.days
  )
}

/** Whether a kept prior price still holds (see `cachedPrior`). */
function holds(entry: CachedPrior, lookup: PriorLookup): boolean {
  const { at, taxArea } = lookup.question
  if (!(at >= entry.from && at < entry.until)) return false
  if (entry.prices !== lookup.prices || entry.shared !== lookup.shared) return false
  if (entry.changeCount === lookup.changeCount && entry.revisionTotal === lookup.revisionTotal) return true
  const { prices, catalog } = lookup
  if (prices.skuChangedAt === undefined) return false
  for (let index = 0; index < entry.skuIds.length; index++) {
    const skuId = entry.skuIds[index]!
    if (skuId < 0 ? prices.skuId(entry.skus[index]!) >= 0 : prices.skuChangedAt(skuId) > entry.changeCount) return false
  }
  const records = skuRecords(catalog, entry.skus, taxArea, entry.readsArticles)
  for (let index = 0; index < records.length; index++) if (records[index] !== entry.records[index]) return false
  return true
}

const encoder = new TextEncoder()
const decoder = new TextDecoder()
