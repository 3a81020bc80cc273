/**
 * "Why this price" (`/console/{slug}/why`): a GET form (SKU, one pricelist or the best of all, tax
 * area, currency, moment, quantity) and, once asked, the answer of `POST /price/query` with
 * `explain: true` for that one SKU: the price, the trace as a waterfall, the candidates that lost
 * with their reason in words, and the inputs hash. The page calls the JSON route's own functions
 * (`queryInput`, `explainQuery`) and reads their documented answer, so it shows exactly what an API
 * client gets; it costs the query rate as that call does.
 * @module
 */
import { can } from '../../../../accounts/people/roles.js'
import { codeLengthMax } from '../../../../engine/limits.js'
import { splitKey } from '../../../../engine/catalog.js'
import { formatInstant } from '../../../../engine/time.js'
import { ApiError, validationError } from '../../../../platform/errors.js'
import type { RootContext } from '../../../contracts.js'
import { quantityValue } from '../../../routes/common.js'
import { explainCostFactor, explainQuery } from '../../../routes/price-explain.js'
import { omnibusDays, priorPriceCostFactor } from '../../../routes/price-prior.js'
import { priorPriceQueryBytes } from '../../../../workers/prior-price-query.js'
import { queryInput, type PriceQueryValue } from '../../../routes/price-reads.js'
import { html, type Html } from '../../shared/html.js'
import { dataTable, type Cell, type Column } from '../../shared/table.js'
import type { ConsoleVisit } from '../access.js'
import { consolePage } from '../frame.js'
import { chargeQuery, failedAnswer, type PriceAnswer } from './answer.js'
import { correctionsPath } from './corrections-page.js'
import { waterfall, type TraceStep } from './waterfall.js'
import {
  amountText,
  areaAndCurrency,
  candidateReasonWords,
  codeOptions,
  codesAt,
  fieldText,
  momentOf,
  selectField,
  unavailableWords,
  wordsOf,
} from './words.js'

/** The form as asked (kept as typed, to show it again). */
interface WhyForm {
  readonly sku: string
  readonly pricelist: string
  readonly taxArea: string
  readonly currency: string
  readonly moment: string
  readonly quantity: string
}

type Amounts = { readonly net: number; readonly vat: number; readonly gross: number }
interface Candidate {
  readonly pricelist: string
  readonly outcome: 'won' | 'lost'
  readonly reason: string | null
  readonly amounts: Amounts | null
}
interface Trace {
  readonly steps: readonly TraceStep[]
  readonly candidates: readonly Candidate[]
  readonly inputs_hash: string
}
interface ExplainedAnswer {
  readonly items: readonly (Amounts & { pricelist: string; currency_code: string; vat_mode: string; trace: Trace })[]
  readonly unavailable: readonly { readonly sku: string; readonly reason: string; readonly trace: Trace }[]
}

function readForm(query: URLSearchParams, taxAreas: readonly string[], currencies: readonly string[]): WhyForm {
  return {
    sku: fieldText(query, 'sku'),
    pricelist: fieldText(query, 'pricelist'),
    taxArea: fieldText(query, 'tax_area') || (taxAreas[0] ?? ''),
    currency: fieldText(query, 'currency') || (currencies[0] ?? ''),
    moment: fieldText(query, 'moment', 40),
    quantity: fieldText(query, 'quantity', 40) || '1',
  }
}

function formHtml(visit: ConsoleVisit, form: WhyForm, nowMs: number, message: string | null): Html {
  const lists = [{ value: '', label: 'Best of all lists' }, ...codeOptions(codesAt(visit.tenant, 'pricelist', nowMs))]
  return html`<form method="get" action="/console/${visit.slug}/why" class="price-form">
${message === null ? null : html`<p class="flash error" role="alert">${message}</p>`}
<label for="sku">SKU</label>
<input id="sku" name="sku" required maxlength="${codeLengthMax}" value="${form.sku}"
 autocomplete="off" spellcheck="false">
${selectField({ id: 'pricelist', label: 'Pricelist', options: lists, chosen: form.pricelist })}
${areaAndCurrency(visit.tenant, nowMs, form)}
<label for="moment">Moment (UTC)</label>
<input id="moment" name="moment" type="datetime-local" step="1" value="${form.moment}" aria-describedby="moment-hint">
<p class="hint" id="moment-hint">Empty: now.</p>
<label for="quantity">Quantity</label>
<input id="quantity" name="quantity" inputmode="decimal" value="${form.quantity}">
<button type="submit">Explain the price</button>
</form>`
}

