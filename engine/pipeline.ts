/**
 * The price pipeline: for a SKU on a pricelist at an instant, the base price (own version, bundle
 * rule, or the parent's resolved price converted to this pricelist's currency and VAT mode), then
 * the pricelist's rules; then, for an answer in a currency and tax area: FX -> VAT -> rounding.
 * Per-item outcomes are a status ordered by how far the item got, never exceptions.
 *
 * A `PriceContext` is built once per request (instant, tax area) and caches per-pricelist,
 * per-SKU and per-currency facts, so that the per-(SKU, pricelist) work is a few lookups.
 * @module
 */
import { assert } from './assert.js'
import { compositeKey, type Article, type BundleRule, type Catalog, type Pricelist, type VatMode } from './catalog.js'
import { convertAmount, resolveFx, type FxResolved } from './fx.js'
import { pricelistDepthMax } from './limits.js'
import { amountUnit, fromRuleResult, mulDivRound, parseAmount, parseFraction, type Fraction } from './money.js'
import { inheritedVatMode, pricelistActiveAt } from './pricelists.js'
import { breakKindFixed, breakKindPercent, type PriceBook, type QuantityBreak } from './prices.js'
import { applyRounding, type CompiledProfile } from './rounding.js'
import { compileRules, type CompiledRule } from './rules.js'
import { settingValue } from './settings.js'

/** Per-item outcome; a larger value got further through the pipeline (used to pick the reason). */
export const enum Status {
  ok = 0,
  noPrice = 1,
  bundleComponentMissing = 2,
  ruleError = 3,
  noFxRate = 4,
  noVatClass = 5,
  noVatRate = 6,
}

export const statusReasons = ['ok', 'no_price', 'bundle_component_missing', 'rule_error', 'no_fx_rate', 'no_vat_class', 'no_vat_rate'] as const

/** A resolved base price in its pricelist's currency and VAT mode, after that pricelist's rules. */
export interface Resolved {
  readonly sales: number
  readonly fields: Readonly<Record<string, number>> | null
  /** Breaks in the pricelist's currency and mode (fixed) or as a percent of the base. */
  readonly breaks: readonly QuantityBreak[] | null
  readonly currency: string
  readonly vatMode: VatMode
  readonly inherited: boolean
  /** The pricelist whose own version (or bundle rule) gave the base. */
  readonly source: string
  /** Start of the version in force (own or inherited); null for a bundle. */
  readonly startDate: number | null
}

export interface PricelistInfo {
  readonly code: string
  readonly pricelist: Pricelist
  readonly id: number
  readonly currency: string
  readonly vatMode: VatMode | null
  readonly rules: readonly CompiledRule[]
  readonly parent: string | null
}

interface VatInfo {
  readonly classCode: string
  readonly rateText: string
  readonly rate: Fraction
}

/** One priced answer (amounts scaled). */
export interface PricedItem {
  readonly sku: string
  readonly pricelist: string
  readonly currency: string
  readonly vatMode: VatMode
  readonly net: number
  readonly vat: number
  readonly gross: number
  readonly vatRateText: string
  readonly vatClass: string
  readonly inherited: boolean
  readonly breaks: readonly { quantity: number; net: number; vat: number; gross: number }[]
  readonly fx: FxResolved | null
  readonly resolved: Resolved
}

const compiledRules = new WeakMap<Pricelist, readonly CompiledRule[]>()
const noRules: readonly CompiledRule[] = []

function rulesOf(pricelist: Pricelist): readonly CompiledRule[] {
  if (pricelist.price_rules.length === 0) return noRules
  let rules = compiledRules.get(pricelist)
  if (rules === undefined) {
    // Written rules compiled when the pricelist was written; this compiles each version once more
    // in this thread (workers have their own cache) and then never again.
    rules = compileRules(pricelist.price_rules)
    compiledRules.set(pricelist, rules)
  }
  return rules
}

const bundleSkuSets = new WeakMap<readonly string[], Set<string>>()

export class PriceContext {
  readonly #pricelists = new Map<string, PricelistInfo | null>()
  readonly #vat = new Map<string, VatInfo | Status>()
  readonly #vatRates = new Map<string, VatInfo | null>()
  readonly #fx = new Map<string, FxResolved | null>()
  readonly #precision = new Map<string, number>()
  readonly #bundleSkus: Set<string>

