/**
 * A tenant's backups in the console (issue 9): the list (newest first) with what happens to each
 * (thinning deletes only automatic backups that are not kept, storage/backup/thinning.ts, so a
 * backup taken here is labelled as kept and its form has no "keep it" box that would do nothing),
 * the form that takes one, a restore link per backup (behind a confirmation page that offers a
 * backup of the current state first) and the restore status, which console.js keeps live by polling
 * `GET /t/{slug}/management/restore/status` while a restore runs.
 * @module
 */
import { publicRestoreStatus, type RestoreStatus } from '../../../tenant/backups/restore.js'
import { can } from '../../../accounts/people/roles.js'
import { csrfField } from '../shared/csrf.js'
import { html, type Html } from '../shared/html.js'
import { dataTable, type Cell, type Column } from '../shared/table.js'
import type { BackupRecord } from '../../../storage/backup/backups.js'
import type { ConsoleVisit } from './access.js'
import type { Flash } from '../shared/flash.js'
import { consolePage } from './frame.js'

export const restorePath = (visit: ConsoleVisit, id: string): string =>
  `/console/${visit.slug}/backups/${encodeURIComponent(id)}/restore`

function statusText(status: RestoreStatus): string {
  switch (status.status) {
    case 'idle':
      return 'No restore has run.'
    case 'in_progress':
      return `Restoring ${status.backup_id} since ${status.started_at}: writes answer 503 until it ends.`
    case 'completed':
      return `Restored ${status.backup_id} at ${status.completed_at}.`
    case 'failed':
      return `The restore of ${status.backup_id} failed: ${status.error ?? 'unknown error'}.`
  }
}

function restoreStatus(visit: ConsoleVisit): Html {
  const status = publicRestoreStatus(visit.tenant.system.restores.get(visit.slug))
  return html`<section aria-labelledby="restore-title">
<h2 id="restore-title">Restore status</h2>
<p id="restore-status" role="status" data-status-url="/t/${visit.slug}/management/restore/status" data-status="${status.status}" class="status-${status.status}">${statusText(status)}</p>
</section>`
}

/** What thinning does to a backup: it deletes automatic backups by age unless they are kept. */
export function retentionText(backup: BackupRecord): string {
  if (backup.type === 'manual') return 'kept (taken by hand: never thinned)'
  return backup.retain ? 'kept' : 'thinned by age'
}

/** The restore confirmation's field: take a manual backup of the current state before restoring. */
export const backupFirstField = 'backup_first'

const columns: readonly Column[] = [
  { title: 'Backup' },
  { title: 'Taken' },
  { title: 'Type' },
  { title: 'Retention' },
  { title: 'Actions', hiddenTitle: true },
]

function row(visit: ConsoleVisit, backup: BackupRecord): Cell[] {
  const restore = can(visit.role, 'restore')
    ? html`<a href="${restorePath(visit, backup.id)}">Restore<span class="visually-hidden"> ${backup.id}</span></a>`
    : null
  const taken = `${backup.created.slice(0, 19).replace('T', ' ')} UTC`
  return [{ content: backup.id, className: 'mono' }, taken, backup.type, retentionText(backup), restore]
}

export function backupsPage(visit: ConsoleVisit, flash: Flash | null): string {
  const backups = visit.tenant.backups.list()
  const list =
    backups.length === 0
      ? html`<p>No backups yet.</p>`
      : dataTable(
          'Backups',
          columns,
          backups.map((backup) => row(visit, backup)),
        )
  const create = can(visit.role, 'backups.create')
    ? html`<h2>Take a backup</h2>
<form method="post" action="/console/${visit.slug}/backups">
<input type="hidden" name="${csrfField}" value="${visit.csrf}">
<p class="hint">A backup taken here is never thinned: thinning by age removes only automatic backups.</p>
<button type="submit">Take a backup now</button>
</form>`
    : html`<p class="hint">Your role (${visit.role}) does not take backups.</p>`
  const body = html`${restoreStatus(visit)}
<h2>Backups</h2>
${list}
${create}`
  return consolePage(visit, 'backups', `${visit.slug}: backups`, body, flash)
}
