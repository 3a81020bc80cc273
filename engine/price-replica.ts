/**
 * A read-only view of a PriceBook in another thread: the same shared columns and SKU table (no
 * copy), with the pricelist and field dictionaries kept in step by appending what the owner adds. It answers the lookups the pipeline
 * makes (`PriceReader`), exactly as the PriceBook does.
 * @module
 */
import { cellNoPrice, CurrentRows } from './current-rows.js'
import { lookupSku, lookupSkus } from './sku-dictionary.js'
import {
  amountForQuantity,
  cellOf,
  fillFromRun,
  nextFromAfter,
  positionInRun,
  readContent,
  readExtras,
  type DictionaryDelta,
  type PriceContent,
  type SharedColumns,
} from './prices.js'

/** The lookups the pipeline needs; PriceBook and PriceReplica both provide them. */
export interface PriceReader {
  skuId(code: string): number
  /** Ids of `count` codes from `start` into `ids` (-1: absent), looked up together. */
  skuIds(codes: readonly string[], start: number, count: number, ids: Int32Array): void
  pricelistId(code: string): number
  livePositionAt(pricelistId: number, skuId: number, at: number): number
  salesAt(position: number): number
  fromAt(position: number): number
  hasExtras(position: number): boolean
  contentAt(position: number): PriceContent | null
  /** A SKU-major row of the sales in force (engine/current-rows.ts), or -1 where there are none. */
  currentRow(skuId: number, at: number): number
  readonly rows: Float64Array
  fillCell(row: number, skuId: number, pricelistId: number, at: number): number
  /** Empties rows that writes may have made stale (a replica's; the owner clears its own). Once per query. */
  refreshRows(): void
  /** The cell of (pricelist, SKU) at `at` read from the runs (the rows' encoding). */
  cellAt(pricelistId: number, skuId: number, at: number): number
  /** The content of the version whose extras block is at `cursor` (a cell's). */
  contentAtCursor(cursor: number): PriceContent
  /** The first slot of an extras block (a query reads the blocks of a step together, early). */
  extrasAt(cursor: number): number
  /** Whether any live version has extras (else no cell points to a block). */
  hasExtrasBlocks(): boolean
  /** The pre-VAT amount a scaled quantity selects from an extras block (a cell's cursor: engine/prices.ts). */
  amountForQuantity(cursor: number, quantity: number): number
  /**
   * The version start of a filled cell of a row (NaN: not kept), once `keepRowStarts` was called;
   * optional: a reader without rows (a simulation's overlay) has none, and its callers look it up.
   */
  rowStart?(row: number, pricelistId: number): number
  keepRowStarts?(): void
  /** The tenant's change count (prices and catalogue). */
  readonly changeCount: number
  /** The first instant after `at` at which the pair's version in force changes, or +Infinity. */
  nextChangeAfter(pricelistId: number, skuId: number, at: number): number
  /**
   * The change count of the SKU's last price write (engine/prices.ts); optional: only the main
   * thread's book keeps it, and without it anything derived holds only at the same change count.
   */
  skuChangedAt?(skuId: number): number
}

/** Mirrors engine/prices.ts: the `extra` column value that marks a deletion. */
const extraTombstone = -2

export class PriceReplica implements PriceReader {
  readonly #pricelistIds = new Map<string, number>()
  readonly #fieldNames: string[] = []
  #columns: SharedColumns
  readonly #rows = new CurrentRows()
  /** The tenant's change count when the rows were last emptied (-1: never filled). */
  #rowsChangeCount = -1

  constructor(columns: SharedColumns, dictionary: DictionaryDelta) {
    this.#columns = columns
    this.append(dictionary)
  }

