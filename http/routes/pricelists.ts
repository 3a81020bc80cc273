/**
 * Pricelists: single and batch writes, reads as of an instant, the listing (all live pricelists, or
 * only those active at asOf), the query by currency/metadata/codes, search, single and batch soft
 * delete. A pricelist definition is versioned when it is written (`from` = now); its start_date and
 * end_date are only its activity window. Rules are compiled at write time, so a rule that does not
 * compile never reaches the price engine. `effectiveVatMode` and `pricelistActiveAt` are shared with
 * the price engine. Non-goal: prices themselves (the price routes own them).
 * @module
 */
import { effectiveVatMode, inheritedVatMode, pricelistActiveAt } from '../../engine/pricelists.js'
import { Type } from '@sinclair/typebox'
import type { Catalog, Change, PriceRule, Pricelist } from '../../engine/catalog.js'
import { isIso4217 } from '../../engine/currencies.js'
import { batchItemsMax, codeLengthMax, pageSizeMax, priceRulesMax, pricelistDepthMax } from '../../engine/limits.js'
import { setImmediate as nextTurn } from 'node:timers/promises'
import { compileRule, RuleCompileError, type NodeTally } from '../../engine/rules.js'
import type { View } from '../../engine/temporal.js'
import { arrayCost, route, type TenantContext, type TenantRoute } from '../contracts.js'
import { ApiError, validationError } from '../../platform/errors.js'
import {
  AsOfQuery, BatchResult, Code, DateTime, IncludeDeletedQuery, Metadata, NullableDateTime, NullableText, Page,
  PageQuery, readOnlyFields, Text, VatMode, WhenQuery,
} from '../schemas.js'
import type { TenantRuntime } from '../../tenant/runtime.js'
import { QueryPoolBusy } from '../../workers/pool.js'
import { metadataMatches } from '../../engine/article-search.js'
import {
  accepted, checkQuota, createsLiveKey, failedEntry, formatOptional, itemProblem, optionalInstant, page,
  readInstant, requireView, withVersionMeta, writeInstant, type BatchOutcome,
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
  vat_mode: Type.Optional(Type.Union([VatMode, Type.Null()], { description: 'required on a top-level pricelist; a child without it inherits' })),
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
export const PricelistWrite = Type.Object({ code: Type.Optional(Code), ...PricelistFields }, { additionalProperties: false })
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
const DeleteItem = Type.Union([Code, Type.Object({ code: Code, when: Type.Optional(DateTime) }, { additionalProperties: false })])
const BatchBody = Type.Array(Type.Unknown(), { minItems: 1, maxItems: batchItemsMax })

type PricelistWriteBody = typeof PricelistWrite.static
type PricelistFilterBody = typeof PricelistFilter.static
type ListQueryValue = typeof ListQuery.static

export { effectiveVatMode, pricelistActiveAt }

/** SKUs with a live price on this pricelist (own prices; their latest version not deleted). */
export function skuCount(tenant: TenantRuntime, code: string, _at: number): number {
  return tenant.prices.liveSkuCount(code)
}

export function renderPricelist(tenant: TenantRuntime, code: string, view: View<Pricelist>, at: number): Record<string, unknown> {
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

function toPricelist(body: PricelistWriteBody, actor: string): Pricelist {
  return {
    currency_code: body.currency_code,
    vat_mode: body.vat_mode ?? null,
    name: body.name ?? null,
    description: body.description ?? null,
    parent_code: body.parent_code ?? null,
    start_date: optionalInstant(body.start_date),
    end_date: optionalInstant(body.end_date),
    metadata: body.metadata ?? {},
    price_rules: (body.price_rules ?? []).map((rule): PriceRule => ({
      code: rule.code ?? null,
      description: rule.description ?? null,
      expression: rule.expression ?? null,
      filter: rule.filter ?? null,
      updated_by: rule.updated_by ?? actor,
    })),
  }
}

/**
 * Refuses an unknown currency, and an inactive one when the write assigns it (a new pricelist, or a
 * switch of currency): pricelists already on a currency keep working after it is deactivated.
 */
function checkCurrency(catalog: Catalog, pricelist: Pricelist, existing: Pricelist | null, nowMs: number): void {
  const currency = pricelist.currency_code
  if (!isIso4217(currency)) {
    throw new ApiError('currency_unknown', `Currency ${currency} is not an ISO 4217 code`, {
      details: [{ path: '/currency_code', message: 'not an ISO 4217 code' }],
    })
  }
  if (existing?.currency_code === currency) return
  if (catalog.get('currency', currency, nowMs)?.is_active === false) {
    throw new ApiError('currency_inactive', `Currency ${currency} is inactive and cannot be assigned to a pricelist`, {
      details: [{ path: '/currency_code', message: 'inactive currency' }],
    })
  }
}

function checkShape(pricelist: Pricelist): void {
  if (pricelist.vat_mode === null && pricelist.parent_code === null) {
    throw validationError([{ path: '/vat_mode', message: 'required on a top-level pricelist (NET or GROSS)' }])
  }
  if (pricelist.start_date !== null && pricelist.end_date !== null && pricelist.end_date <= pricelist.start_date) {
    throw validationError([{ path: '/end_date', message: 'must be after start_date' }])
  }
}

/**
 * Main-thread time a write may spend compiling rules before it lets other requests run, when no
 * worker takes them (none, or their queue full): a pricelist's rules take up to a few milliseconds
 * to compile (2,048 syntax tree nodes), a batch of them much more, so they are compiled one rule at
 * a time here, with a turn of the event loop whenever this much time has passed.
 */
const compileSliceMs = 0.5

/**
 * The checks of a pricelist body that need no state, its rules compiled included (rule_invalid):
 * done before the write is planned. Compiling is the costly part of a write, so a price worker
 * does it, below the main thread's priority (test/security/resource-abuse.test.ts, the compile
 * floods); the main thread compiles each version again when it first prices with it.
 */
async function checkBody(tenant: TenantRuntime, body: PricelistWriteBody, actor: string): Promise<void> {
  const pricelist = toPricelist(body, actor)
  checkShape(pricelist)
  if (pricelist.price_rules.length === 0) return
  const rules = pricelist.price_rules.map((rule) => ({ filter: rule.filter, expression: rule.expression }))
  let refusal: { path: string; message: string } | null
  try {
    if (tenant.queryPool === null) throw new QueryPoolBusy('no price workers')
    refusal = await tenant.queryPool.checkRules(rules)
  } catch (error) {
    if (!(error instanceof QueryPoolBusy)) throw error
    refusal = await compileInTurns(rules)
  }
  if (refusal !== null) {
    throw new ApiError('rule_invalid', `Price rule ${refusal.path} ${refusal.message}`, { details: [{ path: refusal.path, message: refusal.message }] })
  }
}

/** Compiles rules here, one at a time, yielding every `compileSliceMs`; answers the first refusal. */
async function compileInTurns(rules: readonly { filter: string | null; expression: string | null }[]): Promise<{ path: string; message: string } | null> {
  const tally: NodeTally = { nodes: 0 }
  let sliceStarted = performance.now()
  for (const [index, rule] of rules.entries()) {
    try {
      compileRule(rule, index, tally)
    } catch (error) {
      if (!(error instanceof RuleCompileError)) throw error
      return { path: error.path, message: error.message }
    }
    if (performance.now() - sliceStarted > compileSliceMs) {
      await nextTurn()
      sliceStarted = performance.now()
    }
  }
  return null
}

/**
 * Refuses a parent that is not live now, a parent chain that comes back to `code`, and a chain
 * (ancestors, this pricelist and its deepest descendants) longer than pricelistDepthMax.
 */
function checkParent(catalog: Catalog, code: string, parentCode: string | null, nowMs: number): void {
  if (parentCode === null) return
  if (catalog.view('pricelist', parentCode, nowMs) === null) {
    throw validationError([{ path: '/parent_code', message: `pricelist ${parentCode} does not exist` }])
  }
  let length = 1
  let current: string | null = parentCode
  while (current !== null) {
    if (current === code) throw new ApiError('pricelist_cycle', `Pricelist ${code} would be its own ancestor (through ${parentCode})`)
    length++
    if (length > pricelistDepthMax) throw depthError(code)
    current = catalog.get('pricelist', current, nowMs)?.parent_code ?? null
  }
  if (catalog.exists('pricelist', code) && length + descendantLevels(catalog, code, nowMs) > pricelistDepthMax) {
    throw depthError(code)
  }
}

function depthError(code: string): ApiError {
  return new ApiError('pricelist_cycle', `Pricelist ${code}: inheritance chains are limited to ${pricelistDepthMax} pricelists`)
}

/** Levels of live descendants below `code` (0 when it has no children), counted up to the bound. */
function descendantLevels(catalog: Catalog, code: string, at: number): number {
  const children = new Map<string, string[]>()
  for (const [key, view] of catalog.viewsAt('pricelist', at)) {
    const parent = view.value.parent_code
    if (parent === null) continue
    const list = children.get(parent)
    if (list === undefined) children.set(parent, [key])
    else list.push(key)
  }
  let level: string[] = [code]
  let levels = 0
  while (levels <= pricelistDepthMax) {
    const next = level.flatMap((key) => children.get(key) ?? [])
    if (next.length === 0) break
    levels++
    level = next
  }
  return levels
}

/** Validates and plans one pricelist write (versioned now), its body checked by `checkBody` before; throws ApiError when refused. */
function planPricelist(context: TenantContext, code: string, body: PricelistWriteBody): Change | null {
  const { tenant, nowMs, actor } = context
  const pricelist = toPricelist(body, actor)
  checkShape(pricelist)
  checkCurrency(tenant.catalog, pricelist, tenant.catalog.get('pricelist', code, nowMs), nowMs)
  checkParent(tenant.catalog, code, pricelist.parent_code, nowMs)
  return tenant.catalog.plan('pricelist', code, pricelist, nowMs, nowMs, actor)
}

function codeOrThrow(code: string): void {
  const problem = itemProblem(Code, code)
  if (problem !== null) throw validationError([{ path: '/code', message: problem }])
}

/** A codes-and-views list: with an instant, the pricelists active then; without, every live one. */
function listed(tenant: TenantRuntime, activeAt: number | null, nowMs: number, includeDeleted = false): [string, View<Pricelist>][] {
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
        await checkBody(context.tenant, context.body, context.actor)
        const change = planPricelist(context, code, context.body)
        if (change === null) return accepted
        if (createsLiveKey(context.tenant, change)) checkQuota(context.tenant, 'pricelist', 'pricelists', 1)
        await context.tenant.commit([change])
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
  const outcome: BatchOutcome = { accepted: 0, failed: [] }
  const changes: Change[] = []
  const { tenant } = context
  // Bodies first (their rules compiled in turns), then the items planned in one go, in order.
  const refused = new Map<number, unknown>()
  for (const [index, item] of context.body.entries()) {
    if (itemProblem(PricelistBatchItem, item) !== null) continue
    await checkBody(tenant, item as PricelistWriteBody, context.actor).catch((error: unknown) => refused.set(index, error))
  }
  for (const [index, item] of context.body.entries()) {
    const code = typeof (item as { code?: unknown })?.code === 'string' ? (item as { code: string }).code : null
    const problem = itemProblem(PricelistBatchItem, item)
    if (problem !== null) {
      outcome.failed.push({ code, message: problem })
      continue
    }
    try {
      if (refused.has(index)) throw refused.get(index)
      const change = planPricelist(context, code!, item as PricelistWriteBody)
      // Earlier items are applied already, so the live count includes them.
      if (change !== null && createsLiveKey(tenant, change)) checkQuota(tenant, 'pricelist', 'pricelists', 1)
      if (change !== null) {
        // Later items (a child after its parent, a repeat of a code) plan against this one.
        tenant.catalog.apply('pricelist', change.key, change.versions)
        changes.push(change)
      }
      outcome.accepted++
    } catch (error) {
      outcome.failed.push(failedEntry({ code }, error))
    }
  }
  await tenant.commit(changes)
  return { status: 202, body: outcome }
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
        const view = requireView(context.tenant.catalog.view('pricelist', code, at, context.query.include_deleted), `Pricelist ${code}`)
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
        const found = listed(context.tenant, activeAt, context.nowMs, context.query.include_deleted).filter(([code, view]) => matcher(code, view.value))
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

function renderPage(tenant: TenantRuntime, found: [string, View<Pricelist>][], at: number, query: { page?: number; size?: number }) {
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
    if (text !== null && !code.toLowerCase().includes(text) && !(pricelist.name ?? '').toLowerCase().includes(text)) return false
    if (body.currency_code !== undefined && pricelist.currency_code !== body.currency_code) return false
    if (body.parent_code !== undefined && pricelist.parent_code !== body.parent_code) return false
    if (body.vat_mode !== undefined && inheritedVatMode(context.tenant.catalog, pricelist, at) !== body.vat_mode) return false
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
        const change = planDelete(context, context.params['code']!, context.query.when)
        if (change !== null) await context.tenant.commit([change])
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

/** Plans a soft delete at `when` (a past or absent `when` means now); 404 when not live then. */
function planDelete(context: TenantContext, code: string, when: string | undefined): Change | null {
  const at = writeInstant(when, context.nowMs)
  requireView(context.tenant.catalog.view('pricelist', code, at), `Pricelist ${code}`)
  return context.tenant.catalog.plan('pricelist', code, null, at, context.nowMs, context.actor)
}

async function deleteBatch(context: TenantContext<unknown[]>) {
  const outcome: BatchOutcome = { accepted: 0, failed: [] }
  const changes: Change[] = []
  for (const item of context.body) {
    const code = typeof item === 'string' ? item : ((item as { code?: unknown })?.code as string | undefined) ?? null
    const problem = itemProblem(DeleteItem, item)
    if (problem !== null) {
      outcome.failed.push({ code, message: problem })
      continue
    }
    try {
      const change = planDelete(context, code!, typeof item === 'string' ? undefined : (item as { when?: string }).when)
      if (change !== null) {
        context.tenant.catalog.apply('pricelist', change.key, change.versions)
        changes.push(change)
      }
      outcome.accepted++
    } catch (error) {
      outcome.failed.push(failedEntry({ code }, error))
    }
  }
  await context.tenant.commit(changes)
  return { status: 202, body: outcome }
}
