/**
 * "Corrections" (`/console/{slug}/corrections`, issue 30 point 2): a GET form (SKU, pricelist) and,
 * once asked, the list's own versions of that price, newest first (start, amount, written at and
 * by, and whether it is marked as an error: by whom, when, why). A role with `prices.correct` gets a
 * form per version: "Mark as an error" (an optional reason) or "Take the mark back". The forms post
 * to `/console/{slug}/corrections/mark|unmark` and run the write layer of
 * `POST|DELETE /price/corrections/{pricelist}/{sku}` (tenant/writes/price-corrections.ts), with the
 * signed-in person as the actor and its cost (one item of the ingest rate); they answer a 303 back
 * to this page for the same SKU and list with the outcome. A mark changes only the EU prior price.
 *
 * Only the list's own versions are listed: a list that inherits the price has none to mark, and the
 * page says where the versions are. An unknown list, a SKU without versions and bad input are
 * messages in the form with their status (404, 400), never a 500. The page reads like
 * `GET /price/history` and costs what it costs: one item of the query rate.
 * @module
 */
import { can } from '../../../../accounts/people/roles.js'
import type { PriceErrorMark } from '../../../../engine/catalog.js'
import { codeLengthMax, priceErrorReasonLengthMax, pricelistDepthMax } from '../../../../engine/limits.js'
import { toDecimalString } from '../../../../engine/money.js'
import type { PriceVersion } from '../../../../engine/prices.js'
import { formatInstant, parseInstant } from '../../../../engine/time.js'
import { ApiError, validationError } from '../../../../platform/errors.js'
import type { TenantRuntime } from '../../../../tenant/runtime.js'
import { markPriceErrors, priceErrorMarks, unmarkPriceErrors } from '../../../../tenant/writes/price-corrections.js'
import type { Reply, RootContext } from '../../../contracts.js'
import { statusOf } from '../../../error-status.js'
import { acceptedOrThrow, itemProblem } from '../../../routes/common.js'
import { Code } from '../../../schemas.js'
import { csrfField } from '../../shared/csrf.js'
import { flashOf } from '../../shared/flash.js'
import { backToSession } from '../../shared/form.js'
import { html, type Html } from '../../shared/html.js'
import { dataTable, type Cell, type Column } from '../../shared/table.js'
import type { ConsoleVisit } from '../access.js'
import { consolePage } from '../frame.js'
import { chargeQuery, chargeRate, failedAnswer, type PriceAnswer } from './answer.js'
import { amountText, fieldText, instantText, selectField } from './words.js'

/** The price the page is about: a SKU on a pricelist. */
export interface PricePair {
  readonly sku: string
  readonly pricelist: string
}

/**
 * Versions the table shows at most, newest first (marked ones are always shown, so each mark can be
 * taken back): a prior price looks back 30 days, so the mistakes that matter are recent.
 */
export const correctionVersionsShownMax = 200

/** The page, or the page for one price (the form filled in and the versions shown). */
export function correctionsPath(slug: string, pair?: PricePair): string {
  const path = `/console/${slug}/corrections`
  return pair === undefined ? path : `${path}?${new URLSearchParams({ sku: pair.sku, pricelist: pair.pricelist })}`
}

const markPath = (visit: ConsoleVisit): string => `${correctionsPath(visit.slug)}/mark`
const unmarkPath = (visit: ConsoleVisit): string => `${correctionsPath(visit.slug)}/unmark`

/** The pair as asked (a form's fields, trimmed and bounded as the other price pages read them). */
function pairOf(fields: URLSearchParams): PricePair {
  return { sku: fieldText(fields, 'sku'), pricelist: fieldText(fields, 'pricelist') }
}

/** Refuses (400) an empty or malformed code, as the JSON route checks its path. */
function checkPair(pair: PricePair): void {
  if (pair.sku === '') throw validationError([{ path: '/sku', message: 'required' }], 'Enter a SKU')
  if (pair.pricelist === '') throw validationError([{ path: '/pricelist', message: 'required' }], 'Choose a pricelist')
  const checks = [
    ['/sku', 'SKU', pair.sku],
    ['/pricelist', 'pricelist', pair.pricelist],
  ] as const
  for (const [path, noun, code] of checks) {
    if (itemProblem(Code, code) === null) continue
    throw validationError(
      [{ path, message: 'not a code' }],
      `A ${noun} is 1 to ${codeLengthMax} characters without control characters`,
    )
  }
}

