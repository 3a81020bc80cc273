/**
 * Restoring a tenant from one of its backups (SPEC "Backup and restore rules" 3), in the background:
 *
 * 1. Start: the tenant is marked restoring at once (writes on non-management endpoints answer 503
 *    with `Retry-After: 15` from then on), the status `in_progress` is stored, the caller gets 202.
 * 2. Writes already in flight settle; then the tenant's store and the backup are compared, chunk by
 *    chunk with the event loop free between chunks (storage/backup/restore-diff.ts). Reads answer
 *    from the state before the restore throughout.
 * 3. The differences, one changelog entry per differing entity (after the current sequence: the
 *    changelog keeps rising) and a marker naming the restore go into one durable LMDB transaction;
 *    then memory swaps in one step (server/tenants.ts `applyRestore`), and webhooks deliver the
 *    entries.
 * 4. The status becomes `completed` (or `failed`, with the error: the tenant keeps its old state).
 *
 * A crash at any moment leaves either no marker (the old state, whole) or the marker with the whole
 * backup state: the transaction is atomic. At the next start an `in_progress` status is settled by
 * the marker: `completed` if the tenant holds this restore's marker, else `failed`.
 * @module
 */
import { formatInstant } from '../../engine/time.js'
import type { RestoreRecord, SystemStore } from '../../storage/system-store.js'
import { restoreChanges, restoreDiff } from '../../storage/backup/restore-diff.js'
import { TenantStore } from '../../storage/tenant-store.js'
import { ApiError, notFound } from '../errors.js'
import type { TenantRegistry, TenantRuntime } from '../tenants.js'

/** The marker a restore leaves in the tenant's meta table, in the transaction that applies it. */
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

/** Restores since start, by outcome (exported by server/metrics.ts). */
export const restoreCounts = { completed: 0, failed: 0 }

export function publicRestoreStatus(record: RestoreRecord | undefined): RestoreStatus {
  if (record === undefined) return { status: 'idle', backup_id: null, started_at: null, completed_at: null, error: null }
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
  if (tenant.restoring !== null) throw new ApiError('conflict', `A restore of backup ${tenant.restoring} is in progress`)
  const backup = tenant.backups.get(backupId)
  if (backup === null) throw notFound(`Backup ${backupId}`)
  // Synchronously with the checks above: from here on writes are refused.
  tenant.restoring = backupId
  const record: RestoreRecord = { status: 'in_progress', backup_id: backupId, started_at: now(), completed_at: null, error: null, requested_by: requestedBy }
  try {
    await system.put(system.restores, tenant.slug, record)
  } catch (error) {
    tenant.restoring = null
    throw error
  }
  tenant.log.info({ backup: backupId, requestedBy }, 'restore started')
  return { record, done: runRestore(system, tenant, record, now) }
}

async function runRestore(system: SystemStore, tenant: TenantRuntime, record: RestoreRecord, now: () => number): Promise<RestoreRecord> {
  let final: RestoreRecord
  try {
    await tenant.store.whenSettled()
    const backup = new TenantStore(tenant.backups.environmentPath(record.backup_id))
    let diff
    try {
      diff = await restoreDiff(tenant.store, backup)
    } finally {
      await backup.close()
    }
    const marker: RestoreMarker = { backup_id: record.backup_id, started_at: record.started_at, completed_at: now() }
    const { changes, prices } = restoreChanges(diff, marker.completed_at, record.requested_by)
    const entries = await tenant.applyRestore(changes, prices, { [restoreMarkerKey]: marker })
    final = { ...record, status: 'completed', completed_at: marker.completed_at }
    restoreCounts.completed++
    tenant.log.info(
      { backup: record.backup_id, compared: diff.compared, entities: diff.entities.length, prices: diff.prices.length, entries: entries.length, ms: marker.completed_at - record.started_at },
      'restore completed',
    )
  } catch (error) {
    final = { ...record, status: 'failed', completed_at: now(), error: `Restore of ${record.backup_id} failed: ${(error as Error).message}; the tenant keeps its state from before` }
    restoreCounts.failed++
    tenant.log.error({ err: error, backup: record.backup_id }, 'restore failed')
  }
  try {
    await system.put(system.restores, tenant.slug, final)
  } catch (error) {
    // The outcome is in the tenant's store (its marker); the next start settles the status from it.
    tenant.log.error({ err: error }, 'restore status could not be stored')
  } finally {
    tenant.restoring = null
  }
  return final
}

/**
 * At start, before tenants serve: a restore left `in_progress` by a crash is settled by the marker
 * its transaction writes, so the status says which state the tenant holds.
 */
export async function settleInterruptedRestores(system: SystemStore, tenants: TenantRegistry, nowMs: number): Promise<void> {
  for (const { key, value } of [...system.restores.getRange({ snapshot: false })]) {
    if (value.status !== 'in_progress') continue
    const tenant = tenants.get(key)
    if (tenant === undefined) continue
    const marker = tenant.store.metaValue(restoreMarkerKey) as RestoreMarker | undefined
    const applied = marker !== undefined && marker.backup_id === value.backup_id && marker.started_at === value.started_at
    const settled: RestoreRecord = applied
      ? { ...value, status: 'completed', completed_at: marker.completed_at }
      : { ...value, status: 'failed', completed_at: nowMs, error: `Restore of ${value.backup_id} was interrupted by a stop of the service; the tenant keeps its state from before` }
    await system.put(system.restores, key, settled)
    tenant.log.warn({ backup: value.backup_id, status: settled.status }, 'interrupted restore settled')
  }
}
