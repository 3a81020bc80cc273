/**
 * A cache's counts from a test server's /metrics: the answer cache's
 * (`pricing_query_answer_cache_items_total`, SKUs served from the cache and computed) or the prior
 * prices' (`pricing_prior_price_cache_total`).
 * @module
 */
import type { TestServer } from './server.js'

export async function answerCacheCounts(
  server: TestServer,
  metric = 'pricing_query_answer_cache_items_total',
): Promise<{ hits: number; misses: number }> {
  const text = (await server.request('GET', '/metrics')).text
  const value = (result: string): number =>
    Number(new RegExp(`^${metric}\\{result="${result}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? Number.NaN)
  return { hits: value('hit'), misses: value('miss') }
}