/** One row of the table: a version of the list's own, with its mark if it has one. */
interface VersionRow {
  readonly start: number
  /** Null for a mark whose version is not in the history (not expected: a marked price keeps its history). */
  readonly version: PriceVersion | null
  readonly mark: PriceErrorMark | null
}

/** The list's own versions of the price and their marks, newest first. */
function versionRows(tenant: TenantRuntime, pair: PricePair): VersionRow[] {
  const versions = tenant.prices.versions(pair.pricelist, pair.sku)
  const marks = priceErrorMarks(tenant, pair.sku, pair.pricelist)
  const markByStart = new Map(marks.map((mark) => [mark.start, mark]))
  const rows: VersionRow[] = versions.map((version) => ({
    start: version.from,
    version,
    mark: markByStart.get(version.from) ?? null,
  }))
  const starts = new Set(versions.map((version) => version.from))
  for (const mark of marks) if (!starts.has(mark.start)) rows.push({ start: mark.start, version: null, mark })
  return rows.sort((left, right) => right.start - left.start)
}

/** The list up the parent chain whose own versions give the price, or null when none has any. */
function inheritedFrom(tenant: TenantRuntime, pair: PricePair, nowMs: number): string | null {
  let code = tenant.catalog.get('pricelist', pair.pricelist, nowMs)?.parent_code ?? null
  for (let depth = 1; code !== null && depth < pricelistDepthMax; depth++) {
    if (tenant.prices.versions(code, pair.sku).length > 0) return code
    code = tenant.catalog.get('pricelist', code, nowMs)?.parent_code ?? null
  }
  return null
}

/** A version's start as the page writes it, exact (its name): "2026-11-28 09:46:10 UTC". */
const when = (ms: number): string => instantText(formatInstant(ms))

/** When something was written, to the second. */
const writtenWhen = (ms: number): string => `${new Date(ms).toISOString().slice(0, 19).replace('T', ' ')} UTC`

/**
 * An instant in a table cell, machine-readable in its attribute: its date and its time each kept on
 * one line (app.css), so a narrow column breaks between them, never inside a date.
 */
function timeOf(ms: number, text: (ms: number) => string): Html {
  const [date, ...time] = text(ms).split(' ')
  return html`<time datetime="${formatInstant(ms)}"><span>${date}</span> <span>${time.join(' ')}</span></time>`
}

/** The pricelist select: every list ever written (a mark is allowed on any), a deleted one said so. */
function pricelistOptions(tenant: TenantRuntime): { value: string; label: string }[] {
  return tenant.catalog.keys('pricelist').map((code) => ({
    value: code,
    label: tenant.catalog.isLiveLatest('pricelist', code) ? code : `${code} (deleted)`,
  }))
}

function formHtml(visit: ConsoleVisit, pair: PricePair, message: string | null): Html {
  return html`<form method="get" action="${correctionsPath(visit.slug)}" class="price-form">
${message === null ? null : html`<p class="flash error" role="alert">${message}</p>`}
<label for="sku">SKU</label>
<input id="sku" name="sku" required maxlength="${codeLengthMax}" value="${pair.sku}"
 autocomplete="off" spellcheck="false">
${selectField({ id: 'pricelist', label: 'Pricelist', options: pricelistOptions(visit.tenant), chosen: pair.pricelist })}
<p class="hint">A version marked as an error is left out of the EU prior price (on this list and the lists that inherit it); prices in force are not changed.</p>
<button type="submit">Show the versions</button>
</form>`
}

/** The hidden fields naming a version, for its form. */
function versionFields(visit: ConsoleVisit, pair: PricePair, start: number): Html {
  return html`<input type="hidden" name="${csrfField}" value="${visit.csrf}">
<input type="hidden" name="sku" value="${pair.sku}">
<input type="hidden" name="pricelist" value="${pair.pricelist}">
<input type="hidden" name="start_date" value="${formatInstant(start)}">`
}

