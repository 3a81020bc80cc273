/**
 * Effective-price events as changelog entries (docs/api.md, "Effective-price events"): entity type
 * `effective_price`, the SKU as entity code and the pricelist as composite key, `changed_at` the
 * moment the price changed. The amounts, moment and cause go in the entry's detail (rendered after
 * the changelog's own fields). The content hash is of the event's whole content, so an event
 * recorded twice (after a restore or a home's failover) carries the same hash.
 * @module
 */
import type { Amounts, EffectiveCause, EffectiveChange } from '../../engine/effective-price/changes.js'
import { sha256Hex128 } from '../../engine/hash.js'
import { amountUnit } from '../../engine/money.js'
import { formatInstant } from '../../engine/time.js'
import type { EntryContent } from '../../storage/log-entry.js'

function amountsJson(amounts: Amounts | null): { net: number; gross: number } | null {
  // Scaled integers over 10^4: the nearest double, which JSON writes as the exact 4-decimal text.
  return amounts === null ? null : { net: amounts.net / amountUnit, gross: amounts.gross / amountUnit }
}

/** How a summary's detail starts (the webhook dispatcher tells them apart by it). */
export const summaryDetail = '{"summary":true,'
/** How the detail of a per-SKU event of a whole list's change starts (recorded for per-SKU subscribers). */
export const inSummaryDetail = '{"in_summary":true,'

/**
 * One SKU's event. `inSummary`: one of a whole list's change, recorded beside its summary for the
 * webhooks that ask for per-SKU events (`effective_price_per_sku`).
 */
export function changeEntry(change: EffectiveChange, inSummary = false): EntryContent {
  const detail = JSON.stringify({
    ...(inSummary ? { in_summary: true } : {}),
    tax_area: change.taxArea,
    currency_code: change.currency,
    old: amountsJson(change.before),
    new: amountsJson(change.after),
    effective_at: formatInstant(change.at),
    cause: change.cause,
  })
  return {
    entityType: 'effective_price',
    changeType: change.before === null ? 'created' : change.after === null ? 'deleted' : 'updated',
    entityCode: change.sku,
    compositeKey: change.pricelist,
    changedAt: change.at,
    changedBy: change.by,
    contentHash: sha256Hex128(`${change.sku}\u0001${change.pricelist}\u0001${detail}`),
    detail,
  }
}

/** A whole list's event: how many of its SKUs changed in one tax area, and the diff that pages them. */
export function summaryEntry(summary: {
  readonly pricelist: string
  readonly taxArea: string
  readonly currency: string
  readonly count: number
  readonly at: number
  readonly cause: EffectiveCause
}): EntryContent {
  const detail = JSON.stringify({
    summary: true,
    tax_area: summary.taxArea,
    currency_code: summary.currency,
    count: summary.count,
    effective_at: formatInstant(summary.at),
    cause: summary.cause,
    diff: {
      from: formatInstant(summary.at - 1),
      to: formatInstant(summary.at),
      tax_area: summary.taxArea,
      currency_code: summary.currency,
      pricelist_filter: { pricelists: [summary.pricelist] },
    },
  })
  return {
    entityType: 'effective_price',
    changeType: 'updated',
    entityCode: summary.pricelist,
    compositeKey: null,
    changedAt: summary.at,
    changedBy: 'system',
    contentHash: sha256Hex128(`${summary.pricelist}\u0001${detail}`),
    detail,
  }
}
