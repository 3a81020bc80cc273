/**
 * Restoring a tenant from one of its backups (SPEC "Backup and restore rules" 3), in the background:
 *
 * 1. Start: the tenant is marked restoring at once (writes on non-management endpoints answer 503
 *    with `Retry-After: 15` from then on), the status `in_progress` is stored, the caller gets 202.
 * 2. Writes already in flight settle; then the tenant's store and the backup are compared, chunk by
 *    chunk with the event loop free between chunks (storage/backup/restore-diff.ts). Reads answer
 *    from the state before the restore throughout.
 * 3. The differences and one changelog entry per differing entity (after the current sequence:
 *    the changelog keeps rising) are written in transactions of 2,000, then a marker naming the
 *    restore; then memory swaps in one step (tenant/runtime.ts `applyRestore`) and changelog
 *    readers and webhooks see the entries.
 * 4. The status becomes `completed`. A failure before anything is written (a backup that does not
 *    open) makes it `failed`, with the error; the tenant keeps its state.
 *
 * A stop at any moment (SIGKILL included) never leaves a mix that serves: the next start finishes
 * an `in_progress` restore before the tenant loads (`settleInterruptedRestores`), so the tenant is
 * wholly the backup and the status `completed`. Until then the tenant does not serve, and until the
 * swap reads answer from memory, which holds the state before.
 * @module
 */
import { formatInstant } from '../../engine/time.js'
import type { RestoreRecord, SystemStore } from '../../storage/system-store.js'
import { restoreChanges, restoreDiff, type RestoreDiff } from '../../storage/backup/restore-diff.js'
import { TenantStore } from '../../storage/tenant-store.js'
import { ApiError, notFound } from '../../platform/errors.js'
import type { TenantRegistry, TenantRuntime } from '../runtime.js'

/** The marker a restore leaves in the tenant's meta table, written after all of its changes. */
interface RestoreMarker {
  readonly backup_id: string
  readonly started_at: number
  readonly completed_at: number
}

const restoreMarkerKey = 'restore'

/** The spec's restore status object. */
export interface RestoreStatus {
  readonly status: 'idle' | 'in_progress' | 'completed' | 'failed'
  readonly backup_id: string | null
  readonly started_at: string | null
  readonly completed_at: string | null
  readonly error: string | null
}

/** Restores since start, by outcome (exported by platform/metrics.ts). */
export const restoreCounts = { completed: 0, failed: 0 }

export function publicRestoreStatus(record: RestoreRecord | undefined): RestoreStatus {
  if (record === undefined)
    return { status: 'idle', backup_id: null, started_at: null, completed_at: null, error: null }
  return {
    status: record.status,
    backup_id: record.backup_id,
    started_at: formatInstant(record.started_at),
    completed_at: record.completed_at === null ? null : formatInstant(record.completed_at),
    error: record.error,
  }
}

export interface RestoreRun {
  /** The stored `in_progress` status. */
  readonly record: RestoreRecord
  /** Settles with the final status (never rejects). */
  readonly done: Promise<RestoreRecord>
}

/**
 * Starts restoring `backupId` into `tenant`: 404 for an unknown backup, 409 while a restore runs.
 * Resolves once the `in_progress` status is durable; the work goes on in the background.
 */
export async function startRestore(
  system: SystemStore,
  tenant: TenantRuntime,
  backupId: string,
  requestedBy: string,
  now: () => number,
): Promise<RestoreRun> {
  if (tenant.restoring !== null)
    throw new ApiError('conflict', `A restore of backup ${tenant.restoring} is in progress`)
  const backup = tenant.backups.get(backupId)
  if (backup === null) throw notFound(`Backup ${backupId}`)
  // Synchronously with the checks above: from here on writes are refused.
  tenant.beginRestore(backupId)
  const record: RestoreRecord = {
    status: 'in_progress',
    backup_id: backupId,
    started_at: now(),
    completed_at: null,
    error: null,
    requested_by: requestedBy,
  }
  try {
    await system.put(system.restores, tenant.slug, record)
  } catch (error) {
    tenant.endRestore()
    throw error
  }
  tenant.log.info({ backup: backupId, requestedBy }, 'restore started')
  return { record, done: runRestore(system, tenant, record, now) }
}

