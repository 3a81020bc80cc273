/**
 * The VAT of each SKU in one tax area, kept across requests (one column per catalogue and tax area,
 * per thread). Looking it up through the catalogue costs two look-ups by composite-key string per
 * SKU (the mapping, then its class's rate): about a third of a price query's time. A column slot,
 * by the price book's dense SKU id, holds what that look-up answered at an instant `from` and stays
 * right until `until`, the next scheduled change of the SKU's mapping or of its class's rate; any
 * write of a mapping or a rate (the catalogue's revisions of those two types) empties the column.
 * Reads before a slot's `from` (an `as_of` in the past) look up afresh and leave the slot alone.
 * @module
 */
import { compositeKey, type Catalog } from './catalog.js'
import { parseFraction, type Fraction } from './money.js'
import { nextVersionAfter } from './temporal.js'

/** What a SKU's VAT is in a tax area: its class and rate, or why there is none. */
export interface VatInfo {
  readonly classCode: string
  readonly rateText: string
  readonly rate: Fraction
}

/** No mapping of the SKU in the area, or no rate for its class (the pipeline's statuses). */
export const vatMissingClass = 'no_vat_class'
export const vatMissingRate = 'no_vat_rate'
export type VatLookup = VatInfo | typeof vatMissingClass | typeof vatMissingRate

/** VAT rates as exact fractions, parsed once per distinct rate text (there are few). */
const rateFractions = new Map<string, Fraction | null>()
const rateFractionsMax = 4096

function rateFraction(text: string): Fraction | null {
  let fraction = rateFractions.get(text)
  if (fraction === undefined) {
    if (rateFractions.size >= rateFractionsMax) rateFractions.clear()
    fraction = parseFraction(text, 4)
    rateFractions.set(text, fraction)
  }
  return fraction
}

/** The class's rate in the area at `at`, or null. */
export function lookupVatRate(catalog: Catalog, taxArea: string, classCode: string, at: number): VatInfo | null {
  const rate = catalog.get('vat_rate', compositeKey(taxArea, classCode), at)
  const fraction = rate === null ? null : rateFraction(rate.rate)
  return rate === null || fraction === null ? null : { classCode, rateText: rate.rate, rate: fraction }
}

/** The first instant after `at` at which the SKU's VAT mapping in the area, or its class's rate, changes. */
export function vatNextChange(catalog: Catalog, taxArea: string, sku: string, at: number): number {
  const key = compositeKey(sku, taxArea)
  let until = nextVersionAfter(catalog.versions('article_taxclass', key), at)
  const mapping = catalog.get('article_taxclass', key, at)
  if (mapping !== null)
    until = Math.min(
      until,
      nextVersionAfter(catalog.versions('vat_rate', compositeKey(taxArea, mapping.vat_class_code)), at),
    )
  return until
}

const slotsInitial = 1024
/**
 * Doubles per SKU slot, side by side so that a look-up touches one cache line (32 bytes):
 * [1 + value index (0: empty), from, until, query mark].
 */
const stride = 4

export class VatColumn {
  #revision = -1
  #cells = new Float64Array(slotsInitial * stride)
  /** The distinct answers of the column (a handful: the area's classes and the two misses). */
  #values: VatLookup[] = []
  readonly #valueIndex = new Map<string, number>()
  #mark = 0

  constructor(
    readonly catalog: Catalog,
    readonly taxArea: string,
  ) {}

  /**
   * Empties the column when a mapping or a rate was written since it was filled. Every reader
   * calls it before its look-ups (a price context once, when it first needs the column): `get`
   * itself does not look at the catalogue's revisions.
   */
  refresh(): this {
    const revision = this.catalog.revision('article_taxclass') + this.catalog.revision('vat_rate')
    if (revision !== this.#revision) this.#reset(revision)
    return this
  }

  /** The SKU's VAT at `at`; `skuId` is its dense id in the price book (>= 0). */
  get(sku: string, skuId: number, at: number): VatLookup {
    const cells = this.#cells
    const start = skuId * stride
    if (start < cells.length) {
      const slot = cells[start]!
      if (slot > 0 && at >= cells[start + 1]! && at < cells[start + 2]!) return this.#values[slot - 1]!
    }
    const value = this.#lookup(sku, at)
    const slot = start < cells.length ? cells[start]! : 0
    // A read before the slot's instant answers for the past: it does not replace a current slot.
    if (slot === 0 || at >= cells[start + 1]!)
      this.#store(skuId, value, at, vatNextChange(this.catalog, this.taxArea, sku, at))
    return value
  }

  /** A new mark for `markOnce`: one per query. */
  nextMark(): number {
    return ++this.#mark
  }

  /**
   * True the first time a query (its `mark`) asks for the SKU, false after: the price query's
   * duplicate check, on the cache line the VAT look-up reads anyway.
   */
  markOnce(skuId: number, mark: number): boolean {
    const start = skuId * stride
    if (start >= this.#cells.length) this.#grow(skuId + 1)
    const cells = this.#cells
    if (cells[start + 3] === mark) return false
    cells[start + 3] = mark
    return true
  }

  #lookup(sku: string, at: number): VatLookup {
    const mapping = this.catalog.get('article_taxclass', compositeKey(sku, this.taxArea), at)
    if (mapping === null) return vatMissingClass
    return lookupVatRate(this.catalog, this.taxArea, mapping.vat_class_code, at) ?? vatMissingRate
  }

  #store(skuId: number, value: VatLookup, from: number, until: number): void {
    if (skuId * stride >= this.#cells.length) this.#grow(skuId + 1)
    const key = typeof value === 'string' ? value : `${value.classCode}\u0001${value.rateText}`
    let index = this.#valueIndex.get(key)
    if (index === undefined) {
      index = this.#values.length
      this.#values.push(value)
      this.#valueIndex.set(key, index)
    }
    const cells = this.#cells
    const start = skuId * stride
    cells[start] = index + 1
    cells[start + 1] = from
    cells[start + 2] = until
  }

  #grow(count: number): void {
    let length = this.#cells.length / stride
    while (length < count) length *= 2
    const cells = new Float64Array(length * stride)
    cells.set(this.#cells)
    this.#cells = cells
  }

  #reset(revision: number): void {
    this.#revision = revision
    // Slots empty; the query marks stay (a query in progress keeps its duplicate check).
    const cells = this.#cells
    for (let start = 0; start < cells.length; start += stride) cells[start] = 0
    this.#values = []
    this.#valueIndex.clear()
  }
}

/** Columns by catalogue (a tenant's, or a worker's replica of it) and tax area. */
const columns = new WeakMap<Catalog, Map<string, VatColumn>>()

/** The column of the catalogue and area, emptied first if a mapping or rate was written since. */
export function vatColumn(catalog: Catalog, taxArea: string): VatColumn {
  let byArea = columns.get(catalog)
  if (byArea === undefined) {
    byArea = new Map()
    columns.set(catalog, byArea)
  }
  let column = byArea.get(taxArea)
  if (column === undefined) {
    column = new VatColumn(catalog, taxArea)
    byArea.set(taxArea, column)
  }
  return column.refresh()
}
