/**
 * Price corrections as use cases (./core.ts): a person marks a version of a price as an error, or
 * takes the mark back. A mark names the version by its start; it changes no price and no read of
 * one: the EU prior price reads the price's history without the marked versions
 * (engine/prior-price/corrections.ts). The marks of a price are one catalogue key
 * (`price_correction`, compositeKey(SKU, pricelist)) written at the moment of marking, so the
 * changelog records who marked or unmarked which price, and when.
 * @module
 */
import { compositeKey, type PriceCorrection, type PriceErrorMark } from '../../engine/catalog.js'
import { priceErrorMarksMax } from '../../engine/limits.js'
import { formatInstant, parseInstant } from '../../engine/time.js'
import { unlimitedWriter } from './catalog.js'
import { applyBatch, invalid, Refusal, type ItemOutcome, type WriteContext, type WriteTarget } from './core.js'

/** One mark: the price, the start of its version that was an error, and why (optional). */
export interface PriceErrorInput {
  readonly sku: string
  readonly pricelist: string
  /** The version's start, an instant (its shape checked by the edge). */
  readonly start_date: string
  readonly reason?: string | null
}

/** The marks of a price now (none: an empty list). */
export function priceErrorMarks(
  tenant: Pick<WriteTarget, 'catalog'>,
  sku: string,
  pricelist: string,
): PriceErrorMark[] {
  return tenant.catalog.get('price_correction', compositeKey(sku, pricelist), Number.POSITIVE_INFINITY)?.errors ?? []
}

function versionMissing(input: PriceErrorInput, start: number): Refusal {
  return new Refusal({
    status: 'not_found',
    message: `Price of ${input.sku} on ${input.pricelist} has no version starting at ${formatInstant(start)}`,
  })
}

/**
 * Marks price versions as errors; an outcome per item. A version already marked is unchanged (its
 * first mark, with its reason, stays); a pricelist or version that does not exist is not_found.
 */
export function markPriceErrors(
  tenant: WriteTarget,
  context: WriteContext,
  items: readonly (PriceErrorInput | Refusal)[],
): Promise<ItemOutcome[]> {
  const { nowMs, actor } = context
  return applyBatch(
    tenant,
    items,
    unlimitedWriter<PriceErrorInput>(tenant, (input) => {
      const { sku, pricelist } = input
      if (!tenant.catalog.exists('pricelist', pricelist))
        return new Refusal({ status: 'not_found', message: `Pricelist ${pricelist} not found` })
      const start = parseInstant(input.start_date)
      if (!tenant.prices.versions(pricelist, sku).some((version) => version.from === start))
        return versionMissing(input, start)
      const marks = priceErrorMarks(tenant, sku, pricelist)
      if (marks.some((mark) => mark.start === start)) return null
      if (marks.length >= priceErrorMarksMax)
        return invalid('/start_date', `a price has at most ${priceErrorMarksMax} versions marked as errors`)
      const mark: PriceErrorMark = { start, marked_at: nowMs, marked_by: actor, reason: input.reason ?? null }
      const errors = [...marks, mark].sort((left, right) => left.start - right.start)
      const value: PriceCorrection = { errors }
      return tenant.catalog.plan('price_correction', compositeKey(sku, pricelist), value, nowMs, nowMs, actor)
    }),
  )
}

/** Takes marks back; a version not marked is not_found. The last mark taken deletes the price's key. */
export function unmarkPriceErrors(
  tenant: WriteTarget,
  context: WriteContext,
  items: readonly (Omit<PriceErrorInput, 'reason'> | Refusal)[],
): Promise<ItemOutcome[]> {
  const { nowMs, actor } = context
  return applyBatch(
    tenant,
    items,
    unlimitedWriter<Omit<PriceErrorInput, 'reason'>>(tenant, (input) => {
      const { sku, pricelist } = input
      const start = parseInstant(input.start_date)
      const marks = priceErrorMarks(tenant, sku, pricelist)
      const errors = marks.filter((mark) => mark.start !== start)
      if (errors.length === marks.length)
        return new Refusal({
          status: 'not_found',
          message: `Price of ${sku} on ${pricelist} has no version starting at ${formatInstant(start)} marked as an error`,
        })
      const value: PriceCorrection | null = errors.length === 0 ? null : { errors }
      return tenant.catalog.plan('price_correction', compositeKey(sku, pricelist), value, nowMs, nowMs, actor)
    }),
  )
}
