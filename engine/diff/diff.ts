/**
 * The price diff between two instants: which SKUs' effective prices differ, and why. A storefront
 * or a pricing team needs "what will change at midnight" (or "what changed since Monday") without
 * pricing the catalogue twice by hand and without guessing the reason from the amounts.
 *
 * The plain comparison is the batch query's fast path (engine/query.ts queryPrices) run at both
 * instants over the same SKUs, so an item is in the diff exactly when two POST /price/query calls
 * with `as_of` = from and = to answer it differently. Causes are looked up only for the items
 * that differ (./causes.ts), by comparing the inputs in force at the two instants, so the common
 * case (nothing changed) costs two queries and a comparison.
 *
 * Pure: a catalogue, a price reader and the request; no HTTP, no tenant runtime (simulations run it
 * on a catalogue of their own).
 * @module
 */
import { assert } from '../assert.js'
import type { Catalog } from '../catalog.js'
import { mulDivRound } from '../money.js'
import { PriceContext, statusReasons, type AnswerOptions, type PricedItem } from '../pipeline.js'
import type { PriceReader } from '../price-replica.js'
import { queryPrices } from '../query.js'
import { resolveProfile } from '../rounding.js'
import { causesOf, type DiffCause, type DiffMoment } from './causes.js'

export { diffCauses, type DiffCause } from './causes.js'

export interface DiffRequest {
  readonly from: number
  readonly to: number
  readonly taxArea: string
  readonly currency: string
  /** The rounding profile as the request names it (resolved at each instant, as a query does). */
  readonly rounding: string | null
  readonly quantity: number
  /** The pricelists the filter selects, live and active at `from`, sorted (a tie goes to the first). */
  readonly pricelistsFrom: readonly string[]
  /** The same at `to`. */
  readonly pricelistsTo: readonly string[]
  /** The SKUs compared: unique, in code order (the answer keeps it). */
  readonly skus: readonly string[]
}

/** One side of a changed item: the answer at that instant (amounts scaled), or why there is none. */
export type DiffSide =
  | { readonly pricelist: string; readonly net: number; readonly vat: number; readonly gross: number }
  | { readonly reason: (typeof statusReasons)[number] }

export interface DiffEntry {
  readonly sku: string
  readonly from: DiffSide
  readonly to: DiffSide
  /** Change of gross in percent, scaled like amounts (4 decimals, half-up); null without both prices or from 0. */
  readonly changePercent: number | null
  readonly causes: readonly DiffCause[]
}

/** The SKUs of `request` whose answers differ between its two instants, in its SKU order. */
export function diffPrices(catalog: Catalog, prices: PriceReader, request: DiffRequest): DiffEntry[] {
  assert(request.from <= request.to, 'a diff runs forward in time (the caller orders the instants)')
  const from = moment(catalog, prices, request, request.from, request.pricelistsFrom)
  const to = moment(catalog, prices, request, request.to, request.pricelistsTo)
  const entries: DiffEntry[] = []
  for (const sku of request.skus) {
    const before = from.answers.get(sku)
    const after = to.answers.get(sku)
    assert(before !== undefined && after !== undefined, 'every SKU is answered at both instants')
    if (sameAnswer(before, after)) continue
    entries.push({
      sku,
      from: side(before),
      to: side(after),
      changePercent: typeof before === 'string' || typeof after === 'string' ? null : percent(before, after),
      causes: causesOf(from, to, sku, winner(before), winner(after)),
    })
  }
  return entries
}

/** The answers at one instant, with what causes.ts compares. */
function moment(
  catalog: Catalog,
  prices: PriceReader,
  request: DiffRequest,
  at: number,
  pricelists: readonly string[],
): DiffMoment {
  const profile = resolveProfile(catalog, request.rounding ?? undefined, request.currency, at)
  // As the query: a profile missing at this instant (the route answered 404 before) rounds nothing.
  const rounding = profile === null || profile === 'not_found' ? null : profile
  const context = new PriceContext(catalog, prices, at, request.taxArea)
  const options: AnswerOptions = {
    currency: request.currency,
    rounding: rounding?.compiled ?? null,
    quantity: request.quantity,
  }
  const result = queryPrices(context, { skus: request.skus, pricelists, options, sortOrder: null })
  const answers = new Map<string, PricedItem | string>()
  for (const item of result.items) answers.set(item.sku, item)
  for (const missing of result.unavailable) answers.set(missing.sku, missing.reason)
  return { context, answers, pricelists: new Set(pricelists), rounding, currency: request.currency }
}

function sameAnswer(before: PricedItem | string, after: PricedItem | string): boolean {
  // Two unavailable answers are no change, whatever their reasons.
  if (typeof before === 'string' || typeof after === 'string') return typeof before === typeof after
  return (
    before.pricelist === after.pricelist &&
    before.net === after.net &&
    before.vat === after.vat &&
    before.gross === after.gross
  )
}

function side(answer: PricedItem | string): DiffSide {
  if (typeof answer === 'string') return { reason: answer as (typeof statusReasons)[number] }
  return { pricelist: answer.pricelist, net: answer.net, vat: answer.vat, gross: answer.gross }
}

function winner(answer: PricedItem | string): string | null {
  return typeof answer === 'string' ? null : answer.pricelist
}

/** 100 x (to - from) / from of the gross, in scaled units, exactly (half-up, away from zero). */
function percent(before: PricedItem, after: PricedItem): number | null {
  if (before.gross === 0) return null
  const change = after.gross - before.gross
  // Scaled percent = change / from x 100 x 10^4; the divisor must be positive.
  return before.gross > 0
    ? mulDivRound(change, 1_000_000, before.gross)
    : mulDivRound(-change, 1_000_000, -before.gross)
}

/** A scaled amount as a decimal string with exactly 4 decimals ("-1.5" is "-1.5000"). */
export function fourDecimals(scaled: number): string {
  assert(Number.isSafeInteger(scaled), 'scaled amounts are integers')
  const sign = scaled < 0 ? '-' : ''
  const magnitude = Math.abs(scaled)
  const units = Math.floor(magnitude / 10_000)
  return `${sign}${units}.${String(magnitude - units * 10_000).padStart(4, '0')}`
}
