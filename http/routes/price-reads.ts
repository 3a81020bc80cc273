/**
 * Price reads: the price query, the taxed single read (strong ETag, 304), the raw read after
 * inheritance and rules, stored records (GET /price), history, skus-for-pricelist and
 * pricelists-for-sku.
 * @module
 */
import { assert } from '../../engine/assert.js'
import { errorHeaders, HttpError } from '../error-status.js'
import * as crypto from 'node:crypto'
import { Type } from '@sinclair/typebox'
import type { Catalog } from '../../engine/catalog.js'
import { batchItemsMax, codeLengthMax } from '../../engine/limits.js'
import { pricelistActiveAt } from '../../engine/pricelists.js'
import { defaultTaxArea, PriceContext } from '../../engine/pipeline.js'
import { resolveProfile } from '../../engine/rounding.js'
import { settingEnabled } from '../../engine/settings.js'
import { formatInstant, parseInstant } from '../../engine/time.js'
import { route, type TenantContext, type TenantRoute } from '../contracts.js'
import { ApiError, notFound, validationError } from '../../platform/errors.js'
import { AsOfQuery, Code, CurrencyCode, DateTime, Page, PageQuery, Quantity, VatMode } from '../schemas.js'
import { page, quantityValue, readInstant } from './common.js'
import { PricelistFilter, pricelistFilterMatcher, PricelistResponse, renderPricelist } from './pricelists.js'
import { explainCostFactor, explainQuery, explainReadJson, explainSkusMax, Trace } from './price-explain.js'
import { omnibusDays, PriorPrice, priorPriceCostFactor, priorPriceQuery, priorPriceSkusMax } from './price-prior.js'
import { withPriorPrice } from '../../workers/prior-price-query.js'
import { pricedSkus } from '../../engine/effective-price/changes.js'
import { RenderedContent, renderContent } from './price-writes.js'
import type { PriceReadInput, PriceReadOutcome } from '../../engine/price-read.js'
import type { PriceReader } from '../../engine/price-replica.js'
import type { QueryInput } from '../../workers/execute.js'
import { itemJson, renderItem } from '../../workers/render.js'
import {
  dispatchLargeQuery,
  dispatchRead,
  dispatchReads,
  dispatchSmallQuery,
  type Dispatched,
  type Engine,
  type QueryAnswer,
} from '../../tenant/price-dispatch.js'

export const PriceQueryBody = Type.Object(
  {
    currency_code: CurrencyCode,
    pricelist_filter: PricelistFilter,
    // Length bounds only (no pattern): a query reads, and a SKU with odd characters is just not found.
    // Checking 1,000 SKUs against a pattern costs more than the rest of a cached answer.
    skus: Type.Array(Type.String({ minLength: 1, maxLength: codeLengthMax }), { maxItems: batchItemsMax }),
    tax_area: Type.String({ maxLength: codeLengthMax }),
    as_of: Type.Optional(DateTime),
    rounding_profile: Type.Optional(Type.String({ minLength: 1, maxLength: codeLengthMax })),
    sort_order: Type.Optional(Type.Union([Type.Literal('ASC'), Type.Literal('DESC')])),
    quantity: Type.Optional(Quantity(1e9)),
    explain: Type.Optional(
      Type.Boolean({ description: `true: each item gains a trace (at most ${explainSkusMax} SKUs)` }),
    ),
    prior_price: Type.Optional(
      Type.Boolean({
        description: `true: each item gains its EU prior price (at most ${priorPriceSkusMax} SKUs; not with explain)`,
      }),
    ),
  },
  { additionalProperties: false },
)
export type PriceQueryValue = typeof PriceQueryBody.static

