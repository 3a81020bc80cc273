/**
 * The price book as a dry run sees it (POST /price/simulate): the tenant's book, read as it is,
 * under the (pricelist, SKU) pairs the dry run writes. The book is a columnar store in shared
 * memory, too large to copy; the overlay keeps the written pairs' whole version lists in a small
 * book of its own and answers every lookup the pipeline makes (`PriceReader`) from it first.
 *
 * Ids and positions: a SKU or pricelist the tenant's book lacks gets an id past the book's own;
 * the overlay's positions and extras cursors are its small book's plus `overlayBase`, far past any
 * index of the tenant's columns, so each lookup knows which book to ask. Rows (engine/current-rows.ts)
 * are off: the tenant's rows hold the book's prices, not the overlay's, so the fast path reads each
 * cell through `cellAt`, which asks the overlay first. It is written only through `apply`, by the
 * write layer's own price writers (tenant/simulate/), and never touches the tenant's book.
 * @module
 */
import { assert } from '../assert.js'
import { cellExtras, cellNoPrice } from '../current-rows.js'
import type { PriceReader, PriceReplica } from '../price-replica.js'
import { PriceBook, type PriceContent, type PriceVersion } from '../prices.js'

/**
 * Added to the overlay's positions and extras cursors: the tenant's columns are typed arrays
 * (under 2^31 entries), and a cell holding cellExtras (2^52) + 2^40 + a cursor is still exact.
 */
export const overlayBase = 2 ** 40

/** Pair keys: pricelist id x 2^32 + SKU id, exact while pricelist ids stay under 2^21. */
const pairStride = 2 ** 32

const noRows = new Float64Array(0)

/** The tenant's price book as the write layer and the pipeline use it, with the overlay's pairs on top. */
export class PriceOverlay implements PriceReader {
  readonly #book: PriceReader
  /** The tenant's book, which the write layer reads; null over a worker's replica (reads only). */
  readonly #writable: PriceBook | null
  readonly #own = new PriceBook()
  /** Ids past the tenant book's own, for codes it does not know (a new SKU or pricelist). */
  readonly #skuIdsAdded = new Map<string, number>()
  readonly #pricelistIdsAdded = new Map<string, number>()
  readonly #skuBase: number
  readonly #pricelistBase: number
  /** Written pairs (pair key) -> [pricelist id, SKU id] in the overlay's own book. */
  readonly #pairs = new Map<number, readonly [number, number]>()
  #livePairDelta = 0
  #sortedSkus: readonly string[] | null = null

  /**
   * Over the tenant's book (a dry run on the main thread), or over a worker's replica of it, where
   * the dry run's pairs are replayed (`install`, engine/simulate/delta.ts) and only read.
   */
  constructor(book: PriceBook | PriceReplica) {
    this.#book = book
    if (book instanceof PriceBook) {
      this.#writable = book
      this.#skuBase = book.skuCodes.length
      this.#pricelistBase = book.pricelistCodes.length
    } else {
      this.#writable = null
      this.#skuBase = book.skuIdBound
      this.#pricelistBase = book.sizes.pricelists
    }
  }

  #tenantBook(): PriceBook {
    assert(this.#writable !== null, 'an overlay over a replica is only read')
    return this.#writable
  }

