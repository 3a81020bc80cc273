/**
 * "Changelog" (`/console/{slug}/changelog`, issue 30 point 5): the tenant's changelog as a person
 * reads it, newest first, 50 entries a page with "Newer" and "Older" links. A GET form filters on
 * the entity type (in words; "Effective prices" are the events of docs/api.md "Effective-price
 * events"), on an effective-price event's cause, and on a code (the entry's code or composite key:
 * a SKU, a pricelist, a tax area, exactly). A row: sequence, when (UTC), type, what (the code and
 * composite key in words), the change, by whom (an API key by its name); an effective-price event
 * adds its tax area, gross and net before → after with the currency, its moment and its cause; a
 * summary says how many SKUs of the list changed and links to "what changes" between the
 * millisecond before the moment and the moment (the summary's own `diff`).
 *
 * Newest first over a log the store reads forward (`readLog(from, limit, type)`): a page is
 * searched backwards in windows of sequences. A window that holds no more entries of the type than
 * one read takes is read whole (at most one read's worth past its top is read and dropped); an
 * over-full one is halved and read again; one read whole that held less than half a read doubles
 * the next. So a search costs a few reads of at most 51 entries (no cause or code filter) or 500
 * (a filter that tests each entry), and examines at most 5,000 entries: past that the page shows
 * what it found, says so, and its "Older" (or "Newer") link goes on from where the search stopped.
 * A page makes one search, and a short one more to tell whether its other link leads anywhere.
 * Sequences name positions, so the links are plain `before=N` (entries below N) and `after=N`
 * (above N); a "Newer" page that reaches the newest entry is the first page. The page reads like
 * `GET /changelog` and costs what it costs: one item of the query rate (a bad filter, refused
 * first, costs nothing). Bad filter values are a 400 message in the form, never a 500.
 *
 * It sits beside the console's other pages rather than the price pages (the log is more than
 * prices), but every role reads it with `prices.read`, as the price pages.
 * @module
 */
import { entityTypes, type EntityType } from '../../../engine/catalog.js'
import { effectiveCauses, type EffectiveCause } from '../../../engine/effective-price/changes.js'
import { codeLengthMax } from '../../../engine/limits.js'
import { parseInstant } from '../../../engine/time.js'
import { validationError } from '../../../platform/errors.js'
import type { LogEntry } from '../../../storage/log-entry.js'
import type { TenantStore } from '../../../storage/tenant-store.js'
import { renderEntries } from '../../../tenant/changelog.js'
import type { RootContext } from '../../contracts.js'
import { itemProblem } from '../../routes/common.js'
import { Code } from '../../schemas.js'
import { html, type Html } from '../shared/html.js'
import { dataTable, type Cell, type Column } from '../shared/table.js'
import type { ConsoleVisit } from './access.js'
import { consolePage } from './frame.js'
import { chargeQuery, failedAnswer, type PriceAnswer } from './prices/answer.js'
import { amountText, effectiveCauseWords, fieldText, instantText, selectField, wordsOf } from './prices/words.js'

/** Entries a page shows: what a person scans at once, and a short page on a phone. */
export const changelogPageEntries = 50
/** Entries one read takes when a cause or code filter tests each (fewer match than are read). */
const filteredReadEntries = 500
/** Entries one search examines at most: past it the page shows what it found, and its link goes on. */
export const changelogExaminedMax = 5_000
/** Reads one search makes at most (halving an over-full window is a read too). */
const searchReadsMax = 64

/** An entity type in words: a row's, the filter's option, and what an entry names (its code and key). */
interface TypeWords {
  readonly one: string
  readonly all: string
  readonly what: (code: string, key: string | null) => string
}

const onList = (code: string, key: string | null): string => (key === null ? code : `${code} on ${key}`)
const alone = (code: string): string => code

