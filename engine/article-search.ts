/**
 * The article search's matching, as plain data in and out: the same code runs on the main thread
 * and, when its filter's rule steps pass the main thread's allowance, on a price worker
 * (http/routes/articles.ts, workers/price-task.ts), so both find the same articles.
 * @module
 */
import type { Catalog } from './catalog.js'
import { searchFilterStepsMax } from './limits.js'
import { compileFilter, matches, ruleStepsSpent, type CelProgram } from './rules.js'

export interface ArticleCriteria {
  readonly at: number
  /** Lower-cased; matched against the SKU and the name. */
  readonly text: string | null
  readonly type: string | null
  readonly metadata: readonly [string, readonly string[]][]
  /** CEL text, compiled (and so checked) by the caller before. */
  readonly filter: string | null
  readonly includeDeleted: boolean
}

export type ArticleSearchOutcome =
  | { readonly kind: 'found'; readonly skus: string[] }
  /** The filter's runs together passed `searchFilterStepsMax`. */
  | { readonly kind: 'over_budget' }
  /** The filter's runs passed the caller's allowance: run it where there is none. */
  | { readonly kind: 'passed_allowance' }

/**
 * SKUs of the articles in force at the instant that match every criterion, in SKU order.
 * `allowance(examined)`: the rule steps this thread may spend after running the filter on that many
 * articles (none: the budget alone bounds them).
 */
export function searchArticles(
  catalog: Catalog,
  criteria: ArticleCriteria,
  filter: CelProgram | null = compileFilter(criteria.filter),
  allowance?: (examined: number) => number,
): ArticleSearchOutcome {
  const skus: string[] = []
  const text = criteria.text
  let steps = 0
  let examined = 0
  for (const [sku, view] of catalog.viewsAt('article', criteria.at, criteria.includeDeleted)) {
    const article = view.value
    if (text !== null && !sku.toLowerCase().includes(text) && !(article.name ?? '').toLowerCase().includes(text))
      continue
    if (criteria.type !== null && article.type !== criteria.type) continue
    if (!metadataMatches(article.metadata, criteria.metadata)) continue
    if (filter !== null) {
      const matched = matches(filter, { sku, name: article.name, type: article.type, metadata: article.metadata })
      steps += ruleStepsSpent()
      if (steps > searchFilterStepsMax) return { kind: 'over_budget' }
      if (allowance !== undefined && steps > allowance(++examined)) return { kind: 'passed_allowance' }
      if (!matched) continue
    }
    skus.push(sku)
  }
  return { kind: 'found', skus }
}

/**
 * Every key of the query must match; within a key, any of its values. Only the metadata's own keys
 * count: a key such as `constructor` or `__proto__` would otherwise find Object.prototype's members.
 */
export function metadataMatches(
  metadata: Record<string, string[]>,
  wanted: readonly [string, readonly string[]][],
): boolean {
  for (const [key, values] of wanted) {
    const have = Object.hasOwn(metadata, key) ? metadata[key] : undefined
    if (have === undefined || !values.some((value) => have.includes(value))) return false
  }
  return true
}
