/**
 * Taking a tenant's backup, for the API (`POST /management/backups`) and the scheduler alike: a
 * refusal is logged, counted (`pricing_backups_total`) and answered 507 (no room) or 503 (failed);
 * it is never listed (storage/backup/backups.ts).
 * @module
 */
import { BackupRefused, type BackupRecord } from '../../storage/backup/backups.js'
import { ApiError } from '../../platform/errors.js'
import type { TenantRuntime } from '../runtime.js'

/** Backups since start, by type and outcome (exported by platform/metrics.ts). */
export const backupCounts = {
  automatic: { written: 0, refused: 0 },
  manual: { written: 0, refused: 0 },
}

export async function takeBackup(
  tenant: TenantRuntime,
  type: BackupRecord['type'],
  retain: boolean,
  nowMs: number,
): Promise<BackupRecord> {
  try {
    const record = await tenant.backups.create(tenant.store, type, retain, nowMs)
    tenant.log.info(
      { backup: record.id, type, retain, sequence: record.sequence, bytes: record.bytes },
      'backup written',
    )
    backupCounts[type].written++
    return record
  } catch (error) {
    backupCounts[type].refused++
    tenant.log.error({ err: error, type }, 'backup failed')
    if (error instanceof BackupRefused) {
      throw error.reason === 'insufficient_storage'
        ? new ApiError('insufficient_storage', error.message)
        : new ApiError('backup_failed', error.message, {}, 60)
    }
    throw error
  }
}
