/**
 * Article writes and soft deletes as use cases (./core.ts): a write replaces the version in force
 * from its start date (a past or absent one means now); an article that becomes live counts against
 * the plan's article quota; a delete needs the article to exist at its instant.
 * @module
 */
import type { Article, Change, Metadata } from '../../engine/catalog.js'
import {
  applyBatch,
  writeInstant,
  type EntityWriter,
  type ItemOutcome,
  type Refusal,
  type WriteContext,
  type WriteTarget,
} from './core.js'
import { applyChange, catalogQuota, createsLiveKey, deleteKeys, type DeleteInput } from './catalog.js'

/** One article write, its shape checked by the edge. */
export interface ArticleInput {
  readonly sku: string
  readonly name?: string | null
  readonly type?: string | null
  readonly metadata?: Metadata
  readonly start_date?: string
}

function toArticle(input: ArticleInput): Article {
  return { name: input.name ?? null, type: input.type ?? null, metadata: input.metadata ?? {} }
}

/** How to write articles, for `applyBatch` or `applyItems`. */
export function articleWriter(tenant: WriteTarget, context: WriteContext): EntityWriter<ArticleInput, Change> {
  const { nowMs, actor } = context
  return {
    plan: (input) =>
      tenant.catalog.plan('article', input.sku, toArticle(input), writeInstant(input.start_date, nowMs), nowMs, actor),
    // Earlier items are applied already, so the live count includes them.
    quota: (change) => (createsLiveKey(tenant, change) ? catalogQuota(tenant, 'article', 'articles', 1) : null),
    apply: (change, applied) => applyChange(tenant, change, applied),
  }
}

/** Writes articles (each item an ArticleInput or the refusal of its shape); an outcome per item. */
export function writeArticles(
  tenant: WriteTarget,
  context: WriteContext,
  items: readonly (ArticleInput | Refusal)[],
): Promise<ItemOutcome[]> {
  return applyBatch(tenant, items, articleWriter(tenant, context))
}

/** Soft-deletes articles at their instant; an article that does not exist then is refused (not_found). */
export function deleteArticles(
  tenant: WriteTarget,
  context: WriteContext,
  items: readonly (DeleteInput | Refusal)[],
): Promise<ItemOutcome[]> {
  return deleteKeys(tenant, context, { type: 'article', what: (sku) => `Article ${sku}`, items })
}
