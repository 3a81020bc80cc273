/**
 * The price query with `prior_price: true`: the plain answer's items, each with its EU prior price
 * (engine/prior-price/prior-price.ts) as its last field, or null where no reduction is in force.
 * It reads the history without the price versions marked as errors (engine/prior-price/corrections.ts).
 * Unavailable entries are as in the plain answer. A query the answer cache serves (./execute.ts)
 * keeps each item with its prior price there; others keep the prior prices alone
 * (./prior-price-cache.ts).
 * @module
 */
import type { Catalog } from '../engine/catalog.js'
import type { PricedItem } from '../engine/pipeline.js'
import type { PriceReader } from '../engine/price-replica.js'
import { cachedPriorQuery, type QueryInput } from './execute.js'
import { answeredQuery, answerOptions } from './explain-query.js'
import { answerBytes } from './answer-bytes.js'
import { cachedPrior, cachedPriors, priorLookup, priorTails, priorText } from './prior-price-cache.js'

export { clearPriorPriceCache, priorPriceCacheCounts } from './prior-price-cache.js'

/** The answer of a query with prior prices; `days` is the tenant's `omnibus.days` at the query's instant. */
export function priorPriceQueryBytes(
  catalog: Catalog,
  prices: PriceReader,
  input: QueryInput,
  days: number,
  tenant = '',
): Buffer {
  // Through the answer cache where it serves the query: each item's bytes with its prior price kept.
  const cached = tenant === '' ? null : cachedPriorQuery(catalog, prices, input, tenant, days)
  if (cached !== null) return cached
  // Unsorted, with each item's SKU id (the prior prices are kept by it), then sorted as asked.
  const itemSkuIds: number[] = []
  const { options, roundingCode, result } = answeredQuery(catalog, prices, { ...input, sortOrder: null }, itemSkuIds)
  const lookup = priorLookup(catalog, prices, { taxArea: input.taxArea, options, at: input.at, days, roundingCode })
  const { items } = result
  const kept = cachedPriors(lookup, items, itemSkuIds)
  if (input.sortOrder === null) return answerBytes(items, result.unavailable, priorTails(lookup, kept))
  // Stable, by gross, as the plain query sorts.
  const direction = input.sortOrder === 'ASC' ? 1 : -1
  const order = items
    .map((_, index) => index)
    .sort((left, right) => direction * (items[left]!.gross - items[right]!.gross))
  const sorted = order.map((index) => items[index]!)
  return answerBytes(
    sorted,
    result.unavailable,
    priorTails(
      lookup,
      order.map((index) => kept[index]!),
    ),
  )
}

/** A single read's item text with its prior price as its last field. */
export function withPriorPrice(
  catalog: Catalog,
  prices: PriceReader,
  read: {
    json: string
    item: PricedItem
    pricelist: string
    taxArea: string
    at: number
    rounding: string | null
    quantity: number
  },
  days: number,
): string {
  const { item } = read
  const { options, roundingCode } = answerOptions(catalog, item.currency, read.rounding, read.at, read.quantity)
  const lookup = priorLookup(catalog, prices, { taxArea: read.taxArea, options, at: read.at, days, roundingCode })
  return `${read.json.slice(0, -1)}${priorText(lookup, cachedPrior(lookup, item.sku, read.pricelist))}}`
}