function actionsHtml(visit: ConsoleVisit, pair: PricePair, row: VersionRow, index: number): Html | null {
  if (!can(visit.role, 'prices.correct')) return null
  const version = html`<span class="visually-hidden"> (the version of ${when(row.start)})</span>`
  if (row.mark !== null)
    return html`<div class="actions"><form class="inline" method="post" action="${unmarkPath(visit)}">
${versionFields(visit, pair, row.start)}
<button type="submit">Take the mark back${version}</button>
</form></div>`
  return html`<div class="actions"><form class="inline wrap" method="post" action="${markPath(visit)}">
${versionFields(visit, pair, row.start)}
<label class="visually-hidden" for="reason-${index}">Why the version of ${when(row.start)} is an error (optional)</label>
<input id="reason-${index}" name="reason" maxlength="${priceErrorReasonLengthMax}" placeholder="reason (optional)" size="14" autocomplete="off">
<button type="submit">Mark as an error${version}</button>
</form></div>`
}

const columns: readonly Column[] = [
  { title: 'Start (UTC)', rowHeader: true },
  { title: 'Amount', number: true },
  { title: 'Written' },
  { title: 'Status' },
  { title: 'Actions', hiddenTitle: true },
]

function statusCell(mark: PriceErrorMark | null): Cell {
  if (mark === null) return null
  const reason = mark.reason === null || mark.reason === '' ? '' : `: ${mark.reason}`
  return {
    content: `Marked as an error by ${mark.marked_by} at ${writtenWhen(mark.marked_at)}${reason}`,
    className: 'status-failed anywhere',
  }
}

function row(visit: ConsoleVisit, pair: PricePair, currency: string, entry: VersionRow, index: number): Cell[] {
  const { version } = entry
  const amount =
    version === null
      ? 'not in the history'
      : version.content === null
        ? 'deleted'
        : `${amountText(toDecimalString(version.content.sales))} ${currency}`
  return [
    timeOf(entry.start, when),
    amount,
    version === null ? '–' : html`${timeOf(version.writtenAt, writtenWhen)}<br>by ${version.writtenBy}`,
    statusCell(entry.mark),
    actionsHtml(visit, pair, entry, index),
  ]
}