/** The price query body the form stands for (as `POST /price/query` with explain would get it). */
function queryBody(form: WhyForm, at: number, asOf: boolean): PriceQueryValue {
  if (form.sku.length > codeLengthMax)
    throw validationError([{ path: '/sku', message: 'too long' }], `A SKU has at most ${codeLengthMax} characters`)
  if (!/^[A-Z]{3}$/.test(form.currency))
    throw validationError([{ path: '/currency', message: 'not a currency' }], 'Choose a currency (3 capital letters)')
  return {
    currency_code: form.currency,
    pricelist_filter: form.pricelist === '' ? {} : { pricelists: [form.pricelist] },
    skus: [form.sku],
    tax_area: form.taxArea,
    ...(asOf ? { as_of: formatInstant(at) } : {}),
    quantity: quantityValue(form.quantity, '/quantity', 1e9),
    explain: true,
  }
}

/**
 * A code nobody wrote is said so, before the query would answer it only as "no price": a SKU is
 * known when it ever had a price (the book's dictionary, O(1)), an article or a bundle rule.
 */
function checkKnown(visit: ConsoleVisit, form: WhyForm, at: number): void {
  const { catalog, prices } = visit.tenant
  if (form.pricelist !== '' && catalog.get('pricelist', form.pricelist, at) === null)
    throw new ApiError('not_found', `There is no pricelist ${form.pricelist} at that moment`)
  if (prices.skuId(form.sku) >= 0 || catalog.get('article', form.sku, at) !== null) return
  if (catalog.keys('bundle_rule').some((key) => splitKey(key)[0] === form.sku)) return
  throw new ApiError('not_found', `There is no SKU ${form.sku}: no article and no price has that code`)
}

const candidateColumns: readonly Column[] = [
  { title: 'Pricelist', rowHeader: true },
  { title: 'Outcome' },
  { title: 'Why' },
  { title: 'Net', number: true },
  { title: 'VAT', number: true },
  { title: 'Gross', number: true },
]

function candidateRow(candidate: Candidate): Cell[] {
  const why =
    candidate.reason === null ? 'Lowest gross: it gives the price' : wordsOf(candidateReasonWords, candidate.reason)
  const amounts = candidate.amounts
  return [
    candidate.pricelist,
    { content: candidate.outcome, className: `outcome-${candidate.outcome}` },
    why,
    amounts === null ? '–' : amountText(amounts.net),
    amounts === null ? '–' : amountText(amounts.vat),
    amounts === null ? '–' : amountText(amounts.gross),
  ]
}

function traceHtml(visit: ConsoleVisit, trace: Trace, at: number): Html {
  const currencyOf = (pricelist: string) => visit.tenant.catalog.get('pricelist', pricelist, at)?.currency_code ?? null
  return html`<h2>How the price was made</h2>
${waterfall({ steps: trace.steps, currencyOf })}
<h2>Every pricelist and why it did or did not give the price</h2>
${dataTable('Candidates', candidateColumns, trace.candidates.map(candidateRow), 'No pricelist is live at that moment.')}
<p class="hint">Inputs hash (the same question at the same moment always gives it):
 <code>${trace.inputs_hash}</code></p>`
}

/** The prior price of the answered item: the EU reduction's announced prior price, or none in force. */
interface PriorFacts {
  readonly prior: { net: number; gross: number; in_force_at: string; reduction_started_at: string } | null
  readonly days: number
}

/** A date-time of the API as the page writes instants. */
function instantText(text: string): string {
  return text.replace('T', ' ').replace('Z', ' UTC')
}

function priorHtml(facts: PriorFacts, currency: string): Html {
  const { prior, days } = facts
  if (prior === null)
    return html`<div><dt>Prior price</dt><dd>No price reduction in force (the price did not fall to it)</dd></div>`
  return html`<div><dt>Prior price (lowest in the ${String(days)} days before the reduction)</dt><dd>${amountText(prior.gross)} ${currency} gross, ${amountText(prior.net)} net, in force from ${instantText(prior.in_force_at)}</dd></div>
<div><dt>Reduction started</dt><dd>${instantText(prior.reduction_started_at)}</dd></div>`
}

