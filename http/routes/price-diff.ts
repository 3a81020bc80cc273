/**
 * POST /price/diff: the items whose effective price differs between two instants, both answers and
 * the causes (engine/diff/diff.ts). The edge validates, selects the pricelists at each instant as
 * the price query does, and picks the page of SKUs; the comparison itself runs on a price worker.
 * @module
 */
import { Type } from '@sinclair/typebox'
import { compareCodes } from '../../engine/catalog.js'
import { diffCauses, fourDecimals, type DiffEntry, type DiffRequest, type DiffSide } from '../../engine/diff/diff.js'
import { batchItemsMax, codeLengthMax } from '../../engine/limits.js'
import { toNumber } from '../../engine/money.js'
import { statusReasons } from '../../engine/pipeline.js'
import { parseInstant } from '../../engine/time.js'
import { validationError } from '../../platform/errors.js'
import { dispatchDiff } from '../../tenant/price-dispatch.js'
import { route, type TenantContext, type TenantRoute } from '../contracts.js'
import { CurrencyCode, DateTime, Quantity } from '../schemas.js'
import { quantityValue } from './common.js'
import { PricelistFilter } from './pricelists.js'
import {
  pricedSkuCandidates,
  roundingFor,
  selectPricelists,
  type QueryState,
  type SkuCandidateSource,
} from './price-reads.js'

/** SKUs a page covers when `limit` is left out. */
export const diffLimitDefault = 1_000
/**
 * SKUs a page covers at most, and SKUs an explicit set may hold: a batch, like the query's. A page
 * costs its SKUs against the tenant's query rate, so no page may cost more than the smallest
 * plan's burst (tenant/plans.ts), which is this same batch size.
 */
export const diffLimitMax = batchItemsMax

const Sku = Type.String({ minLength: 1, maxLength: codeLengthMax })

export const PriceDiffBody = Type.Object(
  {
    pricelist_filter: PricelistFilter,
    tax_area: Type.String({ minLength: 1, maxLength: codeLengthMax }),
    currency_code: CurrencyCode,
    from: DateTime,
    to: DateTime,
    rounding_profile: Type.Optional(Type.String({ minLength: 1, maxLength: codeLengthMax })),
    quantity: Type.Optional(Quantity(1e9)),
    skus: Type.Optional(
      Type.Array(Sku, {
        minItems: 1,
        maxItems: diffLimitMax,
        description: 'The SKUs to compare (one page); left out: every SKU priced on the lists, paged by cursor',
      }),
    ),
    cursor: Type.Optional(Type.String({ ...Sku, description: 'next_cursor of the previous page' })),
    limit: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: diffLimitMax,
        description: `SKUs the page covers (default ${diffLimitDefault}); the page lists those that changed`,
      }),
    ),
  },
  { additionalProperties: false },
)
export type PriceDiffValue = typeof PriceDiffBody.static

const DiffSideSchema = Type.Union([
  Type.Object({ pricelist: Type.String(), net: Type.Number(), vat: Type.Number(), gross: Type.Number() }),
  Type.Object({ reason: Type.Union(statusReasons.slice(1).map((reason) => Type.Literal(reason))) }),
])
export const PriceDiffAnswer = Type.Object({
  items: Type.Array(
    Type.Object({
      sku: Type.String(),
      from: DiffSideSchema,
      to: DiffSideSchema,
      change_percent: Type.Union([Type.String({ pattern: '^-?\\d+\\.\\d{4}$' }), Type.Null()], {
        description: 'Change of gross in percent, 4 decimals half-up; null without a price at both instants or from 0',
      }),
      causes: Type.Array(Type.Union(diffCauses.map((cause) => Type.Literal(cause))), { minItems: 1 }),
    }),
  ),
  next_cursor: Type.Union([Type.String(), Type.Null()], { description: 'null: the last page' }),
})

/** The SKUs of this page, in code order, and the cursor of the next (null: none). */
function pageSkus(tenant: SkuCandidateSource, body: PriceDiffValue): { skus: string[]; next: string | null } {
  if (body.skus !== undefined) {
    if (body.cursor !== undefined || body.limit !== undefined)
      throw validationError(
        [{ path: body.cursor !== undefined ? '/cursor' : '/limit', message: 'only without skus' }],
        'cursor and limit page over all SKUs: leave them out with skus',
      )
    return { skus: [...new Set(body.skus)].sort(compareCodes), next: null }
  }
  const all = pricedSkuCandidates(tenant)
  let low = 0
  let high = all.length
  const cursor = body.cursor
  // The first SKU after the cursor (the cursor need not be a SKU that still exists).
  while (cursor !== undefined && low < high) {
    const middle = (low + high) >>> 1
    if (all[middle]! <= cursor) low = middle + 1
    else high = middle
  }
  const end = Math.min(all.length, low + (body.limit ?? diffLimitDefault))
  const skus = all.slice(low, end)
  return { skus, next: end < all.length ? skus[skus.length - 1]! : null }
}

