/**
 * Pricelists: single and batch writes, reads as of an instant, the listing (all live pricelists, or
 * only those active at asOf), the query by currency/metadata/codes, search, single and batch soft
 * delete. A pricelist definition is versioned when it is written (`from` = now); its start_date and
 * end_date are only its activity window. The writes' checks (rules compiled, currency, parent,
 * quota) are the write layer's (tenant/writes/pricelists.ts); the routes check shapes and render.
 * `effectiveVatMode` and `pricelistActiveAt` are shared with the price engine. Non-goal: prices themselves (the price routes own them).
 * @module
 */
import { effectiveVatMode, inheritedVatMode, pricelistActiveAt } from '../../engine/pricelists.js'
import { Type } from '@sinclair/typebox'
import type { Pricelist } from '../../engine/catalog.js'
import { batchItemsMax, codeLengthMax, pageSizeMax, priceRulesMax } from '../../engine/limits.js'
import type { View } from '../../engine/temporal.js'
import { arrayCost, route, type TenantContext, type TenantRoute } from '../contracts.js'
import { validationError } from '../../platform/errors.js'
import {
  AsOfQuery,
  BatchResult,
  Code,
  DateTime,
  IncludeDeletedQuery,
  Metadata,
  NullableDateTime,
  NullableText,
  Page,
  PageQuery,
  readOnlyFields,
  Text,
  VatMode,
  WhenQuery,
} from '../schemas.js'
import type { TenantRuntime } from '../../tenant/runtime.js'
import { metadataMatches } from '../../engine/article-search.js'
import { deletePricelists, writePricelists, type PricelistInput } from '../../tenant/writes/pricelists.js'
import {
  accepted,
  acceptedOrThrow,
  batchAnswer,
  formatOptional,
  itemProblem,
  optionalInstant,
  page,
  readInstant,
  requireView,
  checkedItems,
  withVersionMeta,
} from './common.js'

const NullableString = Type.Union([Type.String(), Type.Null()])
/** Expressions are bounded by the compiler (celExpressionLengthMax), which answers rule_invalid. */
const PriceRuleWrite = Type.Object(
  {
    code: Type.Optional(NullableText),
    description: Type.Optional(NullableText),
    expression: Type.Optional(NullableString),
    filter: Type.Optional(NullableString),
    updated_by: Type.Optional(NullableText),
  },
  { additionalProperties: false },
)
const PricelistFields = {
  // Any text here: a code outside ISO 4217 answers currency_unknown, not a pattern failure.
  currency_code: Type.String({ minLength: 1, maxLength: codeLengthMax, description: 'ISO 4217 code' }),
  vat_mode: Type.Optional(
    Type.Union([VatMode, Type.Null()], {
      description: 'required on a top-level pricelist; a child without it inherits',
    }),
  ),
  name: Type.Optional(NullableText),
  description: Type.Optional(NullableText),
  parent_code: Type.Optional(Type.Union([Code, Type.Null()])),
  start_date: Type.Optional(NullableDateTime),
  end_date: Type.Optional(NullableDateTime),
  metadata: Type.Optional(Metadata),
  price_rules: Type.Optional(Type.Array(PriceRuleWrite, { maxItems: priceRulesMax })),
  sku_count: Type.Optional(Type.Unknown()),
  ...readOnlyFields,
}
export const PricelistWrite = Type.Object(
  { code: Type.Optional(Code), ...PricelistFields },
  { additionalProperties: false },
)
export const PricelistBatchItem = Type.Object({ code: Code, ...PricelistFields }, { additionalProperties: false })
const PriceRuleResponse = Type.Object({
  code: NullableString,
  description: NullableString,
  expression: NullableString,
  filter: NullableString,
  updated_by: NullableString,
})
export const PricelistResponse = Type.Object({
  code: Type.String(),
  currency_code: Type.String(),
  vat_mode: Type.Union([VatMode, Type.Null()], { description: 'effective mode: own, else inherited as of the read' }),
  name: NullableString,
  description: NullableString,
  parent_code: NullableString,
  start_date: NullableString,
  end_date: NullableString,
  metadata: Type.Record(Type.String(), Type.Array(Type.String())),
  price_rules: Type.Array(PriceRuleResponse),
  sku_count: Type.Integer(),
  updated_at: Type.String(),
  updated_by: Type.String(),
  deleted_at: Type.Optional(Type.String()),
})
/** The body of POST /pricelist/query, and the price query's `pricelist_filter`. */
export const PricelistFilter = Type.Object(
  {
    currency_code: Type.Optional(Type.String({ maxLength: codeLengthMax })),
    metadata: Type.Optional(Metadata),
    pricelists: Type.Optional(Type.Array(Code, { maxItems: batchItemsMax })),
  },
  { additionalProperties: false },
)
export const PricelistSearch = Type.Object(
  {
    text: Type.Optional(Text),
    currency_code: Type.Optional(Type.String({ maxLength: codeLengthMax })),
    vat_mode: Type.Optional(VatMode),
    parent_code: Type.Optional(Type.Union([Code, Type.Null()], { description: 'null: top-level pricelists only' })),
    metadata: Type.Optional(Metadata),
    as_of: Type.Optional(DateTime),
    include_deleted: Type.Optional(Type.Boolean()),
    page: Type.Optional(Type.Integer({ minimum: 1 })),
    size: Type.Optional(Type.Integer({ minimum: 1, maximum: pageSizeMax })),
  },
  { additionalProperties: false },
)
const ReadQuery = Type.Object({ ...AsOfQuery, ...IncludeDeletedQuery }, { additionalProperties: false })
const ListQuery = Type.Object({ ...AsOfQuery, ...IncludeDeletedQuery, ...PageQuery }, { additionalProperties: false })
const DeleteItem = Type.Union([
  Code,
  Type.Object({ code: Code, when: Type.Optional(DateTime) }, { additionalProperties: false }),
])
const BatchBody = Type.Array(Type.Unknown(), { minItems: 1, maxItems: batchItemsMax })

