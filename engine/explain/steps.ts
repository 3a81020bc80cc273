/**
 * What the price pipeline reports while a price is explained: the steps as they ran, in scaled
 * amounts. The pipeline (engine/pipeline.ts) calls a `PriceTracer` only when one is set on its
 * context, so a plain read pays one null check per hook; engine/explain/explain.ts records them.
 * This module imports nothing from the pipeline, so the pipeline can name these types without a
 * circle.
 * @module
 */
import type { BundleRule, VatMode } from '../catalog.js'
import type { FxResolved } from '../fx.js'
import type { CompiledTier } from '../rounding.js'

/** A price version the base came from (the pricelist's own, or an ancestor's). */
export interface VersionStep {
  readonly step: 'version'
  readonly pricelist: string
  readonly sku: string
  readonly start: number
  readonly sales: number
}

export interface BundleStep {
  readonly step: 'bundle'
  readonly sku: string
  readonly pricelist: string
  /** The pricelist that holds the rule (this one or an ancestor). */
  readonly rulePricelist: string
  readonly method: BundleRule['method']
  /** Each component's resolved sales on the pricelist (null when it had none) and its quantity. */
  readonly components: readonly { sku: string; quantity: number; sales: number | null }[]
  readonly discountType: BundleRule['discount_type']
  readonly discountValue: string | null
  readonly sales: number | null
}

/** A parent's price moved into the child's currency and/or VAT mode. */
export interface ConversionStep {
  readonly step: 'conversion'
  readonly from: string
  readonly to: string
  readonly fromCurrency: string
  readonly toCurrency: string
  readonly fromMode: VatMode
  readonly toMode: VatMode
  readonly fx: FxResolved | null
  readonly vatRateText: string | null
  readonly input: number
  readonly output: number
}

export interface RuleStep {
  readonly step: 'rule'
  readonly pricelist: string
  readonly index: number
  readonly code: string | null
  readonly filterMatched: boolean
  readonly input: number
  /** Null when the rule failed (rule_error) or did not run (its filter did not match). */
  readonly output: number | null
}

export interface FxStep {
  readonly step: 'fx'
  readonly fx: FxResolved
  readonly input: number
  readonly output: number
}

export interface QuantityBreakStep {
  readonly step: 'quantity_break'
  /** Scaled like break quantities. */
  readonly quantity: number
  /** The break chosen, or null for the base price. */
  readonly breakQuantity: number | null
  readonly amount: number
}

export interface VatStep {
  readonly step: 'vat'
  readonly vatClass: string
  readonly rateText: string
  readonly mode: VatMode
  readonly precision: number
}

export interface RoundingStep {
  readonly step: 'rounding'
  readonly tier: CompiledTier | null
  readonly input: number
  readonly output: number
}

export interface AmountsStep {
  readonly step: 'amounts'
  readonly net: number
  readonly vat: number
  readonly gross: number
}

export type PipelineStep =
  | VersionStep
  | BundleStep
  | ConversionStep
  | RuleStep
  | FxStep
  | QuantityBreakStep
  | VatStep
  | RoundingStep
  | AmountsStep

/** Receives the steps of one (SKU, pricelist) resolution and pricing. */
export interface PriceTracer {
  /** resolveBase entered `code` (nearest first: the asked pricelist, then its ancestors). */
  walk(code: string): void
  step(step: PipelineStep): void
  /**
   * Bundle components are resolved with steps off (their amounts are in the bundle step), but the
   * versions they read still count as inputs: `muted` > 0 while they resolve.
   */
  muted: number
}
