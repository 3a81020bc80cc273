/**
 * History retention over 3,000,000 price versions (issue 8): a tenant of its own holds 30,000
 * SKUs on one pricelist with 100 versions each (written in 100 rounds, each version starting at its
 * write), then `retention.max.versions = 3` and a pass (`POST /admin/tenants/{slug}/retention`)
 * removes 97 of every 100. Measured: versions examined and removed per second, the 100-SKU query's p99 on the
 * bench tenant while the pass runs (beside its p99 without, from the restore phase), the server's
 * RSS before and after (each after a full GC), and the tenant's size on disk as a compacted backup before and after (the
 * live data file keeps its size and reuses the freed pages).
 * @module
 */
import { statSync } from 'node:fs'
import path from 'node:path'
import { collectGarbage } from './gc.js'
import { loadDuring } from './load-during.js'
import { memory } from './proc.js'
import { scenarioDefinitions, type LoadParameters, type LoadResult } from './scenarios.js'
import { adminCall, provisionTenant, type PricingServer, type TenantClient } from './server-process.js'
import { skuCode, type WorkloadShape } from './workload.js'

export const retentionSlug = 'retention-bench'
const retentionPricelists = ['HIST-1']
/** Versions per pair: long histories, as retention meets them (a record of 100 takes an overflow page). */
const rounds = 100
const keptVersions = 3
/** Retention's target beside the restore's: the query p99 during a pass at most this times the p99 without. */
export const retentionP99RatioMax = 3

export interface RetentionBenchResult {
  readonly versionsBefore: number
  readonly versionsRemoved: number
  readonly pairs: number
  readonly steps: number
  /** The pass, as the server timed it. */
  readonly passMs: number
  readonly versionsPerSecond: number
  readonly queriesDuringPass: LoadResult
  readonly p99Ratio: number
  /** The tenant's price columns (the server's own count) before and after the pass. */
  readonly priceBytesBefore: number
  readonly priceBytesAfter: number
  readonly rssBeforeBytes: number
  readonly rssAfterBytes: number
  /** RssAnon (heap, price columns; not the data file's mapped pages). */
  readonly rssAnonBeforeBytes: number
  readonly rssAnonAfterBytes: number
  readonly backupBeforeBytes: number
  readonly backupAfterBytes: number
  readonly dataFileBytes: number
}

export interface RetentionBenchOptions {
  readonly shape: WorkloadShape
  readonly load: LoadParameters
  /** The bench tenant, whose 100-SKU queries run during the pass. */
  readonly slug: string
  readonly queriesAlone: LoadResult
  readonly progress: (message: string) => void
}

async function backupBytes(server: PricingServer): Promise<number> {
  const backup = (await adminCall(server, 'POST', `/admin/tenants/${retentionSlug}/backups`, {})) as { id: string }
  return statSync(path.join(server.options.dataDir, 'backups', retentionSlug, backup.id, 'data.mdb')).size
}

/** `rounds` rounds of a version for every (SKU, pricelist), 4 batches of 2,500 in flight. */
async function writeHistory(client: TenantClient, skuCount: number): Promise<void> {
  const pairs = skuCount * retentionPricelists.length
  for (let round = 0; round < rounds; round++) {
    let next = 0
    const lane = async (): Promise<void> => {
      while (next < pairs) {
        const first = next
        next += 2_500
        const items = Array.from({ length: Math.min(2_500, pairs - first) }, (_, offset) => {
          const pair = first + offset
          return {
            sku: skuCode(Math.floor(pair / retentionPricelists.length)),
            pricelist: retentionPricelists[pair % retentionPricelists.length]!,
            price: 100 + round,
          }
        })
        await client.expect(202, 'POST', '/price/batch', items)
      }
    }
    await Promise.all(Array.from({ length: 4 }, lane))
  }
}

export async function runRetentionBench(
  server: PricingServer,
  benchClient: TenantClient,
  options: RetentionBenchOptions,
): Promise<RetentionBenchResult> {
  const client = await provisionTenant(server, retentionSlug)
  // 30,000 SKUs x 100 versions = 3,000,000 in the full run.
  const skuCount = Math.round(options.shape.skuCount * 0.3)
  options.progress(
    `retention: ${(skuCount * retentionPricelists.length * rounds).toLocaleString('en-US')} versions in ${rounds} rounds`,
  )
  await writeHistory(client, skuCount)
  await client.expect(202, 'PUT', '/settings/retention.max.versions', { value: String(keptVersions) })
  await client.expect(202, 'PUT', '/settings/retention.enabled', { value: 'true' })
  const backupBeforeBytes = await backupBytes(server)
  await collectGarbage(server.pid)
  await new Promise((resolve) => setTimeout(resolve, 2_000))
  const before = memory(server.pid)
  const queries = scenarioDefinitions(options.slug, options.shape).find(
    (definition) => definition.name === 'query-100',
  )!.requests
  const headers = { authorization: `Bearer ${await benchClient.refreshToken()}` }
  options.progress('retention: a pass to 3 versions per pair, with 100-SKU queries on the bench tenant')
  const during = await loadDuring(server.url, server.pid, queries, headers, options.load, () =>
    adminCall(server, 'POST', `/admin/tenants/${retentionSlug}/retention`),
  )
  const pass = during.run as {
    pairs: number
    versions_before: number
    versions_removed: number
    steps: number
    ms: number
    price_bytes_before: number
    price_bytes_after: number
  }
  await collectGarbage(server.pid)
  await new Promise((resolve) => setTimeout(resolve, 2_000))
  const after = memory(server.pid)
  const backupAfterBytes = await backupBytes(server)
  return {
    versionsBefore: pass.versions_before,
    versionsRemoved: pass.versions_removed,
    pairs: pass.pairs,
    steps: pass.steps,
    passMs: pass.ms,
    versionsPerSecond: pass.versions_before / (pass.ms / 1000),
    queriesDuringPass: during.load,
    p99Ratio: during.load.latencyP99Ms / Math.max(options.queriesAlone.latencyP99Ms, 1),
    priceBytesBefore: pass.price_bytes_before,
    priceBytesAfter: pass.price_bytes_after,
    rssBeforeBytes: before.rssBytes,
    rssAfterBytes: after.rssBytes,
    rssAnonBeforeBytes: before.rssAnonBytes,
    rssAnonAfterBytes: after.rssAnonBytes,
    backupBeforeBytes,
    backupAfterBytes,
    dataFileBytes: statSync(path.join(server.options.dataDir, 'tenants', retentionSlug, 'data.mdb')).size,
  }
}