const typeWords: Readonly<Record<EntityType, TypeWords>> = {
  article: { one: 'Article', all: 'Articles', what: alone },
  pricelist: { one: 'Pricelist', all: 'Pricelists', what: alone },
  price: { one: 'Price', all: 'Prices', what: onList },
  currency: { one: 'Currency', all: 'Currencies', what: alone },
  vat_rate: { one: 'VAT rate', all: 'VAT rates', what: (code, key) => `${key ?? '?'} in ${code}` },
  vat_class: { one: 'VAT class', all: 'VAT classes', what: alone },
  tax_area: { one: 'Tax area', all: 'Tax areas', what: alone },
  fx_rate: { one: 'Exchange rate', all: 'Exchange rates', what: (code, key) => `${code} → ${key ?? '?'}` },
  rounding_profile: { one: 'Rounding profile', all: 'Rounding profiles', what: alone },
  settings: { one: 'Setting', all: 'Settings', what: alone },
  bundle_rule: { one: 'Bundle rule', all: 'Bundle rules', what: onList },
  article_taxclass: {
    one: "Article's VAT class",
    all: "Articles' VAT classes",
    what: (code, key) => (key === null ? code : `${code} in ${key}`),
  },
  price_correction: { one: 'Price correction', all: 'Price corrections (versions marked as errors)', what: onList },
  effective_price: { one: 'Effective price', all: "Effective prices (when a shopper's price changed)", what: onList },
}

const changeWords: Readonly<Record<string, string>> = { created: 'Created', updated: 'Updated', deleted: 'Deleted' }
/** An effective-price event's change: `created` is a price where there was none, `deleted` none any more. */
const effectiveChangeWords: Readonly<Record<string, string>> = {
  created: 'Now priced',
  updated: 'Price changed',
  deleted: 'No longer priced',
}

// ---------------------------------------------------------------------------------------------
// The form

interface ChangelogForm {
  readonly entityType: string
  readonly cause: string
  readonly code: string
  readonly before: string
  readonly after: string
}

interface Filter {
  readonly entityType: EntityType | null
  readonly cause: EffectiveCause | null
  readonly code: string
}

/** Where a page starts: the newest entries, those below a sequence, or those above one. */
type Position =
  | { readonly kind: 'newest' }
  | { readonly kind: 'before'; readonly sequence: number }
  | { readonly kind: 'after'; readonly sequence: number }

function readForm(query: URLSearchParams): ChangelogForm {
  return {
    entityType: fieldText(query, 'entity_type', 40),
    cause: fieldText(query, 'cause', 40),
    code: fieldText(query, 'code'),
    before: fieldText(query, 'before', 40),
    after: fieldText(query, 'after', 40),
  }
}

function filterOf(form: ChangelogForm): Filter {
  if (form.entityType !== '' && !(entityTypes as readonly string[]).includes(form.entityType))
    throw validationError(
      [{ path: '/entity_type', message: `must be one of ${entityTypes.join(', ')}` }],
      `There is no type of change "${form.entityType}": choose one from the list`,
    )
  if (form.cause !== '' && !(effectiveCauses as readonly string[]).includes(form.cause))
    throw validationError(
      [{ path: '/cause', message: `must be one of ${effectiveCauses.join(', ')}` }],
      `There is no cause "${form.cause}": choose one from the list`,
    )
  if (form.cause !== '' && form.entityType !== 'effective_price')
    throw validationError(
      [{ path: '/cause', message: 'only with entity_type effective_price' }],
      'A cause belongs to effective-price events: choose "Effective prices" as the type',
    )
  if (form.code !== '' && itemProblem(Code, form.code) !== null)
    throw validationError(
      [{ path: '/code', message: 'not a code' }],
      `A code is 1 to ${codeLengthMax} characters without control characters`,
    )
  return {
    entityType: form.entityType === '' ? null : (form.entityType as EntityType),
    cause: form.cause === '' ? null : (form.cause as EffectiveCause),
    code: form.code,
  }
}

const sequenceText = /^[0-9]{1,15}$/

