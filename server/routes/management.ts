/**
 * The spec's Management section (backups; restore comes next): console sign-in only
 * (server/people/console-auth.ts decides who). Backups are LMDB's own consistent copies, verified
 * before they are listed (storage/backup/backups.ts).
 * @module
 */
import { Type } from '@sinclair/typebox'
import { route, type TenantRoute } from '../api.js'
import { ApiError } from '../errors.js'
import { BackupRefused, type BackupRecord } from '../../storage/backup/backups.js'
import type { TenantRuntime } from '../tenants.js'

const Backup = Type.Object({
  id: Type.String({ description: '<slug>-<UTC timestamp with microseconds, colons as hyphens>' }),
  created: Type.String({ format: 'date-time' }),
  type: Type.Union([Type.Literal('automatic'), Type.Literal('manual')]),
  retain: Type.Boolean({ description: 'true: never deleted by thinning' }),
})
const CreateBackupBody = Type.Object({ retain: Type.Optional(Type.Boolean()) }, { additionalProperties: false })

export function publicBackup(record: BackupRecord): typeof Backup.static {
  return { id: record.id, created: record.created, type: record.type, retain: record.retain }
}

/**
 * Takes a backup now; a refusal is answered 507 (no room) or 503 (failed), logged and counted, and
 * never listed.
 */
export async function takeBackup(tenant: TenantRuntime, type: BackupRecord['type'], retain: boolean, nowMs: number): Promise<BackupRecord> {
  try {
    const record = await tenant.backups.create(tenant.store, type, retain, nowMs)
    tenant.log.info({ backup: record.id, type, retain, sequence: record.sequence, bytes: record.bytes }, 'backup written')
    backupCounts.written++
    return record
  } catch (error) {
    backupCounts.failed++
    tenant.log.error({ err: error, type }, 'backup failed')
    if (error instanceof BackupRefused) {
      throw error.reason === 'insufficient_storage'
        ? new ApiError('insufficient_storage', error.message)
        : new ApiError('backup_failed', error.message, {}, { 'retry-after': '60' })
    }
    throw error
  }
}

/** Backups written and refused since start (the `pricing_backups_total` metric). */
export const backupCounts = { written: 0, failed: 0 }

export function managementRoutes(): TenantRoute[] {
  return [
    route({
      method: 'GET',
      path: '/management/backups',
      operationId: 'listBackups',
      summary: 'All backups, newest first (console sign-in only)',
      tag: 'management',
      access: 'console',
      response: Type.Array(Backup),
      dimension: 'query',
      handler: (context) => ({ status: 200, headers: { 'cache-control': 'no-store' }, body: context.tenant.backups.list().map(publicBackup) }),
    }),
    route<typeof CreateBackupBody.static>({
      method: 'POST',
      path: '/management/backups',
      operationId: 'createBackup',
      summary: 'Take a backup at once; retain: true protects it from thinning (console sign-in only)',
      tag: 'management',
      access: 'console',
      body: CreateBackupBody,
      bodyOptional: true,
      response: Backup,
      responseStatus: 201,
      errors: [503, 507],
      dimension: 'ingest',
      handler: async (context) => {
        const record = await takeBackup(context.tenant, 'manual', context.body?.retain === true, context.nowMs)
        return { status: 201, body: publicBackup(record) }
      },
    }),
  ]
}
