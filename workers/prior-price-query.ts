/**
 * The price query with `prior_price: true`: the plain answer's items, each with its EU prior price
 * (engine/prior-price/prior-price.ts) as its last field, or null where no reduction is in force.
 * Unavailable entries are as in the plain answer.
 * @module
 */
import type { Catalog } from '../engine/catalog.js'
import { PriceContext, type PricedItem } from '../engine/pipeline.js'
import type { PriceReader } from '../engine/price-replica.js'
import { priorPrice, type PriorPrice } from '../engine/prior-price/prior-price.js'
import { queryPrices } from '../engine/query.js'
import { formatInstant } from '../engine/time.js'
import type { QueryInput } from './execute.js'
import { answerOptions } from './explain-query.js'
import { amountJson, itemJson, jsonString } from './render.js'

/** The prior price as JSON text (null: no reduction in force). */
export function priorPriceJson(prior: PriorPrice | null): string {
  if (prior === null) return 'null'
  return (
    `{"net":${amountJson(prior.net)},"gross":${amountJson(prior.gross)},` +
    `"in_force_at":"${formatInstant(prior.inForceAt)}","reduction_started_at":"${formatInstant(prior.reductionStartedAt)}"}`
  )
}

/** The answer of a query with prior prices; `days` is the tenant's `omnibus.days` at the query's instant. */
export function priorPriceQueryJson(catalog: Catalog, prices: PriceReader, input: QueryInput, days: number): string {
  const context = new PriceContext(catalog, prices, input.at, input.taxArea)
  const { options } = answerOptions(catalog, input.currency, input.rounding, input.at, input.quantity)
  const result = queryPrices(context, {
    skus: input.skus,
    pricelists: input.pricelists,
    options,
    sortOrder: input.sortOrder,
  })
  const items = result.items.map((item) => {
    const prior = priorPrice(catalog, prices, {
      sku: item.sku,
      pricelist: item.pricelist,
      taxArea: input.taxArea,
      options,
      at: input.at,
      days,
    })
    return `${itemJson(item, item.pricelist).slice(0, -1)},"prior_price":${priorPriceJson(prior)}}`
  })
  const unavailable = result.unavailable.map(
    (entry) => `{"sku":${jsonString(entry.sku)},"reason":${jsonString(entry.reason)}}`,
  )
  return `{"items":[${items.join(',')}],"unavailable":[${unavailable.join(',')}]}`
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
  const { options } = answerOptions(catalog, item.currency, read.rounding, read.at, read.quantity)
  const prior = priorPrice(catalog, prices, {
    sku: item.sku,
    pricelist: read.pricelist,
    taxArea: read.taxArea,
    options,
    at: read.at,
    days,
  })
  return `${read.json.slice(0, -1)},"prior_price":${priorPriceJson(prior)}}`
}
