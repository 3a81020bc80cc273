/**
 * Runs a price query against a tenant state and serialises the answer. The same code runs on the
 * main thread (small queries) and in the workers (large ones), so both answer identically.
 * @module
 */
import type { Catalog } from '../engine/catalog.js'
import { PriceContext } from '../engine/pipeline.js'
import type { PriceReader } from '../engine/price-replica.js'
import { queryPrices } from '../engine/query.js'
import { resolveProfile } from '../engine/rounding.js'
import { answerJson } from './render.js'

export interface QueryInput {
  readonly at: number
  readonly taxArea: string
  readonly skus: readonly string[]
  readonly pricelists: readonly string[]
  readonly currency: string
  readonly rounding: string | null
  readonly sortOrder: 'ASC' | 'DESC' | null
  readonly quantity: number
}

/** The answer as JSON text; a rounding profile that is absent here answers without rounding. */
export function executeQuery(catalog: Catalog, prices: PriceReader, input: QueryInput): string {
  const profile = resolveProfile(catalog, input.rounding ?? undefined, input.currency, input.at)
  const rounding = profile === null || profile === 'not_found' ? null : profile.compiled
  const context = new PriceContext(catalog, prices, input.at, input.taxArea)
  const result = queryPrices(context, {
    skus: input.skus,
    pricelists: input.pricelists,
    options: { currency: input.currency, rounding, quantity: input.quantity },
    sortOrder: input.sortOrder,
  })
  return answerJson(result.items, result.unavailable)
}
