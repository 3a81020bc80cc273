/**
 * An explained price (the `trace` of docs/api.md "Explain") as a waterfall a merchant can read: one
 * row per pipeline step in the order it ran, what the step did in words and the amount after it, in
 * the currency it is in at that point (a conversion or an exchange rate changes it on the way). The
 * page only words the trace: every figure is the engine's, printed as the answer printed it.
 * @module
 */
import { html, type Html } from '../../shared/html.js'
import { amountText, instantText } from './words.js'

/** One step of a trace: its kind and the fields of that kind. */
export interface TraceStep {
  readonly step: string
  readonly [field: string]: unknown
}

/** What the rows need besides the step: the currency of a pricelist at the moment. */
export interface WaterfallInput {
  readonly steps: readonly TraceStep[]
  readonly currencyOf: (pricelist: string) => string | null
}

interface Row {
  readonly label: string
  readonly detail: Html
  /** The amount after the step; undefined: the step sets none (it selects or describes). */
  readonly amount?: unknown
}

type Worder = (step: TraceStep, state: { currency: string | null }) => Row

const text = (value: unknown): string => (value === null || value === undefined ? '–' : String(value))
const list = (value: unknown): string => (Array.isArray(value) ? value.map(text).join(', ') : text(value))

function ruleRow(step: TraceStep): Row {
  const name = `Rule ${text(step['code'])}`
  const where = html`on ${text(step['pricelist'])}`
  if (step['filter_matched'] === false)
    return {
      label: name,
      detail: html`${where}: its filter does not match this SKU, so it is skipped`,
      amount: step['input'],
    }
  if (step['output'] === null)
    return { label: name, detail: html`${where}: failed on ${amountText(step['input'])}`, amount: null }
  return {
    label: name,
    detail: html`${where}: ${amountText(step['input'])} → ${amountText(step['output'])}`,
    amount: step['output'],
  }
}

function conversionRow(step: TraceStep, state: { currency: string | null }): Row {
  const side = (which: 'from' | 'to') =>
    `${text(step[`${which}_pricelist`])} (${text(step[`${which}_currency`])} ${text(step[`${which}_vat_mode`])})`
  const fx = step['fx'] as Record<string, unknown> | null
  const rate =
    fx === null || fx === undefined
      ? null
      : `; rate ${text(fx['base'])}→${text(fx['quote'])} ${text(fx['rate'])}` +
        ` (published ${instantText(fx['published'])})`
  const vat =
    step['vat_rate'] === null || step['vat_rate'] === undefined ? null : html`; VAT ${text(step['vat_rate'])}%`
  state.currency = text(step['to_currency'])
  return {
    label: 'From the parent',
    detail: html`${side('from')} into ${side('to')}${rate}${vat}`,
    amount: step['output'],
  }
}

function bundleRow(step: TraceStep): Row {
  const components = Array.isArray(step['components']) ? (step['components'] as Record<string, unknown>[]) : []
  const parts = components.map(
    (component) =>
      `${text(component['quantity'])} × ${text(component['sku'])} at ` +
      `${component['amount'] === null ? 'no price' : amountText(component['amount'])}`,
  )
  const discount =
    step['discount_type'] === null || step['discount_type'] === undefined
      ? ''
      : `; discount ${text(step['discount_type'])} ${text(step['discount_value'])}`
  return {
    label: 'Bundle',
    detail: html`${text(step['method'])} of ${parts.join(', ')}${discount} (rule on ${text(step['rule_pricelist'])})`,
    amount: step['amount'],
  }
}

function roundingRow(step: TraceStep): Row {
  const tier = step['tier'] as Record<string, unknown> | null
  const detail =
    tier === null || tier === undefined
      ? html`profile ${text(step['profile'])}: no tier covers ${amountText(step['input'])}, so it stays`
      : html`${
          `profile ${text(step['profile'])}, tier ${amountText(tier['from'])} to ${amountText(tier['to'])}: ` +
          `${text(tier['mode'])} to ${text(tier['increment'])}` +
          (tier['offset'] === null || tier['offset'] === undefined ? '' : `, offset ${text(tier['offset'])}`)
        }`
  return { label: 'Rounding', detail, amount: step['output'] }
}

const worders: Readonly<Record<string, Worder>> = {
  candidates: (step) => ({ label: 'Candidates', detail: html`pricelists selected: ${list(step['pricelists'])}` }),
  inheritance: (step) => ({
    label: 'Inheritance',
    detail:
      Array.isArray(step['path']) && step['path'].length === 1
        ? html`${text(step['source'])} has its own price (no parent is asked)`
        : html`${list(step['path']).replaceAll(', ', ' → ')}; the price comes from ${text(step['source'])}`,
  }),
  version: (step) => {
    const written = `written ${instantText(step['written_at'])} by ${text(step['written_by'])}`
    return {
      label: 'Price version',
      detail: html`on ${text(step['pricelist'])}, in force since ${instantText(step['start_date'])}, ${written}`,
      amount: step['amount'],
    }
  },
  quantity_break: (step) => ({
    label: 'Quantity break',
    detail:
      step['break_quantity'] === null
        ? html`quantity ${text(step['quantity'])}: no break applies, the base price`
        : html`quantity ${text(step['quantity'])}: the break from ${text(step['break_quantity'])} applies`,
    amount: step['amount'],
  }),
  bundle: bundleRow,
  conversion: conversionRow,
  rule: ruleRow,
  fx: (step, state) => {
    state.currency = text(step['quote'])
    return {
      label: 'Exchange rate',
      detail: html`${text(step['base'])} → ${text(step['quote'])} at ${text(step['rate'])}, published ${instantText(
        step['published'],
      )}`,
      amount: step['output'],
    }
  },
  rounding: roundingRow,
  vat: (step) => ({
    label: 'VAT',
    detail: html`class ${text(step['vat_class'])} (since ${instantText(step['mapping_start'])}), rate ${text(
      step['rate'],
    )}% (since ${instantText(step['rate_start'])}); the list's prices are ${text(step['mode'])}`,
  }),
  amounts: (step) => ({
    label: 'Final amounts',
    detail: html`net ${amountText(step['net'])} + VAT ${amountText(step['vat'])}`,
    amount: step['gross'],
  }),
}

function amountCell(row: Row, currency: string | null): Html {
  if (row.amount === undefined) return html`<span class="amount none" aria-hidden="true"></span>`
  const figure = row.amount === null ? 'none' : `${amountText(row.amount)}${currency === null ? '' : ` ${currency}`}`
  return html`<span class="amount"><span class="visually-hidden">Amount after this step: </span>${figure}</span>`
}

/** The steps as an ordered list, one row each: what the step is, what it did, the amount after it. */
export function waterfall(input: WaterfallInput): Html {
  const state: { currency: string | null } = { currency: null }
  const rows = input.steps.map((step) => {
    const worder = worders[step.step]
    const row: Row = worder === undefined ? { label: step.step, detail: html`` } : worder(step, state)
    if (step.step === 'inheritance') state.currency = input.currencyOf(text(step['source']))
    const amount = amountCell(row, state.currency)
    const label = html`<span class="label">${row.label}</span>`
    return html`<li class="step-${step.step}">${label}<span class="detail">${row.detail}</span>${amount}</li>
`
  })
  return html`<ol class="waterfall" aria-label="The pipeline's steps, in the order they ran">
${rows}</ol>`
}
