/**
 * Articles: single and batch writes (versioned by start date), reads as of an instant, numbered
 * pages, search (text, type, metadata, CEL filter), single and batch soft delete.
 * @module
 */
import { Type } from '@sinclair/typebox'
import type { Article } from '../../engine/catalog.js'
import { batchItemsMax, searchFilterStepsMax } from '../../engine/limits.js'
import { compileFilter, RuleCompileError } from '../../engine/rules.js'
import { searchArticles as matchArticles, type ArticleCriteria } from '../../engine/article-search.js'
import { QueryPoolBusy } from '../../workers/pool.js'
import { mainThreadAllowance } from '../../tenant/price-dispatch.js'
import type { View } from '../../engine/temporal.js'
import { arrayCost, route, type TenantContext, type TenantRoute } from '../contracts.js'
import { ApiError, validationError } from '../../platform/errors.js'
import {
  AsOfQuery,
  BatchResult,
  Code,
  DateTime,
  IncludeDeletedQuery,
  Metadata,
  NullableText,
  Page,
  PageQuery,
  readOnlyFields,
  Text,
  WhenQuery,
} from '../schemas.js'
import { Refusal, type ItemOutcome } from '../../tenant/writes/core.js'
import { deleteArticles, writeArticles, type ArticleInput } from '../../tenant/writes/articles.js'
import {
  accepted,
  acceptedOrThrow,
  itemProblem,
  page,
  readInstant,
  requireView,
  checkedItems,
  withVersionMeta,
  type BatchOutcome,
} from './common.js'
import { assert } from '../../engine/assert.js'

const ArticleFields = {
  name: Type.Optional(NullableText),
  type: Type.Optional(NullableText),
  metadata: Type.Optional(Metadata),
  start_date: Type.Optional(DateTime),
  ...readOnlyFields,
}
export const ArticleWrite = Type.Object({ sku: Type.Optional(Code), ...ArticleFields }, { additionalProperties: false })
export const ArticleBatchItem = Type.Object({ sku: Code, ...ArticleFields }, { additionalProperties: false })
export const ArticleResponse = Type.Object({
  sku: Type.String(),
  name: Type.Union([Type.String(), Type.Null()]),
  type: Type.Union([Type.String(), Type.Null()]),
  metadata: Type.Record(Type.String(), Type.Array(Type.String())),
  updated_at: Type.String(),
  updated_by: Type.String(),
  deleted_at: Type.Optional(Type.String()),
})
const ReadQuery = Type.Object({ ...AsOfQuery, ...IncludeDeletedQuery }, { additionalProperties: false })
const ListQuery = Type.Object({ ...AsOfQuery, ...IncludeDeletedQuery, ...PageQuery }, { additionalProperties: false })
export const ArticleSearch = Type.Object(
  {
    text: Type.Optional(Text),
    type: Type.Optional(Text),
    metadata: Type.Optional(Metadata),
    filter: Type.Optional(Text),
    as_of: Type.Optional(DateTime),
    include_deleted: Type.Optional(Type.Boolean()),
    page: Type.Optional(Type.Integer({ minimum: 1 })),
    size: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
  },
  { additionalProperties: false },
)
const DeleteItem = Type.Union([
  Code,
  Type.Object({ sku: Code, when: Type.Optional(DateTime) }, { additionalProperties: false }),
])
const BatchBody = Type.Array(Type.Unknown(), { minItems: 1, maxItems: batchItemsMax })

type ArticleWriteBody = typeof ArticleWrite.static

export function renderArticle(sku: string, view: View<Article>): Record<string, unknown> {
  return withVersionMeta({ sku, name: view.value.name, type: view.value.type, metadata: view.value.metadata }, view)
}