  /** The pairs written, [pricelist, SKU, whole version list]: what a worker replays (`install`). */
  delta(): [string, string, PriceVersion[]][] {
    const pairs: [string, string, PriceVersion[]][] = []
    for (const [pricelistId, skuId] of this.#pairs.values()) {
      const pricelist = this.#own.pricelistCodes[pricelistId]!
      const sku = this.#own.skuCodes[skuId]!
      pairs.push([pricelist, sku, this.#own.versions(pricelist, sku)])
    }
    return pairs
  }

  /** Pairs the dry run wrote. */
  get pairCount(): number {
    return this.#pairs.size
  }

  // ---- What the write layer uses (tenant/writes/prices.ts) --------------------------------------

  get livePairCount(): number {
    return this.#tenantBook().livePairCount + this.#livePairDelta
  }

  versions(pricelist: string, sku: string, first = 0): PriceVersion[] {
    const pair = this.#pair(this.pricelistId(pricelist), this.skuId(sku))
    return pair === undefined
      ? this.#tenantBook().versions(pricelist, sku, first)
      : this.#own.versions(pricelist, sku, first)
  }

  /** Installs a pair's version list in the overlay; the tenant's book is left as it is. */
  apply(pricelist: string, sku: string, versions: readonly PriceVersion[]): void {
    assert(versions.length > 0, 'a stored price has at least one version')
    const before = this.versions(pricelist, sku)
    const wasLive = before.length > 0 && before[before.length - 1]!.content !== null
    const isLive = versions[versions.length - 1]!.content !== null
    if (wasLive !== isLive) this.#livePairDelta += isLive ? 1 : -1
    this.install(pricelist, sku, versions)
  }

  /** Puts a pair's version list in the overlay as `apply` does, without the write layer's count of live pairs. */
  install(pricelist: string, sku: string, versions: readonly PriceVersion[]): void {
    const pricelistId = this.#idOf(this.#pricelistIdsAdded, this.#book.pricelistId(pricelist), pricelist, 'pricelist')
    const skuId = this.#idOf(this.#skuIdsAdded, this.#book.skuId(sku), sku, 'sku')
    this.#own.apply(pricelist, sku, versions)
    this.#sortedSkus = null
    this.#pairs.set(pricelistId * pairStride + skuId, [this.#own.pricelistId(pricelist), this.#own.skuId(sku)])
  }

  #idOf(added: Map<string, number>, known: number, code: string, kind: 'sku' | 'pricelist'): number {
    if (known >= 0) return known
    let id = added.get(code)
    if (id === undefined) {
      id = (kind === 'sku' ? this.#skuBase : this.#pricelistBase) + added.size
      added.set(code, id)
    }
    return id
  }

  #pair(pricelistId: number, skuId: number): readonly [number, number] | undefined {
    if (this.#pairs.size === 0 || pricelistId < 0 || skuId < 0) return undefined
    return this.#pairs.get(pricelistId * pairStride + skuId)
  }

  /** Whether the tenant's book may hold the pair (both ids are its own). */
  #inBook(pricelistId: number, skuId: number): boolean {
    return pricelistId >= 0 && skuId >= 0 && pricelistId < this.#pricelistBase && skuId < this.#skuBase
  }

  /** Every SKU code of the book and of the overlay, sorted as the book sorts its own (a diff pages over them). */
  sortedSkus(): readonly string[] {
    const book = this.#tenantBook()
    if (this.#skuIdsAdded.size === 0) return book.sortedSkus()
    this.#sortedSkus ??= [...book.skuCodes, ...this.#skuIdsAdded.keys()].sort((left, right) =>
      left < right ? -1 : left > right ? 1 : 0,
    )
    return this.#sortedSkus
  }

  // ---- What the pipeline reads (PriceReader) ----------------------------------------------------

  skuId(code: string): number {
    const id = this.#book.skuId(code)
    return id >= 0 ? id : (this.#skuIdsAdded.get(code) ?? -1)
  }

  skuIds(codes: readonly string[], start: number, count: number, ids: Int32Array): void {
    this.#book.skuIds(codes, start, count, ids)
    if (this.#skuIdsAdded.size === 0) return
    for (let index = 0; index < count; index++) {
      if (ids[index]! < 0) ids[index] = this.#skuIdsAdded.get(codes[start + index]!) ?? -1
    }
  }

  pricelistId(code: string): number {
    const id = this.#book.pricelistId(code)
    return id >= 0 ? id : (this.#pricelistIdsAdded.get(code) ?? -1)
  }

  livePositionAt(pricelistId: number, skuId: number, at: number): number {
    const pair = this.#pair(pricelistId, skuId)
    if (pair !== undefined) {
      const position = this.#own.livePositionAt(pair[0], pair[1], at)
      return position < 0 ? -1 : position + overlayBase
    }
    return this.#inBook(pricelistId, skuId) ? this.#book.livePositionAt(pricelistId, skuId, at) : -1
  }

  salesAt(position: number): number {
    return position >= overlayBase ? this.#own.salesAt(position - overlayBase) : this.#book.salesAt(position)
  }

  fromAt(position: number): number {
    return position >= overlayBase ? this.#own.fromAt(position - overlayBase) : this.#book.fromAt(position)
  }

  hasExtras(position: number): boolean {
    return position >= overlayBase ? this.#own.hasExtras(position - overlayBase) : this.#book.hasExtras(position)
  }

  contentAt(position: number): PriceContent | null {
    return position >= overlayBase ? this.#own.contentAt(position - overlayBase) : this.#book.contentAt(position)
  }

  /** Rows are off (see the module comment): every cell is read through `cellAt`. */
  currentRow(_skuId: number, _at: number): number {
    return -1
  }

  get rows(): Float64Array {
    return noRows
  }

  fillCell(_row: number, _skuId: number, _pricelistId: number, _at: number): number {
    assert(false, 'an overlay has no rows to fill')
    return cellNoPrice
  }

  refreshRows(): void {}

  cellAt(pricelistId: number, skuId: number, at: number): number {
    const pair = this.#pair(pricelistId, skuId)
    if (pair !== undefined) {
      const cell = this.#own.cellAt(pair[0], pair[1], at)
      return cell >= cellExtras ? cell + overlayBase : cell
    }
    return this.#inBook(pricelistId, skuId) ? this.#book.cellAt(pricelistId, skuId, at) : cellNoPrice
  }

  contentAtCursor(cursor: number): PriceContent {
    return cursor >= overlayBase ? this.#own.contentAtCursor(cursor - overlayBase) : this.#book.contentAtCursor(cursor)
  }

  extrasAt(cursor: number): number {
    return cursor >= overlayBase ? this.#own.extrasAt(cursor - overlayBase) : this.#book.extrasAt(cursor)
  }

  hasExtrasBlocks(): boolean {
    return this.#book.hasExtrasBlocks() || this.#own.hasExtrasBlocks()
  }

  amountForQuantity(cursor: number, quantity: number): number {
    return cursor >= overlayBase
      ? this.#own.amountForQuantity(cursor - overlayBase, quantity)
      : this.#book.amountForQuantity(cursor, quantity)
  }

  /** The tenant's count: a dry run's answer is never cached (its query names no tenant cache). */
  get changeCount(): number {
    return this.#book.changeCount
  }

  nextChangeAfter(pricelistId: number, skuId: number, at: number): number {
    const pair = this.#pair(pricelistId, skuId)
    if (pair !== undefined) return this.#own.nextChangeAfter(pair[0], pair[1], at)
    return this.#inBook(pricelistId, skuId)
      ? this.#book.nextChangeAfter(pricelistId, skuId, at)
      : Number.POSITIVE_INFINITY
  }
}
