/**
 * Automatic backups (SPEC "Backup and restore rules" 1-2): a tenant without any backup gets one at
 * once (its first start), then one whenever its newest automatic backup is `intervalMs` old
 * (`PRICING_BACKUP_INTERVAL_S`, 600 s; measured from the backups on disk, so a restart neither
 * doubles nor skips one), and thinning runs once per hour (storage/backup/thinning.ts).
 *
 * One tick at a time, tenants one after another: a copy reads a whole environment, and two at
 * once would only share the disk. A failed backup is logged and counted by takeBackup and tried
 * again at the next tick.
 * @module
 */
import type { Logger } from 'pino'
import { backupsToThin } from '../../storage/backup/thinning.js'
import { Periodic } from '../../platform/periodic.js'
import type { TenantRegistry } from '../runtime.js'
import { takeBackup } from './take.js'

const thinEveryMs = 3_600_000
/** Ticks at most this far apart (a new tenant's first backup waits at most this long). */
const tickMaxMs = 30_000

export class BackupScheduler {
  readonly #job: Periodic
  #lastThinMs = Number.NEGATIVE_INFINITY
  #waitLogged = false

  constructor(
    readonly tenants: TenantRegistry,
    readonly intervalMs: number,
    readonly logger: Logger,
    readonly now: () => number,
  ) {
    this.#job = new Periodic(() => this.tick(), Math.min(intervalMs, tickMaxMs))
  }

  start(): void {
    this.#job.start(0)
  }

  /** One pass over the tenants: due backups, then thinning when an hour has passed. */
  async tick(): Promise<void> {
    // Storage nearly full (tenant/storage-guard.ts): a copy would eat the reserve, so due backups
    // wait for room (logged once per wait); thinning goes on, and frees space.
    const waiting = this.tenants.storage.nearlyFull
    if (waiting && !this.#waitLogged) this.logger.warn('automatic backups wait: storage is nearly full')
    this.#waitLogged = waiting
    for (const tenant of this.tenants.all()) {
      if (this.#job.stopped) return
      if (!tenant.loaded || tenant.record.status !== 'active') continue
      const backups = tenant.backups.list()
      const newestAutomatic = backups.find((backup) => backup.type === 'automatic')
      const due =
        backups.length === 0 ||
        newestAutomatic === undefined ||
        this.now() - Date.parse(newestAutomatic.created) >= this.intervalMs
      if (due && !this.tenants.storage.nearlyFull)
        await takeBackup(tenant, 'automatic', false, this.now()).catch(() => undefined)
    }
    if (this.now() - this.#lastThinMs < thinEveryMs) return
    this.#lastThinMs = this.now()
    for (const tenant of this.tenants.all()) {
      const records = tenant.backups.list()
      const doomed = backupsToThin(
        records.map((record) => ({ ...record, created: Date.parse(record.created) })),
        this.now(),
      )
      // A backup being restored stays: a restore interrupted by a stop is finished from it at the next start.
      if (tenant.restoring !== null) doomed.delete(tenant.restoring)
      for (const id of doomed) tenant.backups.delete(id)
      if (doomed.size > 0)
        tenant.log.info({ deleted: doomed.size, kept: records.length - doomed.size }, 'backups thinned')
    }
  }

  stop(): Promise<void> {
    return this.#job.stop()
  }
}
