/**
 * Where webhooks are kept: their records in the tenant's store (each secret sealed under the
 * current PRICING_SECRET_KEY), the immediate write after a delivery's outcome, and the periodic
 * flush of positions that moved without one (events off, filtered out). Storage nearly full keeps
 * the state in memory until there is room (a crash meanwhile redelivers: at-least-once).
 * @module
 */
import type { WebhookEnvironment } from './environment.js'
import { Hook, type Webhook, type WebhookTenant } from './model.js'
import { openWebhookSecret, sealWebhookSecret, storedWebhookForm } from './secrets.js'

/** How often positions advanced without a delivery (events off, filtered out) are stored. */
const positionFlushMs = 5_000

/** A stored webhook as loaded: its working state, and whether its secret must be stored again. */
export interface LoadedHook {
  readonly hook: Hook
  /** Stored otherwise than the current key would store it (plaintext, or under the previous key). */
  readonly stale: boolean
}

export class WebhookStore {
  #flushTimer: NodeJS.Timeout | null = null

  constructor(
    readonly tenant: WebhookTenant,
    readonly env: WebhookEnvironment,
    /** Every hook of the tenant (the registry's map): the flush looks for the dirty ones. */
    readonly hooks: ReadonlyMap<number, Hook>,
  ) {}

  /** The stored webhooks, each secret opened where the key given opens it. */
  *load(): Generator<LoadedHook> {
    for (const stored of this.tenant.store.webhooks()) {
      const opened = openWebhookSecret(stored, this.env.sealer)
      const { sealedSecret: _sealed, ...fields } = stored as Webhook & { sealedSecret?: string }
      const hook = new Hook({ ...fields, secret: opened.secret } as Webhook)
      hook.unopened = opened.unopened
      yield { hook, stale: opened.stale }
    }
  }

  /** Stores the hooks' records, each secret sealed when a key is set. */
  store(hooks: readonly Hook[]): Promise<void> {
    return this.tenant.store.putWebhooks(hooks.map((hook) => this.#storedForm(hook)))
  }

  #storedForm(hook: Hook): ReturnType<typeof storedWebhookForm> {
    const record = hook.record
    if (hook.unopened !== null) return storedWebhookForm(record, hook.unopened.sealed)
    if (record.secret === null || !this.env.sealer.enabled) return storedWebhookForm(record, null)
    if (hook.sealed?.secret !== record.secret) {
      hook.sealed = { secret: record.secret, value: sealWebhookSecret(record.secret, record.id, this.env.sealer) }
    }
    return storedWebhookForm(record, hook.sealed.value)
  }

  /**
   * Stores one hook's state now (after a delivery's outcome), unless storage is nearly full;
   * resolves once it is on disk, or at once when it is kept for later or the write failed.
   */
  persist(hook: Hook): Promise<void> {
    // Kept dirty: the periodic flush stores it once storage has room again.
    if (this.tenant.storage?.nearlyFull === true) {
      hook.dirty = true
      return Promise.resolve()
    }
    hook.dirty = false
    return this.store([hook]).catch((error: unknown) => {
      this.tenant.log.error({ err: error, webhook: hook.record.id }, 'storing webhook state failed')
    })
  }

  /** Starts storing, every few seconds, the positions that moved without a stored write. */
  startFlushing(): void {
    this.#flushTimer = setInterval(() => void this.#flushPositions(), positionFlushMs)
    this.#flushTimer.unref()
  }

  async #flushPositions(): Promise<void> {
    // Storage nearly full: positions wait in memory (a crash meanwhile redelivers: at-least-once).
    if (this.tenant.storage?.nearlyFull === true) return
    const dirty = [...this.hooks.values()].filter((hook) => hook.dirty)
    for (const hook of dirty) hook.dirty = false
    if (dirty.length === 0) return
    try {
      await this.store(dirty)
    } catch (error) {
      // A failed write (a full disk) is tried again at the next flush; called from a timer, it must not reject.
      for (const hook of dirty) hook.dirty = true
      this.tenant.log.error({ err: error }, 'storing webhook positions failed; trying again at the next flush')
    }
  }

  /** Stops the periodic flush; every position is then stored, awaited (the store closes next). */
  async stop(): Promise<void> {
    if (this.#flushTimer !== null) clearInterval(this.#flushTimer)
    for (const hook of this.hooks.values()) hook.dirty = false
    if (this.hooks.size > 0) await this.store([...this.hooks.values()])
  }
}