type PricelistWriteBody = typeof PricelistWrite.static
type PricelistFilterBody = typeof PricelistFilter.static
type ListQueryValue = typeof ListQuery.static

export { effectiveVatMode, pricelistActiveAt }

/** SKUs with a live price on this pricelist (own prices; their latest version not deleted). */
export function skuCount(tenant: TenantRuntime, code: string, _at: number): number {
  return tenant.prices.liveSkuCount(code)
}

export function renderPricelist(
  tenant: TenantRuntime,
  code: string,
  view: View<Pricelist>,
  at: number,
): Record<string, unknown> {
  const pricelist = view.value
  return withVersionMeta(
    {
      code,
      currency_code: pricelist.currency_code,
      vat_mode: inheritedVatMode(tenant.catalog, pricelist, at),
      name: pricelist.name,
      description: pricelist.description,
      parent_code: pricelist.parent_code,
      start_date: formatOptional(pricelist.start_date),
      end_date: formatOptional(pricelist.end_date),
      metadata: pricelist.metadata,
      price_rules: pricelist.price_rules,
      sku_count: skuCount(tenant, code, at),
    },
    view,
  )
}

function codeOrThrow(code: string): void {
  const problem = itemProblem(Code, code)
  if (problem !== null) throw validationError([{ path: '/code', message: problem }])
}

/** A codes-and-views list: with an instant, the pricelists active then; without, every live one. */
function listed(
  tenant: TenantRuntime,
  activeAt: number | null,
  nowMs: number,
  includeDeleted = false,
): [string, View<Pricelist>][] {
  const found: [string, View<Pricelist>][] = []
  for (const entry of tenant.catalog.viewsAt('pricelist', activeAt ?? nowMs, includeDeleted)) {
    if (activeAt === null || pricelistActiveAt(entry[1].value, activeAt)) found.push(entry)
  }
  return found
}

function queryInstant(query: { asOf?: string; as_of?: string }): number | null {
  return optionalInstant(query.asOf ?? query.as_of)
}