const QueryItem = Type.Object({
  sku: Type.String(),
  pricelist: Type.String(),
  currency_code: Type.String(),
  vat_mode: Type.String(),
  net: Type.Number(),
  vat: Type.Number(),
  gross: Type.Number(),
  vat_rate: Type.Number(),
  vat_class: Type.String(),
  inherited: Type.Boolean(),
  quantity_breaks: Type.Array(
    Type.Object({ quantity_break: Type.Number(), net: Type.Number(), vat: Type.Number(), gross: Type.Number() }),
  ),
  fx: Type.Union([
    Type.Object({ base: Type.String(), quote: Type.String(), rate: Type.Number(), as_of: Type.String() }),
    Type.Null(),
  ]),
})
export const PriceQueryAnswer = Type.Object({
  items: Type.Array(
    Type.Object({ ...QueryItem.properties, trace: Type.Optional(Trace), prior_price: Type.Optional(PriorPrice) }),
  ),
  unavailable: Type.Array(Type.Object({ sku: Type.String(), reason: Type.String(), trace: Type.Optional(Trace) })),
})
/** The single read's answer: a query item and the tax area it was taxed in (and its trace with explain). */
const PriceAnswer = Type.Object({
  ...QueryItem.properties,
  tax_area: Type.String(),
  trace: Type.Optional(Trace),
  prior_price: Type.Optional(PriorPrice),
})
const PriceDefinitionAnswer = Type.Object({
  sku: Type.String(),
  pricelist: Type.String(),
  currency_code: Type.String(),
  vat_mode: VatMode,
  ...RenderedContent,
  start_date: Type.Union([DateTime, Type.Null()], { description: 'start of the version in force; null for a bundle' }),
  inherited: Type.Boolean(),
  source_pricelist: Type.String({ description: 'the pricelist whose own price (or bundle rule) gave the base' }),
})
const StoredPrice = Type.Object({
  sku: Type.String(),
  pricelist: Type.String(),
  ...RenderedContent,
  start_date: DateTime,
  updated_at: DateTime,
  updated_by: Type.String(),
})
const HistoryEntry = Type.Object({
  change_at: DateTime,
  meta: Type.Object({
    inherited: Type.Boolean(),
    start_at: DateTime,
    updated_at: DateTime,
    updated_by: Type.String(),
    source_pricelist: Type.String(),
  }),
  price: Type.Union([RenderedContent.price, Type.Null()], { description: 'null: the price was deleted then' }),
  quantity_breaks: RenderedContent.quantity_breaks,
})
const SkusAnswer = Type.Union([
  Type.Object({
    items: Type.Array(Type.String()),
    next_cursor: Type.Union([Type.String(), Type.Null()]),
    has_more: Type.Boolean(),
  }),
  Type.Object(
    { ...Page(Type.String()).properties },
    { description: 'with page or size (deprecated): a numbered page' },
  ),
])
const PricelistWithPrice = Type.Object({
  pricelist: PricelistResponse,
  price: Type.Union([QueryItem, Type.Null()], {
    description: 'with currency_code: the price in it, null when it cannot be given',
  }),
})

export { renderItem }

/** Rounding profile of a request: none, `default`, or a code (404 when absent). */
export function roundingFor(catalog: Catalog, requested: string | undefined, currency: string, at: number) {
  const profile = resolveProfile(catalog, requested, currency, at)
  if (profile === 'not_found') throw notFound(`Rounding profile ${requested}`)
  return profile === null ? null : profile.compiled
}

/** What a query reads: a tenant's state, or a dry run's (tenant/simulate/). */
export interface QueryState {
  readonly catalog: Catalog
  readonly prices: PriceReader
}

