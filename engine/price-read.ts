/**
 * One price read, as plain data in and out: the same code answers on the main thread and, when a
 * read's rules pass the main thread's allowance (engine/rules.ts `withinRuleAllowance`), on a
 * price worker (workers/price-task.ts), so both answer alike. The caller turns an outcome into the
 * HTTP answer (http/routes/price-reads.ts).
 * @module
 */
import type { Catalog } from './catalog.js'
import { PriceContext, priceItem, resolveBase, statusReasons, type PricedItem, type Resolved } from './pipeline.js'
import type { PriceReader } from './price-replica.js'
import { resolveProfile } from './rounding.js'
import { settingEnabled } from './settings.js'

export interface PriceReadInput {
  readonly at: number
  readonly taxArea: string
  readonly sku: string
  readonly pricelist: string
  /** null: the base after inheritance and rules only (no FX, VAT or rounding). */
  readonly answer: PriceReadAnswer | null
}

export interface PriceReadAnswer {
  /** null: the pricelist's own currency. */
  readonly currency: string | null
  /** A rounding profile's code, `default`, or null for none. */
  readonly rounding: string | null
  readonly quantity: number
  /** Refuse a currency other than the pricelist's when `require.homogeneous.currency` is on. */
  readonly homogeneousCurrency: boolean
}

export type PriceReadOutcome =
  | { readonly kind: 'unknown_pricelist' }
  /** `stage`: whether the base (inheritance, bundles, rules) or the answer (FX, VAT) failed. */
  | { readonly kind: 'unpriced'; readonly stage: 'base' | 'answer'; readonly reason: (typeof statusReasons)[number] }
  | { readonly kind: 'currency_mismatch'; readonly pricelistCurrency: string; readonly requested: string }
  | { readonly kind: 'unknown_profile' }
  | { readonly kind: 'base'; readonly resolved: Resolved }
  | { readonly kind: 'priced'; readonly item: PricedItem }

export function readPrice(catalog: Catalog, prices: PriceReader, input: PriceReadInput): PriceReadOutcome {
  return readPriceIn(new PriceContext(catalog, prices, input.at, input.taxArea), input)
}

/** A read in a context of the same instant and tax area (a listing reads many in one). */
export function readPriceIn(context: PriceContext, input: PriceReadInput): PriceReadOutcome {
  const catalog = context.catalog
  if (context.pricelist(input.pricelist) === null) return { kind: 'unknown_pricelist' }
  const resolved = resolveBase(context, input.pricelist, input.sku)
  if (typeof resolved === 'number') return { kind: 'unpriced', stage: 'base', reason: statusReasons[resolved] }
  const answer = input.answer
  if (answer === null) return { kind: 'base', resolved }
  const currency = answer.currency ?? resolved.currency
  if (
    answer.homogeneousCurrency &&
    currency !== resolved.currency &&
    settingEnabled(catalog, 'require.homogeneous.currency', input.at)
  ) {
    return { kind: 'currency_mismatch', pricelistCurrency: resolved.currency, requested: currency }
  }
  const profile = resolveProfile(catalog, answer.rounding ?? undefined, currency, input.at)
  if (profile === 'not_found') return { kind: 'unknown_profile' }
  const priced = priceItem(context, resolved, input.sku, {
    currency,
    rounding: profile === null ? null : profile.compiled,
    quantity: answer.quantity,
  })
  if (typeof priced === 'number') return { kind: 'unpriced', stage: 'answer', reason: statusReasons[priced] }
  return { kind: 'priced', item: priced }
}