export function articleRoutes(): TenantRoute[] {
  return [
    route<ArticleWriteBody, Record<string, never>>({
      method: 'PUT',
      path: '/article/:sku',
      operationId: 'putArticle',
      errors: [422],
      summary: 'Write one article (replaces the version in force from start_date)',
      tag: 'articles',
      body: ArticleWrite,
      responseStatus: 202,
      dimension: 'ingest',
      handler: async (context) => {
        const sku = context.params['sku']!
        if (context.body.sku !== undefined && context.body.sku !== sku) {
          throw validationError([{ path: '/sku', message: 'must equal the SKU in the path' }])
        }
        itemOrThrow(Code, sku, '/sku')
        acceptedOrThrow(await writeArticles(context.tenant, context, [{ ...context.body, sku }]))
        return accepted
      },
    }),
    route<unknown[]>({
      method: 'POST',
      path: '/article/batch',
      operationId: 'writeArticles',
      summary: 'Write articles in bulk (not atomic: valid items are written, others listed in failed)',
      tag: 'articles',
      body: BatchBody,
      response: BatchResult,
      responseStatus: 202,
      dimension: 'ingest',
      cost: arrayCost,
      handler: async (context) => {
        const items = context.body
        const outcomes = await writeArticles(
          context.tenant,
          context,
          checkedItems<ArticleInput>(ArticleBatchItem, items),
        )
        return { status: 202, body: articleBatchAnswer(items, outcomes, skuOfWrite) }
      },
    }),
    route<undefined, typeof ReadQuery.static>({
      method: 'GET',
      path: '/article/:sku',
      operationId: 'getArticle',
      summary: 'One article as of asOf',
      tag: 'articles',
      query: ReadQuery,
      response: ArticleResponse,
      dimension: 'query',
      handler: (context) => {
        const sku = context.params['sku']!
        const view = context.tenant.catalog.view('article', sku, readInstant(context), context.query.include_deleted)
        return { status: 200, body: renderArticle(sku, requireView(view, `Article ${sku}`)) }
      },
    }),
    route<undefined, typeof ListQuery.static>({
      method: 'GET',
      path: '/article',
      operationId: 'listArticles',
      summary:
        'Articles as of asOf, sorted by SKU: a numbered page when both page and size are given, else the full list (the specification)',
      tag: 'articles',
      query: ListQuery,
      response: Type.Union([Page(ArticleResponse), Type.Array(ArticleResponse)]),
      dimension: 'query',
      handler: (context) => {
        const found = [
          ...context.tenant.catalog.viewsAt('article', readInstant(context), context.query.include_deleted),
        ]
        if (context.query.page === undefined || context.query.size === undefined) {
          return { status: 200, body: found.map(([sku, view]) => renderArticle(sku, view)) }
        }
        const numbered = page(found, context.query)
        return {
          status: 200,
          body: { ...numbered, items: numbered.items.map(([sku, view]) => renderArticle(sku, view)) },
        }
      },
    }),
    route<typeof ArticleSearch.static>({
      method: 'POST',
      path: '/article/search',
      operationId: 'searchArticles',
      summary: 'Search articles: text (SKU or name, case-insensitive), type, metadata, CEL filter',
      tag: 'articles',
      body: ArticleSearch,
      response: Page(ArticleResponse),
      dimension: 'query',
      handler: (context) => searchArticles(context),
    }),
    route<undefined, typeof WhenQuery.static>({
      method: 'DELETE',
      path: '/article/:sku',
      operationId: 'deleteArticle',
      summary: 'Soft-delete an article at `when` (default now)',
      tag: 'articles',
      query: WhenQuery,
      responseStatus: 202,
      dimension: 'ingest',
      handler: async (context) => {
        const input = { key: context.params['sku']!, when: context.query.when }
        acceptedOrThrow(await deleteArticles(context.tenant, context, [input]))
        return accepted
      },
    }),
    route<unknown[]>({
      method: 'DELETE',
      path: '/article/batch',
      operationId: 'deleteArticles',
      summary: 'Soft-delete articles in bulk: an array of SKUs or {sku, when}',
      tag: 'articles',
      body: BatchBody,
      response: BatchResult,
      responseStatus: 202,
      dimension: 'ingest',
      cost: arrayCost,
      handler: async (context) => {
        const items = context.body
        const inputs = checkedItems(DeleteItem, items, (item) => {
          if (typeof item === 'string') return { key: item }
          const { sku, when } = item as { sku: string; when?: string }
          return { key: sku, when }
        })
        const outcomes = await deleteArticles(context.tenant, context, inputs)
        return { status: 202, body: articleBatchAnswer(items, outcomes, skuOfDelete) }
      },
    }),
  ]
}

