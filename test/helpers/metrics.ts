/**
 * The answer cache's counts from a test server's /metrics (`pricing_query_answer_cache_items_total`,
 * SKUs served from the cache and computed).
 * @module
 */
import type { TestServer } from './server.js'

export async function answerCacheCounts(server: TestServer): Promise<{ hits: number; misses: number }> {
  const text = (await server.request('GET', '/metrics')).text
  const value = (result: string): number =>
    Number(
      new RegExp(`^pricing_query_answer_cache_items_total\\{result="${result}"\\} (\\d+)$`, 'm').exec(text)?.[1] ??
        Number.NaN,
    )
  return { hits: value('hit'), misses: value('miss') }
}
