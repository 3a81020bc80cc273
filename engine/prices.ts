/**
 * The price book: every price version of a tenant in struct-of-arrays typed arrays backed by
 * SharedArrayBuffer, so that worker threads read the same memory without copying.
 *
 *   dictionaries   SKU code -> dense id (a shared hash table: ./sku-dictionary.ts), pricelist code
 *                  <-> dense id, field name <-> id
 *   index          per pricelist id: Int32Array over SKU ids -> run offset + 1 (0 = no prices)
 *   pool           runs of versions sorted by `from`: from, sales, extra (Float64/Int32 columns);
 *                  runCount[offset] holds a run's length
 *   extras         Float64Array: [sales, breakCount, (qty, kind, value)…, fieldCount, (fieldId, value)…]
 *                  (the sales again and the breaks first: a query selects a break from one place)
 *
 * Runs are immutable: a write appends a new run and then publishes its offset with one Int32 store,
 * so a reader sees either the old run or the new one, never a mix. Replaced runs are garbage until
 * the pool is compacted into new buffers (a new generation). Amounts are scaled integers (money.ts).
 * Who wrote a version and when is kept on the main thread only (history reads), not in shared memory.
 * @module
 */
import { assert } from './assert.js'
import { cellExtras, cellNoPrice, CurrentRows } from './current-rows.js'
import { sha256Hex128 } from './hash.js'
import { amountAbsMax } from './limits.js'
import { amountUnit, mulDivRound } from './money.js'
import { lookupSkus, SkuDictionary, type SkuDictionaryImage, type SkuTable } from './sku-dictionary.js'

/** A quantity break: `kind` 0 = fixed price (scaled amount), 1 = percent of base (scaled percent). */
export interface QuantityBreak {
  readonly quantity: number
  readonly kind: 0 | 1
  readonly value: number
}

export interface PriceContent {
  /** Scaled amount. */
  readonly sales: number
  /** Field name -> scaled amount; null when none. */
  readonly fields: Readonly<Record<string, number>> | null
  readonly breaks: readonly QuantityBreak[] | null
}

/** One materialised version (writes, history); `content` null is a deletion. */
export interface PriceVersion {
  readonly from: number
  readonly content: PriceContent | null
  readonly writtenAt: number
  readonly writtenBy: string
}

export const breakKindFixed = 0
export const breakKindPercent = 1
/** `extra` column values: no extras, or a deletion (tombstone). */
const extraNone = -1
const extraTombstone = -2

const poolInitialCount = 1024
const extrasInitialCount = 1024
const indexInitialCount = 1024
/**
 * Capacity after a compaction, as a multiple of what is live: 1.5 rather than 2 keeps at most a
 * third of the pool idle, for one more copy of the live versions per growth (cheap next to a write).
 */
const poolGrowth = 1.5
/**
 * Spare room a fitted pool keeps (a 64th of what is live, at least the initial size): writes after
 * a restart, each appending its pair's whole run, then go some thousands of pairs before the first
 * compaction copies every version, for under 1 byte per version.
 */
function fitHeadroom(live: number, initial: number): number {
  return Math.max(initial, Math.ceil(live / 64))
}

function sharedFloat64(count: number): Float64Array {
  return new Float64Array(new SharedArrayBuffer(count * Float64Array.BYTES_PER_ELEMENT))
}
function sharedInt32(count: number): Int32Array {
  return new Int32Array(new SharedArrayBuffer(count * Int32Array.BYTES_PER_ELEMENT))
}

/** What a worker needs to map the shared memory of one generation. */
export interface SharedColumns {
  readonly generation: number
  readonly from: Float64Array
  readonly sales: Float64Array
  readonly extra: Int32Array
  readonly runCount: Int32Array
  readonly extras: Float64Array
  /** Per pricelist id; null where a pricelist has no prices. */
  readonly index: (Int32Array | null)[]
  /** One cell counting every change of the tenant (prices and catalogue): answer caches compare it. */
  readonly changes: Int32Array
  /** SKU code -> id (new SKUs show in it at once; its growth is a new generation). */
  readonly skus: SkuTable
}

/** Dictionary growth since a position: what a replica must append to stay in step (SKUs are shared). */
export interface DictionaryDelta {
  readonly pricelists: string[]
  readonly fields: string[]
}

/**
 * A price book's whole state: its columns (the used part of each: views, not copies, when taken
 * from a book), dictionaries and counts. What a snapshot of the book holds (storage/book-snapshot.ts),
 * so that a start takes the columns as they are instead of decoding and applying every record.
 */
export interface BookImage {
  readonly skus: SkuDictionaryImage
  readonly pricelistCodes: readonly string[]
  readonly fieldNames: readonly string[]
  /** Writers, by the ids the `writtenBy` column holds. */
  readonly actors: readonly string[]
  readonly livePerPricelist: readonly number[]
  readonly livePairs: number
  /** Versions of live runs, and extras slots of live runs (the rest of the used parts is garbage). */
  readonly poolLive: number
  readonly extrasLive: number
  /** Pool columns, each as long as the pool's used part. */
  readonly from: Float64Array
  readonly sales: Float64Array
  readonly extra: Int32Array
  readonly runCount: Int32Array
  readonly writtenAt: Float64Array
  readonly writtenBy: Uint16Array | Int32Array
  /** The used part of the extras. */
  readonly extras: Float64Array
  /** Per pricelist id, as the book holds it (null: no prices). */
  readonly index: readonly (Int32Array | null)[]
}

