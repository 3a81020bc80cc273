/**
 * Why an item of a price diff changed: the inputs in force at the two instants are compared along
 * what could have priced it (the winning pricelists and their ancestors, the SKU's VAT, the FX
 * rates, the rounding profile, bundle rules), so that a reader learns the reason without replaying
 * the pipeline. Run only for the items that differ, so its cost does not matter to the common case.
 * @module
 */
import { compositeKey, type Pricelist } from '../catalog.js'
import type { FxResolved } from '../fx.js'
import { pricelistDepthMax } from '../limits.js'
import type { PriceContext, PricedItem, PricelistInfo } from '../pipeline.js'
import type { ResolvedProfile } from '../rounding.js'

/**
 * The closed set of causes, in the order an answer lists them (docs/api.md, "Diff"). `rounding`
 * and `other` complete the set: a rounding profile's new version changes amounts too, and `other`
 * names a change the comparison does not classify (a currency's VAT precision, the article facts a
 * rule reads), so that `causes` is never empty.
 */
export const diffCauses = [
  'own_version',
  'parent_version',
  'rule',
  'vat_rate',
  'vat_reclassification',
  'fx_rate',
  'list_window',
  'bundle',
  'rounding',
  'other',
] as const

export type DiffCause = (typeof diffCauses)[number]

/** What the diff knows of one instant: its context, answers and selection. */
export interface DiffMoment {
  readonly context: PriceContext
  /** Per SKU: the priced item, or the reason it is unavailable. */
  readonly answers: ReadonlyMap<string, PricedItem | string>
  readonly pricelists: ReadonlySet<string>
  readonly rounding: ResolvedProfile | null
  readonly currency: string
}

/**
 * The causes of a changed item, sorted in `diffCauses` order, never empty. `before` and `after`:
 * the winning pricelist at each instant, or null when the item was unavailable then.
 */
export function causesOf(
  from: DiffMoment,
  to: DiffMoment,
  sku: string,
  before: string | null,
  after: string | null,
): DiffCause[] {
  const found = new Set<DiffCause>()
  if (before !== null && after !== null && before !== after) found.add('list_window')
  // A winner that the other instant did not select: its window opened or closed (or the filter's match did).
  if (before !== null && !to.pricelists.has(before)) found.add('list_window')
  if (after !== null && !from.pricelists.has(after)) found.add('list_window')
  // The winners' chains only: an item unavailable at one instant lost (or gained) its price there,
  // and the other lists did not price it at either instant (else they would have answered).
  if (before !== null) chainCauses(from, to, sku, before, found)
  if (after !== null && after !== before) chainCauses(from, to, sku, after, found)
  vatCauses(from, to, sku, found)
  if (from.rounding?.code !== to.rounding?.code || from.rounding?.compiled !== to.rounding?.compiled)
    found.add('rounding')
  if (found.size === 0) found.add('other')
  return diffCauses.filter((cause) => found.has(cause))
}

/**
 * Walks the pricelist and its ancestors at both instants, side by side: own or inherited price
 * versions, pricelist versions (rules, parent, currency, mode), bundle rules, FX along the chain.
 */
function chainCauses(from: DiffMoment, to: DiffMoment, sku: string, code: string, found: Set<DiffCause>): void {
  const currencies = new Set<string>([from.currency])
  let before: string | null = code
  let after: string | null = code
  for (let depth = 0; depth <= pricelistDepthMax && (before !== null || after !== null); depth++) {
    const left: PricelistInfo | null = before === null ? null : from.context.pricelist(before)
    const right: PricelistInfo | null = after === null ? null : to.context.pricelist(after)
    if (depth > 0 && before !== after) found.add('parent_version')
    if (left !== null) currencies.add(left.currency)
    if (right !== null) currencies.add(right.currency)
    if (left !== null && right !== null && before === after) {
      if (pricelistChanged(left.pricelist, right.pricelist)) found.add('rule')
    } else if (left === null || right === null) {
      // A pricelist (or ancestor) live at one instant only.
      found.add(depth === 0 ? 'list_window' : 'parent_version')
    }
    if (positionOf(from.context, before, sku) !== positionOf(to.context, after, sku))
      found.add(depth === 0 ? 'own_version' : 'parent_version')
    if (bundleChanged(from, to, sku, before, after, code)) found.add('bundle')
    before = left?.parent ?? null
    after = right?.parent ?? null
  }
  if (currencies.size > 1 && fxChanged(from, to, currencies)) found.add('fx_rate')
}

