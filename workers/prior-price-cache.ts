/**
 * The prior prices a thread keeps (engine/prior-price/prior-price.ts): each as the tail an answered
 * item carries (`,"prior_price":…`), by SKU, then list, tax area, currency, rounding, quantity and
 * days, with the instants between which it holds and what it read as it was then, so that a write
 * ends only the prior prices that read what it wrote (`holdsAfterWrites`). Shared by the prior-price
 * query (./prior-price-query.ts) and the answer cache (./execute.ts), which keeps each item's bytes
 * with its prior price beside the plain ones.
 *
 * A storefront's catalogue is larger than the processor's caches, so a look-up is counted in memory
 * reads: one for the SKU's first entry (`firstById`), one for the entry's record (8 numbers side by
 * side in `hot`: validity, the state it was computed in, the question, its tail's place, the next
 * entry), and one for its tail's bytes (side by side in `arena`). The rest of what it read
 * (`PriorDetails`) is read only after a write.
 * @module
 */
import type { Catalog } from '../engine/catalog.js'
import type { PriceReader } from '../engine/price-replica.js'
import { correctedPrices } from '../engine/prior-price/corrections.js'
import {
  priorPriceValid,
  recordsRevision,
  skuRecords,
  type ContextsByInstant,
  type SkuRecords,
  type PriorPrice,
  type PriorPriceRequest,
} from '../engine/prior-price/prior-price.js'
import { formatInstant } from '../engine/time.js'
import type { ItemTails } from './answer-bytes.js'
import { amountJson } from './render.js'

/** The prior price as JSON text (null: no reduction in force). */
export function priorPriceJson(prior: PriorPrice | null): string {
  if (prior === null) return 'null'
  return (
    `{"net":${amountJson(prior.net)},"gross":${amountJson(prior.gross)},` +
    `"in_force_at":"${formatInstant(prior.inForceAt)}","reduction_started_at":"${formatInstant(prior.reductionStartedAt)}"}`
  )
}

/** What a kept prior price read, as it was then: read only after its SKUs' records were written. */
interface PriorDetails {
  /** The SKUs whose records it read: the one asked, and its bundle components. */
  readonly skus: readonly string[]
  /** Their price-book ids (-1: none then; it holds while the SKU still has none). */
  readonly skuIds: readonly number[]
  /** Their VAT mapping's and articles' version lists as it read them (a write replaces one). */
  readonly records: SkuRecords
  readonly readsArticles: boolean
}

// An entry's record in `hot`: 8 numbers (64 bytes, one cache line).
const stride = 8
/** The instants it holds between while nothing it read is written. */
const fieldFrom = 0
const fieldUntil = 1
/** The cache's epoch, and the price book's change count, at which it was computed or last found to hold. */
const fieldEpoch = 2
const fieldChanges = 3
/**
 * What it answers: the question's id times `listIdsMax` plus the list's id; as -1 - that when it
 * read more than one SKU's records (a bundle's components: its details say which).
 */
const fieldQuestion = 4
const fieldTailStart = 5
const fieldTailEnd = 6
/** The SKU's next entry (another list, area, currency...), or -1. */
const fieldNext = 7
const listIdsMax = 2 ** 20

/**
 * The prior prices kept for one catalogue and price book. A SKU's first entry is found by its
 * price-book id (a SKU without one: by code), the others chained from it. A stale entry's place is
 * taken by the fresh one (its old tail stays in the arena as garbage). Bounded: beyond `cachedMax`
 * entries, `arenaMax` bytes, or as many questions or lists, a query starts it again empty; so does
 * a write of a catalogue type every SKU reads (`sharedRevision`: lists, VAT rates, FX rates,
 * rounding profiles, corrections, settings...), after which none holds.
 *
 * The state it was last asked in: each change of it (any write) starts an epoch. An entry of the
 * current epoch holds (by time alone); an older one holds if none of its SKUs' prices was written
 * since its change count (the book's per-SKU change counts) and, when an article or VAT mapping was
 * written since its epoch (`recordsEpoch`), its SKUs' records are the ones it read. Then it is
 * stamped with the current epoch.
 */
