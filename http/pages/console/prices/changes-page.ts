/**
 * "What changes" (`/console/{slug}/changes`): a GET form (one pricelist or all, tax area, currency,
 * a moment, by default a week ahead) and, once asked, the prices that differ between now and that
 * moment: a page of `POST /price/diff` over every priced SKU in code order (the same selection,
 * dispatch and comparison: `selectPricelists`, `dispatchDiff`), with both amounts, the change in
 * percent and the causes in words, a count line and a link to the next page. "Now" is fixed when
 * the first page is asked and carried in the next page's link, so all pages compare the same two
 * moments. A page covers at most `changesSkusPerPage` SKUs and costs them against the query rate.
 * @module
 */
import { compareCodes } from '../../../../engine/catalog.js'
import { fourDecimals, type DiffEntry, type DiffSide } from '../../../../engine/diff/diff.js'
import { formatInstant } from '../../../../engine/time.js'
import { validationError } from '../../../../platform/errors.js'
import { dispatchDiff } from '../../../../tenant/price-dispatch.js'
import type { TenantRuntime } from '../../../../tenant/runtime.js'
import type { RootContext } from '../../../contracts.js'
import { pricedSkuCandidates, selectPricelists } from '../../../routes/price-reads.js'
import { html, type Html } from '../../shared/html.js'
import { dataTable, type Cell, type Column } from '../../shared/table.js'
import type { ConsoleVisit } from '../access.js'
import { consolePage } from '../frame.js'
import { chargeQuery, failedAnswer, itemsMaxOf, type PriceAnswer } from './answer.js'
import {
  amountText,
  areaAndCurrency,
  causeWords,
  codeOptions,
  codesAt,
  fieldText,
  instantText,
  momentField,
  momentOf,
  selectField,
  unavailableWords,
  wordsOf,
} from './words.js'

/** SKUs one page compares (fewer when the plan allows fewer items per request). */
export const changesSkusPerPage = 1_000

/** The moment the form offers first: a week ahead. */
const aheadMs = 7 * 24 * 3600 * 1000

interface ChangesForm {
  readonly pricelist: string
  readonly taxArea: string
  readonly currency: string
  readonly moment: string
  /** "Now" of the first page (RFC 3339), carried by the next page's link; empty on the first. */
  readonly since: string
  readonly cursor: string
}

function readForm(query: URLSearchParams, tenant: TenantRuntime, nowMs: number): ChangesForm {
  return {
    pricelist: fieldText(query, 'pricelist'),
    taxArea: fieldText(query, 'tax_area') || (codesAt(tenant, 'tax_area', nowMs)[0] ?? ''),
    currency: fieldText(query, 'currency') || (codesAt(tenant, 'currency', nowMs)[0] ?? ''),
    moment: query.has('moment') ? fieldText(query, 'moment', 40) : momentField(nowMs + aheadMs),
    since: fieldText(query, 'since', 40),
    cursor: fieldText(query, 'cursor'),
  }
}

function formHtml(visit: ConsoleVisit, form: ChangesForm, nowMs: number, message: string | null): Html {
  const lists = [{ value: '', label: 'All lists' }, ...codeOptions(codesAt(visit.tenant, 'pricelist', nowMs))]
  return html`<form method="get" action="/console/${visit.slug}/changes" class="price-form">
${message === null ? null : html`<p class="flash error" role="alert">${message}</p>`}
${selectField({ id: 'pricelist', label: 'Pricelist', options: lists, chosen: form.pricelist })}
${areaAndCurrency(visit.tenant, nowMs, form)}
<label for="moment">Compare now with (UTC)</label>
<input id="moment" name="moment" type="datetime-local" step="1" value="${form.moment}" aria-describedby="moment-hint">
<p class="hint" id="moment-hint">A moment ahead shows what scheduled changes will do;
 one behind, what changed since.</p>
<button type="submit">Show the changes</button>
</form>`
}

/** The SKUs of this page in code order, after `cursor`, and the cursor of the next page (null: none). */
function pageSkus(
  all: readonly string[],
  cursor: string,
  limit: number,
): { skus: string[]; first: number; next: string | null } {
  let low = 0
  let high = all.length
  while (cursor !== '' && low < high) {
    const middle = (low + high) >>> 1
    if (compareCodes(all[middle]!, cursor) <= 0) low = middle + 1
    else high = middle
  }
  const end = Math.min(all.length, low + limit)
  const skus = all.slice(low, end)
  return { skus, first: low, next: end < all.length ? skus[skus.length - 1]! : null }
}

function sideText(side: DiffSide, currency: string): string {
  if ('reason' in side) return `no price (${wordsOf(unavailableWords, side.reason)})`
  return `${amountText(fourDecimals(side.gross))} ${currency}`
}

function listText(entry: DiffEntry): string {
  const before = 'pricelist' in entry.from ? entry.from.pricelist : '–'
  const after = 'pricelist' in entry.to ? entry.to.pricelist : '–'
  return before === after ? before : `${before} → ${after}`
}