/** Selects the pricelists of a query: filter, live and active at the instant, homogeneity checks. */
export function selectPricelists(
  tenant: QueryState,
  body: Pick<PriceQueryValue, 'pricelist_filter' | 'tax_area' | 'currency_code'>,
  at: number,
): string[] {
  const matcher = pricelistFilterMatcher(body.pricelist_filter)
  const selected: string[] = []
  const currencies = new Set<string>()
  const modes = new Set<string>()
  const context = new PriceContext(tenant.catalog, tenant.prices, at, body.tax_area)
  for (const [code, view] of tenant.catalog.viewsAt('pricelist', at)) {
    if (!pricelistActiveAt(view.value, at) || !matcher(code, view.value)) continue
    selected.push(code)
    currencies.add(view.value.currency_code)
    const mode = context.pricelist(code)?.vatMode
    if (mode !== null && mode !== undefined) modes.add(mode)
  }
  if (selected.length === 0)
    throw validationError(
      [{ path: '/pricelist_filter', message: 'selects no active pricelist' }],
      'The pricelist filter selects no active pricelist',
    )
  if (settingEnabled(tenant.catalog, 'require.homogeneous.currency', at)) {
    const sorted = [...currencies].sort()
    if (sorted.length > 1) {
      throw validationError(
        [{ path: '/pricelist_filter', message: 'heterogeneous currencies' }],
        `Heterogeneous currencies found in pricelists: [${sorted.join(', ')}]. All pricelists must have the same currency when setting require.homogeneous.currency is enabled.`,
      )
    }
    if (sorted[0] !== body.currency_code) throw currencyMismatch(sorted[0]!, body.currency_code)
  }
  if (settingEnabled(tenant.catalog, 'require.homogeneous.vat_mode', at) && modes.size > 1) {
    throw validationError(
      [{ path: '/pricelist_filter', message: 'heterogeneous VAT modes' }],
      `Heterogeneous VAT modes found in pricelists: [${[...modes].sort().join(', ')}]. All pricelists must have the same VAT mode when setting require.homogeneous.vat_mode is enabled.`,
    )
  }
  return selected.sort()
}

/** The spec's message for a requested currency other than the pricelist's (require.homogeneous.currency). */
function currencyMismatch(pricelistCurrency: string, requested: string): ApiError {
  return validationError(
    [{ path: '/currency_code', message: 'currency mismatch' }],
    `Pricelist currency ${pricelistCurrency} does not match requested currency ${requested}`,
  )
}

/**
 * Validates and selects on the main thread (cheap), then resolves: inline below the worker
 * threshold while the rules fit the main thread's allowance, else on a worker thread (or inline
 * when the pool's queue is full): ./price-dispatch.ts.
 */
function runQuery(context: TenantContext<PriceQueryValue>): QueryAnswer | Promise<QueryAnswer> {
  const { tenant, body } = context
  const input = queryInput(tenant, body, context.nowMs)
  if (body.prior_price === true) return priorPriceQuery(tenant, input, body.explain === true)
  if (body.explain === true) return explainQuery(tenant, input, body.pricelist_filter)
  if (tenant.queryPool !== null && body.skus.length >= tenant.workerThresholdSkus)
    return dispatchLargeQuery(tenant, input)
  return dispatchSmallQuery(tenant, input)
}

/**
 * A query body checked against a state (400 for what it selects badly, 404 for an unknown
 * rounding profile) and turned into the engine's input; POST /price/simulate checks its query so.
 */
export function queryInput(tenant: QueryState, body: PriceQueryValue, nowMs: number): QueryInput {
  if (body.skus.length === 0)
    throw validationError([{ path: '/skus', message: 'must not be empty' }], 'skus must not be empty')
  if (body.tax_area.length === 0)
    throw validationError([{ path: '/tax_area', message: 'must not be empty' }], 'tax_area must not be empty')
  const at = body.as_of === undefined ? nowMs : parseInstant(body.as_of)
  if (tenant.catalog.get('tax_area', body.tax_area, at) === null) {
    throw validationError(
      [{ path: '/tax_area', message: 'unknown tax area' }],
      `Tax area ${body.tax_area} does not exist`,
    )
  }
  const pricelists = selectPricelists(tenant, body, at)
  // Answers 404 for an unknown profile before any work is handed out.
  roundingFor(tenant.catalog, body.rounding_profile, body.currency_code, at)
  return {
    at,
    cacheable: body.as_of === undefined,
    taxArea: body.tax_area,
    skus: body.skus,
    pricelists,
    currency: body.currency_code,
    rounding: body.rounding_profile ?? null,
    sortOrder: body.sort_order ?? null,
    quantity: body.quantity === undefined ? 1 : quantityValue(body.quantity, '/quantity', 1e9),
  }
}