/** Room a restored book gives its columns: the used part plus the fit headroom (see `compactToFit`). */
export function restoredCapacity(used: number, live: number, extras: boolean): number {
  return used + fitHeadroom(live, extras ? extrasInitialCount : poolInitialCount)
}

export class PriceBook {
  readonly #skus = new SkuDictionary()
  readonly skuCodes: string[] = []
  readonly #pricelistIds = new Map<string, number>()
  readonly pricelistCodes: string[] = []
  readonly #fieldIds = new Map<string, number>()
  readonly fieldNames: string[] = []
  #sortedSkus: string[] | null = null

  #generation = 0
  readonly #changes = new Int32Array(new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT))
  #from = sharedFloat64(poolInitialCount)
  #sales = sharedFloat64(poolInitialCount)
  #extra = sharedInt32(poolInitialCount)
  #runCount = sharedInt32(poolInitialCount)
  #poolUsed = 0
  #poolLive = 0
  #extras = sharedFloat64(extrasInitialCount)
  #extrasUsed = 0
  /** Extras slots of live runs (the rest up to #extrasUsed is garbage of replaced runs). */
  #extrasLive = 0
  #index: (Int32Array | null)[] = []
  /**
   * Main-thread only: who and when, parallel to the pool. Writers are ids into #actors, 2 bytes
   * each while a tenant has at most 65,535 distinct writers (API clients and people), 4 after.
   */
  #writtenAt = new Float64Array(poolInitialCount)
  #writtenBy: Uint16Array | Int32Array = new Uint16Array(poolInitialCount)
  readonly #actors: string[] = []
  readonly #actorIds = new Map<string, number>()
  /** SKU-major rows of the versions in force (main thread only; see `currentRow`). */
  readonly #rows = new CurrentRows()
  /** Pairs (pricelist, SKU) whose latest version is live: what the price quota counts. */
  #livePairs = 0
  readonly #livePerPricelist: number[] = []
  /** Main-thread only: per SKU id, the change count its last write moved the book to (0: none since it opened). */
  #skuChanges = new Int32Array(1024)

  get generation(): number {
    return this.#generation
  }

  get livePairCount(): number {
    return this.#livePairs
  }

  /** SKUs with a live latest version on this pricelist (its `sku_count`). */
  liveSkuCount(pricelist: string): number {
    const id = this.#pricelistIds.get(pricelist)
    return id === undefined ? 0 : (this.#livePerPricelist[id] ?? 0)
  }

  skuId(code: string): number {
    return this.#skus.lookup(code)
  }

  skuIds(codes: readonly string[], start: number, count: number, ids: Int32Array): void {
    lookupSkus(this.#skus.table, codes, start, count, ids)
  }

  pricelistId(code: string): number {
    return this.#pricelistIds.get(code) ?? -1
  }

  #internSku(code: string): number {
    let id = this.#skus.lookup(code)
    if (id < 0) {
      id = this.skuCodes.length
      if (this.#skus.add(code)) this.#newGeneration()
      this.skuCodes.push(code)
      this.#sortedSkus = null
    }
    return id
  }

  #internPricelist(code: string): number {
    let id = this.#pricelistIds.get(code)
    if (id === undefined) {
      id = this.pricelistCodes.length
      this.#pricelistIds.set(code, id)
      this.pricelistCodes.push(code)
      this.#index.push(null)
      this.#livePerPricelist.push(0)
    }
    return id
  }

  #internField(name: string): number {
    let id = this.#fieldIds.get(name)
    if (id === undefined) {
      id = this.fieldNames.length
      this.#fieldIds.set(name, id)
      this.fieldNames.push(name)
    }
    return id
  }

  #internActor(actor: string): number {
    let id = this.#actorIds.get(actor)
    if (id === undefined) {
      id = this.#actors.length
      if (id > 0xffff && this.#writtenBy instanceof Uint16Array) this.#writtenBy = Int32Array.from(this.#writtenBy)
      this.#actorIds.set(actor, id)
      this.#actors.push(actor)
    }
    return id
  }

  /** All SKU codes that ever had a price, sorted (cursor pages). */
  sortedSkus(): readonly string[] {
    this.#sortedSkus ??= [...this.skuCodes].sort((left, right) => (left < right ? -1 : left > right ? 1 : 0))
    return this.#sortedSkus
  }

