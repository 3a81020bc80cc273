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
import { amountAbsMax, bundleNestingMax, pricelistDepthMax } from './limits.js'
import { amountUnit, fromRuleResult, mulDivRound, parseAmount, scaleQuantity, type Fraction } from './money.js'
import { inheritedVatMode, pricelistActiveAt } from './pricelists.js'
import type { PriceReader } from './price-replica.js'
import { breakKindFixed, breakKindPercent, type QuantityBreak } from './prices.js'
import type { BundleStep, PriceTracer } from './explain/steps.js'
import { applyRounding, roundingTier, type CompiledProfile } from './rounding.js'
import { compileRules, RuleAllowanceExceeded, RuleCompileError, startRuleBudget, type CompiledRule } from './rules.js'
import { settingValue } from './settings.js'
import {
  lookupVatRate,
  vatColumn,
  vatMissingClass,
  vatNextChange,
  type VatColumn,
  type VatInfo,
  type VatLookup,
} from './vat-column.js'

export function vatStatus(lookup: VatLookup): VatInfo | Status {
  return lookup === vatMissingClass ? Status.noVatClass : typeof lookup === 'string' ? Status.noVatRate : lookup
}

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

export const statusReasons = [
  'ok',
  'no_price',
  'bundle_component_missing',
  'rule_error',
  'no_fx_rate',
  'no_vat_class',
  'no_vat_rate',
] as const

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
  readonly breaks: readonly PricedAmounts[]
  readonly fx: FxResolved | null
}

const compiledRules = new WeakMap<Pricelist, readonly CompiledRule[]>()
const noRules: readonly CompiledRule[] = []

function rulesOf(pricelist: Pricelist): readonly CompiledRule[] {
  if (pricelist.price_rules.length === 0) return noRules
  let rules = compiledRules.get(pricelist)
  if (rules === undefined) {
    // Written rules compiled when the pricelist was written; this compiles each version once more
    // in this thread (workers have their own cache) and then never again.
    rules = compileStored(pricelist.price_rules)
    compiledRules.set(pricelist, rules)
  }
  return rules
}

/**
 * Stored rules, compiled under today's limits. Rules written under older ones (before issue 13
 * refused `matches()` and bounded a rule's size) that these refuse are not run: the pricelist's
 * prices answer `rule_error` until its rules are written again.
 */
function compileStored(rules: Pricelist['price_rules']): readonly CompiledRule[] {
  try {
    return compileRules(rules)
  } catch (error) {
    if (!(error instanceof RuleCompileError)) throw error
    return [
      {
        filter: null,
        expression: () => {
          throw error
        },
      },
    ]
  }
}

const bundleSkuSets = new WeakMap<readonly string[], Set<string>>()

/** One priced amount: a break's or the base's (quantity 0). */
export interface PricedAmounts {
  readonly quantity: number
  readonly net: number
  readonly vat: number
  readonly gross: number
}

const noPricedBreaks: readonly PricedAmounts[] = Object.freeze([])

/**
 * Computed amounts stay inside the bound written amounts have (±amountAbsMax, scaled): there a
 * double holds every unit exactly. FX, bundle sums and rules can leave it; such an item is refused
 * (FX: no_fx_rate; a bundle sum: rule_error; a rule result: rule_error) rather than answered inexactly.
 */
const scaledAmountMax = amountAbsMax * amountUnit

export function outOfRange(scaled: number): boolean {
  return !(Math.abs(scaled) <= scaledAmountMax)
}

export class PriceContext {
  // Caches for one request, created on first use: a single read needs few of them.
  #pricelists: Map<string, PricelistInfo | null> | null = null
  #articles: Map<string, Record<string, unknown>> | null = null
  /** Bundle SKUs being resolved, outermost first: a component already on it is a cycle. */
  readonly bundleStack: string[] = []
  /** The SKUs' VAT in the context's tax area, kept across requests (./vat-column.ts). */
  #vatColumn: VatColumn | null = null
  /** SKUs without a price-book id (no price anywhere) are looked up here, for this request only. */
  #vat: Map<string, VatInfo | Status> | null = null
  #fx: Map<string, FxResolved | null> | null = null
  #precision: Map<string, number> | null = null
  readonly #bundleSkus: Set<string>
  #lastSku: string | null = null
  #lastSkuId = -1
  /** Set only while a price is explained (engine/explain/): the pipeline reports its steps to it. */
  tracer: PriceTracer | null = null