function versionsHtml(visit: ConsoleVisit, pair: PricePair, rows: readonly VersionRow[]): Html {
  const list = visit.tenant.catalog.get('pricelist', pair.pricelist, Number.POSITIVE_INFINITY)
  const currency = list?.currency_code ?? ''
  const shown = rows.filter((entry, index) => index < correctionVersionsShownMax || entry.mark !== null)
  const hidden = rows.length - shown.length
  const marked = rows.filter((entry) => entry.mark !== null).length
  const mode = list === null ? '' : ` (the list's prices are ${list.vat_mode})`
  const who = can(visit.role, 'prices.correct')
    ? null
    : html`<p class="hint">Your role (${visit.role}) cannot mark price versions as errors or take marks back.</p>`
  return html`<section class="answer" aria-labelledby="versions-title">
<h2 id="versions-title">${pair.sku} on ${pair.pricelist}: ${String(rows.length)} ${rows.length === 1 ? 'version' : 'versions'}, ${String(marked)} marked as ${marked === 1 ? 'an error' : 'errors'}</h2>
<p class="hint">Newest first. Amounts are the sales price${mode}; a version is named by its start.</p>
${dataTable(
  `Versions of ${pair.sku} on ${pair.pricelist}`,
  columns,
  shown.map((entry, index) => row(visit, pair, currency, entry, index)),
)}
${hidden === 0 ? null : html`<p class="hint">${String(hidden)} older ${hidden === 1 ? 'version, not marked, is' : 'versions, none of them marked, are'} not shown: the API's price history lists them.</p>`}
${who}
</section>`
}

export async function correctionsPage(context: RootContext, visit: ConsoleVisit): Promise<PriceAnswer> {
  const nowMs = context.nowMs
  const tenant = visit.tenant
  const pair = pairOf(context.query)
  const flash = flashOf(context.query, visit.session)
  const render = (body: Html | null, message: string | null) =>
    consolePage(
      visit,
      'corrections',
      `${visit.slug}: corrections`,
      html`<p>Mark a version of a price as an error: a mistaken price (1.00 typed for 100.00) is then not the lowest price of the next reductions.</p>
${formHtml(visit, pair, message)}${body}`,
      flash,
    )
  if (!context.query.has('sku')) return { status: 200, body: render(null, null) }
  try {
    checkPair(pair)
    if (!tenant.catalog.exists('pricelist', pair.pricelist))
      throw new ApiError('not_found', `There is no pricelist ${pair.pricelist}`)
    // A read of the price's history: it costs what GET /price/history costs.
    await chargeQuery(tenant, 1, nowMs)
    const rows = versionRows(tenant, pair)
    if (rows.length > 0) return { status: 200, body: render(versionsHtml(visit, pair, rows), null) }
    const source = inheritedFrom(tenant, pair, nowMs)
    if (source === null)
      throw new ApiError('not_found', `${pair.pricelist} has no price for ${pair.sku}: there is no version to mark`)
    const message = `${pair.pricelist} has no price of its own for ${pair.sku}: it inherits the price of ${source}, where its versions are marked`
    const link = html`<p><a href="${correctionsPath(visit.slug, { sku: pair.sku, pricelist: source })}">The versions of ${pair.sku} on ${source}</a></p>`
    return { status: 404, body: render(link, message) }
  } catch (error) {
    return failedAnswer(error, (message) => render(null, message))
  }
}

/** The version a form names: its start as the page wrote it (RFC 3339). */
function startOf(form: URLSearchParams): number {
  const text = (form.get('start_date') ?? '').slice(0, 40)
  const start = parseInstant(text)
  if (Number.isNaN(start))
    throw validationError(
      [{ path: '/start_date', message: 'not an instant' }],
      'The form names no version: reload the page',
    )
  return start
}

/** The reason typed, or null when none (at most 500 characters, as the JSON route's). */
function reasonOf(form: URLSearchParams): string | null {
  const reason = (form.get('reason') ?? '').trim()
  if (reason.length > priceErrorReasonLengthMax)
    throw validationError(
      [{ path: '/reason', message: `at most ${priceErrorReasonLengthMax} characters` }],
      `A reason has at most ${priceErrorReasonLengthMax} characters (this one has ${reason.length})`,
    )
  return reason === '' ? null : reason
}

/** A 303 to the page for the pair with the message (signed for the session as every console message is). */
function backToPair(visit: ConsoleVisit, pair: PricePair, message: { notice: string } | { error: string }): Reply {
  const redirect = backToSession(correctionsPath(visit.slug), visit.session, message)
  // backToSession's location carries the message's query; the pair is added to it.
  const location = `${redirect.headers['location']}&${new URLSearchParams({ sku: pair.sku, pricelist: pair.pricelist })}`
  return { status: redirect.status, headers: { ...redirect.headers, location } }
}

/**
 * The form post of "Mark as an error" (`mark`) or "Take the mark back" (`unmark`), for actionRoute
 * (http/pages/console/routes.ts, which has checked the origin, the form token and `prices.correct`):
 * the write layer's outcome goes back to the page as its message.
 */
export function correctionAction(
  kind: 'mark' | 'unmark',
): (context: RootContext, visit: ConsoleVisit, form: URLSearchParams) => Promise<Reply> {
  return async (context, visit, form) => {
    const pair = pairOf(form)
    const writeContext = { nowMs: context.nowMs, actor: visit.email }
    try {
      checkPair(pair)
      const start = startOf(form)
      const reason = kind === 'mark' ? reasonOf(form) : null
      await chargeRate(visit.tenant, 'ingest', 1, context.nowMs)
      const item = { ...pair, start_date: formatInstant(start) }
      const version = `the version of ${pair.sku} on ${pair.pricelist} from ${when(start)}`
      if (kind === 'unmark') {
        acceptedOrThrow(await unmarkPriceErrors(visit.tenant, writeContext, [item]))
        return backToPair(visit, pair, { notice: `Took back the mark on ${version}: the prior price counts it again.` })
      }
      const outcomes = await markPriceErrors(visit.tenant, writeContext, [{ ...item, reason }])
      acceptedOrThrow(outcomes)
      const notice =
        outcomes[0]!.status === 'unchanged'
          ? `Already marked: ${version} keeps its first mark.`
          : `Marked ${version} as an error: the prior price leaves it out.`
      return backToPair(visit, pair, { notice })
    } catch (error) {
      if (error instanceof ApiError && statusOf(error) !== 403) return backToPair(visit, pair, { error: error.message })
      throw error
    }
  }
}