interface PriorCache {
  readonly prices: PriceReader
  readonly shared: number
  changeCount: number
  revisionTotal: number
  /** The catalogue's writes of articles and VAT mappings (the per-SKU records). */
  records: number
  epoch: number
  /** The last epoch that began with a write of an article or a VAT mapping. */
  recordsEpoch: number
  hot: Float64Array
  count: number
  readonly details: PriorDetails[]
  /** Per SKU id, its first entry's index + 1 (0: none). */
  firstById: Int32Array
  readonly firstByCode: Map<string, number>
  /** The tails' UTF-8, side by side (grown by copying: an offset stays valid). */
  arena: Uint8Array
  arenaUsed: number
  /** Where the tail of no prior price lies (-1: not yet written). */
  nullTail: number
  /** Ids of the questions (area, currency, rounding, quantity, days) and of the lists asked. */
  readonly questionIds: Map<string, number>
  readonly listIds: Map<string, number>
}

const caches = new WeakMap<Catalog, PriorCache>()
/** About 400 B each with its details and tail: 200,000 is ~80 MiB at most, one for each SKU of a large catalogue. */
const cachedMax = 200_000
const arenaMax = 64 * 1024 * 1024

/** The state a cache is asked in (see `PriorCache`). */
interface PriorState {
  readonly changeCount: number
  readonly revisionTotal: number
  readonly shared: number
  readonly records: number
}

function newCache(prices: PriceReader, state: PriorState): PriorCache {
  return {
    prices,
    ...state,
    epoch: 0,
    recordsEpoch: 0,
    hot: new Float64Array(1024 * stride),
    count: 0,
    details: [],
    firstById: new Int32Array(1024),
    firstByCode: new Map(),
    arena: new Uint8Array(64 * 1024),
    arenaUsed: 0,
    nullTail: -1,
    questionIds: new Map(),
    listIds: new Map(),
  }
}

/** Prior prices answered from the cache and computed, on this thread (the bench reads them). */
export const priorPriceCacheCounts = { hits: 0, misses: 0 }

/**
 * Empties a catalogue's cached prior prices (the bench's cold rounds, before every query): the
 * arrays stay allocated, their SKU index zeroed, so a cold figure holds the walks, not the growth.
 */
export function clearPriorPriceCache(catalog: Catalog): void {
  const cache = caches.get(catalog)
  if (cache === undefined) return
  cache.count = 0
  cache.details.length = 0
  cache.firstById.fill(0)
  cache.firstByCode.clear()
  cache.arenaUsed = 0
  cache.nullTail = -1
  cache.questionIds.clear()
  cache.listIds.clear()
}

/**
 * The prior prices of one query (or single read): the state they are asked in, read once, the
 * cache they are kept in, and the price contexts their walks share. Made by `priorLookup`, then one
 * `cachedPrior` per item.
 */
export interface PriorLookup {
  readonly catalog: Catalog
  readonly prices: PriceReader
  /** What every item asks alike: the tax area, the answer options, the instant and the days. */
  readonly question: PriorQuestion
  /** The history without the versions marked as errors (the book itself when none is). */
  readonly corrected: PriceReader
  readonly contexts: ContextsByInstant
  readonly cache: PriorCache
  readonly questionId: number
}

/** A prior price's request without its SKU and list, and the rounding profile's code. */
export interface PriorQuestion extends Omit<PriorPriceRequest, 'sku' | 'pricelist'> {
  readonly roundingCode: string | null
}

export function priorLookup(catalog: Catalog, prices: PriceReader, question: PriorQuestion): PriorLookup {
  const revisionTotal = catalog.revisionTotal()
  const records = recordsRevision(catalog)
  const state: PriorState = { changeCount: prices.changeCount, revisionTotal, shared: revisionTotal - records, records }
  let cache = caches.get(catalog)
  if (
    cache === undefined ||
    cache.prices !== prices ||
    cache.shared !== state.shared ||
    cache.count >= cachedMax ||
    cache.arenaUsed >= arenaMax ||
    cache.listIds.size >= listIdsMax
  ) {
    // Started again once per query, never within one: its entries' tails stay where they are.
    cache = newCache(prices, state)
    caches.set(catalog, cache)
  } else if (cache.changeCount !== state.changeCount || cache.revisionTotal !== revisionTotal) {
    cache.epoch++
    if (cache.records !== records) cache.recordsEpoch = cache.epoch
    cache.changeCount = state.changeCount
    cache.revisionTotal = revisionTotal
    cache.records = records
  }
  const { taxArea, options, days, roundingCode } = question
  const key = `${taxArea}\u0001${options.currency}\u0001${roundingCode ?? ''}\u0001${options.quantity}\u0001${days}`
  let questionId = cache.questionIds.get(key)
  if (questionId === undefined) {
    questionId = cache.questionIds.size
    cache.questionIds.set(key, questionId)
  }
  return {
    catalog,
    prices,
    question,
    corrected: correctedPrices(catalog, prices),
    contexts: new Map(),
    cache,
    questionId,
  }
}

