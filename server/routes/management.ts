/**
 * The spec's Management section (backups; restore comes next): console sign-in only
 * (server/people/console-auth.ts decides who). Backups are LMDB's own consistent copies, verified
 * before they are listed (storage/backup/backups.ts).
 * @module
 */
import { Type } from '@sinclair/typebox'
import { route, type TenantRoute } from '../api.js'
import type { BackupRecord } from '../../storage/backup/backups.js'
import { takeBackup } from '../backups/take.js'

export const Backup = Type.Object({
  id: Type.String({ description: '<slug>-<UTC timestamp with microseconds, colons as hyphens>' }),
  created: Type.String({ format: 'date-time' }),
  type: Type.Union([Type.Literal('automatic'), Type.Literal('manual')]),
  retain: Type.Boolean({ description: 'true: never deleted by thinning' }),
})
export const CreateBackupBody = Type.Object({ retain: Type.Optional(Type.Boolean()) }, { additionalProperties: false })

export function publicBackup(record: BackupRecord): typeof Backup.static {
  return { id: record.id, created: record.created, type: record.type, retain: record.retain }
}

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