  constructor(
    readonly catalog: Catalog,
    readonly prices: PriceReader,
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
    let info = (this.#pricelists ??= new Map()).get(code)
    if (info === undefined) {
      const pricelist = this.catalog.get('pricelist', code, this.at)
      info =
        pricelist === null
          ? null
          : {
              code,
              pricelist,
              id: this.prices.pricelistId(code),
              currency: pricelist.currency_code,
              vatMode: inheritedVatMode(this.catalog, pricelist, this.at),
              rules: rulesOf(pricelist),
              parent: pricelist.parent_code,
            }
      this.#pricelists!.set(code, info)
    }
    return info
  }

  isActive(info: PricelistInfo): boolean {
    return pricelistActiveAt(info.pricelist, this.at)
  }

  /** The VAT column of the context's catalogue and tax area (current as of this context's first use). */
  vatColumn(): VatColumn {
    return (this.#vatColumn ??= vatColumn(this.catalog, this.taxArea))
  }

  /** The SKU's VAT class and rate in the context's tax area; `skuId` when the caller has it. */
  /** The SKU's id in the price book (-1: none); a read resolves and prices the same SKU, so the last is kept. */
  skuId(sku: string): number {
    if (sku !== this.#lastSku) {
      this.#lastSku = sku
      this.#lastSkuId = this.prices.skuId(sku)
    }
    return this.#lastSkuId
  }

  vat(sku: string, skuId: number = this.skuId(sku)): VatInfo | Status {
    if (skuId >= 0) return vatStatus(this.vatColumn().get(sku, skuId, this.at))
    let vat = (this.#vat ??= new Map()).get(sku)
    if (vat === undefined) {
      const mapping = this.catalog.get('article_taxclass', compositeKey(sku, this.taxArea), this.at)
      vat =
        mapping === null
          ? Status.noVatClass
          : (lookupVatRate(this.catalog, this.taxArea, mapping.vat_class_code, this.at) ?? Status.noVatRate)
      this.#vat.set(sku, vat)
    }
    return vat
  }

  /** The first instant after the context's at which the SKU's VAT mapping or its rate changes. */
  vatNextChange(sku: string): number {
    return vatNextChange(this.catalog, this.taxArea, sku, this.at)
  }

  fx(base: string, quote: string): FxResolved | null {
    const key = `${base}${quote}`
    let fx = (this.#fx ??= new Map()).get(key)
    if (fx === undefined) {
      fx = resolveFx(this.catalog, base, quote, this.at)
      this.#fx!.set(key, fx)
    }
    return fx
  }

  /** Decimals of VAT amounts in a currency (registered vat_precision, else 2). */
  vatPrecision(currency: string): number {
    let precision = (this.#precision ??= new Map()).get(currency)
    if (precision === undefined) {
      precision = this.catalog.get('currency', currency, this.at)?.vat_precision ?? 2
      this.#precision!.set(currency, precision)
    }
    return precision
  }

  hasBundleRule(sku: string): boolean {
    // Most tenants have no bundle rules: then no SKU string is hashed for the look-up (a query's
    // SKUs arrive as new strings, and each inherited price asks).
    return this.#bundleSkus.size !== 0 && this.#bundleSkus.has(sku)
  }

  /** What rule filters and expressions see as `article`, once per SKU and request. */
  article(sku: string): Record<string, unknown> {
    let facts = (this.#articles ??= new Map()).get(sku)
    if (facts === undefined) {
      const article: Article | null = this.catalog.get('article', sku, this.at)
      facts = { sku, name: article?.name ?? null, type: article?.type ?? null, metadata: article?.metadata ?? {} }
      this.#articles!.set(sku, facts)
    }
    return facts
  }
}

// ---- VAT arithmetic (exact; rate is a percentage fraction n/d) -------------------------------

/** NET mode: vat = round(net × rate) to `precision` decimals, half-up. */
/** 10^(4 - precision): scaled units per step of a VAT precision (0 to 4 decimals). */
const precisionSteps = [10_000, 1_000, 100, 10, 1]

export function vatOfNet(net: number, rate: Fraction, precision: number): number {
  const step = precisionSteps[precision] ?? 10 ** (4 - precision)
  return mulDivRound(net, rate.numerator, 100 * rate.denominator * step) * step
}

/** GROSS mode: vat = round(gross - gross / (1 + rate)) = round(gross × r / (1 + r)). */
export function vatOfGross(gross: number, rate: Fraction, precision: number): number {
  const step = precisionSteps[precision] ?? 10 ** (4 - precision)
  return mulDivRound(gross, rate.numerator, (100 * rate.denominator + rate.numerator) * step) * step
}

// ---- Base resolution -------------------------------------------------------------------------

/**
 * The base price of `sku` on `code` at the context's instant, after that pricelist's rules. The
 * nearest definition wins: the pricelist's own version; else a bundle rule, its own or an
 * ancestor's (unless a nearer ancestor prices the SKU itself); else the parent's resolved price,
 * converted to this pricelist's currency and VAT mode. `depth` counts parent steps.
 */
export function resolveBase(context: PriceContext, code: string, sku: string, depth = 0): Resolved | Status {
  assert(depth <= pricelistDepthMax, 'pricelist chains are bounded when written')
  const info = context.pricelist(code)
  if (info === null || info.vatMode === null) return Status.noPrice
  const tracer = context.tracer
  if (tracer !== null) tracer.walk(code)
  let base: Resolved | Status
  const position = ownPosition(context, info, sku)
  if (position >= 0) {
    const content = context.prices.hasExtras(position) ? context.prices.contentAt(position)! : null
    if (tracer !== null) {
      const start = context.prices.fromAt(position)
      tracer.step({ step: 'version', pricelist: code, sku, start, sales: context.prices.salesAt(position) })
    }
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
  } else {
    const bundle = context.hasBundleRule(sku) ? bundleRuleFor(context, info, sku) : null
    if (bundle !== null) {
      base = resolveBundle(context, info, sku, bundle)
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

/** Pool position of the pricelist's own live version of `sku` in force, or -1. */
function ownPosition(context: PriceContext, info: PricelistInfo, sku: string): number {
  const skuId = context.skuId(sku)
  return skuId < 0 || info.id < 0 ? -1 : context.prices.livePositionAt(info.id, skuId, context.at)
}

interface FoundRule {
  readonly rule: BundleRule
  /** The pricelist that holds the rule (this one or an ancestor). */
  readonly source: PricelistInfo
}

/**
 * The bundle rule for `sku` on this pricelist or, without one, the nearest ancestor's. Null when
 * there is none, or when an ancestor below that rule has its own price for the SKU: that price is
 * the nearer definition and is inherited instead.
 */
function bundleRuleFor(context: PriceContext, info: PricelistInfo, sku: string): FoundRule | null {
  let current: PricelistInfo | null = info
  for (let step = 0; step <= pricelistDepthMax && current !== null; step++) {
    if (step > 0 && ownPosition(context, current, sku) >= 0) return null
    const rule = context.catalog.get('bundle_rule', compositeKey(sku, current.code), context.at)
    if (rule !== null) return { rule, source: current }
    current = current.parent === null ? null : context.pricelist(current.parent)
  }
  return null
}

/**
 * A bundle on `info`: SUM_OF_PARTS of the component prices on this pricelist (after its rules,
 * in its currency and VAT mode) less the discount, or the FIXED price. Amounts of a rule inherited
 * from a pricelist in another currency or VAT mode (the fixed price, an absolute discount) are
 * converted like an inherited price. A component without a price, or a cycle of bundles, makes the
 * bundle unavailable.
 */
function resolveBundle(context: PriceContext, info: PricelistInfo, sku: string, found: FoundRule): Resolved | Status {
  const tracer = context.tracer
  if (tracer === null) return bundleBase(context, info, sku, found, null)
  // Components resolve with steps off: their amounts are the bundle step's.
  const components: BundleStep['components'][number][] = []
  let base: Resolved | Status
  tracer.muted++
  try {
    base = bundleBase(context, info, sku, found, components)
  } finally {
    tracer.muted--
  }
  const rule = found.rule
  tracer.step({
    step: 'bundle',
    sku,
    pricelist: info.code,
    rulePricelist: found.source.code,
    method: rule.method,
    components,
    discountType: rule.discount_type,
    discountValue: rule.discount_value,
    sales: typeof base === 'number' ? null : base.sales,
  })
  return base
}

/** resolveBundle's arithmetic; `components`, when given, receives each component's resolved sales. */
function bundleBase(
  context: PriceContext,
  info: PricelistInfo,
  sku: string,
  found: FoundRule,
  components: BundleStep['components'][number][] | null,
): Resolved | Status {
  const { rule, source } = found
  const stack = context.bundleStack
  if (stack.length >= bundleNestingMax || stack.includes(sku)) return Status.bundleComponentMissing
  const converter = source === info ? null : converterFor(context, source.currency, source.vatMode!, info, sku)
  if (typeof converter === 'number') return converter
  let sales: number
  if (rule.method === 'FIXED') {
    sales = convertWith(converter, parseAmount(rule.fixed_price) ?? 0)
    if (outOfRange(sales)) return Status.noFxRate
  } else {
    let sum = 0
    stack.push(sku)
    try {
      for (const component of rule.components) {
        const part = resolveBase(context, info.code, component.sku)
        if (components !== null) {
          const sales = typeof part === 'number' ? null : part.sales
          components.push({ sku: component.sku, quantity: component.quantity, sales })
        }
        if (typeof part === 'number') return Status.bundleComponentMissing
        sum += mulDivRound(part.sales, scaleQuantity(component.quantity), amountUnit)
        if (outOfRange(sum)) return Status.ruleError
      }
    } finally {
      stack.pop()
    }
    const discount = rule.discount_value === null ? 0 : (parseAmount(rule.discount_value) ?? 0)
    if (rule.discount_type === 'PERCENTAGE') sales = sum - mulDivRound(sum, discount, 100 * amountUnit)
    else if (rule.discount_type === 'ABSOLUTE') sales = sum - convertWith(converter, discount)
    else sales = sum
    if (outOfRange(sales)) return Status.ruleError
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

/** How amounts move from one currency and VAT mode into a pricelist's. */
interface Converter {
  readonly fx: FxResolved | null
  /** The SKU's VAT in the read's tax area when the modes differ, else null. */
  readonly vat: VatInfo | null
  readonly toGross: boolean
  readonly precision: number
}

/** Null when nothing needs converting; a status when FX or the SKU's VAT is missing. */
function converterFor(
  context: PriceContext,
  currency: string,
  mode: VatMode,
  to: PricelistInfo,
  sku: string,
): Converter | null | Status {
  let fx: FxResolved | null = null
  if (currency !== to.currency) {
    fx = context.fx(currency, to.currency)
    if (fx === null) return Status.noFxRate
  }
  let vat: VatInfo | null = null
  if (mode !== to.vatMode) {
    const found = context.vat(sku)
    if (typeof found === 'number') return found
    vat = found
  }
  if (fx === null && vat === null) return null
  return { fx, vat, toGross: to.vatMode === 'GROSS', precision: context.vatPrecision(to.currency) }
}

/** FX first, then the VAT added (to GROSS) or taken out (to NET) with the SKU's rate. */
function convertWith(converter: Converter | null, amount: number): number {
  if (converter === null) return amount
  const value = converter.fx === null ? amount : convertAmount(amount, converter.fx)
  if (converter.vat === null) return value
  return converter.toGross
    ? value + vatOfNet(value, converter.vat.rate, converter.precision)
    : value - vatOfGross(value, converter.vat.rate, converter.precision)
}

/**
 * A parent's resolved price in the child's currency (FX as of the read) and VAT mode (the SKU's
 * rate in the read's tax area). Fixed breaks convert like the base; percent breaks follow the base.
 * Fields (cost, list, ...) convert by FX only: they carry no statement about VAT.
 */
function convertInherited(
  context: PriceContext,
  parent: Resolved,
  child: PricelistInfo,
  sku: string,
): Resolved | Status {
  const converter = converterFor(context, parent.currency, parent.vatMode, child, sku)
  if (typeof converter === 'number') return converter
  if (converter === null) return parent.inherited ? parent : { ...parent, inherited: true }
  const sales = convertWith(converter, parent.sales)
  if (context.tracer !== null) traceConversion(context.tracer, parent, child, converter, sales)
  if (outOfRange(sales)) return Status.noFxRate
  let breaks = parent.breaks
  if (breaks !== null) {
    const converted: QuantityBreak[] = []
    for (const entry of breaks) {
      if (entry.kind !== breakKindFixed) {
        converted.push(entry)
        continue
      }
      const value = convertWith(converter, entry.value)
      if (outOfRange(value)) return Status.noFxRate
      converted.push({ ...entry, value })
    }
    breaks = converted
  }
  let fields = parent.fields
  if (fields !== null && converter.fx !== null) {
    const converted: Record<string, number> = {}
    for (const name in fields) {
      const value = convertAmount(fields[name]!, converter.fx)
      if (outOfRange(value)) return Status.noFxRate
      converted[name] = value
    }
    fields = converted
  }
  return {
    ...parent,
    sales,
    fields,
    breaks,
    currency: child.currency,
    vatMode: child.vatMode!,
    inherited: true,
  }
}

function traceConversion(
  tracer: PriceTracer,
  parent: Resolved,
  child: PricelistInfo,
  converter: Converter,
  sales: number,
): void {
  tracer.step({
    step: 'conversion',
    from: parent.source,
    to: child.code,
    fromCurrency: parent.currency,
    toCurrency: child.currency,
    fromMode: parent.vatMode,
    toMode: child.vatMode!,
    fx: converter.fx,
    vatRateText: converter.vat === null ? null : converter.vat.rateText,
    input: parent.sales,
    output: sales,
  })
}

/**
 * The first rule whose filter matches the article sets the sales amount; none leaves it. The rules
 * share one budget of CEL steps (engine/limits.ts): past it, `rule_error`.
 */
function applyRules(context: PriceContext, info: PricelistInfo, sku: string, base: Resolved): Resolved | Status {
  const article = context.article(sku)
  const tracer = context.tracer
  startRuleBudget()
  const rules = info.rules
  for (let index = 0; index < rules.length; index++) {
    const rule = rules[index]!
    let matched = false
    let output: number | null = null
    try {
      if (rule.filter !== null && rule.filter({ article }) !== true) continue
      matched = true
      if (rule.expression === null) {
        output = base.sales
        return base
      }
      const fields: Record<string, number> = {}
      if (base.fields !== null) for (const name in base.fields) fields[name] = base.fields[name]! / amountUnit
      const result = rule.expression({ sales: base.sales / amountUnit, fields, article })
      const value = typeof result === 'bigint' ? Number(result) : result
      output = typeof value === 'number' ? fromRuleResult(value) : null
      if (output === null) return Status.ruleError
      return { ...base, sales: output }
    } catch (error) {
      // The thread's allowance is not the rule's failure: the caller moves the read elsewhere.
      if (error instanceof RuleAllowanceExceeded) throw error
      // A filter that fails to evaluate did not match; an expression that fails did.
      output = null
      return Status.ruleError
    } finally {
      // Each rule tried, when explaining: whether its filter matched, its input and its output.
      if (tracer !== null) traceRule(tracer, info, index, base.sales, matched, output)
    }
  }
  return base
}

function traceRule(
  tracer: PriceTracer,
  info: PricelistInfo,
  index: number,
  input: number,
  filterMatched: boolean,
  output: number | null,
): void {
  const code = info.pricelist.price_rules[index]?.code ?? null
  tracer.step({ step: 'rule', pricelist: info.code, index, code, input, filterMatched, output })
}

// ---- The answer: FX -> VAT -> rounding --------------------------------------------------------

export interface AnswerOptions {
  readonly currency: string
  readonly rounding: CompiledProfile | null
  /** Quantity that selects the applicable break (default 1). */
  readonly quantity: number
}

/**
 * Prices a resolved base in the requested currency and the context's tax area. The base and every
 * break go through FX, VAT and rounding; `options.quantity` selects the break whose
 * quantity_break is the largest not above it (none: the base).
 */
export function priceItem(
  context: PriceContext,
  resolved: Resolved,
  sku: string,
  options: AnswerOptions,
  pricelist = '',
  /** The SKU's VAT and the currency's VAT precision, when the caller has them. */
  known: VatInfo | null = null,
  knownPrecision = -1,
): PricedItem | Status {
  let fx: FxResolved | null = null
  if (resolved.currency !== options.currency) {
    fx = context.fx(resolved.currency, options.currency)
    if (fx === null) return Status.noFxRate
  }
  const vat = known ?? context.vat(sku)
  if (typeof vat === 'number') return vat
  const precision = knownPrecision >= 0 ? knownPrecision : context.vatPrecision(options.currency)
  const mode = resolved.vatMode
  const sales = fx === null ? resolved.sales : convertAmount(resolved.sales, fx)
  if (outOfRange(sales)) return Status.noFxRate
  let selected = pricedAmounts(0, sales, mode, vat.rate, precision, options.rounding)
  /** The selected amount before rounding and VAT (the explanation reports it). */
  let selectedAmount = sales
  let selectedQuantity = -1
  let breaks = noPricedBreaks
  if (resolved.breaks !== null) {
    // Scaled like break quantities, half-up from the quantity's decimal (0.57 x 10^4 is 5699.999...
    // in doubles, and a tie like 1.49995 must go up, whatever its binary neighbour).
    const quantity = scaleQuantity(options.quantity)
    const priced: PricedAmounts[] = []
    for (const entry of resolved.breaks) {
      let preVat =
        entry.kind === breakKindPercent ? mulDivRound(resolved.sales, entry.value, 100 * amountUnit) : entry.value
      if (fx !== null) preVat = convertAmount(preVat, fx)
      if (outOfRange(preVat)) return Status.noFxRate
      const amounts = pricedAmounts(entry.quantity, preVat, mode, vat.rate, precision, options.rounding)
      priced.push(amounts)
      if (entry.quantity <= quantity && entry.quantity > selectedQuantity) {
        selected = amounts
        selectedQuantity = entry.quantity
        selectedAmount = preVat
      }
    }
    breaks = priced
  }
  if (context.tracer !== null) {
    const selection = { fx, sales, quantity: options.quantity, selectedQuantity, selectedAmount, selected }
    traceAnswer(context.tracer, resolved, vat, precision, options.rounding, selection)
  }
  return {
    sku,
    pricelist,
    currency: options.currency,
    vatMode: mode,
    net: selected.net,
    vat: selected.vat,
    gross: selected.gross,
    vatRateText: vat.rateText,
    vatClass: vat.classCode,
    inherited: resolved.inherited,
    breaks,
    fx,
  }
}

/** priceItem's steps: FX, the quantity break, rounding, VAT and the final amounts. */
function traceAnswer(
  tracer: PriceTracer,
  resolved: Resolved,
  vat: VatInfo,
  precision: number,
  rounding: CompiledProfile | null,
  selection: {
    fx: FxResolved | null
    sales: number
    quantity: number
    selectedQuantity: number
    selectedAmount: number
    selected: PricedAmounts
  },
): void {
  const { fx, selected, selectedAmount } = selection
  if (fx !== null) tracer.step({ step: 'fx', fx, input: resolved.sales, output: selection.sales })
  if (resolved.breaks !== null) {
    const breakQuantity = selection.selectedQuantity < 0 ? null : selection.selectedQuantity
    const quantity = scaleQuantity(selection.quantity)
    tracer.step({ step: 'quantity_break', quantity, breakQuantity, amount: selectedAmount })
  }
  if (rounding !== null) {
    const output = applyRounding(rounding, selectedAmount)
    tracer.step({ step: 'rounding', tier: roundingTier(rounding, selectedAmount), input: selectedAmount, output })
  }
  tracer.step({ step: 'vat', vatClass: vat.classCode, rateText: vat.rateText, mode: resolved.vatMode, precision })
  tracer.step({ step: 'amounts', net: selected.net, vat: selected.vat, gross: selected.gross })
}

/** finalAmounts with the break quantity, in one object. */
function pricedAmounts(
  quantity: number,
  amount: number,
  mode: VatMode,
  rate: Fraction,
  precision: number,
  rounding: CompiledProfile | null,
): PricedAmounts {
  const sales = rounding === null ? amount : applyRounding(rounding, amount)
  if (mode === 'NET') {
    const vat = vatOfNet(sales, rate, precision)
    return { quantity, net: sales, vat, gross: sales + vat }
  }
  const vat = vatOfGross(sales, rate, precision)
  return { quantity, net: sales - vat, vat, gross: sales }
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
  return pricedAmounts(0, amount, mode, rate, precision, rounding)
}

/** Reads `default.tax.area` for reads that may leave the tax area out. */
export function defaultTaxArea(catalog: Catalog, at: number): string {
  return settingValue(catalog, 'default.tax.area', at)
}
