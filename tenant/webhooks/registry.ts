/**
 * A tenant's webhooks: registration (create, update, list, test) and the start and stop of their
 * deliveries (SPEC.md "Webhook delivery", docs/api.md "Webhooks"). The work is split by
 * responsibility: tenant/webhooks/dispatcher.ts pushes the changelog to them,
 * tenant/webhooks/delivery.ts sends one POST, tenant/webhooks/store.ts keeps their records and
 * positions, tenant/webhooks/model.ts says what a webhook is. This file owns the set of webhooks
 * and is the one the tenant runtime and the routes talk to.
 * @module
 */
import { createHash } from 'node:crypto'
import { formatInstant } from '../../engine/time.js'
import type { LogEntry } from '../../storage/log-entry.js'
import { WebhookDispatcher } from './dispatcher.js'
import type { WebhookEnvironment } from './environment.js'
import { Hook, type Webhook, type WebhookInput, type WebhookTenant } from './model.js'
import { WebhookStore } from './store.js'

export class TenantWebhooks {
  readonly #hooks = new Map<number, Hook>()
  readonly #store: WebhookStore
  readonly #dispatcher: WebhookDispatcher
  #nextId = 1
  #started = false

  constructor(
    readonly tenant: WebhookTenant,
    readonly env: WebhookEnvironment,
  ) {
    this.#store = new WebhookStore(tenant, env, this.#hooks)
    this.#dispatcher = new WebhookDispatcher(tenant, env, this.#hooks, this.#store)
  }

  /**
   * Loads the stored webhooks and resumes their deliveries (after the tenant is loaded). Secrets
   * stored otherwise than the current PRICING_SECRET_KEY would store them (plaintext, or sealed
   * under the previous key) are stored again; a secret sealed under a key not given is kept as it
   * is, and its webhook delivers nothing until the key is given or a new secret is set.
   */
  start(): void {
    if (this.#started) return
    this.#started = true
    const stale: Hook[] = []
    for (const { hook, stale: restore } of this.#store.load()) {
      this.#hooks.set(hook.record.id, hook)
      this.#nextId = Math.max(this.#nextId, hook.record.id + 1)
      if (restore) stale.push(hook)
      if (hook.unopened !== null) {
        this.#holdUnopened(hook, hook.unopened.problem)
        continue
      }
      if (!hook.record.active) continue
      const retry = hook.record.retry
      if (retry !== null) this.#dispatcher.schedule(hook, Math.max(0, retry.nextAt - this.env.now()))
      else if (hook.record.cursor <= this.tenant.store.durableSequence) {
        this.#dispatcher.schedule(hook, this.env.settings.batchMs)
      }
    }
    this.#store.startFlushing()
    if (stale.length > 0) {
      const encrypted = this.env.sealer.enabled
      this.#store.store(stale).then(
        () => {
          const message = 'webhook secrets stored again under the current secret key'
          this.tenant.log.info({ webhooks: stale.length, encrypted }, message)
        },
        (error: unknown) => this.tenant.log.error({ err: error }, 'storing webhook secrets again failed'),
      )
    }
  }

  /** A stored secret that does not open with the key given: no deliveries until it does or a new one is set. */
  #holdUnopened(hook: Hook, problem: string): void {
    const error = `not delivered: the webhook's secret does not open (${problem}); set a new secret`
    hook.record.lastDelivery = { at: this.env.now(), status: null, error }
    this.tenant.log.error(
      { webhook: hook.record.id, error: problem },
      'webhook secret does not open with the secret key given: no deliveries until it does or a new secret is set',
    )
  }

  get count(): number {
    return this.#hooks.size
  }

  list(): Webhook[] {
    return [...this.#hooks.values()].map((hook) => hook.record).sort((a, b) => a.id - b.id)
  }

  get(id: number): Webhook | undefined {
    return this.#hooks.get(id)?.record
  }

  /** Registers a webhook; it receives the changes recorded from now on. */
  async create(input: WebhookInput, nowMs: number): Promise<Webhook> {
    const record: Webhook = {
      id: this.#nextId++,
      url: input.url!,
      secret: input.secret ?? null,
      entityTypeFilter: input.entity_type_filter ?? null,
      effectivePricePerSku: input.effective_price_per_sku ?? false,
      active: input.active ?? true,
      createdAt: nowMs,
      updatedAt: nowMs,
      cursor: this.tenant.store.sequence + 1,
      retry: null,
      lastDelivery: null,
    }
    const hook = new Hook(record)
    this.#hooks.set(record.id, hook)
    await this.#store.store([hook])
    return record
  }

  /** Replaces the given fields; reactivation starts from the changes recorded from now on. */
  async update(id: number, input: WebhookInput, nowMs: number): Promise<Webhook | undefined> {
    const hook = this.#hooks.get(id)
    if (hook === undefined) return undefined
    const record = hook.record
    if (input.url !== undefined) record.url = input.url
    const held = hook.unopened !== null
    if (input.secret !== undefined) {
      record.secret = input.secret
      hook.unopened = null
    }
    if (input.entity_type_filter !== undefined) record.entityTypeFilter = input.entity_type_filter
    if (input.effective_price_per_sku !== undefined) record.effectivePricePerSku = input.effective_price_per_sku
    if (input.active !== undefined && input.active !== record.active) {
      this.#dispatcher.halt(hook)
      record.active = input.active
      if (record.active) record.cursor = this.tenant.store.sequence + 1
    }
    record.updatedAt = nowMs
    hook.dirty = false
    await this.#store.store([hook])
    // A webhook held for a secret that did not open resumes with its new one, from where it stopped.
    const resumes = held && hook.unopened === null && record.active
    if (resumes && record.cursor <= this.tenant.store.durableSequence) {
      this.#dispatcher.schedule(hook, this.env.settings.batchMs)
    }
    return record
  }

  /** Sends one synthetic event once, without retries; the outcome shows in `lastDelivery`. */
  test(id: number, actor: string, nowMs: number): boolean {
    const hook = this.#hooks.get(id)
    if (hook === undefined) return false
    if (hook.unopened !== null) return true
    const event = {
      sequence: 0,
      entity_type: 'test',
      change_type: 'updated',
      entity_code: 'test',
      composite_key: null,
      changed_at: formatInstant(nowMs),
      changed_by: actor,
      content_hash: createHash('sha256').update(`test ${id} ${nowMs}`).digest('hex').slice(0, 32),
    }
    this.#dispatcher.sendOnce(hook, JSON.stringify([event]))
    return true
  }

  /** A commit is durable: wake the webhooks it concerns. */
  notify(entries: readonly LogEntry[]): void {
    this.#dispatcher.notify(entries)
  }

  /** Stops timers and sends (an unfinished delivery is sent again after the restart), then stores every position. */
  async stop(): Promise<void> {
    this.#dispatcher.stop()
    await this.#store.stop()
  }
}
