/**
 * SKU-major rows of the prices in force, for the price query's common case. The price book keeps
 * its runs by pricelist (an index per pricelist over SKU ids, runs in the pool in load order), so
 * one SKU over 10 pricelists touches about 50 places in memory, and the query is bound by memory
 * latency, not arithmetic. A row puts the SKU's facts side by side:
 *
 *   [from, until, cell per pricelist id]
 *
 * A cell (`cellOf`, the same encoding a replica answers from its runs) is, for the version in force
 * over the whole window [from, until):
 *  - the scaled sales of a live version without extras (fields, breaks);
 *  - `cellExtras` + its extras cursor for a live version with extras (the query reads its breaks);
 *  - `cellNoPrice` (-Infinity) when there is no live version (none, or a deletion);
 *  - NaN when not filled yet.
 * Cells are filled on demand (the query's pricelists only), and each narrows the window to the span
 * of the version it read, so every filled cell holds throughout the window. A read at an instant
 * outside the window starts the row again (empty, window unbounded); a write of one of the SKU's
 * prices clears its row, and a compaction of the price book (extras cursors move) clears them all.
 *
 * Main thread only (the price book's owner): cells are plain stores. Rows are off (`row` answers
 * -1) for a book whose rows would take more than `rowsBytesMax`.
 * @module
 */

/** A cell with no live version in force. */
export const cellNoPrice = Number.NEGATIVE_INFINITY
/**
 * Cells at or above this hold the extras cursor of a version with extras (cell - cellExtras).
 * Scaled sales stay below 10^15 in magnitude (engine/limits.ts), so they never reach it; cursors
 * stay exact.
 */
export const cellExtras = 2 ** 52

/** Rows may take at most this much memory per price book; beyond it queries take the runs. */
export const rowsBytesMax = 256 * 1024 * 1024
/** Cells before the first pricelist cell: the window. */
const header = 2

export class CurrentRows {
  /** Pricelist cells per row (as many as the book has pricelists), and SKU rows (doubling). */
  #slots = 0
  #capacity = 0
  /** Set once the rows would pass `rowsBytesMax`: this book answers from its runs from then on. */
  #off = false
  cells = new Float64Array(0)
  /**
   * Each filled cell's version start (the same indexes as `cells`; NaN: not known), kept only once
   * an explanation asks for them (`keepStarts`): it names the version of every losing candidate,
   * and finding it again in the runs was a sixth of an explanation's time. Null until then, and when
   * cells and starts together would pass `rowsBytesMax`.
   */
  starts: Float64Array | null = null

  /**
   * The index of the SKU's first pricelist cell, its row holding at `at` (started again when it
   * did not), or -1 when rows are off. `pricelists` and `skus`: the book's dictionary sizes now.
   */
  row(skuId: number, pricelists: number, skus: number, at: number): number {
    if (pricelists > this.#slots || skuId >= this.#capacity) {
      if (this.#off || !this.#grow(pricelists, Math.max(skus, skuId + 1))) return -1
    }
    const cells = this.cells
    const start = skuId * (this.#slots + header)
    if (!(at >= cells[start]! && at < cells[start + 1]!)) this.#start(start)
    return start + header
  }

  /** Stores a cell and narrows its row's window to [from, until); answers the cell. */
  fill(row: number, pricelistId: number, value: number, from: number, until: number): number {
    const cells = this.cells
    cells[row + pricelistId] = value
    if (this.starts !== null) this.starts[row + pricelistId] = from
    if (from > cells[row - 2]!) cells[row - 2] = from
    if (until < cells[row - 1]!) cells[row - 1] = until
    return value
  }

  /** Keeps each cell's version start from now on: every row starts again, so that each cell read has one. */
  keepStarts(): void {
    if (this.starts !== null || !this.#startsFit(this.cells.length)) return
    this.starts = new Float64Array(this.cells.length).fill(Number.NaN)
    this.clearAll()
  }

  #startsFit(length: number): boolean {
    return !this.#off && 2 * length * Float64Array.BYTES_PER_ELEMENT <= rowsBytesMax
  }

  /** Empties the SKU's row (one of its prices was written). */
  clear(skuId: number): void {
    if (skuId < this.#capacity) this.#start(skuId * (this.#slots + header))
  }

  /** Empties every row (the price book compacted: extras cursors moved). */
  clearAll(): void {
    const cells = this.cells
    for (let start = 0; start < cells.length; start += this.#slots + header) cells[start] = Number.POSITIVE_INFINITY
  }

  #start(start: number): void {
    const cells = this.cells
    cells[start] = Number.NEGATIVE_INFINITY
    cells[start + 1] = Number.POSITIVE_INFINITY
    cells.fill(Number.NaN, start + header, start + header + this.#slots)
  }

  /** Room for the pricelists and SKUs (doubling); every row starts empty. False when over the bound. */
  #grow(pricelists: number, skus: number): boolean {
    // Exactly the pricelists (a new pricelist, rare, starts every row again): a row of 10 is 96 bytes.
    const slots = Math.max(this.#slots, pricelists, 1)
    let capacity = Math.max(this.#capacity, 1024)
    while (capacity < skus) capacity *= 2
    if (capacity * (slots + header) * Float64Array.BYTES_PER_ELEMENT > rowsBytesMax) {
      this.#off = true
      this.#slots = 0
      this.#capacity = 0
      this.cells = new Float64Array(0)
      this.starts = null
      return false
    }
    const cells = new Float64Array(capacity * (slots + header))
    // Empty rows: an empty window (from +Infinity) is started at the first read.
    for (let start = 0; start < cells.length; start += slots + header) cells[start] = Number.POSITIVE_INFINITY
    this.#slots = slots
    this.#capacity = capacity
    this.cells = cells
    if (this.starts !== null)
      this.starts = this.#startsFit(cells.length) ? new Float64Array(cells.length).fill(Number.NaN) : null
    return true
  }
}