function positionOf(form: ChangelogForm): Position {
  for (const [name, value] of [
    ['before', form.before],
    ['after', form.after],
  ] as const)
    if (value !== '' && !sequenceText.test(value))
      throw validationError(
        [{ path: `/${name}`, message: 'must be a sequence number' }],
        `"${value}" is not a sequence number: use the page's Newer and Older links`,
      )
  if (form.before !== '' && form.after !== '')
    throw validationError(
      [{ path: '/before', message: 'not with after' }],
      'A page starts before a sequence or after one, not both',
    )
  if (form.before !== '') return { kind: 'before', sequence: Number(form.before) }
  if (form.after !== '') return { kind: 'after', sequence: Number(form.after) }
  return { kind: 'newest' }
}

/** A phrase as an option's label: its first letter a capital. */
const capitalised = (text: string): string => `${text.charAt(0).toUpperCase()}${text.slice(1)}`

function formHtml(visit: ConsoleVisit, form: ChangelogForm, message: string | null): Html {
  const types = [
    { value: '', label: 'All changes' },
    ...entityTypes.map((type) => ({ value: type, label: typeWords[type].all })),
  ]
  const causes = [
    { value: '', label: 'Any cause' },
    ...effectiveCauses.map((cause) => ({ value: cause, label: capitalised(effectiveCauseWords[cause]) })),
  ]
  return html`<form method="get" action="/console/${visit.slug}/changelog" class="price-form">
${message === null ? null : html`<p class="flash error" role="alert">${message}</p>`}
${selectField({ id: 'entity_type', label: 'Type', options: types, chosen: form.entityType })}
${selectField({ id: 'cause', label: 'Cause (effective prices only)', options: causes, chosen: form.cause })}
<label for="code">SKU or code (optional)</label>
<input id="code" name="code" maxlength="${codeLengthMax}" value="${form.code}" autocomplete="off" spellcheck="false"
 aria-describedby="code-hint">
<p class="hint" id="code-hint">Only the changes of exactly this SKU, pricelist or other code; a pricelist's
 code also finds the prices and events on it.</p>
<button type="submit">Show the changes</button>
</form>`
}

// ---------------------------------------------------------------------------------------------
// The search: newest first over a log read forward

/** What a search found (in its direction) and, when its budget ran out first, where it stopped. */
interface Found {
  readonly entries: LogEntry[]
  /**
   * The first sequence not searched (going older: the exclusive top of what is left; going newer:
   * the next one); null when the search reached the end.
   */
  readonly stoppedAt: number | null
}

function causeOf(entry: LogEntry): unknown {
  if (entry.detail === undefined) return null
  const detail: unknown = JSON.parse(entry.detail)
  return typeof detail === 'object' && detail !== null ? (detail as { cause?: unknown }).cause : null
}

/** The test of the filter's cause and code on an entry of its type; null when there is none. */
function matcherOf(filter: Filter): ((entry: LogEntry) => boolean) | null {
  const { cause, code } = filter
  if (cause === null && code === '') return null
  return (entry) =>
    (code === '' || entry.entityCode === code || entry.compositeKey === code) &&
    (cause === null || causeOf(entry) === cause)
}

/**
 * Up to `wanted` entries of the filter below `before`, newest first: windows of sequences read
 * backwards, each read whole when one read covers it (else halved and read again).
 */
function searchOlder(store: TenantStore, before: number, filter: Filter, wanted: number): Found {
  const test = matcherOf(filter)
  const readEntries = test === null ? wanted : filteredReadEntries
  const oldest = store.oldestSequence()
  const found: LogEntry[] = []
  let high = Math.min(before - 1, store.durableSequence)
  let span = readEntries
  let examined = 0
  for (let reads = 0; high >= oldest && found.length < wanted; reads++) {
    if (reads === searchReadsMax || examined >= changelogExaminedMax) return { entries: found, stoppedAt: high + 1 }
    const low = Math.max(oldest, high - span + 1)
    const chunk = store.readLog(low, readEntries, filter.entityType)
    examined += chunk.length
    let inside = chunk.length
    while (inside > 0 && chunk[inside - 1]!.sequence > high) inside--
    // Whole when the read went past the window's top, ended before its limit, or ended on the top.
    const whole = inside < chunk.length || chunk.length < readEntries || chunk[inside - 1]!.sequence === high
    if (!whole) {
      span = Math.max(1, Math.floor(span / 2))
      continue
    }
    for (let index = inside - 1; index >= 0 && found.length < wanted; index--)
      if (test === null || test(chunk[index]!)) found.push(chunk[index]!)
    high = low - 1
    // A window that held few entries of the kind doubles; one near a read's worth keeps its size.
    if (inside < readEntries / 2) span *= 2
  }
  return { entries: found, stoppedAt: null }
}