  get sizes(): { pricelists: number; fields: number } {
    return { pricelists: this.#pricelistIds.size, fields: this.#fieldNames.length }
  }

  /**
   * A bound on its SKU ids (every id is below it): the shared dictionary's capacity, which a dry
   * run's overlay (engine/simulate/price-overlay.ts) numbers its own new SKUs from.
   */
  get skuIdBound(): number {
    return this.#columns.skus.offsets.length
  }

  /** Appends dictionary entries (ids are positions, so order matters and nothing is re-sent). */
  append(delta: DictionaryDelta): void {
    for (const code of delta.pricelists) this.#pricelistIds.set(code, this.#pricelistIds.size)
    for (const name of delta.fields) this.#fieldNames.push(name)
  }

  /** A newer generation of columns (after growth or compaction). */
  setColumns(columns: SharedColumns): void {
    if (columns.generation < this.#columns.generation) return
    if (columns.generation !== this.#columns.generation) this.#rows.clearAll()
    this.#columns = columns
  }

  skuId(code: string): number {
    return lookupSku(this.#columns.skus, code)
  }

  skuIds(codes: readonly string[], start: number, count: number, ids: Int32Array): void {
    lookupSkus(this.#columns.skus, codes, start, count, ids)
  }

  get changeCount(): number {
    return Atomics.load(this.#columns.changes, 0)
  }

  nextChangeAfter(pricelistId: number, skuId: number, at: number): number {
    const columns = this.#columns
    const index = columns.index[pricelistId]
    if (index === null || index === undefined || skuId >= index.length) return Number.POSITIVE_INFINITY
    return nextFromAfter(columns.from, columns.runCount, Atomics.load(index, skuId) - 1, at)
  }

  pricelistId(code: string): number {
    return this.#pricelistIds.get(code) ?? -1
  }

  livePositionAt(pricelistId: number, skuId: number, at: number): number {
    const columns = this.#columns
    const index = columns.index[pricelistId]
    if (index === null || index === undefined || skuId >= index.length) return -1
    const offset = Atomics.load(index, skuId) - 1
    if (offset < 0) return -1
    const position = positionInRun(columns.from, columns.runCount, offset, at)
    return position >= 0 && columns.extra[position] !== extraTombstone ? position : -1
  }

  salesAt(position: number): number {
    return this.#columns.sales[position]!
  }

  fromAt(position: number): number {
    return this.#columns.from[position]!
  }

  hasExtras(position: number): boolean {
    return this.#columns.extra[position]! >= 0
  }

  /**
   * This thread's rows (engine/current-rows.ts). The owner clears a row when it writes the SKU's
   * prices; a replica does not see which SKU was written, so it empties all its rows when the
   * tenant's change count has moved since they were filled (`refreshRows`, once per query), and
   * when the columns change generation (a compaction moves extras cursors).
   */
  currentRow(skuId: number, at: number): number {
    return this.#rows.row(skuId, this.#pricelistIds.size, skuId + 1, at)
  }

  get rows(): Float64Array {
    return this.#rows.cells
  }

  fillCell(row: number, skuId: number, pricelistId: number, at: number): number {
    const columns = this.#columns
    const index = columns.index[pricelistId]
    const offset = index === null || index === undefined || skuId >= index.length ? -1 : Atomics.load(index, skuId) - 1
    return fillFromRun(
      this.#rows,
      row,
      pricelistId,
      columns.from,
      columns.runCount,
      columns.sales,
      columns.extra,
      offset,
      at,
    )
  }

  rowStart(row: number, pricelistId: number): number {
    const starts = this.#rows.starts
    return starts === null ? Number.NaN : starts[row + pricelistId]!
  }

  keepRowStarts(): void {
    this.#rows.keepStarts()
  }

  refreshRows(): void {
    const count = Atomics.load(this.#columns.changes, 0)
    if (count !== this.#rowsChangeCount) {
      this.#rows.clearAll()
      this.#rowsChangeCount = count
    }
  }

  cellAt(pricelistId: number, skuId: number, at: number): number {
    const columns = this.#columns
    const index = columns.index[pricelistId]
    if (index === null || index === undefined || skuId >= index.length) return cellNoPrice
    const offset = Atomics.load(index, skuId) - 1
    if (offset < 0) return cellNoPrice
    const position = positionInRun(columns.from, columns.runCount, offset, at)
    return position < 0 ? cellNoPrice : cellOf(columns.sales, columns.extra, position)
  }

  amountForQuantity(cursor: number, quantity: number): number {
    return amountForQuantity(this.#columns.extras, cursor, quantity)
  }

  contentAtCursor(cursor: number): PriceContent {
    return readExtras(this.#columns.extras, this.#fieldNames, cursor)
  }

  hasExtrasBlocks(): boolean {
    return true
  }

  extrasAt(cursor: number): number {
    return this.#columns.extras[cursor]!
  }

  contentAt(position: number): PriceContent | null {
    const columns = this.#columns
    return readContent(columns.sales, columns.extra, columns.extras, this.#fieldNames, position)
  }
}