/** A matcher for a PricelistFilter: the given fields combine with AND. */
export function pricelistFilterMatcher(filter: PricelistFilterBody): (code: string, pricelist: Pricelist) => boolean {
  const codes = filter.pricelists === undefined ? null : new Set(filter.pricelists)
  const metadata = filter.metadata === undefined ? [] : Object.entries(filter.metadata)
  return (code, pricelist) =>
    (codes === null || codes.has(code)) &&
    (filter.currency_code === undefined || pricelist.currency_code === filter.currency_code) &&
    metadataMatches(pricelist.metadata, metadata)
}

export function pricelistRoutes(): TenantRoute[] {
  return [...writeRoutes(), ...readRoutes(), ...deleteRoutes()]
}

function writeRoutes(): TenantRoute[] {
  return [
    route<PricelistWriteBody, Record<string, never>>({
      method: 'PUT',
      path: '/pricelist/:code',
      operationId: 'putPricelist',
      errors: [422],
      summary: 'Write one pricelist (replaces its definition from now on)',
      tag: 'pricelists',
      body: PricelistWrite,
      responseStatus: 202,
      dimension: 'ingest',
      handler: async (context) => {
        const code = context.params['code']!
        if (context.body.code !== undefined && context.body.code !== code) {
          throw validationError([{ path: '/code', message: 'must equal the code in the path' }])
        }
        codeOrThrow(code)
        acceptedOrThrow(await writePricelists(context.tenant, context, [{ ...context.body, code }]))
        return accepted
      },
    }),
    route<unknown[]>({
      method: 'POST',
      path: '/pricelist/batch',
      operationId: 'writePricelists',
      summary: 'Write pricelists in bulk (not atomic: valid items are written, others listed in failed)',
      tag: 'pricelists',
      body: BatchBody,
      response: BatchResult,
      responseStatus: 202,
      dimension: 'ingest',
      cost: arrayCost,
      handler: writeBatch,
    }),
  ]
}

async function writeBatch(context: TenantContext<unknown[]>) {
  const items = context.body
  const outcomes = await writePricelists(
    context.tenant,
    context,
    checkedItems<PricelistInput>(PricelistBatchItem, items),
  )
  return { status: 202, body: batchAnswer(outcomes, (index) => ({ code: codeOf(items[index]) })) }
}

/** The code a batch write item names, if any (a refused item's `failed` entry shows it). */
function codeOf(item: unknown): string | null {
  return typeof (item as { code?: unknown })?.code === 'string' ? (item as { code: string }).code : null
}

function readRoutes(): TenantRoute[] {
  return [
    route<undefined, typeof ReadQuery.static>({
      method: 'GET',
      path: '/pricelist/:code',
      operationId: 'getPricelist',
      summary: 'One pricelist as of asOf (vat_mode is the effective mode, inherited when not its own)',
      tag: 'pricelists',
      query: ReadQuery,
      response: PricelistResponse,
      dimension: 'query',
      handler: (context) => {
        const code = context.params['code']!
        const at = readInstant(context)
        const view = requireView(
          context.tenant.catalog.view('pricelist', code, at, context.query.include_deleted),
          `Pricelist ${code}`,
        )
        return { status: 200, body: renderPricelist(context.tenant, code, view, at) }
      },
    }),
    route<undefined, ListQueryValue>({
      method: 'GET',
      path: '/pricelist',
      operationId: 'listPricelists',
      summary: 'Pricelists: without asOf every live one (future and expired too); with asOf those active then',
      tag: 'pricelists',
      query: ListQuery,
      response: Page(PricelistResponse),
      dimension: 'query',
      handler: (context) => {
        const activeAt = queryInstant(context.query)
        const found = listed(context.tenant, activeAt, context.nowMs, context.query.include_deleted)
        return { status: 200, body: renderPage(context.tenant, found, activeAt ?? context.nowMs, context.query) }
      },
    }),
    route<PricelistFilterBody, ListQueryValue>({
      method: 'POST',
      path: '/pricelist/query',
      operationId: 'queryPricelists',
      summary: 'Pricelists matching currency_code, metadata (any value of each key) and codes, combined with AND',
      tag: 'pricelists',
      query: ListQuery,
      body: PricelistFilter,
      response: Page(PricelistResponse),
      dimension: 'query',
      handler: (context) => {
        const activeAt = queryInstant(context.query)
        const matcher = pricelistFilterMatcher(context.body)
        const found = listed(context.tenant, activeAt, context.nowMs, context.query.include_deleted).filter(
          ([code, view]) => matcher(code, view.value),
        )
        return { status: 200, body: renderPage(context.tenant, found, activeAt ?? context.nowMs, context.query) }
      },
    }),
    route<typeof PricelistSearch.static>({
      method: 'POST',
      path: '/pricelist/search',
      operationId: 'searchPricelists',
      summary: 'Search pricelists: text (code or name, case-insensitive), currency, VAT mode, parent, metadata',
      tag: 'pricelists',
      body: PricelistSearch,
      response: Page(PricelistResponse),
      dimension: 'query',
      handler: (context) => searchPricelists(context),
    }),
  ]
}