/** Up to `wanted` entries of the filter above `after`, oldest first. */
function searchNewer(store: TenantStore, after: number, filter: Filter, wanted: number): Found {
  const test = matcherOf(filter)
  const readEntries = test === null ? wanted : filteredReadEntries
  const found: LogEntry[] = []
  let from = Math.max(after + 1, store.oldestSequence())
  let examined = 0
  for (let reads = 0; ; reads++) {
    if (reads === searchReadsMax || examined >= changelogExaminedMax) return { entries: found, stoppedAt: from }
    const chunk = store.readLog(from, readEntries, filter.entityType)
    examined += chunk.length
    for (const entry of chunk) {
      if (test !== null && !test(entry)) continue
      found.push(entry)
      if (found.length === wanted) return { entries: found, stoppedAt: null }
    }
    if (chunk.length < readEntries) return { entries: found, stoppedAt: null }
    from = chunk[chunk.length - 1]!.sequence + 1
  }
}

/** A page: its entries newest first, the `before` of its Older link and the `after` of its Newer link. */
interface Listing {
  readonly entries: readonly LogEntry[]
  readonly older: number | null
  readonly newer: number | null
  /** Set when the search stopped on its budget: the page is short, and its link goes on. */
  readonly stopped: boolean
  /** The first page: the newest entries (also what a "Newer" page that reaches the newest shows). */
  readonly first: boolean
}

/** Whether anything of the filter is older than `before` (or the search could not tell within its budget). */
function hasOlder(store: TenantStore, before: number, filter: Filter): boolean {
  const found = searchOlder(store, before, filter, 1)
  return found.entries.length > 0 || found.stoppedAt !== null
}

function hasNewer(store: TenantStore, after: number, filter: Filter): boolean {
  const found = searchNewer(store, after, filter, 1)
  return found.entries.length > 0 || found.stoppedAt !== null
}

function listing(store: TenantStore, filter: Filter, position: Position): Listing {
  const size = changelogPageEntries
  if (position.kind === 'after') {
    const forward = searchNewer(store, position.sequence, filter, size + 1)
    if (forward.entries.length > size || forward.stoppedAt !== null) {
      const entries = forward.entries.slice(0, size)
      const newer = forward.stoppedAt === null ? entries[size - 1]!.sequence : forward.stoppedAt - 1
      const bottom = entries[0]?.sequence ?? position.sequence + 1
      const older = hasOlder(store, bottom, filter) ? bottom : null
      return { entries: entries.reverse(), older, newer, stopped: forward.stoppedAt !== null, first: false }
    }
    // Nothing newer beyond this page: it is the first page, full.
    return listing(store, filter, { kind: 'newest' })
  }
  const top = position.kind === 'before' ? position.sequence : store.durableSequence + 1
  const backward = searchOlder(store, top, filter, size + 1)
  const entries = backward.entries.slice(0, size)
  const older = backward.stoppedAt ?? (backward.entries.length > size ? entries[size - 1]!.sequence : null)
  const after = entries[0]?.sequence ?? Math.min(top, store.durableSequence + 1) - 1
  const newer = position.kind === 'before' && hasNewer(store, after, filter) ? after : null
  return { entries, older, newer, stopped: backward.stoppedAt !== null, first: position.kind === 'newest' }
}

// ---------------------------------------------------------------------------------------------
// The rows

