/**
 * Bundle rule writes and removals as use cases (./core.ts), keyed by bundle SKU and pricelist: the
 * pricelist must exist; SUM_OF_PARTS needs components (not the bundle itself) and an optional
 * discount, FIXED a price. Amounts are stored as canonical decimal text, component quantities as
 * numbers of at most 4 decimals, rounded half-up from what was written.
 * @module
 */
import { compositeKey, type BundleRule } from '../../engine/catalog.js'
import { amountUnit, parseAmount, toDecimalString, toNumber } from '../../engine/money.js'
import { deleteKeys, unlimitedWriter, type DeleteInput } from './catalog.js'
import { applyBatch, invalid, Refusal, type ItemOutcome, type WriteContext, type WriteTarget } from './core.js'

type AmountInput = number | string

/** A rule as written (its shape checked by the edge). */
export interface BundleRuleInput {
  readonly method: 'SUM_OF_PARTS' | 'FIXED'
  readonly discount_type?: 'PERCENTAGE' | 'ABSOLUTE' | null
  readonly discount_value?: AmountInput | null
  readonly fixed_price?: AmountInput | null
  readonly components?: readonly { readonly sku: string; readonly quantity: AmountInput }[]
}

/** One bundle rule write: the bundle's SKU, the pricelist and the rule. */
export interface BundleInput {
  readonly sku: string
  readonly pricelist: string
  readonly rule: BundleRuleInput
}

/** Components of a bundle at most this many each. */
const componentQuantityMax = 1e6

function canonical(input: unknown, path: string): string | Refusal {
  const scaled = parseAmount(input)
  return scaled === null ? invalid(path, 'must be a decimal number') : toDecimalString(scaled)
}

/**
 * A quantity as a number the engine scales exactly (engine/money.ts scaleQuantity): a number as it
 * is (its shortest text is what the client wrote), a text rounded half-up to 4 decimals first.
 */
function quantityOf(input: AmountInput, path: string): number | Refusal {
  if (typeof input === 'number') return input
  const scaled = parseAmount(input)
  if (scaled === null || !(Number(input) > 0) || scaled > componentQuantityMax * amountUnit) {
    return invalid(path, `must be a decimal number above 0 up to ${componentQuantityMax}`)
  }
  return toNumber(scaled)
}

/** The rule in its stored form, or the first refused part. */
function toRule(bundleSku: string, input: BundleRuleInput): BundleRule | Refusal {
  const components: BundleRule['components'] = []
  for (const [index, component] of (input.components ?? []).entries()) {
    const quantity = quantityOf(component.quantity, `/components/${index}/quantity`)
    if (quantity instanceof Refusal) return quantity
    components.push({ sku: component.sku, quantity })
  }
  if (input.method === 'FIXED') {
    if (input.fixed_price === undefined || input.fixed_price === null)
      return invalid('/fixed_price', 'is required for FIXED')
    const fixed = canonical(input.fixed_price, '/fixed_price')
    if (fixed instanceof Refusal) return fixed
    return { method: 'FIXED', discount_type: null, discount_value: null, fixed_price: fixed, components }
  }
  if (components.length === 0) return invalid('/components', 'SUM_OF_PARTS needs at least one component')
  if (components.some((component) => component.sku === bundleSku))
    return invalid('/components', 'a bundle cannot contain itself')
  const discountType = input.discount_type ?? null
  const discountValue = input.discount_value ?? null
  if ((discountType === null) !== (discountValue === null)) {
    return invalid('/discount_value', 'discount_type and discount_value go together')
  }
  const value = discountValue === null ? null : canonical(discountValue, '/discount_value')
  if (value instanceof Refusal) return value
  if (discountType === 'PERCENTAGE' && value !== null && (Number(value) < 0 || Number(value) > 100)) {
    return invalid('/discount_value', 'a percentage is between 0 and 100')
  }
  return { method: 'SUM_OF_PARTS', discount_type: discountType, discount_value: value, fixed_price: null, components }
}

/** Sets bundle rules, each on its pricelist from now on; an outcome per item. */
export function writeBundleRules(
  tenant: WriteTarget,
  context: WriteContext,
  items: readonly (BundleInput | Refusal)[],
): Promise<ItemOutcome[]> {
  const { nowMs, actor } = context
  return applyBatch(
    tenant,
    items,
    unlimitedWriter<BundleInput>(tenant, ({ sku, pricelist, rule }) => {
      if (tenant.catalog.get('pricelist', pricelist, nowMs) === null) {
        const problem = `pricelist ${pricelist} does not exist`
        const message = `Pricelist ${pricelist} does not exist`
        return new Refusal({ status: 'validation_failed', message, path: '/pricelistCode', problem })
      }
      const stored = toRule(sku, rule)
      if (stored instanceof Refusal) return stored
      return tenant.catalog.plan('bundle_rule', compositeKey(sku, pricelist), stored, nowMs, nowMs, actor)
    }),
  )
}

/** Removes pricelists' own bundle rules (keys: compositeKey(sku, pricelist)); one not in force then is not_found. */
export function deleteBundleRules(
  tenant: WriteTarget,
  context: WriteContext,
  items: readonly (DeleteInput | Refusal)[],
): Promise<ItemOutcome[]> {
  return deleteKeys(tenant, context, { type: 'bundle_rule', what: () => 'Bundle rule', items })
}
