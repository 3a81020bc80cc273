/**
 * History retention in the background: every `intervalMs` (`PRICING_RETENTION_INTERVAL_S`, an hour)
 * each loaded, active tenant whose plan has retention and whose `retention.enabled` is on gets a
 * pass (./pass.ts), tenants one after another. A tenant being restored, or already in a pass
 * started by an operator, waits for the next tick.
 * @module
 */
import type { Logger } from 'pino'
import { Periodic } from '../../platform/periodic.js'
import type { TenantRegistry } from '../runtime.js'
import { retentionPolicy, retentionRunning, runRetentionPass } from './pass.js'

export class RetentionScheduler {
  readonly #job: Periodic

  constructor(
    readonly tenants: TenantRegistry,
    readonly intervalMs: number,
    readonly logger: Logger,
    readonly now: () => number,
  ) {
    this.#job = new Periodic(() => this.tick(), intervalMs)
  }

  start(): void {
    this.#job.start(this.intervalMs)
  }

  async tick(): Promise<void> {
    for (const tenant of this.tenants.all()) {
      if (this.#job.stopped) return
      // Storage nearly full (tenant/storage-guard.ts): a pass writes pages before it frees any; it waits.
      if (
        !tenant.loaded ||
        tenant.record.status !== 'active' ||
        tenant.restoring !== null ||
        tenant.storage.nearlyFull ||
        retentionRunning(tenant)
      )
        continue
      if (typeof retentionPolicy(tenant, this.now()) === 'string') continue
      try {
        const result = await runRetentionPass(tenant, this.now, { stop: () => this.#job.stopped })
        tenant.log.info({ ...result, ms: Math.round(result.ms) }, 'history retention pass')
      } catch (error) {
        tenant.log.error({ err: error }, 'history retention pass failed')
      }
    }
  }

  stop(): Promise<void> {
    return this.#job.stop()
  }
}