interface Amounts {
  readonly net: unknown
  readonly gross: unknown
}

/** An entry as GET /changelog renders it, read for the page. */
interface Row {
  readonly sequence: number
  readonly entityType: string
  readonly changeType: string
  readonly code: string
  readonly key: string | null
  readonly changedAt: string
  readonly changedBy: string
  /** An effective-price event's own fields; null for the other types. */
  readonly effect: Effect | null
}

interface Effect {
  readonly taxArea: string
  readonly currency: string
  readonly before: Amounts | null
  readonly after: Amounts | null
  readonly effectiveAt: string
  readonly cause: string
  readonly summary: boolean
  readonly inSummary: boolean
  readonly count: number
  /** A summary's diff: from the millisecond before the moment. */
  readonly diffFrom: string
}

const textOf = (value: unknown): string => (typeof value === 'string' ? value : '')
const amountsOf = (value: unknown): Amounts | null =>
  typeof value === 'object' && value !== null ? (value as Amounts) : null

function effectOf(rendered: Record<string, unknown>): Effect | null {
  if (rendered['entity_type'] !== 'effective_price') return null
  const diff = rendered['diff']
  const diffFrom = typeof diff === 'object' && diff !== null ? (diff as { from?: unknown }).from : undefined
  return {
    taxArea: textOf(rendered['tax_area']),
    currency: textOf(rendered['currency_code']),
    before: amountsOf(rendered['old']),
    after: amountsOf(rendered['new']),
    effectiveAt: textOf(rendered['effective_at']),
    cause: textOf(rendered['cause']),
    summary: rendered['summary'] === true,
    inSummary: rendered['in_summary'] === true,
    count: typeof rendered['count'] === 'number' ? rendered['count'] : 0,
    diffFrom: textOf(diffFrom),
  }
}

function rowsOf(entries: readonly LogEntry[]): Row[] {
  return renderEntries(entries).map((rendered) => ({
    sequence: rendered['sequence'] as number,
    entityType: textOf(rendered['entity_type']),
    changeType: textOf(rendered['change_type']),
    code: textOf(rendered['entity_code']),
    key: typeof rendered['composite_key'] === 'string' ? rendered['composite_key'] : null,
    changedAt: textOf(rendered['changed_at']),
    changedBy: textOf(rendered['changed_by']),
    effect: effectOf(rendered),
  }))
}

const count = new Intl.NumberFormat('en-US')

/** An instant in a cell: its date and its time each kept on one line (app.css), machine-readable. */
function timeCell(instant: string): Html {
  const [date, ...time] = instantText(instant).split(' ')
  return html`<time datetime="${instant}"><span>${date}</span> <span>${time.join(' ')}</span></time>`
}

function typeText(type: string): string {
  return Object.hasOwn(typeWords, type) ? typeWords[type as EntityType].one : type
}

function whatText(row: Row): string {
  if (!Object.hasOwn(typeWords, row.entityType)) return row.key === null ? row.code : `${row.code} / ${row.key}`
  return typeWords[row.entityType as EntityType].what(row.code, row.key)
}

function changeText(row: Row): string {
  if (row.effect?.summary === true) return 'Prices changed'
  return wordsOf(row.effect === null ? changeWords : effectiveChangeWords, row.changeType)
}

/** One side of a change: the amount with its currency, or "no price". */
function sideText(amounts: Amounts | null, field: 'net' | 'gross', currency: string): string {
  return amounts === null ? 'no price' : `${amountText(amounts[field])} ${currency}`
}

/** "What changes" for a summary's list, from the millisecond before its moment to the moment. */
function changesLink(slug: string, row: Row, effect: Effect): string {
  const moment = parseInstant(effect.effectiveAt)
  const query = new URLSearchParams({
    pricelist: row.code,
    tax_area: effect.taxArea,
    currency: effect.currency,
    // A datetime-local value (UTC, to the millisecond), so that the form shows it again.
    moment: Number.isNaN(moment) ? effect.effectiveAt : new Date(moment).toISOString().slice(0, 23),
    since: effect.diffFrom,
  })
  return `/console/${slug}/changes?${query.toString()}`
}