  constructor(
    readonly catalog: Catalog,
    readonly prices: PriceBook,
    readonly at: number,
    /** Tax area for VAT and for VAT-mode conversion of inherited prices. */
    readonly taxArea: string,
  ) {
    const bundleKeys = catalog.keys('bundle_rule')
    let skus = bundleSkuSets.get(bundleKeys)
    if (skus === undefined) {
      skus = new Set(bundleKeys.map((key) => key.slice(0, key.indexOf('\u0001'))))
      bundleSkuSets.set(bundleKeys, skus)
    }
    this.#bundleSkus = skus
  }

  /** The pricelist live at the context's instant (its activity window is the caller's concern). */
  pricelist(code: string): PricelistInfo | null {
    let info = this.#pricelists.get(code)
    if (info === undefined) {
      const pricelist = this.catalog.get('pricelist', code, this.at)
      info = pricelist === null ? null : {
        code,
        pricelist,
        id: this.prices.pricelistId(code),
        currency: pricelist.currency_code,
        vatMode: inheritedVatMode(this.catalog, pricelist, this.at),
        rules: rulesOf(pricelist),
        parent: pricelist.parent_code,
      }
      this.#pricelists.set(code, info)
    }
    return info
  }

  isActive(info: PricelistInfo): boolean {
    return pricelistActiveAt(info.pricelist, this.at)
  }

  /** The SKU's VAT class and rate in the context's tax area. */
  vat(sku: string): VatInfo | Status {
    let vat = this.#vat.get(sku)
    if (vat === undefined) {
      const mapping = this.catalog.get('article_taxclass', compositeKey(sku, this.taxArea), this.at)
      if (mapping === null) vat = Status.noVatClass
      else vat = this.#vatRate(mapping.vat_class_code) ?? Status.noVatRate
      this.#vat.set(sku, vat)
    }
    return vat
  }

  #vatRate(classCode: string): VatInfo | null {
    let info = this.#vatRates.get(classCode)
    if (info === undefined) {
      const rate = this.catalog.get('vat_rate', compositeKey(this.taxArea, classCode), this.at)
      const fraction = rate === null ? null : parseFraction(rate.rate, 4)
      info = rate === null || fraction === null ? null : { classCode, rateText: rate.rate, rate: fraction }
      this.#vatRates.set(classCode, info)
    }
    return info
  }

  fx(base: string, quote: string): FxResolved | null {
    const key = `${base}${quote}`
    let fx = this.#fx.get(key)
    if (fx === undefined) {
      fx = resolveFx(this.catalog, base, quote, this.at)
      this.#fx.set(key, fx)
    }
    return fx
  }

  /** Decimals of VAT amounts in a currency (registered vat_precision, else 2). */
  vatPrecision(currency: string): number {
    let precision = this.#precision.get(currency)
    if (precision === undefined) {
      precision = this.catalog.get('currency', currency, this.at)?.vat_precision ?? 2
      this.#precision.set(currency, precision)
    }
    return precision
  }

  hasBundleRule(sku: string): boolean {
    return this.#bundleSkus.has(sku)
  }
}

// ---- VAT arithmetic (exact; rate is a percentage fraction n/d) -------------------------------

/** NET mode: vat = round(net × rate) to `precision` decimals, half-up. */
export function vatOfNet(net: number, rate: Fraction, precision: number): number {
  const step = 10 ** (4 - precision)
  return mulDivRound(net, rate.numerator, 100 * rate.denominator * step) * step
}

/** GROSS mode: vat = round(gross - gross / (1 + rate)) = round(gross × r / (1 + r)). */
export function vatOfGross(gross: number, rate: Fraction, precision: number): number {
  const step = 10 ** (4 - precision)
  return mulDivRound(gross, rate.numerator, (100 * rate.denominator + rate.numerator) * step) * step
}

// ---- Base resolution -------------------------------------------------------------------------