  /** Pricelist codes that hold at least one price run. */
  pricelistsWithPrices(): string[] {
    return this.pricelistCodes.filter((_, id) => this.#index[id] !== null)
  }

  // ---- Hot path: primitive lookups over the columns -------------------------------------------

  /** Offset of the run for (pricelist id, SKU id), or -1. */
  runOffset(pricelistId: number, skuId: number): number {
    const index = this.#index[pricelistId]
    if (index === null || index === undefined || skuId >= index.length) return -1
    // The owner reads its own writes: a plain load (an Atomics.load is a call V8 does not inline).
    return index[skuId]! - 1
  }

  /** Versions in the run at `offset` (a `runOffset`). */
  runLength(offset: number): number {
    return this.#runCount[offset]!
  }

  /** Pool position of the version in force at `at` (live or tombstone), or -1. */
  positionAt(pricelistId: number, skuId: number, at: number): number {
    const offset = this.runOffset(pricelistId, skuId)
    if (offset < 0) return -1
    return positionInRun(this.#from, this.#runCount, offset, at)
  }

  /** Pool position of the live version in force at `at`, or -1 (absent or deleted). */
  livePositionAt(pricelistId: number, skuId: number, at: number): number {
    const position = this.positionAt(pricelistId, skuId, at)
    return position >= 0 && this.#extra[position] !== extraTombstone ? position : -1
  }

  salesAt(position: number): number {
    return this.#sales[position]!
  }

  /** The sales of the version at a pool position, NaN for a deletion (history retention reads it). */
  liveSalesAt(position: number): number {
    return this.#extra[position] === extraTombstone ? Number.NaN : this.#sales[position]!
  }

  fromAt(position: number): number {
    return this.#from[position]!
  }

  hasExtras(position: number): boolean {
    return this.#extra[position]! >= 0
  }

  /**
   * The start of the SKU's row of sales in force at `at` (cells indexed by pricelist id from it,
   * in `rows`; a NaN cell is not filled yet: `fillCell`), or -1 when rows are off for this book.
   * A row holds for one window of time: a read outside it starts the row again.
   */
  currentRow(skuId: number, at: number): number {
    return this.#rows.row(skuId, this.pricelistCodes.length, this.skuCodes.length, at)
  }

  /** A filled cell's version start, NaN when not kept (see PriceReader). */
  rowStart(row: number, pricelistId: number): number {
    const starts = this.#rows.starts
    return starts === null ? Number.NaN : starts[row + pricelistId]!
  }

  keepRowStarts(): void {
    this.#rows.keepStarts()
  }

  get rows(): Float64Array {
    return this.#rows.cells
  }

  /**
   * Fills the cell of (SKU, pricelist) in a row from `currentRow` (encoding: engine/current-rows.ts)
   * with the live version in force at `at`, and narrows the row's window to that version's span.
   * Answers the cell.
   */
  fillCell(row: number, skuId: number, pricelistId: number, at: number): number {
    return fillFromRun(
      this.#rows,
      row,
      pricelistId,
      this.#from,
      this.#runCount,
      this.#sales,
      this.#extra,
      this.runOffset(pricelistId, skuId),
      at,
    )
  }

  /** Nothing to do: the owner's rows are cleared by its own writes. */
  refreshRows(): void {}

  /** The cell of (pricelist, SKU) at `at` from the runs, as a row would hold it. */
  cellAt(pricelistId: number, skuId: number, at: number): number {
    const position = this.positionAt(pricelistId, skuId, at)
    return position < 0 ? cellNoPrice : cellOf(this.#sales, this.#extra, position)
  }

  /** The content of the version whose extras block is at `cursor` (a cell's). */
  contentAtCursor(cursor: number): PriceContent {
    return readExtras(this.#extras, this.fieldNames, cursor)
  }

  hasExtrasBlocks(): boolean {
    return this.#extrasLive > 0
  }

  /** The first slot of the extras block at `cursor` (see PriceReader). */
  extrasAt(cursor: number): number {
    return this.#extras[cursor]!
  }

  /** See `amountForQuantity`; `cursor` from a cell (cell - cellExtras). */
  amountForQuantity(cursor: number, quantity: number): number {
    return amountForQuantity(this.#extras, cursor, quantity)
  }

  /** Materialises the content at a pool position. */
  contentAt(position: number): PriceContent | null {
    return readContent(this.#sales, this.#extra, this.#extras, this.fieldNames, position)
  }

  // ---- Writes (main thread) --------------------------------------------------------------------

  /** Every version of a pair from the `first`-th on, materialised (writes plan against this; history reads it). */
  /** When and by whom the version of `sku` on `pricelist` starting at `start` was written, or null. */
  written(pricelist: string, sku: string, start: number): { at: number; by: string } | null {
    const pricelistId = this.pricelistId(pricelist)
    const skuId = this.skuId(sku)
    if (pricelistId < 0 || skuId < 0) return null
    const offset = this.runOffset(pricelistId, skuId)
    if (offset < 0) return null
    const count = this.#runCount[offset]!
    for (let position = offset; position < offset + count; position++) {
      if (this.#from[position] === start)
        return { at: this.#writtenAt[position]!, by: this.#actors[this.#writtenBy[position]!]! }
    }
    return null
  }

  versions(pricelist: string, sku: string, first = 0): PriceVersion[] {
    const pricelistId = this.pricelistId(pricelist)
    const skuId = this.skuId(sku)
    if (pricelistId < 0 || skuId < 0) return []
    const offset = this.runOffset(pricelistId, skuId)
    if (offset < 0) return []
    const count = this.#runCount[offset]!
    const versions: PriceVersion[] = []
    for (let position = offset + first; position < offset + count; position++) {
      versions.push({
        from: this.#from[position]!,
        content: this.contentAt(position),
        writtenAt: this.#writtenAt[position]!,
        writtenBy: this.#actors[this.#writtenBy[position]!]!,
      })
    }
    return versions
  }

  /** Installs a pair's version list (sorted by from): the only mutator. */
  apply(pricelist: string, sku: string, versions: readonly PriceVersion[]): void {
    assert(versions.length > 0, 'a stored price has at least one version')
    const pricelistId = this.#internPricelist(pricelist)
    const skuId = this.#internSku(sku)
    const before = this.runOffset(pricelistId, skuId)
    // Read before #ensurePool: a compaction moves the old run, so its offset goes stale.
    const beforeCount = before >= 0 ? this.#runCount[before]! : 0
    const wasLive = before >= 0 && this.#extra[before + beforeCount - 1] !== extraTombstone
    let beforeExtras = 0
    for (let position = before; position >= 0 && position < before + beforeCount; position++) {
      const at = this.#extra[position]!
      if (at >= 0) beforeExtras += extrasSize(this.#extras, at)
    }
    this.#ensurePool(versions.length)
    const offset = this.#poolUsed
    for (let index = 0; index < versions.length; index++) {
      const version = versions[index]!
      const position = offset + index
      assert(index === 0 || version.from > versions[index - 1]!.from, 'price versions sorted by from')
      this.#from[position] = version.from
      this.#writtenAt[position] = version.writtenAt
      // The id first: interning may widen #writtenBy to a new array.
      const writer = this.#internActor(version.writtenBy)
      this.#writtenBy[position] = writer
      if (version.content === null) {
        this.#sales[position] = 0
        this.#extra[position] = extraTombstone
      } else {
        this.#sales[position] = version.content.sales
        this.#extra[position] = this.#writeExtras(version.content)
      }
    }
    this.#runCount[offset] = versions.length
    this.#poolUsed += versions.length
    this.#poolLive += versions.length - beforeCount
    // Only now: a compaction above still copied the old run, and counted it live.
    this.#extrasLive -= beforeExtras
    const index = this.#ensureIndex(pricelistId, skuId)
    Atomics.store(index, skuId, offset + 1)
    this.#rows.clear(skuId)
    // After the data: a reader that sees the new count sees the new run too.
    this.#noteSkuChange(skuId, Atomics.add(this.#changes, 0, 1) + 1)
    const isLive = versions[versions.length - 1]!.content !== null
    if (wasLive !== isLive) {
      const delta = isLive ? 1 : -1
      this.#livePairs += delta
      this.#livePerPricelist[pricelistId] = (this.#livePerPricelist[pricelistId] ?? 0) + delta
    }
  }

  /**
   * Removes a pair altogether (a restore of a backup that never held it): its run becomes garbage
   * for the next compaction, and readers find no run. Nothing happens for an absent pair.
   */
  remove(pricelist: string, sku: string): void {
    const pricelistId = this.pricelistId(pricelist)
    const skuId = this.skuId(sku)
    if (pricelistId < 0 || skuId < 0) return
    const before = this.runOffset(pricelistId, skuId)
    if (before < 0) return
    const beforeCount = this.#runCount[before]!
    const wasLive = this.#extra[before + beforeCount - 1] !== extraTombstone
    for (let position = before; position < before + beforeCount; position++) {
      const at = this.#extra[position]!
      if (at >= 0) this.#extrasLive -= extrasSize(this.#extras, at)
    }
    this.#poolLive -= beforeCount
    Atomics.store(this.#index[pricelistId]!, skuId, 0)
    this.#rows.clear(skuId)
    this.#noteSkuChange(skuId, Atomics.add(this.#changes, 0, 1) + 1)
    if (wasLive) {
      this.#livePairs--
      this.#livePerPricelist[pricelistId] = (this.#livePerPricelist[pricelistId] ?? 0) - 1
    }
  }

  #writeExtras(content: PriceContent): number {
    const fieldNames = content.fields === null ? [] : Object.keys(content.fields)
    const breaks = content.breaks ?? []
    if (fieldNames.length === 0 && breaks.length === 0) return extraNone
    const size = extrasSlots(breaks.length, fieldNames.length)
    if (this.#extrasUsed + size > this.#extras.length) {
      const grown = sharedFloat64(Math.max(Math.ceil(this.#extras.length * poolGrowth), this.#extrasUsed + size))
      grown.set(this.#extras.subarray(0, this.#extrasUsed))
      this.#extras = grown
      this.#newGeneration()
    }
    const extras = this.#extras
    const start = this.#extrasUsed
    let cursor = start
    extras[cursor++] = content.sales
    extras[cursor++] = breaks.length
    for (const entry of breaks) {
      extras[cursor++] = entry.quantity
      extras[cursor++] = entry.kind
      extras[cursor++] = entry.value
    }
    extras[cursor++] = fieldNames.length
    for (const name of fieldNames) {
      extras[cursor++] = this.#internField(name)
      extras[cursor++] = content.fields![name]!
    }
    this.#extrasUsed = cursor
    this.#extrasLive += cursor - start
    return start
  }

  #ensurePool(count: number): void {
    if (this.#poolUsed + count <= this.#from.length) return
    // Copy live runs into larger buffers: garbage goes, and room grows by half of what is live.
    const needed = this.#poolLive + count
    const extrasCapacity = Math.max(extrasInitialCount, Math.ceil(this.#extrasLive * poolGrowth))
    this.#compact(Math.max(poolInitialCount, Math.ceil(needed * poolGrowth)), extrasCapacity, false)
  }

  /**
   * Room for `versions` more versions and `extrasSlots` more extras slots (plus the fit headroom),
   * allocated at once: a startup load that measured what it will apply grows nothing, so it leaves
   * no garbage buffers waiting for a GC (which does not come while the process idles).
   */
  reserve(versions: number, extrasSlots: number): void {
    assert(versions >= 0 && extrasSlots >= 0, 'reserve counts')
    if (this.#poolUsed + versions <= this.#from.length && this.#extrasUsed + extrasSlots <= this.#extras.length) return
    const live = this.#poolLive + versions
    const extrasLive = this.#extrasLive + extrasSlots
    this.#compact(
      live + fitHeadroom(live, poolInitialCount),
      extrasLive + fitHeadroom(extrasLive, extrasInitialCount),
      false,
    )
  }

  /**
   * Drops garbage and spare room beyond the fit headroom, indexes included: after a startup load,
   * so that the pool holds what it stores and little more. A no-op when a `reserve` was exact.
   */
  compactToFit(): void {
    const live = this.#poolLive
    const extrasLive = this.#extrasLive
    const capacity = live + fitHeadroom(live, poolInitialCount)
    const extrasCapacity = extrasLive + fitHeadroom(extrasLive, extrasInitialCount)
    const garbage = this.#poolUsed > live || this.#extrasUsed > extrasLive
    if (!garbage && this.#from.length <= capacity && this.#extras.length <= extrasCapacity) return
    this.#compact(capacity, extrasCapacity, true)
  }

  /**
   * Copies every live run into new buffers of `capacity` versions, and their extras into a new
   * buffer of `extrasCapacity` slots (replaced runs leave garbage in both), as a new generation.
   * `fitIndexes`: per-pricelist indexes get no spare room either.
   */
  #compact(capacity: number, extrasCapacity: number, fitIndexes: boolean): void {
    const liveExtras = this.#extrasLive
    assert(capacity >= this.#poolLive && extrasCapacity >= liveExtras, 'compaction keeps every live version')
    const extras = sharedFloat64(extrasCapacity)
    let extrasUsed = 0
    const from = sharedFloat64(capacity)
    const sales = sharedFloat64(capacity)
    const extra = sharedInt32(capacity)
    const runCount = sharedInt32(capacity)
    const writtenAt = new Float64Array(capacity)
    const writtenBy = this.#writtenBy instanceof Uint16Array ? new Uint16Array(capacity) : new Int32Array(capacity)
    const indexes: (Int32Array | null)[] = []
    // Element loops over locals: runs are 1-3 versions, where subarray().set() costs more than the copy.
    const oldFrom = this.#from
    const oldSales = this.#sales
    const oldExtra = this.#extra
    const oldExtras = this.#extras
    const oldRunCount = this.#runCount
    const oldWrittenAt = this.#writtenAt
    const oldWrittenBy = this.#writtenBy
    let used = 0
    for (const oldIndex of this.#index) {
      if (oldIndex === null) {
        indexes.push(null)
        continue
      }
      // Ids at or past the SKU count were never handed out: their slots are all zero.
      const index = sharedInt32(
        fitIndexes ? Math.max(1, Math.min(oldIndex.length, this.skuCodes.length)) : oldIndex.length,
      )
      for (let skuId = 0; skuId < index.length; skuId++) {
        const offset = oldIndex[skuId]! - 1
        if (offset < 0) continue
        const count = oldRunCount[offset]!
        for (let step = 0; step < count; step++) {
          const source = offset + step
          const target = used + step
          from[target] = oldFrom[source]!
          sales[target] = oldSales[source]!
          writtenAt[target] = oldWrittenAt[source]!
          writtenBy[target] = oldWrittenBy[source]!
          const at = oldExtra[source]!
          if (at < 0) {
            extra[target] = at
            continue
          }
          const size = extrasSize(oldExtras, at)
          for (let slot = 0; slot < size; slot++) extras[extrasUsed + slot] = oldExtras[at + slot]!
          extra[target] = extrasUsed
          extrasUsed += size
        }
        runCount[used] = count
        index[skuId] = used + 1
        used += count
      }
      indexes.push(index)
    }
    assert(used === this.#poolLive && extrasUsed === liveExtras, 'compaction copies exactly the live runs')
    this.#from = from
    this.#sales = sales
    this.#extra = extra
    this.#runCount = runCount
    this.#writtenAt = writtenAt
    this.#writtenBy = writtenBy
    this.#index = indexes
    this.#extras = extras
    this.#extrasUsed = extrasUsed
    this.#poolUsed = used
    this.#poolLive = used
    // Cells of versions with extras hold their extras cursor, which moved.
    this.#rows.clearAll()
    this.#newGeneration()
  }

  #ensureIndex(pricelistId: number, skuId: number): Int32Array {
    let index = this.#index[pricelistId] ?? null
    if (index === null || skuId >= index.length) {
      const grown = sharedInt32(Math.max(indexInitialCount, (skuId + 1) * 2, index === null ? 0 : index.length * 2))
      if (index !== null) grown.set(index)
      this.#index[pricelistId] = grown
      index = grown
      this.#newGeneration()
    }
    return index
  }

  /** The book's state as views of its buffers (no copy), for a snapshot; valid until the next write. */
  image(): BookImage {
    const used = this.#poolUsed
    return {
      skus: this.#skus.image(),
      pricelistCodes: this.pricelistCodes,
      fieldNames: this.fieldNames,
      actors: this.#actors,
      livePerPricelist: this.#livePerPricelist,
      livePairs: this.#livePairs,
      poolLive: this.#poolLive,
      extrasLive: this.#extrasLive,
      from: this.#from.subarray(0, used),
      sales: this.#sales.subarray(0, used),
      extra: this.#extra.subarray(0, used),
      runCount: this.#runCount.subarray(0, used),
      writtenAt: this.#writtenAt.subarray(0, used),
      writtenBy: this.#writtenBy.subarray(0, used),
      extras: this.#extras.subarray(0, this.#extrasUsed),
      index: this.#index,
    }
  }

  /**
   * Takes over the state of a snapshot (an empty book only). The columns are used as they are: the
   * caller allocated them (shared where the book shares them) with room beyond the used part
   * (`restoredCapacity`), and the views say how much is used; index arrays are taken whole.
   */
  restore(image: BookImage): void {
    const empty = this.skuCodes.length === 0 && this.pricelistCodes.length === 0 && this.#poolUsed === 0
    assert(empty, 'a price book is restored only when empty')
    // Whole buffers: the views' underlying arrays hold the room beyond the used part.
    const whole = <T extends Float64Array | Int32Array | Uint16Array>(view: T): T =>
      new (view.constructor as new (buffer: ArrayBufferLike) => T)(view.buffer)
    const pool = [image.from, image.sales, image.extra, image.runCount, image.writtenAt, image.writtenBy].map(whole)
    const used = image.from.length
    const capacity = pool[0]!.length
    // Every check before anything changes: a refused image leaves the book empty.
    const columns = [image.sales, image.extra, image.runCount, image.writtenAt, image.writtenBy]
    const consistent =
      columns.every((column) => column.length === used) &&
      pool.every((column) => column.length === capacity) &&
      image.poolLive <= used &&
      image.extrasLive <= image.extras.length &&
      image.index.length === image.pricelistCodes.length &&
      image.livePerPricelist.length === image.pricelistCodes.length &&
      (image.actors.length > 0 || used === 0) &&
      (image.actors.length <= 0xffff + 1 || image.writtenBy instanceof Int32Array)
    assert(consistent, 'price book image: inconsistent sizes')
    this.#skus.restore(image.skus)
    this.skuCodes.push(...this.#skus.codes())
    for (const code of image.pricelistCodes) this.#internPricelist(code)
    for (const name of image.fieldNames) this.#internField(name)
    for (const actor of image.actors) this.#internActor(actor)
    this.#livePerPricelist.splice(0, this.#livePerPricelist.length, ...image.livePerPricelist)
    this.#livePairs = image.livePairs
    this.#from = pool[0] as Float64Array
    this.#sales = pool[1] as Float64Array
    this.#extra = pool[2] as Int32Array
    this.#runCount = pool[3] as Int32Array
    this.#writtenAt = pool[4] as Float64Array<ArrayBuffer>
    this.#writtenBy = pool[5] as Uint16Array | Int32Array
    this.#extras = whole(image.extras)
    this.#poolUsed = used
    this.#poolLive = image.poolLive
    this.#extrasUsed = image.extras.length
    this.#extrasLive = image.extrasLive
    this.#index = [...image.index]
    this.#newGeneration()
  }

  #newGeneration(): void {
    this.#generation++
  }

  /** The shared columns of the current generation (for workers). */
  sharedColumns(): SharedColumns {
    return {
      generation: this.#generation,
      from: this.#from,
      sales: this.#sales,
      extra: this.#extra,
      runCount: this.#runCount,
      extras: this.#extras,
      index: [...this.#index],
      changes: this.#changes,
      skus: this.#skus.table,
    }
  }

  /** The tenant's change count (see SharedColumns.changes). */
  get changeCount(): number {
    return Atomics.load(this.#changes, 0)
  }

  /**
   * The change count the SKU's last price write (on any pricelist) moved the book to, 0 when none
   * was applied since the book opened: what was derived from its prices at a later count still holds
   * (the prior prices kept: workers/prior-price-cache.ts).
   */
  skuChangedAt(skuId: number): number {
    return skuId < this.#skuChanges.length ? this.#skuChanges[skuId]! : 0
  }

  #noteSkuChange(skuId: number, changeCount: number): void {
    if (skuId >= this.#skuChanges.length) {
      let length = this.#skuChanges.length * 2
      while (skuId >= length) length *= 2
      const grown = new Int32Array(length)
      grown.set(this.#skuChanges)
      this.#skuChanges = grown
    }
    this.#skuChanges[skuId] = changeCount
  }

  /** Counts a change the price book does not see itself (a catalogue write). */
  noteChange(): void {
    Atomics.add(this.#changes, 0, 1)
  }

  /** The first instant after `at` at which this pair's answer changes by time alone, or +Infinity. */
  nextChangeAfter(pricelistId: number, skuId: number, at: number): number {
    return nextFromAfter(this.#from, this.#runCount, this.runOffset(pricelistId, skuId), at)
  }

  /** Dictionary entries added since the given lengths. */
  dictionaryDelta(pricelists: number, fields: number): DictionaryDelta {
    return {
      pricelists: this.pricelistCodes.slice(pricelists),
      fields: this.fieldNames.slice(fields),
    }
  }

  /** Bytes held by the typed arrays (for the bench's memory figures). */
  get byteSize(): number {
    let bytes = this.#from.byteLength + this.#sales.byteLength + this.#extra.byteLength + this.#runCount.byteLength
    bytes += this.#extras.byteLength + this.#writtenAt.byteLength + this.#writtenBy.byteLength
    for (const index of this.#index) bytes += index?.byteLength ?? 0
    return bytes + this.#skus.byteSize
  }
}

/** Slots of an extras block with these counts: [sales, breakCount, (qty, kind, value)…, fieldCount, (fieldId, value)…]. */
export function extrasSlots(breakCount: number, fieldCount: number): number {
  return 3 + breakCount * 3 + fieldCount * 2
}

/** Slots of the extras block at `at`. */
function extrasSize(extras: Float64Array, at: number): number {
  const breakCount = extras[at + 1]!
  return extrasSlots(breakCount, extras[at + 2 + breakCount * 3]!)
}

/** The `from` of the first version after `at` in the run at `offset` (none, or -1: +Infinity). */
export function nextFromAfter(from: Float64Array, runCount: Int32Array, offset: number, at: number): number {
  if (offset < 0) return Number.POSITIVE_INFINITY
  const end = offset + runCount[offset]!
  for (let position = offset; position < end; position++) {
    if (from[position]! > at) return from[position]!
  }
  return Number.POSITIVE_INFINITY
}

/** Binary search in one run: the last position with from <= at, or -1. */
export function positionInRun(from: Float64Array, runCount: Int32Array, offset: number, at: number): number {
  let low = offset
  let high = offset + runCount[offset]! - 1
  let found = -1
  while (low <= high) {
    const middle = (low + high) >>> 1
    if (from[middle]! <= at) {
      found = middle
      low = middle + 1
    } else {
      high = middle - 1
    }
  }
  return found
}

/**
 * Fills a row's cell for one pair from its run at `offset` (-1: none) with the version in force at
 * `at`, narrowing the row's window to that version's span; answers the cell.
 */
export function fillFromRun(
  rows: CurrentRows,
  row: number,
  pricelistId: number,
  from: Float64Array,
  runCount: Int32Array,
  sales: Float64Array,
  extra: Int32Array,
  offset: number,
  at: number,
): number {
  if (offset < 0) return rows.fill(row, pricelistId, cellNoPrice, Number.NEGATIVE_INFINITY, Number.POSITIVE_INFINITY)
  const end = offset + runCount[offset]!
  const position = positionInRun(from, runCount, offset, at)
  if (position < 0) return rows.fill(row, pricelistId, cellNoPrice, Number.NEGATIVE_INFINITY, from[offset]!)
  const until = position + 1 < end ? from[position + 1]! : Number.POSITIVE_INFINITY
  return rows.fill(row, pricelistId, cellOf(sales, extra, position), from[position]!, until)
}

/** A row cell for the version at a pool position (engine/current-rows.ts). */
export function cellOf(sales: Float64Array, extra: Int32Array, position: number): number {
  const extraAt = extra[position]!
  return extraAt === extraNone ? sales[position]! : extraAt === extraTombstone ? cellNoPrice : cellExtras + extraAt
}

/**
 * The pre-VAT amount that `quantity` (scaled like break quantities) selects from the extras block
 * at `cursor`, in the pricelist's currency: the break with the largest quantity not above it
 * (fixed, or a percent of the base, half-up), else the base sales. NaN when any break's amount
 * leaves the amount range: the full pipeline refuses such an item, and the caller leaves it to the
 * pipeline. The same arithmetic as `priceItem`, without building the breaks.
 */
export function amountForQuantity(extras: Float64Array, cursor: number, quantity: number): number {
  const base = extras[cursor]!
  const breakCount = extras[cursor + 1]!
  let selected = base
  let selectedQuantity = -1
  for (let at = cursor + 2, end = at + breakCount * 3; at < end; at += 3) {
    const breakQuantity = extras[at]!
    const value = extras[at + 2]!
    const amount = extras[at + 1] === breakKindPercent ? mulDivRound(base, value, 100 * amountUnit) : value
    if (!(Math.abs(amount) <= amountAbsMax * amountUnit)) return Number.NaN
    if (breakQuantity <= quantity && breakQuantity > selectedQuantity) {
      selected = amount
      selectedQuantity = breakQuantity
    }
  }
  return selected
}

export function readContent(
  sales: Float64Array,
  extra: Int32Array,
  extras: Float64Array,
  fieldNames: readonly string[],
  position: number,
): PriceContent | null {
  const extraAt = extra[position]!
  if (extraAt === extraTombstone) return null
  if (extraAt === extraNone) return { sales: sales[position]!, fields: null, breaks: null }
  return readExtras(extras, fieldNames, extraAt)
}

/** The content of a version with extras, from its extras block (which holds its sales too). */
export function readExtras(extras: Float64Array, fieldNames: readonly string[], at: number): PriceContent {
  let cursor = at + 1
  const breakCount = extras[cursor++]!
  let breaks: QuantityBreak[] | null = null
  if (breakCount > 0) {
    breaks = []
    for (let index = 0; index < breakCount; index++) {
      breaks.push({ quantity: extras[cursor]!, kind: extras[cursor + 1]! as 0 | 1, value: extras[cursor + 2]! })
      cursor += 3
    }
  }
  const fieldCount = extras[cursor++]!
  let fields: Record<string, number> | null = null
  if (fieldCount > 0) {
    fields = {}
    for (let index = 0; index < fieldCount; index++) {
      const name = fieldNames[extras[cursor++]!]!
      fields[name] = extras[cursor++]!
    }
  }
  return { sales: extras[at]!, fields, breaks }
}

/** Do two contents price the same (dedup)? */
export function sameContent(left: PriceContent | null, right: PriceContent | null): boolean {
  if (left === null || right === null) return left === right
  if (left.sales !== right.sales) return false
  const leftFields = left.fields === null ? [] : Object.keys(left.fields)
  const rightFields = right.fields === null ? [] : Object.keys(right.fields)
  if (leftFields.length !== rightFields.length) return false
  for (const name of leftFields) if (right.fields?.[name] !== left.fields![name]) return false
  const leftBreaks = left.breaks ?? []
  const rightBreaks = right.breaks ?? []
  if (leftBreaks.length !== rightBreaks.length) return false
  for (let index = 0; index < leftBreaks.length; index++) {
    const a = leftBreaks[index]!
    const b = rightBreaks[index]!
    if (a.quantity !== b.quantity || a.kind !== b.kind || a.value !== b.value) return false
  }
  return true
}

/**
 * The changelog's content hash of a price: the same text as `canonicalJson({sales, fields, breaks})`
 * (engine/hash.ts), so the same hashes as ever, built directly from the known shape instead of
 * through the generic walk (sorted keys: breaks, fields, sales; a break's: kind, quantity, value).
 */
export function priceContentHash(content: PriceContent): string {
  // Appended piece by piece (no array, closure or join per price: this runs once per written version).
  let text = '{"breaks":'
  const breaks = content.breaks
  if (breaks === null) text += 'null'
  else {
    for (let index = 0; index < breaks.length; index++) {
      const entry = breaks[index]!
      text += `${index === 0 ? '[' : ','}{"kind":${entry.kind},"quantity":${entry.quantity},"value":${entry.value}}`
    }
    text += breaks.length === 0 ? '[]' : ']'
  }
  text += ',"fields":'
  const values = content.fields
  if (values === null) text += 'null'
  else {
    const names = Object.keys(values).sort()
    for (let index = 0; index < names.length; index++)
      text += `${index === 0 ? '{' : ','}${JSON.stringify(names[index])}:${values[names[index]!]}`
    text += names.length === 0 ? '{}' : '}'
  }
  return sha256Hex128(`${text},"sales":${content.sales}}`)
}

/** A planned price write: the pair's new version list and its change type. */
export interface PlannedPrice {
  readonly versions: PriceVersion[]
  readonly changeType: 'created' | 'updated' | 'deleted'
}

/**
 * Plans writing `version` (content null: delete) into a pair's versions. Null when nothing would
 * change: the same content is in force at its start (unless `force`, the ingest.skip.dedup mode),
 * or a delete of what is absent. `removeLater` drops scheduled versions after the new one.
 * The first version of a pair is `created`, later ones `updated`, a delete `deleted`.
 */
export function planPriceWrite(
  existing: readonly PriceVersion[],
  version: PriceVersion,
  options: { removeLater: boolean; force: boolean },
): PlannedPrice | null {
  let index = -1
  for (let position = existing.length - 1; position >= 0; position--) {
    if (existing[position]!.from <= version.from) {
      index = position
      break
    }
  }
  const inForce = index >= 0 ? existing[index]! : null
  const liveBefore = inForce !== null && inForce.content !== null
  const hasLater = index + 1 < existing.length
  if (version.content === null && !liveBefore) return null
  const unchanged = inForce !== null && sameContent(inForce.content, version.content)
  if (unchanged && !options.force && !(options.removeLater && hasLater)) return null
  const versions = existing.slice(0, index + 1)
  if (inForce !== null && inForce.from === version.from) versions.pop()
  versions.push(version)
  if (!options.removeLater)
    for (let later = index + 1; later < existing.length; later++) versions.push(existing[later]!)
  const changeType = version.content === null ? 'deleted' : existing.length === 0 ? 'created' : 'updated'
  return { versions, changeType }
}