/**
 * The SKU's prior price on the list, as the index of its entry in the lookup's cache (`priorTails`,
 * `priorText`, `priorValidity` read it). A kept one serves while the instant asked stays between
 * the moments around it and nothing it read was written: no catalogue record every SKU reads
 * (lists, rates, profiles, corrections, settings), and none of its SKUs' prices, articles or VAT
 * mapping (see `PriorCache`). So a write of one SKU's price leaves every other SKU's prior prices kept.
 */
export function cachedPrior(
  lookup: PriorLookup,
  sku: string,
  /** The list the item was answered from. */
  pricelist: string,
  /** The SKU's price-book id, when the caller has it (-1: none). */
  skuId = lookup.prices.skuId(sku),
  /** Its first entry's index (-1: none), when the caller looked it up (`cachedPriors`). */
  first = firstOf(lookup.cache, skuId, sku),
): number {
  const { cache, question } = lookup
  let listId = cache.listIds.get(pricelist)
  if (listId === undefined) {
    listId = cache.listIds.size
    cache.listIds.set(pricelist, listId)
  }
  const asked = lookup.questionId * listIdsMax + listId
  const at = question.at
  let index = first
  while (index >= 0) {
    const hot = cache.hot
    const base = index * stride
    const answers = hot[base + fieldQuestion]!
    if (answers === asked || answers === -1 - asked) {
      if (
        at >= hot[base + fieldFrom]! &&
        at < hot[base + fieldUntil]! &&
        (hot[base + fieldEpoch] === cache.epoch || holdsAfterWrites(lookup, index, sku, skuId))
      ) {
        priorPriceCacheCounts.hits++
        return index
      }
      break
    }
    index = hot[base + fieldNext]!
  }
  priorPriceCacheCounts.misses++
  const { roundingCode: _, ...rest } = question
  const request: PriorPriceRequest = { ...rest, sku, pricelist }
  const valid = priorPriceValid(lookup.catalog, lookup.corrected, request, lookup.contexts, cache.shared)
  // No reduction in force (most SKUs, most of the time): every such entry shares one tail.
  if (valid.prior === null && cache.nullTail < 0) {
    cache.nullTail = cache.arenaUsed
    appendTail(cache, nullTail)
  }
  const tailStart = valid.prior === null ? cache.nullTail : cache.arenaUsed
  const tailEnd =
    valid.prior === null
      ? cache.nullTail + nullTail.length
      : appendTail(cache, `,"prior_price":${priorPriceJson(valid.prior)}`)
  const details: PriorDetails = {
    skus: valid.skus,
    // A corrected view numbers the book's SKUs as the book does.
    skuIds: valid.skuIds,
    records: valid.records,
    readsArticles: valid.readsArticles,
  }
  let next: number
  if (index >= 0) {
    // The stale one's place, in its chain.
    next = cache.hot[index * stride + fieldNext]!
  } else {
    next = firstOf(cache, skuId, sku)
    index = cache.count++
    if (cache.hot.length < cache.count * stride) {
      const grown = new Float64Array(cache.hot.length * 2)
      grown.set(cache.hot)
      cache.hot = grown
    }
    setFirst(cache, skuId, sku, index)
  }
  cache.details[index] = details
  const hot = cache.hot
  const base = index * stride
  hot[base + fieldFrom] = valid.from
  hot[base + fieldUntil] = valid.until
  hot[base + fieldEpoch] = cache.epoch
  hot[base + fieldChanges] = cache.changeCount
  hot[base + fieldQuestion] = valid.skus.length > 1 ? -1 - asked : asked
  hot[base + fieldTailStart] = tailStart
  hot[base + fieldTailEnd] = tailEnd
  hot[base + fieldNext] = next
  return index
}

/**
 * `cachedPrior` of each item (its SKU's id beside it), in order. The SKUs' first entries and their
 * records are read in two passes over all items first: reads that do not wait for one another,
 * which the processor overlaps (a catalogue larger than its caches makes each one a wait).
 */
