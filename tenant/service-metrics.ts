/**
 * The tenant services' counters on /metrics: backups written or refused, restores, versions that
 * history retention removed. The services keep plain count objects; the process registers them
 * here once, so that the metrics registry (platform/metrics.ts) imports no service.
 * @module
 */
import type { Metrics } from '../platform/metrics.js'
import { restoreCounts } from './backups/restore.js'
import { backupCounts } from './backups/take.js'
import { retentionCounts } from './retention/pass.js'

export function registerServiceCounts(metrics: Metrics): void {
  metrics.registerCounter(
    'pricing_backups_total',
    'Backups written or refused (no room, or a copy that failed or did not verify), by type',
    () =>
      (['automatic', 'manual'] as const).flatMap((type) => [
        { labels: { type, outcome: 'written' }, value: backupCounts[type].written },
        { labels: { type, outcome: 'refused' }, value: backupCounts[type].refused },
      ]),
  )
  metrics.registerCounter('pricing_restores_total', 'Restores from a backup since start, by outcome', () =>
    (['completed', 'failed'] as const).map((outcome) => ({ labels: { outcome }, value: restoreCounts[outcome] })),
  )
  metrics.registerCounter(
    'pricing_retention_versions_removed_total',
    'Price versions removed by history retention since start',
    () => [{ labels: {}, value: retentionCounts.versionsRemoved }],
  )
}