function instantOf(text: string, path: string): number {
  const at = parseInstant(text)
  if (Number.isNaN(at)) throw validationError([{ path, message: 'not an instant' }], `${path.slice(1)}: not an instant`)
  return at
}

/** What a diff reads: a tenant's state, or a dry run's (POST /price/simulate). */
export type DiffState = QueryState & SkuCandidateSource

/** A page to compare: the engine's request and the cursor of the next page (null: none). */
export interface DiffPage {
  readonly request: DiffRequest
  readonly next: string | null
}

/** Checks a diff body against a state as the route does (400 and 404 bodies) and picks its page. */
export function diffPage(state: DiffState, body: PriceDiffValue): DiffPage {
  const from = instantOf(body.from, '/from')
  const to = instantOf(body.to, '/to')
  if (to < from)
    throw validationError([{ path: '/to', message: 'must not be before from' }], 'to must not be before from')
  for (const at of [from, to]) {
    if (state.catalog.get('tax_area', body.tax_area, at) === null)
      throw validationError(
        [{ path: '/tax_area', message: 'unknown tax area' }],
        `Tax area ${body.tax_area} does not exist`,
      )
    // 404 for a profile unknown at either instant, as the query at that instant answers.
    roundingFor(state.catalog, body.rounding_profile, body.currency_code, at)
  }
  const pricelistsFrom = selectPricelists(state, body, from)
  const pricelistsTo = selectPricelists(state, body, to)
  const page = pageSkus(state, body)
  const request: DiffRequest = {
    from,
    to,
    taxArea: body.tax_area,
    currency: body.currency_code,
    rounding: body.rounding_profile ?? null,
    quantity: body.quantity === undefined ? 1 : quantityValue(body.quantity, '/quantity', 1e9),
    pricelistsFrom,
    pricelistsTo,
    skus: page.skus,
  }
  return { request, next: page.next }
}

/** A page's answer as the route writes it. */
export function diffAnswer(entries: readonly DiffEntry[], next: string | null): Record<string, unknown> {
  return { items: entries.map(renderEntry), next_cursor: next }
}

async function runDiff(context: TenantContext<PriceDiffValue>) {
  const page = diffPage(context.tenant, context.body)
  const { entries, engine } = await dispatchDiff(context.tenant, page.request)
  return {
    status: 200,
    headers: { 'cache-control': 'no-store', 'x-price-engine': engine },
    body: diffAnswer(entries, page.next),
  }
}

function renderSide(side: DiffSide): Record<string, unknown> {
  if ('reason' in side) return { reason: side.reason }
  return { pricelist: side.pricelist, net: toNumber(side.net), vat: toNumber(side.vat), gross: toNumber(side.gross) }
}

function renderEntry(entry: DiffEntry): Record<string, unknown> {
  return {
    sku: entry.sku,
    from: renderSide(entry.from),
    to: renderSide(entry.to),
    change_percent: entry.changePercent === null ? null : fourDecimals(entry.changePercent),
    causes: entry.causes,
  }
}

/** What a page costs against the query rate: the SKUs it covers (raw JSON, before validation). */
export function diffCost(body: unknown): number {
  const value = body as { skus?: unknown; limit?: unknown } | null | undefined
  if (Array.isArray(value?.skus)) return Math.max(1, value.skus.length)
  const limit = value?.limit
  // Validation refuses an out-of-range limit after the cost is taken: one above the maximum costs the maximum.
  return Number.isInteger(limit) && (limit as number) >= 1 ? Math.min(limit as number, diffLimitMax) : diffLimitDefault
}

export function priceDiffRoutes(): TenantRoute[] {
  return [
    route<PriceDiffValue>({
      method: 'POST',
      path: '/price/diff',
      operationId: 'diffPrices',
      summary: 'Items whose effective price differs between two instants, with both answers and the causes',
      tag: 'prices',
      body: PriceDiffBody,
      response: PriceDiffAnswer,
      dimension: 'query',
      cost: diffCost,
      handler: runDiff,
    }),
  ]
}