function renderPage(
  tenant: TenantRuntime,
  found: [string, View<Pricelist>][],
  at: number,
  query: { page?: number; size?: number },
) {
  const numbered = page(found, query)
  return { ...numbered, items: numbered.items.map(([code, view]) => renderPricelist(tenant, code, view, at)) }
}

function searchPricelists(context: TenantContext<typeof PricelistSearch.static>) {
  const body = context.body
  const activeAt = optionalInstant(body.as_of)
  const at = activeAt ?? context.nowMs
  const text = body.text?.toLowerCase() ?? null
  const metadata: [string, string[]][] = body.metadata === undefined ? [] : Object.entries(body.metadata)
  const found = listed(context.tenant, activeAt, context.nowMs, body.include_deleted).filter(([code, view]) => {
    const pricelist = view.value
    if (text !== null && !code.toLowerCase().includes(text) && !(pricelist.name ?? '').toLowerCase().includes(text))
      return false
    if (body.currency_code !== undefined && pricelist.currency_code !== body.currency_code) return false
    if (body.parent_code !== undefined && pricelist.parent_code !== body.parent_code) return false
    if (body.vat_mode !== undefined && inheritedVatMode(context.tenant.catalog, pricelist, at) !== body.vat_mode)
      return false
    return metadataMatches(pricelist.metadata, metadata)
  })
  return { status: 200, body: renderPage(context.tenant, found, at, body) }
}

function deleteRoutes(): TenantRoute[] {
  return [
    route<undefined, typeof WhenQuery.static>({
      method: 'DELETE',
      path: '/pricelist/:code',
      operationId: 'deletePricelist',
      summary: 'Soft-delete a pricelist at `when` (default now)',
      tag: 'pricelists',
      query: WhenQuery,
      responseStatus: 202,
      dimension: 'ingest',
      handler: async (context) => {
        const input = { key: context.params['code']!, when: context.query.when }
        acceptedOrThrow(await deletePricelists(context.tenant, context, [input]))
        return accepted
      },
    }),
    route<unknown[]>({
      method: 'DELETE',
      path: '/pricelist/batch',
      operationId: 'deletePricelists',
      summary: 'Soft-delete pricelists in bulk: an array of codes or {code, when}',
      tag: 'pricelists',
      body: BatchBody,
      response: BatchResult,
      responseStatus: 202,
      dimension: 'ingest',
      cost: arrayCost,
      handler: deleteBatch,
    }),
  ]
}

async function deleteBatch(context: TenantContext<unknown[]>) {
  const items = context.body
  const inputs = checkedItems(DeleteItem, items, (item) => {
    if (typeof item === 'string') return { key: item }
    const { code, when } = item as { code: string; when?: string }
    return { key: code, when }
  })
  const outcomes = await deletePricelists(context.tenant, context, inputs)
  return { status: 202, body: batchAnswer(outcomes, (index) => ({ code: deletedCodeOf(items[index]) })) }
}

/** The code a batch delete item names: the item itself, or its `code` field as it is. */
function deletedCodeOf(item: unknown): unknown {
  return typeof item === 'string' ? item : (((item as { code?: unknown })?.code as string | undefined) ?? null)
}