/** When one pricelist was asked: the link to its versions, where a mistaken one is marked as an error. */
function correctionsLink(visit: ConsoleVisit, form: WhyForm): Html | null {
  if (form.pricelist === '') return null
  const href = correctionsPath(visit.slug, { sku: form.sku, pricelist: form.pricelist })
  return can(visit.role, 'prices.correct')
    ? html`<p class="hint">A mistaken price in the history? <a href="${href}">Mark it as an error</a> (the prior price then leaves it out).</p>`
    : html`<p class="hint"><a href="${href}">The versions of this price</a> and those marked as errors (left out of the prior price).</p>`
}

function answerHtml(visit: ConsoleVisit, form: WhyForm, answer: ExplainedAnswer, at: number, prior: PriorFacts): Html {
  const moment = html`<div><dt>Moment</dt><dd>${formatInstant(at).replace('T', ' ').replace('Z', ' UTC')}</dd></div>`
  const item = answer.items[0]
  if (item === undefined) {
    const entry = answer.unavailable[0]!
    return html`<section class="answer" aria-labelledby="answer-title">
<h2 id="answer-title">No price for ${form.sku}</h2>
<p role="status">No price at that moment: ${wordsOf(unavailableWords, entry.reason)}.</p>
<dl class="facts">${moment}</dl>
${traceHtml(visit, entry.trace, at)}
</section>`
  }
  const currency = item.currency_code
  return html`<section class="answer" aria-labelledby="answer-title">
<h2 id="answer-title">${form.sku}: ${amountText(item.gross)} ${currency} gross</h2>
<dl class="facts">
<div><dt>Pricelist</dt><dd>${item.pricelist}</dd></div>
<div><dt>Net</dt><dd>${amountText(item.net)} ${currency}</dd></div>
<div><dt>VAT</dt><dd>${amountText(item.vat)} ${currency}</dd></div>
<div><dt>Gross</dt><dd>${amountText(item.gross)} ${currency}</dd></div>
<div><dt>The list's prices are</dt><dd>${item.vat_mode}</dd></div>
${moment}
${priorHtml(prior, currency)}
</dl>
${correctionsLink(visit, form)}
${traceHtml(visit, item.trace, at)}
</section>`
}

export async function whyPage(context: RootContext, visit: ConsoleVisit): Promise<PriceAnswer> {
  const nowMs = context.nowMs
  const tenant = visit.tenant
  const form = readForm(context.query, codesAt(tenant, 'tax_area', nowMs), codesAt(tenant, 'currency', nowMs))
  const render = (body: Html | null, message: string | null) =>
    consolePage(
      visit,
      'why',
      `${visit.slug}: why this price`,
      html`${formHtml(visit, form, nowMs, message)}${body}`,
      null,
    )
  if (!context.query.has('sku')) return { status: 200, body: render(null, null) }
  try {
    if (form.sku === '') throw validationError([{ path: '/sku', message: 'required' }], 'Enter a SKU')
    const at = momentOf(form.moment, nowMs)
    checkKnown(visit, form, at)
    const body = queryBody(form, at, form.moment !== '')
    const input = queryInput(tenant, body, nowMs)
    // The explanation and the prior price: the page costs what the two JSON calls cost.
    await chargeQuery(tenant, explainCostFactor + priorPriceCostFactor, nowMs)
    // Awaited: the explanation may move to the price workers and answer a promise.
    const explained = await explainQuery(tenant, input, body.pricelist_filter)
    let text: string
    try {
      text = explained.json.toString()
    } finally {
      explained.release?.()
    }
    const answer = JSON.parse(text) as ExplainedAnswer
    // The prior price of the same question (docs/api.md, "Prior price").
    let prior: PriorFacts = { prior: null, days: omnibusDays(tenant.catalog, input.at) }
    if (answer.items.length > 0) {
      const priced = JSON.parse(priorPriceQueryBytes(tenant.catalog, tenant.prices, input, prior.days).toString())
      prior = { ...prior, prior: priced.items[0]?.prior_price ?? null }
    }
    return { status: 200, body: render(answerHtml(visit, form, answer, input.at, prior), null) }
  } catch (error) {
    return failedAnswer(error, (message) => render(null, message))
  }
}
