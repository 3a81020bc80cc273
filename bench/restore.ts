/**
 * Restore of the full bench tenant under load (issue 8): a backup of the 3,000,000-version tenant,
 * then 100,000 of its (SKU, pricelist) pairs get a new version, then `POST /admin/tenants/{slug}/restore`
 * puts the backup back:
 * - alone: seconds from the request until the status says completed;
 * - under load: the 100-SKU query scenario runs on the bench's connections, first without a restore
 *   (its p99), then again while the same restore runs (changes written anew first), measured from the
 *   request until completed. Targets: no 5xx and no failed read, p99 at most 3x the p99 without.
 * @module
 */
import { loadDuring } from './load-during.js'
import { measureLoad, scenarioDefinitions, type LoadParameters, type LoadResult } from './scenarios.js'
import { adminCall, type PricingServer, type TenantClient } from './server-process.js'
import { pricelists, skuCode, type WorkloadShape } from './workload.js'

/** Pairs that differ from the backup when it is restored (a tenth of the quick run's). */
const restoreChangedPairsMax = 100_000
export const restoreP99RatioMax = 3

export interface RestoreRun {
  /** Request to `completed`, ms (client side). */
  readonly elapsedMs: number
  /** `completed_at - started_at` of the status. */
  readonly serverMs: number
}

export interface RestoreBenchResult {
  readonly changedPairs: number
  readonly alone: RestoreRun
  readonly underLoad: RestoreRun
  readonly queriesAlone: LoadResult
  readonly queriesDuringRestore: LoadResult
  readonly p99Ratio: number
}

export interface RestoreBenchOptions {
  readonly shape: WorkloadShape
  readonly load: LoadParameters
  readonly slug: string
  readonly progress: (message: string) => void
}

/** A new version for `restoreChangedPairs` pairs (SKU-major over the pricelists), `round` picks the amounts. */
function changedPairCount(shape: WorkloadShape): number {
  return Math.min(restoreChangedPairsMax, Math.floor((shape.skuCount * pricelists.length) / 10))
}

async function changePairs(client: TenantClient, shape: WorkloadShape, round: number): Promise<void> {
  const batch = 2_500
  const restoreChangedPairs = changedPairCount(shape)
  for (let first = 0; first < restoreChangedPairs; first += batch) {
    const items = Array.from({ length: Math.min(batch, restoreChangedPairs - first) }, (_, offset) => {
      const pair = first + offset
      const sku = skuCode(Math.floor(pair / pricelists.length) % shape.skuCount)
      return {
        sku,
        pricelist: pricelists[pair % pricelists.length]!.code,
        price: `${1_000 + round}.${String(pair % 100).padStart(2, '0')}`,
      }
    })
    await client.expect(202, 'POST', '/price/batch', items)
  }
}

async function restore(server: PricingServer, slug: string, backupId: string): Promise<RestoreRun> {
  const started = performance.now()
  await adminCall(server, 'POST', `/admin/tenants/${slug}/restore`, { backup_id: backupId })
  for (;;) {
    const status = (await adminCall(server, 'GET', `/admin/tenants/${slug}/restore/status`)) as {
      status: string
      started_at: string
      completed_at: string
      error: string | null
    }
    if (status.status === 'completed')
      return {
        elapsedMs: performance.now() - started,
        serverMs: Date.parse(status.completed_at) - Date.parse(status.started_at),
      }
    if (status.status !== 'in_progress') throw new Error(`restore ${status.status}: ${status.error}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

export async function runRestoreBench(
  server: PricingServer,
  client: TenantClient,
  options: RestoreBenchOptions,
): Promise<RestoreBenchResult> {
  const queries = scenarioDefinitions(options.slug, options.shape).find(
    (definition) => definition.name === 'query-100',
  )!.requests
  const headers = { authorization: `Bearer ${await client.refreshToken()}` }
  options.progress(`restore: a backup, then ${changedPairCount(options.shape).toLocaleString('en-US')} pairs changed`)
  const backup = (await adminCall(server, 'POST', `/admin/tenants/${options.slug}/backups`, {})) as { id: string }
  await changePairs(client, options.shape, 1)
  options.progress('restore: alone')
  const alone = await restore(server, options.slug, backup.id)
  options.progress('restore: 100-SKU queries without a restore')
  const queriesAlone = await measureLoad(server.url, server.pid, queries, headers, options.load)
  await changePairs(client, options.shape, 2)
  options.progress('restore: 100-SKU queries while the same restore runs')
  const during = await loadDuring(server.url, server.pid, queries, headers, options.load, () =>
    restore(server, options.slug, backup.id),
  )
  return {
    changedPairs: changedPairCount(options.shape),
    alone,
    underLoad: during.run,
    queriesAlone,
    queriesDuringRestore: during.load,
    p99Ratio: during.load.latencyP99Ms / Math.max(queriesAlone.latencyP99Ms, 1),
  }
}