/** An effective-price event's amounts (or a summary's count), tax area and moment. */
function priceHtml(slug: string, row: Row, effect: Effect): Html {
  const where = html`Tax area ${effect.taxArea}, from ${timeCell(effect.effectiveAt)}`
  if (effect.summary) {
    const skus = `${count.format(effect.count)} ${effect.count === 1 ? 'SKU' : 'SKUs'} on ${row.code} changed`
    const link = effect.diffFrom === '' ? skus : html`<a href="${changesLink(slug, row, effect)}">${skus}</a>`
    return html`${link}<br>${where}`
  }
  const { before, after, currency } = effect
  return html`Gross ${sideText(before, 'gross', currency)} → ${sideText(after, 'gross', currency)}<br>
Net ${sideText(before, 'net', currency)} → ${sideText(after, 'net', currency)}<br>${where}`
}

function causeText(effect: Effect): string {
  const part = effect.inSummary ? " (one SKU of its list's summary)" : ''
  return `${wordsOf(effectiveCauseWords, effect.cause)}${part}`
}

/** Who wrote it: an API key by its name, the service itself, or a person's e-mail. */
type KeyName = (clientId: string) => string | null

function byText(changedBy: string, keyName: KeyName): string {
  if (changedBy === 'system') return 'the service'
  const name = keyName(changedBy)
  return name === null ? changedBy : `API key "${name}" (${changedBy})`
}

/** A column of the table and how a row fills it. */
interface RowColumn extends Column {
  readonly cell: (row: Row) => Cell
}

function columnsOf(filter: Filter, slug: string, keyName: KeyName): RowColumn[] {
  const effective = filter.entityType === 'effective_price'
  const columns: (RowColumn | null)[] = [
    { title: 'Sequence', rowHeader: true, cell: (row) => `#${row.sequence}` },
    { title: 'When (UTC)', cell: (row) => timeCell(row.changedAt) },
    filter.entityType === null ? { title: 'Type', cell: (row) => typeText(row.entityType) } : null,
    { title: 'What', cell: (row) => ({ content: whatText(row), className: 'anywhere' }) },
    { title: 'Change', cell: changeText },
    effective ? { title: "Shopper's price", cell: (row) => priceHtml(slug, row, row.effect!) } : null,
    effective ? { title: 'Why', cell: (row) => causeText(row.effect!) } : null,
    { title: 'By', cell: (row) => ({ content: byText(row.changedBy, keyName), className: 'anywhere' }) },
    filter.entityType === null
      ? {
          title: 'Details',
          cell: (row) =>
            row.effect === null ? '–' : html`${priceHtml(slug, row, row.effect)}<br>Why: ${causeText(row.effect)}`,
        }
      : null,
  ]
  return columns.filter((column): column is RowColumn => column !== null)
}

// ---------------------------------------------------------------------------------------------
// The page

/** What the filter shows, in words: the heading of the table. */
function filterTitle(filter: Filter): string {
  const type = filter.entityType === null ? 'All changes' : typeWords[filter.entityType].all
  const cause = filter.cause === null ? '' : `, cause: ${effectiveCauseWords[filter.cause]}`
  const code = filter.code === '' ? '' : `, code ${filter.code}`
  return `${type}${cause}${code}`
}

/** The filter's fields of the form, for the page's links (empty ones left out). */
function filterQuery(form: ChangelogForm): URLSearchParams {
  const query = new URLSearchParams()
  if (form.entityType !== '') query.set('entity_type', form.entityType)
  if (form.cause !== '') query.set('cause', form.cause)
  if (form.code !== '') query.set('code', form.code)
  return query
}

function pageLink(slug: string, form: ChangelogForm, side?: { name: 'before' | 'after'; sequence: number }): string {
  const query = filterQuery(form)
  if (side !== undefined) query.set(side.name, String(side.sequence))
  const text = query.toString()
  return `/console/${slug}/changelog${text === '' ? '' : `?${text}`}`
}