const TaxedQuery = Type.Object(
  {
    ...AsOfQuery,
    rounding_profile: Type.Optional(Type.String({ minLength: 1, maxLength: codeLengthMax })),
    currency_code: Type.Optional(CurrencyCode),
    quantity: Type.Optional(Quantity(1e9)),
    explain: Type.Optional(Type.Boolean({ description: 'true: the answer gains a trace' })),
    prior_price: Type.Optional(
      Type.Boolean({ description: 'true: the answer gains its EU prior price (not with explain)' }),
    ),
  },
  { additionalProperties: false },
)
const RawQuery = Type.Object(
  { ...AsOfQuery, tax_area: Type.Optional(Type.String({ maxLength: codeLengthMax })) },
  { additionalProperties: false },
)

/**
 * A read's failure as the API's error; `taxArea` is named when the answer (FX, VAT) failed, and
 * `x-price-engine` says which thread found it.
 */
function readError(
  outcome: Exclude<PriceReadOutcome, { kind: 'base' | 'priced' }>,
  engine: Engine,
  sku: string,
  pricelist: string,
  taxArea: string,
  profile: string | undefined,
): ApiError {
  const error = failure(outcome, sku, pricelist, taxArea, profile)
  return new HttpError(error.code, error.message, error.extra, { ...errorHeaders(error), 'x-price-engine': engine })
}

function failure(
  outcome: Exclude<PriceReadOutcome, { kind: 'base' | 'priced' }>,
  sku: string,
  pricelist: string,
  taxArea: string,
  profile: string | undefined,
): ApiError {
  switch (outcome.kind) {
    case 'unknown_pricelist':
      return notFound(`Pricelist ${pricelist}`)
    case 'unpriced': {
      const where = outcome.stage === 'base' ? pricelist : `${pricelist} in ${taxArea}`
      return new ApiError('not_found', `No price for ${sku} on ${where}: ${outcome.reason}`, { reason: outcome.reason })
    }
    case 'currency_mismatch':
      return currencyMismatch(outcome.pricelistCurrency, outcome.requested)
    case 'unknown_profile':
      return notFound(`Rounding profile ${profile}`)
  }
}

function taxedRead(context: TenantContext<undefined, typeof TaxedQuery.static>) {
  const { tenant, params, query } = context
  const sku = params['sku']!
  const pricelist = params['pricelist']!
  const taxArea = params['tax_area']!
  const at = readInstant(context)
  const answer = {
    currency: query.currency_code ?? null,
    rounding: query.rounding_profile ?? null,
    quantity: query.quantity === undefined ? 1 : quantityValue(query.quantity, 'query/quantity', 1e9),
    homogeneousCurrency: true,
  }
  const read = dispatchRead(tenant, { at, taxArea, sku, pricelist, answer })
  const respond = ({ outcome, engine }: Dispatched) => {
    assert(outcome.kind !== 'base', 'a taxed read answered without tax')
    if (outcome.kind !== 'priced') throw readError(outcome, engine, sku, pricelist, taxArea, query.rounding_profile)
    if (query.prior_price === true) {
      if (query.explain === true)
        throw validationError(
          [{ path: 'query/prior_price', message: 'not with explain' }],
          'A read may ask for explain or prior_price, not both',
        )
      const json = itemJson(outcome.item, pricelist, taxArea)
      const read = { json, item: outcome.item, pricelist, taxArea, at, ...answer }
      return taxedAnswer(
        context,
        withPriorPrice(tenant.catalog, tenant.prices, read, omnibusDays(tenant.catalog, at)),
        'main',
      )
    }
    if (query.explain === true) {
      const explained = explainReadJson(tenant, { at, taxArea, pricelist, item: outcome.item, ...answer })
      // The engine named is the one that explained (the read itself is the plain one's).
      return explained.then((done) => taxedAnswer(context, done.json, done.engine))
    }
    return taxedAnswer(context, itemJson(outcome.item, pricelist, taxArea), engine)
  }
  return read instanceof Promise ? read.then(respond) : respond(read)
}

