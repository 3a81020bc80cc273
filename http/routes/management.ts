/**
 * The spec's Management section: backups and restores, console sign-in only
 * (http/console-auth.ts decides who). Backups are LMDB's own consistent copies, verified
 * before they are listed (storage/backup/backups.ts); a restore runs in the background
 * (tenant/backups/restore.ts).
 * @module
 */
import { Type } from '@sinclair/typebox'
import { route, type TenantRoute } from '../contracts.js'
import type { BackupRecord } from '../../storage/backup/backups.js'
import { publicRestoreStatus, startRestore } from '../../tenant/backups/restore.js'
import { takeBackup } from '../../tenant/backups/take.js'

export const Backup = Type.Object({
  id: Type.String({ description: '<slug>-<UTC timestamp with microseconds, colons as hyphens>' }),
  created: Type.String({ format: 'date-time' }),
  type: Type.Union([Type.Literal('automatic'), Type.Literal('manual')]),
  retain: Type.Boolean({ description: 'true: never deleted by thinning' }),
})
export const CreateBackupBody = Type.Object({ retain: Type.Optional(Type.Boolean()) }, { additionalProperties: false })

export const RestoreBody = Type.Object(
  { backup_id: Type.String({ minLength: 1, maxLength: 200, description: "the id of one of the tenant's backups" }) },
  { additionalProperties: false },
)
export const RestoreStatus = Type.Object({
  status: Type.Union([
    Type.Literal('idle'),
    Type.Literal('in_progress'),
    Type.Literal('completed'),
    Type.Literal('failed'),
  ]),
  backup_id: Type.Union([Type.String(), Type.Null()], { description: 'null while idle (no restore yet)' }),
  started_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  completed_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  error: Type.Union([Type.String(), Type.Null()]),
})

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
      permission: 'backups.read',
      response: Type.Array(Backup),
      dimension: 'query',
      handler: (context) => ({
        status: 200,
        headers: { 'cache-control': 'no-store' },
        body: context.tenant.backups.list().map(publicBackup),
      }),
    }),
    route<typeof CreateBackupBody.static>({
      method: 'POST',
      path: '/management/backups',
      operationId: 'createBackup',
      summary: 'Take a backup at once; retain: true protects it from thinning (console sign-in only)',
      tag: 'management',
      access: 'console',
      permission: 'backups.create',
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
    route<typeof RestoreBody.static>({
      method: 'POST',
      path: '/management/restore',
      operationId: 'startRestore',
      summary:
        'Restore a backup in the background; writes answer 503 with Retry-After: 15 until it ends (console sign-in only)',
      tag: 'management',
      access: 'console',
      permission: 'restore',
      body: RestoreBody,
      response: RestoreStatus,
      responseStatus: 202,
      errors: [404, 409],
      dimension: 'ingest',
      handler: async (context) => {
        const { tenant, body, actor } = context
        const run = await startRestore(tenant.system, tenant, body.backup_id, actor, tenant.now)
        return { status: 202, headers: { 'cache-control': 'no-store' }, body: publicRestoreStatus(run.record) }
      },
    }),
    route({
      method: 'GET',
      path: '/management/restore/status',
      operationId: 'getRestoreStatus',
      summary: 'The latest restore: idle, in_progress, completed or failed (console sign-in only)',
      tag: 'management',
      access: 'console',
      permission: 'backups.read',
      response: RestoreStatus,
      dimension: 'query',
      handler: (context) => ({
        status: 200,
        headers: { 'cache-control': 'no-store' },
        body: publicRestoreStatus(context.tenant.system.restores.get(context.tenant.slug)),
      }),
    }),
  ]
}
