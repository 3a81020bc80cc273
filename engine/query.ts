/**
 * The batch price query: the best price per SKU across the selected pricelists. Control-plane
 * work (pricelists, currency, rounding) happens once; the per-(SKU, pricelist) loop does lookups.
 * @module
 */
import { priceItem, resolveBase, Status, statusReasons, type AnswerOptions, type PriceContext, type PricedItem } from './pipeline.js'

export interface QueryRequest {
  readonly skus: readonly string[]
  /** Selected pricelist codes (active at the instant), sorted: a tie goes to the first. */
  readonly pricelists: readonly string[]
  readonly options: AnswerOptions
  readonly sortOrder: 'ASC' | 'DESC' | null
}

export interface QueryResult {
  readonly items: PricedItem[]
  readonly unavailable: { sku: string; reason: (typeof statusReasons)[number] }[]
}

/** Best = lowest gross in the requested currency after rounding; ties to the first pricelist code. */
export function queryPrices(context: PriceContext, request: QueryRequest): QueryResult {
  const items: PricedItem[] = []
  const unavailable: QueryResult['unavailable'] = []
  const seen = new Set<string>()
  for (const sku of request.skus) {
    if (seen.has(sku)) continue
    seen.add(sku)
    const best = bestPrice(context, sku, request.pricelists, request.options)
    if (typeof best === 'number') unavailable.push({ sku, reason: statusReasons[best] })
    else items.push(best)
  }
  if (request.sortOrder !== null) {
    const direction = request.sortOrder === 'ASC' ? 1 : -1
    items.sort((left, right) => direction * (left.gross - right.gross))
  }
  return { items, unavailable }
}

export function bestPrice(context: PriceContext, sku: string, pricelists: readonly string[], options: AnswerOptions): PricedItem | Status {
  let best: PricedItem | null = null
  let status: Status = Status.noPrice
  for (const code of pricelists) {
    const resolved = resolveBase(context, code, sku)
    if (typeof resolved === 'number') {
      if (resolved > status) status = resolved
      continue
    }
    const priced = priceItem(context, resolved, sku, options, code)
    if (typeof priced === 'number') {
      if (priced > status) status = priced
      continue
    }
    // Strictly lower: the pricelists come sorted, so a tie keeps the code that sorts first.
    if (best === null || priced.gross < best.gross) best = priced
  }
  return best ?? status
}