/** The read's 200 (or 304 for a matching If-None-Match) with its validator. */
function taxedAnswer(context: TenantContext<undefined, typeof TaxedQuery.static>, body: string, engine: Engine) {
  // A strong validator of the exact answer: any change that alters it (price, VAT, FX, parent) alters it.
  const etag = answerTag(body)
  const headers = { etag, 'cache-control': 'no-store', 'content-type': 'application/json', 'x-price-engine': engine }
  if (ifNoneMatchMatches(context.incoming.ifNoneMatch, etag)) return { status: 304, headers }
  return { status: 200, headers, body }
}

/**
 * The strong ETag of an answer: SHA-1 of its text (UTF-8), base64url. The one-shot `crypto.hash`
 * (Node 20.12+) costs about half of createHash().update().digest(), which allocates a Hash object
 * per call; the tag is the same.
 */
const oneShot = (crypto as { hash?: typeof crypto.hash }).hash
const sha1: (text: string) => string =
  oneShot === undefined
    ? (text) => crypto.createHash('sha1').update(text).digest('base64url')
    : (text) => oneShot('sha1', text, 'base64url')

function answerTag(text: string): string {
  return `"${sha1(text)}"`
}

function ifNoneMatchMatches(header: string, etag: string): boolean {
  if (header === '') return false
  if (header.trim() === '*') return true
  return header.split(',').some((candidate) => candidate.trim().replace(/^W\//, '') === etag)
}

function rawRead(context: TenantContext<undefined, typeof RawQuery.static>) {
  const { tenant, params, query } = context
  const sku = params['sku']!
  const pricelist = params['pricelist']!
  const at = readInstant(context)
  const taxArea = query.tax_area ?? defaultTaxArea(tenant.catalog, at)
  const read = dispatchRead(tenant, { at, taxArea, sku, pricelist, answer: null })
  const respond = ({ outcome, engine }: Dispatched) => {
    assert(outcome.kind !== 'priced', 'a raw read answered with tax')
    if (outcome.kind !== 'base') throw readError(outcome, engine, sku, pricelist, taxArea, undefined)
    const resolved = outcome.resolved
    const rendered = renderContent({ sales: resolved.sales, fields: resolved.fields, breaks: resolved.breaks })
    return {
      status: 200,
      headers: { 'cache-control': 'no-store', 'x-price-engine': engine },
      body: {
        sku,
        pricelist,
        currency_code: resolved.currency,
        vat_mode: resolved.vatMode,
        ...rendered,
        start_date: resolved.startDate === null ? null : formatInstant(resolved.startDate),
        inherited: resolved.inherited,
        source_pricelist: resolved.source,
      },
    }
  }
  return read instanceof Promise ? read.then(respond) : respond(read)
}

const StoredQuery = Type.Object(
  { sku: Type.Optional(Code), pricelist: Type.Optional(Code), ...AsOfQuery, ...PageQuery },
  { additionalProperties: false },
)

/** Stored records in force at the instant, filtered by SKU and/or pricelist, sorted by (pricelist, SKU). */
function storedRecords(context: TenantContext<undefined, typeof StoredQuery.static>) {
  const { tenant, query } = context
  const at = readInstant(context)
  const book = tenant.prices
  const pricelists = query.pricelist === undefined ? [...book.pricelistsWithPrices()].sort() : [query.pricelist]
  const skus = query.sku === undefined ? book.sortedSkus() : [query.sku]
  const records: Record<string, unknown>[] = []
  for (const pricelist of pricelists) {
    const pricelistId = book.pricelistId(pricelist)
    if (pricelistId < 0) continue
    for (const sku of skus) {
      const skuId = book.skuId(sku)
      const position = skuId < 0 ? -1 : book.livePositionAt(pricelistId, skuId, at)
      if (position < 0) continue
      records.push({ sku, pricelist, position })
    }
  }
  const numbered = page(records, query)
  // Materialise only the page.
  numbered.items = numbered.items.map((record) => {
    const { sku, pricelist } = record as { sku: string; pricelist: string }
    const version = book
      .versions(pricelist, sku)
      .filter((candidate) => candidate.from <= at)
      .pop()!
    return {
      sku,
      pricelist,
      ...renderContent(version.content!),
      start_date: formatInstant(version.from),
      updated_at: formatInstant(version.writtenAt),
      updated_by: version.writtenBy,
    }
  })
  return { status: 200, body: numbered }
}

const HistoryQuery = Type.Object(
  {
    days: Type.Optional(Type.Integer({ minimum: 1, maximum: 36_500 })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
  },
  { additionalProperties: false },
)

/** Recent versions of (pricelist, SKU), newest first; a child without own versions shows the parent's. */
function history(context: TenantContext<undefined, typeof HistoryQuery.static>) {
  const { tenant, params, query, nowMs } = context
  const pricelist = params['pricelist']!
  const sku = params['sku']!
  if (!tenant.catalog.exists('pricelist', pricelist)) throw notFound(`Pricelist ${pricelist}`)
  const since = nowMs - (query.days ?? 30) * 86_400_000
  const limit = query.limit ?? 1000
  const entries: Record<string, unknown>[] = []
  let code: string | null = pricelist
  let inherited = false
  for (let depth = 0; code !== null && depth < 16; depth++) {
    const versions = tenant.prices.versions(code, sku)
    if (versions.length > 0) {
      for (const version of versions) {
        if (version.from < since && version.writtenAt < since) continue
        const rendered =
          version.content === null ? { price: null, quantity_breaks: [] } : renderContent(version.content)
        entries.push({
          change_at: formatInstant(version.from),
          meta: {
            inherited,
            start_at: formatInstant(version.from),
            updated_at: formatInstant(version.writtenAt),
            updated_by: version.writtenBy,
            source_pricelist: code,
          },
          ...rendered,
        })
      }
      break
    }
    code = tenant.catalog.get('pricelist', code, nowMs)?.parent_code ?? null
    inherited = true
  }
  entries.reverse()
  return { status: 200, body: entries.slice(0, limit) }
}

const SkusQuery = Type.Object(
  {
    ...AsOfQuery,
    afterSku: Type.Optional(Type.String({ maxLength: codeLengthMax })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500 })),
    ...PageQuery,
  },
  { additionalProperties: false },
)

/** SKUs priced on the pricelist (own or inherited) at the instant, in code order. */
async function skusForPricelist(context: TenantContext<undefined, typeof SkusQuery.static>) {
  const { tenant, params, query } = context
  const code = params['code']!
  const at = readInstant(context)
  const taxArea = defaultTaxArea(tenant.catalog, at)
  const priceContext = new PriceContext(tenant.catalog, tenant.prices, at, taxArea)
  if (priceContext.pricelist(code) === null) throw notFound(`Pricelist ${code}`)
  const all = pricedSkuCandidates(tenant)
  const reads = (skus: Iterable<string>) =>
    dispatchReads(
      tenant,
      priceContext,
      mapped(skus, (sku): PriceReadInput => ({ at, taxArea, sku, pricelist: code, answer: null })),
    )
  if (query.page !== undefined || query.size !== undefined) {
    const priced: string[] = []
    let index = 0
    for await (const outcome of reads(all)) {
      if (outcome.kind === 'base') priced.push(all[index]!)
      index++
    }
    return { status: 200, headers: { deprecation: 'true' }, body: page(priced, query) }
  }
  const limit = query.limit ?? 100
  let start = 0
  if (query.afterSku !== undefined) {
    let low = 0
    let high = all.length
    while (low < high) {
      const middle = (low + high) >>> 1
      if (all[middle]! <= query.afterSku) low = middle + 1
      else high = middle
    }
    start = low
  }
  const items: string[] = []
  let hasMore = false
  let index = start
  // One more priced SKU after the page says whether there are more.
  for await (const outcome of reads(all.slice(start))) {
    if (outcome.kind === 'base') {
      if (items.length === limit) {
        hasMore = true
        break
      }
      items.push(all[index]!)
    }
    index++
  }
  const last = items.length > 0 ? items[items.length - 1]! : (query.afterSku ?? null)
  return { status: 200, body: { items, next_cursor: last, has_more: hasMore } }
}

function* mapped<T, U>(values: Iterable<T>, map: (value: T) => U): Generator<U> {
  for (const value of values) yield map(value)
}

/** What the SKU candidates are read from: a tenant, or a dry run's state (tenant/simulate/). */
export interface SkuCandidateSource {
  readonly catalog: Catalog
  readonly prices: { sortedSkus(): readonly string[] }
}

/**
 * Every SKU that could be priced, sorted: those with a price somewhere, plus bundle SKUs (a bundle
 * rule prices a SKU that may have no price of its own anywhere).
 */
export function pricedSkuCandidates(tenant: SkuCandidateSource): readonly string[] {
  return pricedSkus(tenant.catalog, tenant.prices)
}

const PricelistsForSkuQuery = Type.Object(
  {
    ...AsOfQuery,
    ...PageQuery,
    tax_area: Type.Optional(Type.String({ maxLength: codeLengthMax })),
    currency_code: Type.Optional(CurrencyCode),
  },
  { additionalProperties: false },
)

/** Pricelists live at the instant that price the SKU (own or inherited), with the price when asked. */
async function pricelistsForSku(context: TenantContext<undefined, typeof PricelistsForSkuQuery.static>) {
  const { tenant, params, query } = context
  const sku = params['sku']!
  const at = readInstant(context)
  const taxArea = query.tax_area ?? defaultTaxArea(tenant.catalog, at)
  const priceContext = new PriceContext(tenant.catalog, tenant.prices, at, taxArea)
  const answer =
    query.currency_code === undefined
      ? null
      : { currency: query.currency_code, rounding: null, quantity: 1, homogeneousCurrency: false }
  const views = [...tenant.catalog.viewsAt('pricelist', at)]
  const found: Record<string, unknown>[] = []
  let index = 0
  for await (const outcome of dispatchReads(
    tenant,
    priceContext,
    mapped(views, ([code]): PriceReadInput => ({ at, taxArea, sku, pricelist: code, answer })),
  )) {
    const [code, view] = views[index++]!
    // Unpriced at the base: not listed; priced at the base but not in the currency: listed, price null.
    if (
      outcome.kind === 'base' ||
      outcome.kind === 'priced' ||
      (outcome.kind === 'unpriced' && outcome.stage === 'answer')
    ) {
      const price = outcome.kind === 'priced' ? renderItem(outcome.item, code) : null
      found.push({ pricelist: renderPricelist(tenant, code, view, at), price })
    }
  }
  return { status: 200, body: page(found, query) }
}

// x-price-engine says which thread answered (operators and tests; the answer is the same).
const workerAnswerHeaders = {
  'cache-control': 'no-store',
  'content-type': 'application/json',
  'x-price-engine': 'worker',
}
const mainAnswerHeaders = { 'cache-control': 'no-store', 'content-type': 'application/json', 'x-price-engine': 'main' }

function queryReply(answer: QueryAnswer) {
  const headers = answer.engine === 'worker' ? workerAnswerHeaders : mainAnswerHeaders
  // A worker's answer is a view of its answer arena until written (workers/answer-arena.ts).
  return answer.release === null
    ? { status: 200, headers, body: answer.json }
    : { status: 200, headers, body: answer.json, release: answer.release }
}

/**
 * What a single read costs: 1, or an explained SKU's cost with `?explain=true` (validation's
 * reading: the last `explain` wins, and only `true` is true). A plain read pays one comparison.
 */
function explainedReadCost(_body: unknown, query: string): number {
  // A percent-encoded name is decoded by validation too: such a query string is parsed here as well.
  if (!query.includes('explain') && !query.includes('prior_price') && !query.includes('%')) return 1
  const parameters = new URLSearchParams(query)
  if (parameters.getAll('prior_price').at(-1) === 'true') return priorPriceCostFactor
  return parameters.getAll('explain').at(-1) === 'true' ? explainCostFactor : 1
}

export function priceReadRoutes(): TenantRoute[] {
  return [
    route<PriceQueryValue>({
      method: 'POST',
      path: '/price/query',
      operationId: 'queryPrices',
      summary: 'Best price per SKU across the pricelists the filter selects',
      tag: 'prices',
      body: PriceQueryBody,
      response: PriceQueryAnswer,
      dimension: 'query',
      cost: (body) => {
        const { skus, explain, prior_price } = (body ?? {}) as {
          skus?: unknown
          explain?: unknown
          prior_price?: unknown
        }
        const count = Array.isArray(skus) ? Math.max(1, skus.length) : 1
        // A prior price prices its history's moments; an explained SKU every candidate.
        if (prior_price === true) return count * priorPriceCostFactor
        return explain === true ? count * explainCostFactor : count
      },
      handler: (context) => {
        const answer = runQuery(context)
        return answer instanceof Promise ? answer.then(queryReply) : queryReply(answer)
      },
    }),
    route<undefined, typeof TaxedQuery.static>({
      method: 'GET',
      path: '/price/:sku/:pricelist/:tax_area',
      operationId: 'getPrice',
      summary: 'Price of a SKU on a pricelist in a tax area (strong ETag; 304 on If-None-Match)',
      tag: 'prices',
      query: TaxedQuery,
      response: PriceAnswer,
      otherAnswers: { 304: null },
      dimension: 'query',
      cost: explainedReadCost,
      handler: taxedRead,
    }),
    route<undefined, typeof RawQuery.static>({
      method: 'GET',
      path: '/price/:sku/:pricelist',
      operationId: 'getPriceDefinition',
      summary: 'Price definition after inheritance and rules, without tax',
      tag: 'prices',
      query: RawQuery,
      response: PriceDefinitionAnswer,
      dimension: 'query',
      handler: rawRead,
    }),
    route<undefined, typeof StoredQuery.static>({
      method: 'GET',
      path: '/price',
      operationId: 'listStoredPrices',
      summary: 'Stored price records in force, filtered by sku and/or pricelist (numbered page)',
      tag: 'prices',
      query: StoredQuery,
      response: Page(StoredPrice),
      dimension: 'query',
      handler: storedRecords,
    }),
    route<undefined, typeof HistoryQuery.static>({
      method: 'GET',
      path: '/price/history/:pricelist/:sku',
      operationId: 'getPriceHistory',
      summary: 'Recent price changes of a SKU on a pricelist',
      tag: 'prices',
      query: HistoryQuery,
      response: Type.Array(HistoryEntry),
      dimension: 'query',
      handler: history,
    }),
    route<undefined, typeof SkusQuery.static>({
      method: 'GET',
      path: '/price/skus-for-pricelist/:code',
      operationId: 'listSkusForPricelist',
      summary: 'SKUs priced on a pricelist (cursor afterSku/limit; page/size deprecated)',
      tag: 'prices',
      query: SkusQuery,
      response: SkusAnswer,
      dimension: 'query',
      handler: skusForPricelist,
    }),
    route<undefined, typeof PricelistsForSkuQuery.static>({
      method: 'GET',
      path: '/price/pricelists-for-sku/:sku',
      operationId: 'listPricelistsForSku',
      summary: 'Pricelists that price a SKU, with the price when currency_code is given',
      tag: 'prices',
      query: PricelistsForSkuQuery,
      response: Page(PricelistWithPrice),
      dimension: 'query',
      handler: pricelistsForSku,
    }),
  ]
}
