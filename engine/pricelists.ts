/**
 * Pricelist facts the engine and the routes share: the activity window and the VAT mode inherited
 * along the parent chain.
 * @module
 */
import type { Catalog, Pricelist, VatMode } from './catalog.js'
import { pricelistDepthMax } from './limits.js'

/** Is the pricelist inside its activity window at `at` (null bounds are open; end exclusive)? */
export function pricelistActiveAt(pricelist: Pricelist, at: number): boolean {
  return (
    (pricelist.start_date === null || pricelist.start_date <= at) &&
    (pricelist.end_date === null || at < pricelist.end_date)
  )
}

/** The VAT mode in force for `code` at `at`: its own, else the nearest ancestor's; null when none. */
export function effectiveVatMode(catalog: Catalog, code: string, at: number): VatMode | null {
  const pricelist = catalog.get('pricelist', code, at)
  return pricelist === null ? null : inheritedVatMode(catalog, pricelist, at)
}

export function inheritedVatMode(catalog: Catalog, pricelist: Pricelist, at: number): VatMode | null {
  let current: Pricelist | null = pricelist
  // Writes keep chains at most pricelistDepthMax long, so the walk is bounded by it as well.
  for (let step = 0; step < pricelistDepthMax && current !== null; step++) {
    if (current.vat_mode !== null) return current.vat_mode
    current = current.parent_code === null ? null : catalog.get('pricelist', current.parent_code, at)
  }
  return null
}