/** The base price of `sku` on `code` at the context's instant, after that pricelist's rules. */
export function resolveBase(context: PriceContext, code: string, sku: string, depth = 0): Resolved | Status {
  assert(depth <= pricelistDepthMax, 'pricelist chains are bounded when written')
  const info = context.pricelist(code)
  if (info === null || info.vatMode === null) return Status.noPrice
  let base: Resolved | Status
  const bundle = context.hasBundleRule(sku) ? bundleRuleFor(context, info, sku) : null
  if (bundle !== null) {
    base = resolveBundle(context, info, sku, bundle, depth)
  } else {
    const skuId = context.prices.skuId(sku)
    const position = skuId < 0 || info.id < 0 ? -1 : context.prices.livePositionAt(info.id, skuId, context.at)
    if (position >= 0) {
      const content = context.prices.hasExtras(position) ? context.prices.contentAt(position)! : null
      base = {
        sales: context.prices.salesAt(position),
        fields: content?.fields ?? null,
        breaks: content?.breaks ?? null,
        currency: info.currency,
        vatMode: info.vatMode,
        inherited: false,
        source: code,
        startDate: context.prices.fromAt(position),
      }
    } else if (info.parent !== null) {
      const parent = resolveBase(context, info.parent, sku, depth + 1)
      base = typeof parent === 'number' ? parent : convertInherited(context, parent, info, sku)
    } else {
      base = Status.noPrice
    }
  }
  if (typeof base === 'number' || info.rules.length === 0) return base
  return applyRules(context, info, sku, base)
}

/** The bundle rule for `sku` on this pricelist or, without one, the nearest ancestor's. */
function bundleRuleFor(context: PriceContext, info: PricelistInfo, sku: string): BundleRule | null {
  let current: PricelistInfo | null = info
  for (let step = 0; step <= pricelistDepthMax && current !== null; step++) {
    const rule = context.catalog.get('bundle_rule', compositeKey(sku, current.code), context.at)
    if (rule !== null) return rule
    current = current.parent === null ? null : context.pricelist(current.parent)
  }
  return null
}

function resolveBundle(context: PriceContext, info: PricelistInfo, sku: string, rule: BundleRule, depth: number): Resolved | Status {
  let sales: number
  if (rule.method === 'FIXED') {
    sales = parseAmount(rule.fixed_price) ?? 0
  } else {
    let sum = 0
    for (const component of rule.components) {
      // A component that is itself this bundle would loop; writes refuse it, this guards reads.
      if (component.sku === sku) return Status.bundleComponentMissing
      const part = resolveBase(context, info.code, component.sku, depth + 1)
      if (typeof part === 'number') return Status.bundleComponentMissing
      sum += mulDivRound(part.sales, Math.round(component.quantity * amountUnit), amountUnit)
    }
    const discount = rule.discount_value === null ? 0 : (parseAmount(rule.discount_value) ?? 0)
    if (rule.discount_type === 'PERCENTAGE') sales = sum - mulDivRound(sum, discount, 100 * amountUnit)
    else if (rule.discount_type === 'ABSOLUTE') sales = sum - discount
    else sales = sum
  }
  return {
    sales,
    fields: null,
    breaks: null,
    currency: info.currency,
    vatMode: info.vatMode!,
    inherited: false,
    source: info.code,
    startDate: null,
  }
}

/** A parent's resolved price in the child's currency (FX) and VAT mode (the article's rate). */
function convertInherited(context: PriceContext, parent: Resolved, child: PricelistInfo, sku: string): Resolved | Status {
  let sales = parent.sales
  let breaks = parent.breaks
  if (parent.currency !== child.currency) {
    const fx = context.fx(parent.currency, child.currency)
    if (fx === null) return Status.noFxRate
    sales = convertAmount(sales, fx)
    breaks = mapFixedBreaks(breaks, (value) => convertAmount(value, fx))
  }
  const mode = child.vatMode!
  if (parent.vatMode !== mode) {
    const vat = context.vat(sku)
    if (typeof vat === 'number') return vat
    const precision = context.vatPrecision(child.currency)
    const convert = mode === 'GROSS'
      ? (net: number) => net + vatOfNet(net, vat.rate, precision)
      : (gross: number) => gross - vatOfGross(gross, vat.rate, precision)
    sales = convert(sales)
    breaks = mapFixedBreaks(breaks, convert)
  }
  return { ...parent, sales, breaks, currency: child.currency, vatMode: mode, inherited: true }
}