export function cachedPriors(
  lookup: PriorLookup,
  items: readonly { readonly sku: string; readonly pricelist: string }[],
  skuIds: readonly number[],
): number[] {
  const { cache } = lookup
  const firsts = new Array<number>(items.length)
  for (let item = 0; item < items.length; item++) firsts[item] = firstOf(cache, skuIds[item]!, items[item]!.sku)
  let touched = 0
  const hot = cache.hot
  for (let item = 0; item < items.length; item++) {
    const first = firsts[item]!
    if (first >= 0) touched += hot[first * stride + fieldQuestion]!
  }
  if (touched !== touched) readsKept++
  const indexes = new Array<number>(items.length)
  for (let item = 0; item < items.length; item++) {
    const { sku, pricelist } = items[item]!
    indexes[item] = cachedPrior(lookup, sku, pricelist, skuIds[item]!, firsts[item]!)
  }
  return indexes
}

/** Counts passes whose reads summed to NaN (never): keeps the reads of the first pass live. */
// biome-ignore lint/correctness/noUnusedVariables: written, never read, so that the reads are not optimised away
let readsKept = 0

/** The tails of kept prior prices (`cachedPrior`'s indexes), item by item, for an answer's bytes. */
export function priorTails(lookup: PriorLookup, indexes: readonly number[]): ItemTails {
  const { hot, arena } = lookup.cache
  const starts = new Array<number>(indexes.length)
  const ends = new Array<number>(indexes.length)
  for (let item = 0; item < indexes.length; item++) {
    const base = indexes[item]! * stride
    starts[item] = hot[base + fieldTailStart]!
    ends[item] = hot[base + fieldTailEnd]!
  }
  return { arena, starts, ends }
}

/** A kept prior price's tail bytes (a view of the cache's arena: copy before the next query). */
export function priorTail(lookup: PriorLookup, index: number): Uint8Array {
  const { hot, arena } = lookup.cache
  return arena.subarray(hot[index * stride + fieldTailStart], hot[index * stride + fieldTailEnd])
}

/** A kept prior price's tail as text (a single read's). */
export function priorText(lookup: PriorLookup, index: number): string {
  return decoder.decode(priorTail(lookup, index))
}

/** The instants between which a kept prior price holds while nothing it read is written. */
export function priorValidity(lookup: PriorLookup, index: number): { from: number; until: number } {
  const { hot } = lookup.cache
  return { from: hot[index * stride + fieldFrom]!, until: hot[index * stride + fieldUntil]! }
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

/** Appends the tail's UTF-8 to the arena (grown by copying when full); answers its end. */
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

/**
 * Whether a kept prior price (entry `index`, of `sku`) from an earlier epoch still holds (see
 * `PriorCache`); when it does, it is stamped with the current epoch and change count.
 */
function holdsAfterWrites(lookup: PriorLookup, index: number, sku: string, skuId: number): boolean {
  const { cache, prices, catalog } = lookup
  if (prices.skuChangedAt === undefined) return false
  const base = index * stride
  const computedAt = cache.hot[base + fieldChanges]!
  const single = cache.hot[base + fieldQuestion]! >= 0
  if (single) {
    if (skuId < 0 ? prices.skuId(sku) >= 0 : prices.skuChangedAt(skuId) > computedAt) return false
  }
  if (!single || cache.hot[base + fieldEpoch]! < cache.recordsEpoch) {
    const details = cache.details[index]!
    const { skus, skuIds } = details
    for (let at = 0; at < skuIds.length; at++) {
      const id = skuIds[at]!
      if (id < 0 ? prices.skuId(skus[at]!) >= 0 : prices.skuChangedAt(id) > computedAt) return false
    }
    const records = skuRecords(catalog, skus, lookup.question.taxArea, details.readsArticles)
    for (let at = 0; at < records.length; at++) if (records[at] !== details.records[at]) return false
  }
  // Nothing it read was written up to now: the next look-up takes the short way.
  cache.hot[base + fieldEpoch] = cache.epoch
  cache.hot[base + fieldChanges] = cache.changeCount
  return true
}

/** The tail of an item without a reduction in force (ASCII: one byte per character). */
const nullTail = ',"prior_price":null'

const encoder = new TextEncoder()
const decoder = new TextDecoder()