async function runRestore(
  system: SystemStore,
  tenant: TenantRuntime,
  record: RestoreRecord,
  now: () => number,
): Promise<RestoreRecord> {
  let final: RestoreRecord
  try {
    await tenant.store.whenSettled()
    const compareStarted = performance.now()
    const diff = await diffWithBackup(tenant, record.backup_id)
    const applyStarted = performance.now()
    const marker: RestoreMarker = { backup_id: record.backup_id, started_at: record.started_at, completed_at: now() }
    const { changes, prices } = restoreChanges(diff, marker.completed_at, record.requested_by)
    const { entries, timings } = await tenant.applyRestore(changes, prices, { [restoreMarkerKey]: marker })
    final = { ...record, status: 'completed', completed_at: marker.completed_at }
    restoreCounts.completed++
    tenant.log.info(
      {
        backup: record.backup_id,
        compared: diff.compared,
        entities: diff.entities.length,
        prices: diff.prices.length,
        entries: entries.length,
        compareMs: Math.round(applyStarted - compareStarted),
        applyMs: Math.round(performance.now() - applyStarted),
        ...timings,
        ms: marker.completed_at - record.started_at,
      },
      'restore completed',
    )
  } catch (error) {
    final = {
      ...record,
      status: 'failed',
      completed_at: now(),
      error: `Restore of ${record.backup_id} failed: ${(error as Error).message}; the tenant keeps its state from before`,
    }
    restoreCounts.failed++
    tenant.log.error({ err: error, backup: record.backup_id }, 'restore failed')
  }
  // In one turn: writes resume, and the final status is queued, so a reader who sees `completed`
  // may write and restore at once; a restore started right after queues its `in_progress` later.
  tenant.endRestore()
  try {
    await system.put(system.restores, tenant.slug, final)
  } catch (error) {
    // The outcome is in the tenant's store (its marker); the next start settles the status from it.
    tenant.log.error({ err: error }, 'restore status could not be stored')
  }
  return final
}

/** The differences between the tenant's store and one of its backups. */
async function diffWithBackup(tenant: TenantRuntime, backupId: string): Promise<RestoreDiff> {
  const backup = new TenantStore(tenant.backups.environmentPath(backupId))
  try {
    return await restoreDiff(tenant.store, backup)
  } finally {
    await backup.close()
  }
}

/**
 * At start, after the stores open and before tenants load: a restore left `in_progress` by a stop
 * is finished. Its marker, written last, says it was wholly written; otherwise part of it may be,
 * so it runs again from the comparison (which finds only what is still different) and writes the
 * rest and the marker. The tenant then loads the backup's state, and the status says `completed`.
 * Only a backup that cannot be read any more leaves it `failed` (with a partly written restore,
 * which the error says).
 */
export async function settleInterruptedRestores(
  system: SystemStore,
  tenants: TenantRegistry,
  now: () => number,
): Promise<void> {
  for (const { key, value } of [...system.restores.getRange({ snapshot: false })]) {
    if (value.status !== 'in_progress') continue
    const tenant = tenants.get(key)
    if (tenant === undefined) continue
    let settled: RestoreRecord
    const written = tenant.store.metaValue(restoreMarkerKey) as RestoreMarker | undefined
    if (written !== undefined && written.backup_id === value.backup_id && written.started_at === value.started_at) {
      settled = { ...value, status: 'completed', completed_at: written.completed_at }
    } else {
      try {
        const diff = await diffWithBackup(tenant, value.backup_id)
        const marker: RestoreMarker = { backup_id: value.backup_id, started_at: value.started_at, completed_at: now() }
        const { changes, prices } = restoreChanges(diff, marker.completed_at, value.requested_by)
        const entries = await tenant.store.commitInChunks(changes, prices, { [restoreMarkerKey]: marker })
        settled = { ...value, status: 'completed', completed_at: marker.completed_at }
        tenant.log.warn({ backup: value.backup_id, entries: entries.length }, 'interrupted restore finished at start')
      } catch (error) {
        settled = {
          ...value,
          status: 'failed',
          completed_at: now(),
          error: `Restore of ${value.backup_id} was interrupted and could not be finished (${(error as Error).message}); the tenant may hold part of it: restore another backup`,
        }
        tenant.log.error({ err: error, backup: value.backup_id }, 'interrupted restore could not be finished')
      }
    }
    if (settled.status === 'completed') restoreCounts.completed++
    else restoreCounts.failed++
    await system.put(system.restores, key, settled)
  }
}