function mapFixedBreaks(breaks: readonly QuantityBreak[] | null, convert: (value: number) => number): readonly QuantityBreak[] | null {
  if (breaks === null) return null
  return breaks.map((entry) => (entry.kind === breakKindFixed ? { ...entry, value: convert(entry.value) } : entry))
}

function articleFacts(catalog: Catalog, sku: string, at: number): Record<string, unknown> {
  const article: Article | null = catalog.get('article', sku, at)
  return { sku, name: article?.name ?? null, type: article?.type ?? null, metadata: article?.metadata ?? {} }
}

/** The first rule whose filter matches the article sets the sales amount; none leaves it. */
function applyRules(context: PriceContext, info: PricelistInfo, sku: string, base: Resolved): Resolved | Status {
  const article = articleFacts(context.catalog, sku, context.at)
  for (const rule of info.rules) {
    try {
      if (rule.filter !== null && rule.filter({ article }) !== true) continue
      if (rule.expression === null) return base
      const fields: Record<string, number> = {}
      if (base.fields !== null) for (const name in base.fields) fields[name] = base.fields[name]! / amountUnit
      const result = rule.expression({ sales: base.sales / amountUnit, fields, article })
      const value = typeof result === 'bigint' ? Number(result) : result
      const sales = typeof value === 'number' ? fromRuleResult(value) : null
      if (sales === null) return Status.ruleError
      return { ...base, sales }
    } catch {
      return Status.ruleError
    }
  }
  return base
}

// ---- The answer: FX -> VAT -> rounding --------------------------------------------------------

export interface AnswerOptions {
  readonly currency: string
  readonly rounding: CompiledProfile | null
  /** Quantity that selects the applicable break (default 1). */
  readonly quantity: number
}

/** Prices a resolved base in the requested currency and the context's tax area. */
export function priceItem(context: PriceContext, resolved: Resolved, sku: string, options: AnswerOptions): PricedItem | Status {
  let fx: FxResolved | null = null
  if (resolved.currency !== options.currency) {
    fx = context.fx(resolved.currency, options.currency)
    if (fx === null) return Status.noFxRate
  }
  const vat = context.vat(sku)
  if (typeof vat === 'number') return vat
  const precision = context.vatPrecision(options.currency)
  const amounts = (preVat: number) => finalAmounts(fx === null ? preVat : convertAmount(preVat, fx), resolved.vatMode, vat.rate, precision, options.rounding)
  const base = amounts(resolved.sales)
  const breaks: { quantity: number; net: number; vat: number; gross: number }[] = []
  let selected = base
  let selectedQuantity = -1
  if (resolved.breaks !== null) {
    for (const entry of resolved.breaks) {
      const preVat = entry.kind === breakKindPercent ? mulDivRound(resolved.sales, entry.value, 100 * amountUnit) : entry.value
      const priced = amounts(preVat)
      breaks.push({ quantity: entry.quantity, ...priced })
      if (entry.quantity <= options.quantity * amountUnit && entry.quantity > selectedQuantity) {
        selected = priced
        selectedQuantity = entry.quantity
      }
    }
  }
  return {
    sku,
    pricelist: '',
    currency: options.currency,
    vatMode: resolved.vatMode,
    net: selected.net,
    vat: selected.vat,
    gross: selected.gross,
    vatRateText: vat.rateText,
    vatClass: vat.classCode,
    inherited: resolved.inherited,
    breaks,
    fx,
    resolved,
  }
}

/**
 * VAT on a pre-VAT amount in the pricelist's mode, then the rounding profile on the final sales
 * price (gross on GROSS pricelists, net on NET ones), the other amounts recomputed from it.
 */
export function finalAmounts(
  amount: number,
  mode: VatMode,
  rate: Fraction,
  precision: number,
  rounding: CompiledProfile | null,
): { net: number; vat: number; gross: number } {
  const sales = rounding === null ? amount : applyRounding(rounding, amount)
  if (mode === 'NET') {
    const vat = vatOfNet(sales, rate, precision)
    return { net: sales, vat, gross: sales + vat }
  }
  const vat = vatOfGross(sales, rate, precision)
  return { net: sales - vat, vat, gross: sales }
}

/** Reads `default.tax.area` for reads that may leave the tax area out. */
export function defaultTaxArea(catalog: Catalog, at: number): string {
  return settingValue(catalog, 'default.tax.area', at)
}
