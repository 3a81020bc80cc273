/**
 * An explanation (./explain.ts) as the API shows it, the `trace` of an answered or unavailable
 * item: amounts, quantities and rates printed as the plain answer prints them (JSON numbers of the
 * exact decimals), instants as the API's date-times. Who wrote a price version and when live only
 * in the main thread's price book, so the caller hands them in (`versionMeta`).
 * @module
 */
import { toNumber } from '../money.js'
import { formatInstant } from '../time.js'
import type { FxResolved } from '../fx.js'
import type { CompiledTier } from '../rounding.js'
import type { Explanation } from './explain.js'
import type { PipelineStep } from './steps.js'

/** When and by whom a price version was written, or null when unknown here. */
export type VersionMeta = (pricelist: string, sku: string, start: number) => { at: number; by: string } | null

export interface TraceOptions {
  readonly versionMeta: VersionMeta
  readonly roundingCode: string | null
}

function amount(scaled: number | null): number | null {
  return scaled === null ? null : toNumber(scaled)
}

function fxJson(fx: FxResolved): Record<string, unknown> {
  return { base: fx.base, quote: fx.quote, rate: fx.rate, published: formatInstant(fx.asOf) }
}

function tierJson(tier: CompiledTier | null): Record<string, unknown> | null {
  if (tier === null) return null
  const { from, to, increment, mode, offset } = tier
  return { from: toNumber(from), to: amount(to), increment: toNumber(increment), mode, offset: toNumber(offset) }
}

function stepJson(step: PipelineStep, vat: () => Record<string, unknown>, options: TraceOptions): unknown {
  switch (step.step) {
    case 'version': {
      const meta = options.versionMeta(step.pricelist, step.sku, step.start)
      return {
        step: 'version',
        pricelist: step.pricelist,
        start_date: formatInstant(step.start),
        written_at: meta === null ? null : formatInstant(meta.at),
        written_by: meta?.by ?? null,
        amount: toNumber(step.sales),
      }
    }
    case 'bundle':
      return {
        step: 'bundle',
        pricelist: step.pricelist,
        rule_pricelist: step.rulePricelist,
        method: step.method,
        components: step.components.map((part) => ({
          sku: part.sku,
          quantity: part.quantity,
          amount: amount(part.sales),
        })),
        discount_type: step.discountType,
        discount_value: step.discountValue === null ? null : Number(step.discountValue),
        amount: amount(step.sales),
      }
    case 'conversion':
      return {
        step: 'conversion',
        from_pricelist: step.from,
        to_pricelist: step.to,
        from_currency: step.fromCurrency,
        to_currency: step.toCurrency,
        from_vat_mode: step.fromMode,
        to_vat_mode: step.toMode,
        fx: step.fx === null ? null : fxJson(step.fx),
        vat_rate: step.vatRateText === null ? null : Number(step.vatRateText),
        input: toNumber(step.input),
        output: toNumber(step.output),
      }
    case 'rule':
      return {
        step: 'rule',
        pricelist: step.pricelist,
        index: step.index,
        code: step.code,
        filter_matched: step.filterMatched,
        input: toNumber(step.input),
        output: amount(step.output),
      }
    case 'fx':
      return { step: 'fx', ...fxJson(step.fx), input: toNumber(step.input), output: toNumber(step.output) }
    case 'quantity_break':
      return {
        step: 'quantity_break',
        quantity: toNumber(step.quantity),
        break_quantity: amount(step.breakQuantity),
        amount: toNumber(step.amount),
      }
    case 'vat':
      return { step: 'vat', vat_class: step.vatClass, ...vat(), rate: Number(step.rateText), mode: step.mode }
    case 'rounding':
      return {
        step: 'rounding',
        profile: options.roundingCode,
        tier: tierJson(step.tier),
        input: toNumber(step.input),
        output: toNumber(step.output),
      }
    case 'amounts':
      return { step: 'amounts', net: toNumber(step.net), vat: toNumber(step.vat), gross: toNumber(step.gross) }
  }
}

/** The `trace` object of one item. */
export function traceJson(explanation: Explanation, options: TraceOptions): Record<string, unknown> {
  const steps: unknown[] = [{ step: 'candidates', pricelists: explanation.selected }]
  if (explanation.item !== null) steps.push({ step: 'inheritance', path: explanation.path, source: explanation.source })
  let vatIndex = 0
  const vat = () => {
    const found = explanation.vat[vatIndex++]
    const start = (ms: number | null | undefined) => (ms === null || ms === undefined ? null : formatInstant(ms))
    return { mapping_start: start(found?.mappingStart), rate_start: start(found?.rateStart) }
  }
  for (const step of explanation.steps) steps.push(stepJson(step, vat, options))
  return {
    steps,
    candidates: explanation.candidates.map((candidate) => ({
      pricelist: candidate.pricelist,
      outcome: candidate.outcome,
      reason: candidate.reason,
      amounts:
        candidate.amounts === null
          ? null
          : {
              net: toNumber(candidate.amounts.net),
              vat: toNumber(candidate.amounts.vat),
              gross: toNumber(candidate.amounts.gross),
            },
    })),
    inputs_hash: explanation.inputsHash,
  }
}
