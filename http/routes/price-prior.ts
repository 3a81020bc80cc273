/**
 * `prior_price=true` on the price query and the taxed single read (docs/api.md, "Prior price"):
 * each item gains its EU prior price (workers/prior-price-query.ts). It walks each item's price
 * history, so a query asking for it is bounded like an explained one and costs more per SKU.
 * @module
 */
import { Type } from '@sinclair/typebox'
import type { Catalog } from '../../engine/catalog.js'
import { settingValue } from '../../engine/settings.js'
import { validationError } from '../../platform/errors.js'
import type { QueryAnswer } from '../../tenant/price-dispatch.js'
import type { TenantRuntime } from '../../tenant/runtime.js'
import type { QueryInput } from '../../workers/execute.js'
import { priorPriceQueryBytes } from '../../workers/prior-price-query.js'
import { DateTime } from '../schemas.js'

/** SKUs a query with prior prices may ask for. */
export const priorPriceSkusMax = 100

/** Items a SKU with its prior price counts against the query rate (it prices its history's moments). */
export const priorPriceCostFactor = 5

export const PriorPrice = Type.Union(
  [
    Type.Object({
      net: Type.Number(),
      gross: Type.Number(),
      in_force_at: DateTime,
      reduction_started_at: DateTime,
    }),
    Type.Null(),
  ],
  {
    description:
      'prior_price=true: the lowest price over the omnibus.days before the reduction in force began (EU Directive 98/6/EC, Article 6a); null when no reduction is in force',
  },
)

/** The tenant's `omnibus.days` at `at`. */
export function omnibusDays(catalog: Catalog, at: number): number {
  return Number(settingValue(catalog, 'omnibus.days', at))
}

/** The price query with `prior_price: true` (not with `explain`), on the main thread. */
export function priorPriceQuery(tenant: TenantRuntime, input: QueryInput, explain: boolean): QueryAnswer {
  if (explain)
    throw validationError(
      [{ path: '/prior_price', message: 'not with explain' }],
      'A query may ask for explain or prior_price, not both',
    )
  if (input.skus.length > priorPriceSkusMax) {
    throw validationError(
      [{ path: '/skus', message: `at most ${priorPriceSkusMax} with prior_price` }],
      `A query with prior_price may ask for at most ${priorPriceSkusMax} SKUs`,
    )
  }
  const days = omnibusDays(tenant.catalog, input.at)
  return {
    json: priorPriceQueryBytes(tenant.catalog, tenant.prices, input, days, tenant.slug),
    release: null,
    engine: 'main',
  }
}
