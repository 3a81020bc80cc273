/**
 * What a console price page answers and what it costs: its HTML with the status of what happened (a
 * 4xx shows the form with the message), and the items it takes from the tenant's query bucket, as
 * the JSON call it stands for would (a person in a browser must not get around the plan's limits).
 * @module
 */
import { statusOf } from '../../../error-status.js'
import { ApiError } from '../../../../platform/errors.js'
import type { TenantRuntime } from '../../../../tenant/runtime.js'
import { batchItemsMax } from '../../../../engine/limits.js'

/** A price page's answer: its HTML and status (a 4xx shows the form with the message). */
export interface PriceAnswer {
  readonly status: number
  readonly body: string
  readonly retryAfterS?: number
}

/** Items one request may cost the tenant: its plan's per-request maximum, within the engine's. */
export function itemsMaxOf(tenant: TenantRuntime): number {
  const burst = tenant.buckets.query.burst
  return Math.min(tenant.limits.max_items_per_request ?? batchItemsMax, batchItemsMax, burst ?? batchItemsMax)
}

/** Takes `cost` items from the tenant's query bucket, as the JSON route would (429 when it is empty). */
export async function chargeQuery(tenant: TenantRuntime, cost: number, nowMs: number): Promise<void> {
  const itemsMax = itemsMaxOf(tenant)
  if (cost > itemsMax)
    throw new ApiError('too_many_items', `This costs ${cost} items; the maximum per request is ${itemsMax}`, {
      max_items_per_request: itemsMax,
    })
  await chargeRate(tenant, 'query', cost, nowMs)
}

/** Takes `cost` items from the tenant's query or write (ingest) bucket, as a JSON route would (429 when it is empty). */
export async function chargeRate(
  tenant: TenantRuntime,
  dimension: 'query' | 'ingest',
  cost: number,
  nowMs: number,
): Promise<void> {
  const taken = await tenant.buckets[dimension].take(cost, nowMs)
  if (!taken.allowed)
    throw new ApiError(
      'rate_limited',
      `The tenant's ${dimension === 'query' ? 'query' : 'write'} rate limit is used up; try again in ${taken.retryAfterS} s`,
      { retry_after: taken.retryAfterS },
      taken.retryAfterS,
    )
  tenant.activity.record(dimension, cost, nowMs)
}

/** An error of the page's work as the page with the message in its form (4xx), else rethrown. */
export function failedAnswer(error: unknown, render: (message: string) => string): PriceAnswer {
  if (!(error instanceof ApiError)) throw error
  const retry = error.retryAfterS === null ? {} : { retryAfterS: error.retryAfterS }
  return { status: statusOf(error), body: render(error.message), ...retry }
}
