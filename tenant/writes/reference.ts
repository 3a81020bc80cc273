/**
 * Reference data writes as use cases (./core.ts): currencies, tax areas and VAT classes are versioned
 * at write time; VAT rates and article-to-VAT-class mappings take a start date, so a future one
 * schedules a rate change or a reclassification. Rates and mappings must name a tax area and a VAT
 * class that exist (now, and still when the write takes effect); the article need not (mappings are
 * often loaded before the articles). Every write is deduplicated by content. No quota applies.
 * @module
 */
import { compositeKey, type Change, type Currency, type TaxArea, type VatClass } from '../../engine/catalog.js'
import { isIso4217 } from '../../engine/currencies.js'
import { formatInstant, parseInstant } from '../../engine/time.js'
import { unlimitedWriter } from './catalog.js'
import {
  applyBatch,
  invalid,
  Refusal,
  writeInstant,
  type EntityWriter,
  type ItemOutcome,
  type WriteContext,
  type WriteTarget,
} from './core.js'

export interface CurrencyInput {
  readonly code: string
  readonly is_active?: boolean
  readonly vat_precision?: number
}

export interface TaxAreaInput {
  readonly code: string
  readonly name?: string | null
  readonly is_active?: boolean
  readonly valid_from?: string | null
  readonly valid_to?: string | null
}

export interface VatClassInput {
  readonly code: string
  readonly name?: string | null
  readonly description?: string | null
}

export interface VatRateInput {
  readonly tax_area_code: string
  readonly vat_class_code: string
  /** A percentage from 0 to 100 (25 means 25%), at most 4 decimals: a number or its text. */
  readonly rate: number | string
  readonly start_date?: string
}

export interface MappingInput {
  readonly sku_code: string
  readonly tax_area_code: string
  readonly vat_class_code: string
  readonly start_date?: string
}

type Items<Input> = readonly (Input | Refusal)[]

const rateDecimalsMax = 4
const rateMax = 100
const ratePattern = /^(\d+)(?:\.(\d+))?$/

/**
 * A VAT rate as its canonical decimal string ("25", "12.5"), or null when it is not a percentage
 * from 0 to 100 with at most 4 decimals. Numbers go through their shortest round-trip text, so an
 * exponent form (1e-7) is refused like any other text with too many decimals.
 */
export function canonicalRate(input: number | string): string | null {
  const text = typeof input === 'number' ? (Number.isFinite(input) ? String(input) : '') : input
  const match = ratePattern.exec(text)
  if (match === null) return null
  const whole = match[1]!.replace(/^0+(?=\d)/, '')
  const fraction = (match[2] ?? '').replace(/0+$/, '')
  if (fraction.length > rateDecimalsMax) return null
  const canonical = fraction === '' ? whole : `${whole}.${fraction}`
  return Number(canonical) > rateMax ? null : canonical
}

/** A currency code outside ISO 4217 (the edge asks first: this refusal answers before body checks). */
export function unknownCurrency(code: string): Refusal | null {
  if (isIso4217(code)) return null
  return new Refusal({ status: 'currency_unknown', message: `Currency ${code} is not an ISO 4217 code` })
}

/** Registers or changes currencies (is_active default true, vat_precision default 2). */
export function writeCurrencies(
  tenant: WriteTarget,
  context: WriteContext,
  items: Items<CurrencyInput>,
): Promise<ItemOutcome[]> {
  return applyBatch(tenant, items, currencyWriter(tenant, context))
}

/** How to write each item of `writeCurrencies` (also for `applyItems`: the demo seed). */
export function currencyWriter(tenant: WriteTarget, context: WriteContext): EntityWriter<CurrencyInput, Change> {
  const { nowMs, actor } = context
  return unlimitedWriter<CurrencyInput>(tenant, (input) => {
    const value: Currency = { is_active: input.is_active ?? true, vat_precision: input.vat_precision ?? 2 }
    return unknownCurrency(input.code) ?? tenant.catalog.plan('currency', input.code, value, nowMs, nowMs, actor)
  })
}

function optionalInstant(text: string | undefined | null): number | null {
  return text === undefined || text === null ? null : parseInstant(text)
}

/** Creates or replaces tax areas; a validity window must end after it starts. */
export function writeTaxAreas(
  tenant: WriteTarget,
  context: WriteContext,
  items: Items<TaxAreaInput>,
): Promise<ItemOutcome[]> {
  return applyBatch(tenant, items, taxAreaWriter(tenant, context))
}

