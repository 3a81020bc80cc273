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
  if (mapping !== null) until = Math.min(until, nextVersionAfter(catalog.versions('vat_rate', compositeKey(taxArea, mapping.vat_class_code)), at))
  return until
}

const slotsInitial = 1024

export class VatColumn {
  #revision = -1
  /** Per SKU id: 0 when empty, else 1 + an index into #values. */
  #slots = new Int32Array(slotsInitial)
  #from = new Float64Array(slotsInitial)
  #until = new Float64Array(slotsInitial)
  /** The distinct answers of the column (a handful: the area's classes and the two misses). */
  #values: VatLookup[] = []
  readonly #valueIndex = new Map<string, number>()

  constructor(
    readonly catalog: Catalog,
    readonly taxArea: string,
  ) {}

  /** The SKU's VAT at `at`; `skuId` is its dense id in the price book (>= 0). */
  get(sku: string, skuId: number, at: number): VatLookup {
    const revision = this.catalog.revision('article_taxclass') + this.catalog.revision('vat_rate')
    if (revision !== this.#revision) this.#reset(revision)
    if (skuId < this.#slots.length) {
      const slot = this.#slots[skuId]!
      if (slot > 0 && at >= this.#from[skuId]! && at < this.#until[skuId]!) return this.#values[slot - 1]!
    }
    const value = this.#lookup(sku, at)
    const slot = this.#slots[skuId] ?? 0
    // A read before the slot's instant answers for the past: it does not replace a current slot.
    if (slot === 0 || at >= this.#from[skuId]!) this.#store(skuId, value, at, vatNextChange(this.catalog, this.taxArea, sku, at))
    return value
  }

  #lookup(sku: string, at: number): VatLookup {
    const mapping = this.catalog.get('article_taxclass', compositeKey(sku, this.taxArea), at)
    if (mapping === null) return vatMissingClass
    return lookupVatRate(this.catalog, this.taxArea, mapping.vat_class_code, at) ?? vatMissingRate
  }

  #store(skuId: number, value: VatLookup, from: number, until: number): void {
    if (skuId >= this.#slots.length) this.#grow(skuId + 1)
    const key = typeof value === 'string' ? value : `${value.classCode}\u0001${value.rateText}`
    let index = this.#valueIndex.get(key)
    if (index === undefined) {
      index = this.#values.length
      this.#values.push(value)
      this.#valueIndex.set(key, index)
    }
    this.#slots[skuId] = index + 1
    this.#from[skuId] = from
    this.#until[skuId] = until
  }

  #grow(count: number): void {
    let length = this.#slots.length
    while (length < count) length *= 2
    const slots = new Int32Array(length)
    slots.set(this.#slots)
    const from = new Float64Array(length)
    from.set(this.#from)
    const until = new Float64Array(length)
    until.set(this.#until)
    this.#slots = slots
    this.#from = from
    this.#until = until
  }

  #reset(revision: number): void {
    this.#revision = revision
    this.#slots.fill(0)
    this.#values = []
    this.#valueIndex.clear()
  }
}

/** Columns by catalogue (a tenant's, or a worker's replica of it) and tax area. */
const columns = new WeakMap<Catalog, Map<string, VatColumn>>()

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
  return column
}