function pagerHtml(slug: string, form: ChangelogForm, page: Listing): Html | null {
  const links = [
    page.first ? null : html`<li><a href="${pageLink(slug, form)}">Newest</a></li>`,
    page.newer === null
      ? null
      : html`<li><a href="${pageLink(slug, form, { name: 'after', sequence: page.newer })}" rel="prev">Newer</a></li>`,
    page.older === null
      ? null
      : html`<li><a href="${pageLink(slug, form, { name: 'before', sequence: page.older })}" rel="next">Older</a></li>`,
  ].filter((link) => link !== null)
  return links.length === 0 ? null : html`<nav class="pager" aria-label="Changelog pages"><ul>${links}</ul></nav>`
}

function countText(page: Listing, position: Position): string {
  const { entries } = page
  if (entries.length === 0) {
    const none = page.first ? 'No changes' : position.kind === 'before' ? 'No older changes' : 'No newer changes'
    return page.stopped ? `${none} among the entries searched.` : `${none}.`
  }
  const noun = entries.length === 1 ? 'change' : 'changes'
  const range = `sequences ${count.format(entries[0]!.sequence)} down to ${count.format(entries[entries.length - 1]!.sequence)}`
  return `${count.format(entries.length)} ${noun}, newest first: ${range}.`
}

function listingHtml(
  visit: ConsoleVisit,
  form: ChangelogForm,
  filter: Filter,
  page: Listing,
  position: Position,
  keyName: KeyName,
): Html {
  const store = visit.tenant.store
  const oldest = store.oldestSequence()
  const held =
    oldest > store.durableSequence
      ? 'The changelog holds no entries.'
      : `The changelog holds sequences ${count.format(oldest)} to ${count.format(store.durableSequence)}.`
  const stopped = page.stopped
    ? html`<p class="hint">A page searches at most ${count.format(changelogExaminedMax)} entries of the log; its links search on from where it stopped.</p>`
    : null
  const columns = columnsOf(filter, visit.slug, keyName)
  const filtered = filter.entityType !== null || filter.code !== ''
  const empty = filtered
    ? 'Another type, cause or code may find some.'
    : 'Every write through the API or the console shows here.'
  return html`<section aria-labelledby="changelog-title">
<h2 id="changelog-title">${filterTitle(filter)}</h2>
<p role="status" class="count">${countText(page, position)}</p>
<p class="hint">${held}</p>
${stopped}
${dataTable(
  'Changelog entries',
  columns,
  rowsOf(page.entries).map((row) => columns.map((column) => column.cell(row))),
  empty,
)}
${pagerHtml(visit.slug, form, page)}
</section>`
}

export async function changelogPage(context: RootContext, visit: ConsoleVisit): Promise<PriceAnswer> {
  const form = readForm(context.query)
  const render = (body: Html | null, message: string | null) =>
    consolePage(
      visit,
      'changelog',
      `${visit.slug}: changelog`,
      html`<p>Every change recorded for the tenant, newest first: what was written, by whom, and when a shopper's price changed.</p>
${formHtml(visit, form, message)}${body}`,
      null,
    )
  try {
    const filter = filterOf(form)
    const position = positionOf(form)
    // A page of the log: it costs what GET /changelog costs.
    await chargeQuery(visit.tenant, 1, context.nowMs)
    const page = listing(visit.tenant.store, filter, position)
    const names = new Map<string, string | null>()
    const keyName: KeyName = (clientId) => {
      if (!names.has(clientId)) {
        const record = context.deps.system.keys.get(clientId)
        names.set(clientId, record !== undefined && record.tenant === visit.slug ? record.name : null)
      }
      return names.get(clientId)!
    }
    return { status: 200, body: render(listingHtml(visit, form, filter, page, position, keyName), null) }
  } catch (error) {
    return failedAnswer(error, (message) => render(null, message))
  }
}