/** How to write each item of `writeTaxAreas` (also for `applyItems`: the demo seed). */
export function taxAreaWriter(tenant: WriteTarget, context: WriteContext): EntityWriter<TaxAreaInput, Change> {
  const { nowMs, actor } = context
  return unlimitedWriter<TaxAreaInput>(tenant, (input) => {
    const area: TaxArea = {
      name: input.name ?? null,
      is_active: input.is_active ?? true,
      valid_from: optionalInstant(input.valid_from),
      valid_to: optionalInstant(input.valid_to),
    }
    if (area.valid_from !== null && area.valid_to !== null && area.valid_to <= area.valid_from) {
      return invalid('/valid_to', 'must be after valid_from')
    }
    return tenant.catalog.plan('tax_area', input.code, area, nowMs, nowMs, actor)
  })
}

/** Creates or replaces VAT classes. */
export function writeVatClasses(
  tenant: WriteTarget,
  context: WriteContext,
  items: Items<VatClassInput>,
): Promise<ItemOutcome[]> {
  return applyBatch(tenant, items, vatClassWriter(tenant, context))
}

/** How to write each item of `writeVatClasses` (also for `applyItems`: the demo seed). */
export function vatClassWriter(tenant: WriteTarget, context: WriteContext): EntityWriter<VatClassInput, Change> {
  const { nowMs, actor } = context
  return unlimitedWriter<VatClassInput>(tenant, (input) => {
    const value: VatClass = { name: input.name ?? null, description: input.description ?? null }
    return tenant.catalog.plan('vat_class', input.code, value, nowMs, nowMs, actor)
  })
}

const referenceNames = { tax_area: 'Tax area', vat_class: 'VAT class' } as const

/**
 * Rates and mappings need their tax area and VAT class live now and still live when the write takes
 * effect (a deletion scheduled before a future start refuses it): a refusal on the field.
 */
function referenceRefusal(
  tenant: WriteTarget,
  input: { readonly tax_area_code: string; readonly vat_class_code: string },
  instants: { nowMs: number; from: number },
): Refusal | null {
  for (const [type, path] of [
    ['tax_area', '/tax_area_code'],
    ['vat_class', '/vat_class_code'],
  ] as const) {
    const code = type === 'tax_area' ? input.tax_area_code : input.vat_class_code
    const name = referenceNames[type]
    let message: string | null = null
    if (tenant.catalog.view(type, code, instants.nowMs) === null) message = `${name} ${code} does not exist`
    else if (tenant.catalog.view(type, code, instants.from) === null) {
      message = `${name} ${code} is deleted by ${formatInstant(instants.from)}`
    }
    if (message !== null) return new Refusal({ status: 'validation_failed', message, path, problem: message })
  }
  return null
}

/** Sets VAT rates of a tax area and VAT class from their start date (a future start schedules one). */
export function writeVatRates(
  tenant: WriteTarget,
  context: WriteContext,
  items: Items<VatRateInput>,
): Promise<ItemOutcome[]> {
  return applyBatch(tenant, items, vatRateWriter(tenant, context))
}

/** How to write each item of `writeVatRates` (also for `applyItems`: the demo seed). */
export function vatRateWriter(tenant: WriteTarget, context: WriteContext): EntityWriter<VatRateInput, Change> {
  const { nowMs, actor } = context
  return unlimitedWriter<VatRateInput>(tenant, (input) => {
    const rate = canonicalRate(input.rate)
    if (rate === null) return invalid('/rate', 'must be a percentage from 0 to 100 with at most 4 decimals')
    const from = writeInstant(input.start_date, nowMs)
    const key = compositeKey(input.tax_area_code, input.vat_class_code)
    return (
      referenceRefusal(tenant, input, { nowMs, from }) ??
      tenant.catalog.plan('vat_rate', key, { rate }, from, nowMs, actor)
    )
  })
}

/** Maps articles to a VAT class in a tax area from their start date; later items plan against earlier ones. */
export function writeMappings(
  tenant: WriteTarget,
  context: WriteContext,
  items: Items<MappingInput>,
): Promise<ItemOutcome[]> {
  return applyBatch(tenant, items, mappingWriter(tenant, context))
}

/** How to write each item of `writeMappings` (also for `applyItems`: the demo seed). */
export function mappingWriter(tenant: WriteTarget, context: WriteContext): EntityWriter<MappingInput, Change> {
  const { nowMs, actor } = context
  return unlimitedWriter<MappingInput>(tenant, (input) => {
    const from = writeInstant(input.start_date, nowMs)
    const key = compositeKey(input.sku_code, input.tax_area_code)
    const value = { vat_class_code: input.vat_class_code }
    return (
      referenceRefusal(tenant, input, { nowMs, from }) ??
      tenant.catalog.plan('article_taxclass', key, value, from, nowMs, actor)
    )
  })
}
