/**
 * Backup of the full bench tenant (issue 8): `POST /admin/tenants/{slug}/backups` (the same path
 * as a console user's backup: LMDB's compacted copy, verified, then listed), timed from request to
 * answer, with the copy's size beside the live data file's.
 * @module
 */
import { statSync } from 'node:fs'
import path from 'node:path'
import type { PricingServer } from './server-process.js'

export interface BackupResult {
  /** Request to 201, ms. */
  readonly elapsedMs: number
  readonly backupBytes: number
  readonly dataFileBytes: number
}

export async function measureBackup(server: PricingServer, slug: string): Promise<BackupResult> {
  const dataFileBytes = statSync(path.join(server.options.dataDir, 'tenants', slug, 'data.mdb')).size
  const started = performance.now()
  const answer = await fetch(`${server.url}/admin/tenants/${slug}/backups`, {
    method: 'POST',
    headers: { authorization: `Bearer ${server.options.adminToken}`, 'content-type': 'application/json' },
    body: '{}',
  })
  const elapsedMs = performance.now() - started
  const body = (await answer.json()) as { id: string }
  if (answer.status !== 201) throw new Error(`backup failed: ${answer.status} ${JSON.stringify(body)}`)
  const backupBytes = statSync(path.join(server.options.dataDir, 'backups', slug, body.id, 'data.mdb')).size
  return { elapsedMs, backupBytes, dataFileBytes }
}
