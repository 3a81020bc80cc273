/**
 * The price history the prior price reads: the tenant's book without the versions people marked as
 * errors (`price_correction`, tenant/writes/price-corrections.ts). A marked version is read as if it
 * had never been written: the version before it stays in force until the next unmarked one (none
 * before it: the price had none then). The rest of the book is read as it is.
 *
 * The view is an overlay of the book (engine/simulate/price-overlay.ts) holding the corrected pairs'
 * version lists, built once per change of the tenant (the book's change count, which moves with
 * every write, marks included) and only when some price has a mark: without marks the book itself
 * is answered, at no cost. Marks apply as they are now, whatever instant the prior price is asked
 * for: a correction corrects the history.
 * @module
 */
import { assert } from '../assert.js'
import { splitKey, type Catalog } from '../catalog.js'
import type { PriceReader } from '../price-replica.js'
import { PriceBook, type PriceVersion } from '../prices.js'
import { PriceOverlay } from '../simulate/price-overlay.js'

interface CorrectedView {
  readonly changeCount: number
  readonly revision: number
  readonly reader: PriceReader
}

const views = new WeakMap<Catalog, CorrectedView>()

/** The tenant's prices as the prior price reads them: `prices` itself when no version is marked. */
export function correctedPrices(catalog: Catalog, prices: PriceReader): PriceReader {
  if (catalog.liveCount('price_correction') === 0) return prices
  assert(prices instanceof PriceBook, 'corrections read the version lists of the main thread’s book')
  const revision = catalog.revision('price_correction')
  const kept = views.get(catalog)
  if (kept !== undefined && kept.changeCount === prices.changeCount && kept.revision === revision) return kept.reader
  const reader = correctedView(catalog, prices)
  views.set(catalog, { changeCount: prices.changeCount, revision, reader })
  return reader
}

function correctedView(catalog: Catalog, book: PriceBook): PriceReader {
  const overlay = new PriceOverlay(book)
  for (const key of catalog.keys('price_correction')) {
    const correction = catalog.get('price_correction', key, Number.POSITIVE_INFINITY)
    if (correction === null) continue
    const [sku, pricelist] = splitKey(key) as [string, string]
    const versions = book.versions(pricelist, sku)
    const marked = new Set(correction.errors.map((mark) => mark.start))
    const unmarked = versions.filter((version) => !marked.has(version.from))
    if (unmarked.length === versions.length) continue
    overlay.install(pricelist, sku, unmarked.length > 0 ? unmarked : [noPriceFrom(versions[0]!)])
  }
  return overlay
}

/** Every version marked: the pair had no price, from its first version's start. */
function noPriceFrom(first: PriceVersion): PriceVersion {
  return { from: first.from, content: null, writtenAt: first.writtenAt, writtenBy: first.writtenBy }
}
