/**
 * What the console's price pages ("why this price", "what changes") share: the closed enums of the
 * explain and diff answers in plain words (typed as records over the enums, so a new reason that has
 * no words here does not compile), amounts and instants as a merchant reads them, the form's moment
 * field and the selects of the tenant's pricelists, tax areas and currencies.
 * @module
 */
import { compareCodes } from '../../../../engine/catalog.js'
import type { DiffCause } from '../../../../engine/diff/diff.js'
import type { EffectiveCause } from '../../../../engine/effective-price/changes.js'
import type { CandidateReason } from '../../../../engine/explain/explain.js'
import type { statusReasons } from '../../../../engine/pipeline.js'
import { formatInstant, parseInstant } from '../../../../engine/time.js'
import { validationError } from '../../../../platform/errors.js'
import type { TenantRuntime } from '../../../../tenant/runtime.js'
import { html, type Html } from '../../shared/html.js'

/** Why a candidate pricelist did not give the price (docs/api.md "Explain"). */
export const candidateReasonWords: Readonly<Record<CandidateReason, string>> = {
  filter_mismatch: 'Not asked for: the form names another pricelist',
  list_not_active: 'Outside its active window (start or end date) at that moment',
  no_price_at_as_of: 'No price for this SKU at that moment, neither its own nor inherited',
  bundle_unavailable: 'A bundle with a component that has no price',
  rule_error: 'A price rule failed on it',
  no_fx_rate: 'No exchange rate into a currency it needs',
  no_vat_class: 'The SKU has no VAT class in this tax area',
  no_vat_rate: 'The VAT class has no rate in this tax area',
  lost_to_lower: 'Priced, but another pricelist is cheaper (gross)',
  lost_tie: "Priced at the winner's gross; the winner's code sorts first",
}

/** Why a SKU has no price at all (the query's `unavailable` reasons). */
export const unavailableWords: Readonly<Record<Exclude<(typeof statusReasons)[number], 'ok'>, string>> = {
  no_price: 'no selected pricelist has a price for it',
  bundle_component_missing: 'it is a bundle and a component has no price',
  rule_error: 'a price rule failed',
  no_fx_rate: 'an exchange rate it needs is missing',
  no_vat_class: 'it has no VAT class in this tax area',
  no_vat_rate: 'its VAT class has no rate in this tax area',
}

/** Why a price differs between two moments (docs/api.md "Diff"). */
export const causeWords: Readonly<Record<DiffCause, string>> = {
  own_version: "the list's own price changed",
  parent_version: "a parent list's price changed",
  rule: "the list's price rules changed",
  vat_rate: 'the VAT rate changed',
  vat_reclassification: 'the VAT class of the SKU changed',
  fx_rate: 'a new exchange rate',
  list_window: 'another list applies (a window opened or closed)',
  bundle: 'the bundle or a component changed',
  rounding: 'the rounding profile changed',
  other: 'another change (currency precision, article facts)',
}

/**
 * Why a shopper's price changed (docs/api.md "Effective-price events"), for the changelog page's
 * effective-price events and its cause filter.
 */
export const effectiveCauseWords: Readonly<Record<EffectiveCause, string>> = {
  written: 'a price written took effect at once',
  scheduled_start: 'a price scheduled earlier came into force',
  list_window: "the list's active window opened or closed",
  parent_changed: "a parent list's price is inherited, or the list has a new parent",
  rule_changed: 'price rules changed (a list, a bundle rule, an article a rule reads, a rounding profile)',
  vat_rate_started: 'a new VAT rate started',
  reclassified: 'the SKU has another VAT class',
  fx_published: 'a new exchange rate was published',
}

/** A reason of the closed set in words; an unknown one as its code (an answer newer than this page). */
export function wordsOf<K extends string>(words: Readonly<Record<K, string>>, code: string): string {
  return Object.hasOwn(words, code) ? words[code as K] : code
}

/**
 * An exact decimal as text (a JSON number of the answers, or a 4-decimal string of scaled units) with
 * at least two decimals, trailing zeros beyond them dropped, and thousands grouped: string work only,
 * so no binary rounding decides a digit.
 */
export function amountText(value: unknown): string {
  if (typeof value !== 'number' && typeof value !== 'string') return '–'
  const text = String(value)
  const match = /^(-?)(\d+)(?:\.(\d+))?$/.exec(text)
  if (match === null) return text
  const [, sign, units, decimals = ''] = match
  const fraction = decimals.replace(/0+$/, '').padEnd(2, '0')
  return `${sign}${units!.replace(/\B(?=(\d{3})+$)/g, ',')}.${fraction}`
}

/** An instant of an answer (RFC 3339) as a person reads it: "2026-11-28 09:46:10 UTC". */
export function instantText(value: unknown): string {
  if (typeof value !== 'string') return '–'
  const at = parseInstant(value)
  return Number.isNaN(at) ? value : `${formatInstant(at).replace('T', ' ').replace('Z', '')} UTC`
}

/**
 * The form's moment: empty is `fallback`; a datetime-local value ("2026-11-28T09:46", seconds
 * optional) is read as UTC, as the field's label says; a full RFC 3339 instant is taken as written.
 */
export function momentOf(text: string | null, fallback: number): number {
  const value = (text ?? '').trim()
  if (value === '') return fallback
  const local = /^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d{1,3})?)?$/.test(value) ? `${value}Z` : value
  const at = parseInstant(local)
  if (Number.isNaN(at) || at < Date.UTC(1970, 0, 1))
    throw validationError(
      [{ path: '/moment', message: 'not a moment' }],
      `The moment "${value.slice(0, 40)}" is not a date and time (e.g. 2026-12-01T09:00, in UTC)`,
    )
  return at
}

/** An instant as a datetime-local field's value, in UTC, to the minute. */
export function momentField(at: number): string {
  return new Date(at).toISOString().slice(0, 16)
}

/** Codes of a catalogue table in force at `at` (live), in code order. */
export function codesAt(tenant: TenantRuntime, type: 'pricelist' | 'tax_area' | 'currency', at: number): string[] {
  const codes: string[] = []
  for (const [code] of tenant.catalog.viewsAt(type, at)) codes.push(code)
  return codes.sort(compareCodes)
}

/** A labelled select; `chosen` selected when it is among the options. */
export function selectField(input: {
  id: string
  label: string
  options: readonly { value: string; label: string }[]
  chosen: string
}): Html {
  const options = input.options.map((option) => {
    const selected = option.value === input.chosen ? html` selected` : null
    return html`<option value="${option.value}"${selected}>${option.label}</option>`
  })
  return html`<label for="${input.id}">${input.label}</label>
<select id="${input.id}" name="${input.id}">${options}</select>`
}

/** The codes as a select's options. */
export const codeOptions = (codes: readonly string[]) => codes.map((code) => ({ value: code, label: code }))

/** The selects of the tax area and the currency, over the tenant's codes at `at`. */
export function areaAndCurrency(
  tenant: TenantRuntime,
  at: number,
  chosen: { taxArea: string; currency: string },
): Html {
  const areas = codeOptions(codesAt(tenant, 'tax_area', at))
  const currencies = codeOptions(codesAt(tenant, 'currency', at))
  return html`${selectField({ id: 'tax_area', label: 'Tax area', options: areas, chosen: chosen.taxArea })}
${selectField({ id: 'currency', label: 'Currency', options: currencies, chosen: chosen.currency })}`
}

/** A form field's text, bounded (a longer value is cut: the page then says what it did not find). */
export function fieldText(query: URLSearchParams, name: string, lengthMax = 200): string {
  return (query.get(name) ?? '').trim().slice(0, lengthMax)
}