/** The SKU a batch write item names, if any (a refused item's `failed` entry shows it). */
function skuOfWrite(item: unknown): string | null {
  return typeof (item as { sku?: unknown })?.sku === 'string' ? (item as { sku: string }).sku : null
}

/** The SKU a batch delete item names: the item itself, or its `sku` field as it is. */
function skuOfDelete(item: unknown): unknown {
  return typeof item === 'string' ? item : (((item as { sku?: unknown })?.sku as string | undefined) ?? null)
}

/**
 * A batch's answer: accepted items counted, each refused one listed with its SKU. A quota refusal
 * reads as the batch routes have always written it, shorter than a single write's error.
 */
function articleBatchAnswer(
  items: readonly unknown[],
  outcomes: readonly ItemOutcome[],
  skuOf: (item: unknown) => unknown,
): BatchOutcome {
  const answer: BatchOutcome = { accepted: 0, failed: [] }
  for (let index = 0; index < outcomes.length; index++) {
    const outcome = outcomes[index]!
    if (!(outcome instanceof Refusal)) {
      answer.accepted++
      continue
    }
    const quota = outcome.status === 'quota_exceeded'
    const message = quota ? `The plan allows ${outcome.limit} articles (quota_exceeded)` : outcome.message
    answer.failed.push({ sku: skuOf(items[index]), message })
  }
  return answer
}

function itemOrThrow(schema: typeof Code, value: unknown, path: string): void {
  const problem = itemProblem(schema, value)
  if (problem !== null) throw validationError([{ path, message: problem }])
}

async function searchArticles(context: TenantContext<typeof ArticleSearch.static>) {
  const { body, tenant } = context
  const at = body.as_of === undefined ? context.nowMs : readInstant({ ...context, query: { as_of: body.as_of } })
  let filter = null
  try {
    filter = compileFilter(body.filter ?? null, '/filter')
  } catch (error) {
    if (error instanceof RuleCompileError)
      throw new ApiError('rule_invalid', `filter ${error.message}`, {
        details: [{ path: error.path, message: error.message }],
      })
    throw error
  }
  const criteria: ArticleCriteria = {
    at,
    text: body.text?.toLowerCase() ?? null,
    type: body.type ?? null,
    metadata: body.metadata === undefined ? [] : Object.entries(body.metadata),
    filter: body.filter ?? null,
    includeDeleted: body.include_deleted ?? false,
  }
  const pool = tenant.queryPool
  // The main thread runs the filter within an allowance (tenant/price-dispatch.ts); a
  // filter that passes it is run again on a worker.
  let outcome = matchArticles(tenant.catalog, criteria, filter, pool === null ? undefined : mainThreadAllowance)
  if (outcome.kind === 'passed_allowance') {
    try {
      outcome = await pool!.search(tenant, criteria)
    } catch (error) {
      if (!(error instanceof QueryPoolBusy)) throw error
      outcome = matchArticles(tenant.catalog, criteria, filter)
    }
  }
  if (outcome.kind === 'over_budget') {
    const message = `filter took more than ${searchFilterStepsMax} evaluation steps over the articles searched; narrow the search with text, type or metadata, or simplify the filter`
    throw new ApiError('rule_invalid', message, { details: [{ path: '/filter', message }] })
  }
  assert(outcome.kind === 'found', 'an article search answers found, or a refusal handled above')
  // Articles found on a worker are read here at the same instant; a write since may have removed one.
  const found: Record<string, unknown>[] = []
  for (const sku of outcome.skus) {
    const view = tenant.catalog.view('article', sku, at, criteria.includeDeleted)
    if (view !== null) found.push(renderArticle(sku, view))
  }
  return { status: 200, body: page(found, body) }
}