const columns: readonly Column[] = [
  { title: 'SKU', rowHeader: true },
  { title: 'Pricelist' },
  { title: 'Before (gross)', number: true },
  { title: 'After (gross)', number: true },
  { title: 'Change', number: true },
  { title: 'Why' },
]

/** The SKU as a link to "why this price" at the later moment, for the list that answers then. */
function skuLink(visit: ConsoleVisit, form: ChangesForm, entry: DiffEntry, to: number): Html {
  const query = new URLSearchParams({
    sku: entry.sku,
    pricelist: form.pricelist,
    tax_area: form.taxArea,
    currency: form.currency,
    // A datetime-local value (UTC, to the millisecond), so that the form shows it again.
    moment: new Date(to).toISOString().slice(0, 23),
  })
  return html`<a href="/console/${visit.slug}/why?${query.toString()}">${entry.sku}</a>`
}

function row(entry: DiffEntry, currency: string, sku: Html): Cell[] {
  const percent = entry.changePercent === null ? '–' : `${amountText(fourDecimals(entry.changePercent))} %`
  return [
    sku,
    listText(entry),
    sideText(entry.from, currency),
    sideText(entry.to, currency),
    percent,
    entry.causes.map((cause) => wordsOf(causeWords, cause)).join('; '),
  ]
}

interface ChangesResult {
  readonly entries: readonly DiffEntry[]
  readonly first: number
  readonly covered: number
  readonly total: number
  readonly next: string | null
  readonly from: number
  readonly to: number
}

async function compare(visit: ConsoleVisit, form: ChangesForm, nowMs: number): Promise<ChangesResult> {
  const tenant = visit.tenant
  const now = momentOf(form.since, nowMs)
  const chosen = momentOf(form.moment, nowMs + aheadMs)
  const [from, to] = chosen < now ? [chosen, now] : [now, chosen]
  const body = {
    pricelist_filter: form.pricelist === '' ? {} : { pricelists: [form.pricelist] },
    tax_area: form.taxArea,
    currency_code: form.currency,
  }
  for (const at of [from, to])
    if (tenant.catalog.get('tax_area', form.taxArea, at) === null)
      throw validationError([{ path: '/tax_area', message: 'unknown' }], `There is no tax area ${form.taxArea}`)
  const pricelistsFrom = selectPricelists(tenant, body, from)
  const pricelistsTo = selectPricelists(tenant, body, to)
  const all = pricedSkuCandidates(tenant)
  const page = pageSkus(all, form.cursor, Math.min(changesSkusPerPage, itemsMaxOf(tenant)))
  await chargeQuery(tenant, Math.max(1, page.skus.length), nowMs)
  const { entries } = await dispatchDiff(tenant, {
    ...{ from, to, taxArea: form.taxArea, currency: form.currency, rounding: null, quantity: 1 },
    ...{ pricelistsFrom, pricelistsTo, skus: page.skus },
  })
  return { entries, first: page.first, covered: page.skus.length, total: all.length, next: page.next, from, to }
}

const count = new Intl.NumberFormat('en-US')

function resultHtml(visit: ConsoleVisit, form: ChangesForm, result: ChangesResult, nowMs: number): Html {
  const { entries, first, covered, total } = result
  const range =
    total === 0
      ? 'No SKU has a price yet.'
      : `SKUs ${count.format(first + 1)} to ${count.format(first + covered)} of ${count.format(total)} compared, ` +
        `in code order: ${count.format(entries.length)} ${entries.length === 1 ? 'price changes' : 'prices change'}.`
  const since = form.since === '' ? formatInstant(nowMs) : form.since
  const { pricelist, taxArea, currency, moment } = form
  const nextQuery = (cursor: string) =>
    new URLSearchParams({ pricelist, tax_area: taxArea, currency, moment, since, cursor }).toString()
  const next =
    result.next === null
      ? null
      : html`<p><a href="/console/${visit.slug}/changes?${nextQuery(result.next)}">Next page of SKUs</a></p>`
  return html`<section aria-labelledby="changes-title">
<h2 id="changes-title">From ${instantText(formatInstant(result.from))} to ${instantText(formatInstant(result.to))}</h2>
<p role="status" class="count">${range}</p>
${dataTable(
  'Changed prices',
  columns,
  entries.map((entry) => row(entry, form.currency, skuLink(visit, form, entry, result.to))),
  'No price changes among these SKUs.',
)}
${next}
</section>`
}

export async function changesPage(context: RootContext, visit: ConsoleVisit): Promise<PriceAnswer> {
  const nowMs = context.nowMs
  const form = readForm(context.query, visit.tenant, nowMs)
  const render = (body: Html | null, message: string | null) =>
    consolePage(
      visit,
      'changes',
      `${visit.slug}: what changes`,
      html`${formHtml(visit, form, nowMs, message)}${body}`,
      null,
    )
  if (!context.query.has('tax_area')) return { status: 200, body: render(null, null) }
  try {
    const result = await compare(visit, form, nowMs)
    return { status: 200, body: render(resultHtml(visit, form, result, nowMs), null) }
  } catch (error) {
    return failedAnswer(error, (message) => render(null, message))
  }
}