/** A new pricelist version that prices differently: rules, parent aside (walked), currency or mode. */
function pricelistChanged(left: Pricelist, right: Pricelist): boolean {
  if (left === right) return false
  return (
    left.currency_code !== right.currency_code ||
    left.vat_mode !== right.vat_mode ||
    JSON.stringify(left.price_rules) !== JSON.stringify(right.price_rules)
  )
}

/** The price-book position of the pricelist's own live version in force (-1: none). */
function positionOf(context: PriceContext, code: string | null, sku: string): number {
  if (code === null) return -1
  const info = context.pricelist(code)
  const skuId = context.prices.skuId(sku)
  if (info === null || info.id < 0 || skuId < 0) return -1
  return context.prices.livePositionAt(info.id, skuId, context.at)
}

/**
 * The SKU's bundle rule on a pricelist of the chain changed, or (a rule at both instants) the price
 * of one of its components on the pricelist the bundle is priced on (`root`), own or inherited.
 */
function bundleChanged(
  from: DiffMoment,
  to: DiffMoment,
  sku: string,
  before: string | null,
  after: string | null,
  root: string,
): boolean {
  // Most tenants have no bundle rules: then no key is built per item.
  if (!from.context.hasBundleRule(sku) && !to.context.hasBundleRule(sku)) return false
  const left = ruleAt(from, sku, before)
  const right = ruleAt(to, sku, after)
  if (left === null && right === null) return false
  if (left === null || right === null || JSON.stringify(left) !== JSON.stringify(right)) return true
  return left.components.some((component) => chainPricesDiffer(from, to, component.sku, root))
}

function ruleAt(moment: DiffMoment, sku: string, code: string | null) {
  if (code === null) return null
  return moment.context.catalog.get('bundle_rule', compositeKey(sku, code), moment.context.at)
}

/** Whether the SKU's own price version on the pricelist or an ancestor differs between the instants. */
function chainPricesDiffer(from: DiffMoment, to: DiffMoment, sku: string, code: string): boolean {
  let before: string | null = code
  let after: string | null = code
  for (let depth = 0; depth <= pricelistDepthMax && (before !== null || after !== null); depth++) {
    if (before !== after || positionOf(from.context, before, sku) !== positionOf(to.context, after, sku)) return true
    before = before === null ? null : (from.context.pricelist(before)?.parent ?? null)
    after = after === null ? null : (to.context.pricelist(after)?.parent ?? null)
  }
  return false
}

/** Any conversion between the currencies involved resolves to another rate or publication. */
function fxChanged(from: DiffMoment, to: DiffMoment, currencies: ReadonlySet<string>): boolean {
  for (const base of currencies) {
    for (const quote of currencies) {
      if (base !== quote && !sameFx(from.context.fx(base, quote), to.context.fx(base, quote))) return true
    }
  }
  return false
}

function sameFx(left: FxResolved | null, right: FxResolved | null): boolean {
  if (left === null || right === null) return left === right
  return left.asOf === right.asOf && left.numerator === right.numerator && left.denominator === right.denominator
}

/** The SKU's VAT class mapping in the area, else its class's rate. */
function vatCauses(from: DiffMoment, to: DiffMoment, sku: string, found: Set<DiffCause>): void {
  const key = compositeKey(sku, from.context.taxArea)
  const left = from.context.catalog.get('article_taxclass', key, from.context.at)
  const right = to.context.catalog.get('article_taxclass', key, to.context.at)
  if (left?.vat_class_code !== right?.vat_class_code) {
    found.add('vat_reclassification')
    return
  }
  if (left === null || right === null) return
  const rateKey = compositeKey(from.context.taxArea, left.vat_class_code)
  const rateBefore = from.context.catalog.get('vat_rate', rateKey, from.context.at)
  const rateAfter = to.context.catalog.get('vat_rate', rateKey, to.context.at)
  if (rateBefore?.rate !== rateAfter?.rate) found.add('vat_rate')
}
