/**
 * Webhooks: registration and the dispatcher that pushes the changelog to them (SPEC.md "Webhook
 * delivery", docs/api.md "Webhooks").
 *
 * The durable log is the queue. Each webhook stores its position (`cursor`: the first sequence not
 * yet delivered or dropped) and, while a delivery is being retried, what that delivery covers and
 * how often it failed. A commit notifies the dispatcher once durable; the first pending event opens
 * the batch window; then up to `batchEventsMax` matching events go out in one POST. One delivery at
 * a time per webhook, in order. Success moves the cursor past the delivery; failure schedules a
 * retry (1, 2, 4 ... 256, 300 s); the failure after the tenth retry drops the delivery. A restart
 * or a crash loses nothing: events are read again from the stored position (at-least-once).
 *
 * Everything here runs on the event loop between requests and never awaits inside a request: the
 * sends are asynchronous I/O, the log reads are bounded (`scanEntriesMax` per pass).
 * @module
 */
import { createHash, createHmac } from 'node:crypto'
import https from 'node:https'
import { isIP } from 'node:net'
import type { Logger } from 'pino'
import type { Catalog } from '../../engine/catalog.js'
import { settingEnabled } from '../../engine/settings.js'
import { formatInstant } from '../../engine/time.js'
import type { LogEntry } from '../../storage/log-entry.js'
import type { StoredWebhook, TenantStore } from '../../storage/tenant-store.js'
import type { Metrics } from '../../platform/metrics.js'
import { renderEntries } from '../changelog.js'
import { SecretSealer } from '../../platform/secrets/sealer.js'
import { openWebhookSecret, sealWebhookSecret, storedWebhookForm } from './secrets.js'
import { guardedLookup, hostOf, isForbiddenAddress } from './url-guard.js'

/** Seconds before retry 1 to 10 (SPEC.md "Webhook delivery" 5); the failure after the last drops. */
export const retryDelaysS: readonly number[] = Object.freeze([1, 2, 4, 8, 16, 32, 64, 128, 256, 300])
/** Events in one POST at most; a larger backlog goes out in consecutive POSTs. */
export const batchEventsMax = 1_000
/** Webhooks a tenant may register, active or not. */
export const webhooksPerTenantMax = 25
/** Log entries one dispatch pass examines at most (a few milliseconds), so a pass never stalls requests. */
const scanEntriesMax = 5_000
const readChunkEntries = 1_000
/** How often positions advanced without a delivery (events off, filtered out) are stored. */
const positionFlushMs = 5_000
const userAgent = 'pricing-service-webhooks/1'

export interface WebhookSettings {
  /** The batch window (PRICING_WEBHOOK_BATCH_MS). */
  readonly batchMs: number
  /** Time for a complete answer (PRICING_WEBHOOK_TIMEOUT_MS). */
  readonly timeoutMs: number
  /** Multiplies the retry delays (PRICING_WEBHOOK_RETRY_SCALE; tests shorten the schedule). */
  readonly retryScale: number
  /** Loopback and private receivers allowed (PRICING_WEBHOOK_ALLOW_PRIVATE). */
  readonly allowPrivate: boolean
}

export interface LastDelivery {
  readonly at: number
  /** The receiver's HTTP status; null when it did not answer. */
  readonly status: number | null
  /** Why the attempt failed; null on success. */
  readonly error: string | null
}

/** A delivery after a failure: the last sequence it covers, failed attempts so far, next attempt. */
export interface RetryState {
  readonly to: number
  readonly failures: number
  readonly nextAt: number
}

/** A webhook as stored and answered (the secret never leaves this module but for signing). */
export interface Webhook extends StoredWebhook {
  readonly id: number
  url: string
  secret: string | null
  entityTypeFilter: string | null
  active: boolean
  readonly createdAt: number
  updatedAt: number
  cursor: number
  retry: RetryState | null
  lastDelivery: LastDelivery | null
}

export interface WebhookInput {
  readonly url?: string
  readonly secret?: string | null
  readonly entity_type_filter?: string | null
  readonly active?: boolean
}

/** What the dispatcher needs of a tenant (TenantRuntime). */
export interface WebhookTenant {
  readonly slug: string
  readonly store: TenantStore
  readonly catalog: Catalog
  readonly limits: { readonly webhooks: boolean }
  readonly log: Logger
  /** Storage nearly full (tenant/storage-guard.ts): delivery state stays in memory until there is room. */
  readonly storage?: { readonly nearlyFull: boolean }
}

/** Process-wide: settings, the HTTPS agent (kept-alive connections), metrics, clock and the sealer of secrets at rest. */
export class WebhookEnvironment {
  readonly agent = new https.Agent({ keepAlive: true, maxSockets: 8 })
  constructor(
    readonly settings: WebhookSettings,
    readonly metrics: Metrics,
    readonly now: () => number = Date.now,
    /** Seals secrets in the stored records (PRICING_SECRET_KEY; tenant/webhooks/secrets.ts). */
    readonly sealer: SecretSealer = SecretSealer.none,
  ) {}

  close(): void {
    this.agent.destroy()
  }
}

interface Outcome {
  readonly ok: boolean
  readonly status: number | null
  readonly error: string | null
}

/** The dispatcher's working state of one webhook besides its stored record. */
class Hook {
  timer: NodeJS.Timeout | null = null
  inFlight: AbortController | null = null
  /** Bumped by deactivation and reactivation: a send that started before ignores its outcome. */
  generation = 0
  /** The delivery in progress: its events as JSON and the last sequence it covers. */
  delivery: { readonly eventsJson: string; readonly count: number; readonly to: number; readonly full: boolean } | null = null
  /** When events arrived while a delivery was in flight (the next batch window starts there). */
  waitingSince: number | null = null
  /** The cursor moved without a stored write. */
  dirty = false
  /** The stored secret sealed under a key not given here: kept as stored; no deliveries until a new secret is set. */
  unopened: { readonly sealed: string; readonly problem: string } | null = null
  /** The secret's sealed form last stored (sealing again only when the secret changes). */
  sealed: { readonly secret: string; readonly value: string } | null = null
  constructor(public record: Webhook) {}
}

export class TenantWebhooks {
  readonly #hooks = new Map<number, Hook>()
  #nextId = 1
  #started = false
  #stopped = false
  #flushTimer: NodeJS.Timeout | null = null

  constructor(
    readonly tenant: WebhookTenant,
    readonly env: WebhookEnvironment,
  ) {}

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
    for (const stored of this.tenant.store.webhooks()) {
      const opened = openWebhookSecret(stored, this.env.sealer)
      const { sealedSecret: _sealed, ...fields } = stored as Webhook & { sealedSecret?: string }
      const hook = new Hook({ ...fields, secret: opened.secret } as Webhook)
      this.#hooks.set(hook.record.id, hook)
      this.#nextId = Math.max(this.#nextId, hook.record.id + 1)
      if (opened.stale) stale.push(hook)
      if (opened.unopened !== null) {
        hook.unopened = opened.unopened
        hook.record.lastDelivery = { at: this.env.now(), status: null, error: `not delivered: the webhook's secret does not open (${opened.unopened.problem}); set a new secret` }
        this.tenant.log.error({ webhook: hook.record.id, error: opened.unopened.problem }, 'webhook secret does not open with the secret key given: no deliveries until it does or a new secret is set')
        continue
      }
      if (!hook.record.active) continue
      const retry = hook.record.retry
      if (retry !== null) this.#schedule(hook, Math.max(0, retry.nextAt - this.env.now()))
      else if (hook.record.cursor <= this.tenant.store.durableSequence) this.#schedule(hook, this.env.settings.batchMs)
    }
    this.#flushTimer = setInterval(() => void this.#flushPositions(), positionFlushMs)
    this.#flushTimer.unref()
    if (stale.length > 0) {
      this.#store(stale).then(
        () => this.tenant.log.info({ webhooks: stale.length, encrypted: this.env.sealer.enabled }, 'webhook secrets stored again under the current secret key'),
        (error: unknown) => this.tenant.log.error({ err: error }, 'storing webhook secrets again failed'),
      )
    }
  }

  /** Stores the hooks' records, each secret sealed when a key is set. */
  #store(hooks: readonly Hook[]): Promise<void> {
    return this.tenant.store.putWebhooks(hooks.map((hook) => this.#storedForm(hook)))
  }

  #storedForm(hook: Hook): ReturnType<typeof storedWebhookForm> {
    const record = hook.record
    if (hook.unopened !== null) return storedWebhookForm(record, hook.unopened.sealed)
    if (record.secret === null || !this.env.sealer.enabled) return storedWebhookForm(record, null)
    if (hook.sealed?.secret !== record.secret) hook.sealed = { secret: record.secret, value: sealWebhookSecret(record.secret, record.id, this.env.sealer) }
    return storedWebhookForm(record, hook.sealed.value)
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
      active: input.active ?? true,
      createdAt: nowMs,
      updatedAt: nowMs,
      cursor: this.tenant.store.sequence + 1,
      retry: null,
      lastDelivery: null,
    }
    const hook = new Hook(record)
    this.#hooks.set(record.id, hook)
    await this.#store([hook])
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
    if (input.active !== undefined && input.active !== record.active) {
      this.#halt(hook)
      record.active = input.active
      if (record.active) record.cursor = this.tenant.store.sequence + 1
    }
    record.updatedAt = nowMs
    hook.dirty = false
    await this.#store([hook])
    // A webhook held for a secret that did not open resumes with its new one, from where it stopped.
    if (held && hook.unopened === null && record.active && record.cursor <= this.tenant.store.durableSequence) this.#schedule(hook, this.env.settings.batchMs)
    return record
  }

  /** Stops a send in flight (its outcome is ignored) and any scheduled step; the state stays. */
  #pause(hook: Hook): void {
    hook.generation++
    hook.inFlight?.abort()
    hook.inFlight = null
    if (hook.timer !== null) clearTimeout(hook.timer)
    hook.timer = null
  }

  /** Stops a delivery in progress (it is dropped) and any scheduled attempt. */
  #halt(hook: Hook): void {
    this.#pause(hook)
    hook.delivery = null
    hook.waitingSince = null
    hook.record.retry = null
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
    void this.#send(hook.record, JSON.stringify([event]), 1, new AbortController().signal).then((outcome) => {
      this.#record(hook, outcome)
      this.#persist(hook)
    })
    return true
  }

  /** A commit is durable: wake the webhooks it concerns. */
  notify(entries: readonly LogEntry[]): void {
    if (this.#stopped || this.#hooks.size === 0 || entries.length === 0) return
    this.#timed(() => this.#wake(entries))
  }

  /** Runs dispatcher work, counting its main-thread time (`pricing_webhook_dispatch_seconds_total`). */
  #timed(work: () => void): void {
    const started = process.hrtime.bigint()
    try {
      work()
    } finally {
      this.env.metrics.webhookDispatchSeconds.inc(Number(process.hrtime.bigint() - started) / 1e9)
    }
  }

  #wake(entries: readonly LogEntry[]): void {
    const first = entries[0]!.sequence
    const last = entries[entries.length - 1]!.sequence
    let recorded: ((filter: string | null) => boolean) | null = null
    for (const hook of this.#hooks.values()) {
      if (!hook.record.active) continue
      if (hook.inFlight !== null) {
        hook.waitingSince ??= this.env.now()
        continue
      }
      if (hook.timer !== null || hook.record.retry !== null) continue
      // Registered (or reactivated) after these entries were recorded: none of them is its.
      if (hook.record.cursor > last) continue
      if (hook.record.cursor < first) {
        this.#schedule(hook, this.env.settings.batchMs)
        continue
      }
      // Caught up: these entries are its only pending ones. Skip them at once when none would go.
      recorded ??= this.#deliverable(entries)
      if (recorded(hook.record.entityTypeFilter)) this.#schedule(hook, this.env.settings.batchMs)
      else {
        hook.record.cursor = last + 1
        hook.dirty = true
      }
    }
  }

  /** Whether a webhook with a filter would receive any of these entries. */
  #deliverable(entries: readonly LogEntry[]): (filter: string | null) => boolean {
    const types = new Set<string>()
    if (this.tenant.limits.webhooks) {
      const enabled = this.#enabledAt()
      for (const entry of entries) if (enabled(entry.changedAt)) types.add(entry.entityType)
    }
    return (filter) => (filter === null ? types.size > 0 : types.has(filter))
  }

  /** `change.events.enabled` at an entry's time (remembering the last answer: a commit shares one). */
  #enabledAt(): (at: number) => boolean {
    let lastAt = Number.NaN
    let lastValue = false
    return (at) => {
      if (at !== lastAt) {
        lastAt = at
        lastValue = settingEnabled(this.tenant.catalog, 'change.events.enabled', at)
      }
      return lastValue
    }
  }

  #schedule(hook: Hook, delayMs: number): void {
    if (this.#stopped || hook.timer !== null) return
    hook.timer = setTimeout(() => {
      hook.timer = null
      this.#timed(() => this.#run(hook))
    }, delayMs)
  }

  /** One step of a webhook: collect a batch (or take the one being retried) and send it. */
  #run(hook: Hook): void {
    const record = hook.record
    if (this.#stopped || !record.active || hook.inFlight !== null || hook.unopened !== null) return
    const store = this.tenant.store
    if (!this.tenant.limits.webhooks) {
      // The plan has no webhooks (any longer): what is recorded meanwhile is not delivered.
      this.#halt(hook)
      record.cursor = store.durableSequence + 1
      this.#persist(hook)
      return
    }
    // A delivery in progress keeps its events in memory; only what must be read again can be gone.
    const oldest = store.oldestSequence()
    if (hook.delivery === null && record.cursor < oldest) {
      this.tenant.log.warn({ webhook: record.id, skipped: oldest - record.cursor }, 'webhook position evicted from the changelog; continuing at the oldest entry')
      record.cursor = oldest
      if (record.retry !== null && record.retry.to < oldest) record.retry = null
    }
    if (hook.delivery === null) {
      // A retry after a restart reads its delivery again (the same range, unless the filter changed).
      const batch = this.#collect(record.cursor, record.retry?.to ?? store.durableSequence, record.entityTypeFilter)
      const to = batch.through
      if (batch.events.length === 0) {
        record.cursor = to + 1
        record.retry = null
        hook.dirty = true
        if (record.cursor <= store.durableSequence) this.#schedule(hook, 0)
        return
      }
      const eventsJson = JSON.stringify(renderEntries(batch.events))
      hook.delivery = { eventsJson, count: batch.events.length, to, full: batch.full }
    }
    const delivery = hook.delivery
    const attempt = (record.retry?.failures ?? 0) + 1
    const generation = hook.generation
    const controller = new AbortController()
    hook.inFlight = controller
    void this.#send(record, delivery.eventsJson, attempt, controller.signal).then((outcome) => {
      if (generation !== hook.generation) return
      hook.inFlight = null
      this.#timed(() => this.#settle(hook, delivery, attempt, outcome))
    })
  }

  /** After an attempt: advance, retry later or drop, and go on with what is pending. */
  #settle(hook: Hook, delivery: NonNullable<Hook['delivery']>, attempt: number, outcome: Outcome): void {
    const record = hook.record
    const metrics = this.env.metrics
    this.#record(hook, outcome)
    if (!outcome.ok && attempt <= retryDelaysS.length) {
      const delayMs = retryDelaysS[attempt - 1]! * 1000 * this.env.settings.retryScale
      record.retry = { to: delivery.to, failures: attempt, nextAt: this.env.now() + delayMs }
      metrics.webhookDeliveries.inc({ outcome: 'retry' })
      this.#persist(hook)
      this.#schedule(hook, delayMs)
      return
    }
    if (outcome.ok) {
      metrics.webhookDeliveries.inc({ outcome: 'delivered' })
      metrics.webhookEvents.inc(delivery.count)
    } else {
      metrics.webhookDeliveries.inc({ outcome: 'dropped' })
      this.tenant.log.warn({ webhook: record.id, events: delivery.count, attempts: attempt, error: outcome.error, status: outcome.status }, 'webhook delivery dropped after its last retry')
    }
    record.cursor = delivery.to + 1
    record.retry = null
    hook.delivery = null
    this.#persist(hook)
    if (record.cursor > this.tenant.store.durableSequence) {
      hook.waitingSince = null
      return
    }
    const since = hook.waitingSince ?? this.env.now()
    hook.waitingSince = null
    this.#schedule(hook, delivery.full ? 0 : Math.max(0, since + this.env.settings.batchMs - this.env.now()))
  }

  #record(hook: Hook, outcome: Outcome): void {
    hook.record.lastDelivery = { at: this.env.now(), status: outcome.status, error: outcome.error }
  }

  /**
   * Up to `batchEventsMax` deliverable events from `from` to `to` (inclusive) of the filter's type,
   * examining at most `scanEntriesMax` entries. `through` is the last sequence examined; `full`
   * says that more may follow at once.
   */
  #collect(from: number, to: number, filter: string | null): { events: LogEntry[]; through: number; full: boolean } {
    const events: LogEntry[] = []
    const enabled = this.#enabledAt()
    let position = from
    let scanned = 0
    scan: while (position <= to && events.length < batchEventsMax && scanned < scanEntriesMax) {
      const chunk = this.tenant.store.readLog(position, readChunkEntries, filter)
      for (const entry of chunk) {
        if (entry.sequence > to) break
        position = entry.sequence + 1
        scanned++
        if (enabled(entry.changedAt)) events.push(entry)
        if (events.length === batchEventsMax) break scan
      }
      // A short chunk reached the end of the durable log (which is at or past `to`).
      if (chunk.length < readChunkEntries || chunk[chunk.length - 1]!.sequence > to) {
        position = to + 1
        break
      }
    }
    return { events, through: position - 1, full: position <= to }
  }

  /** One POST; resolves with its outcome, never rejects. */
  #send(record: Webhook, eventsJson: string, attempt: number, signal: AbortSignal): Promise<Outcome> {
    const settings = this.env.settings
    const url = new URL(record.url)
    const host = hostOf(url)
    if (!settings.allowPrivate && isIP(host) !== 0 && isForbiddenAddress(host)) {
      return Promise.resolve({ ok: false, status: null, error: `${host} is not a public address` })
    }
    const body = Buffer.from(`{"webhook_id":${record.id},"delivered_at":"${formatInstant(this.env.now())}","events":${eventsJson}}`, 'utf8')
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'content-length': String(body.length),
      'user-agent': userAgent,
      'x-webhook-id': String(record.id),
      'x-delivery-attempt': String(attempt),
    }
    if (record.secret !== null) headers['x-signature-256'] = `sha256=${createHmac('sha256', record.secret).update(body).digest('hex')}`
    return new Promise<Outcome>((resolve) => {
      let done = false
      const finish = (outcome: Outcome): void => {
        if (done) return
        done = true
        clearTimeout(timer)
        resolve(outcome)
      }
      const request = https.request(
        url,
        { method: 'POST', headers, agent: this.env.agent, signal, ...(settings.allowPrivate ? {} : { lookup: guardedLookup }) },
        (response) => {
          const status = response.statusCode ?? 0
          response.on('error', (error) => finish({ ok: false, status, error: error.message }))
          response.on('end', () => {
            const ok = status >= 200 && status < 300
            finish({ ok, status, error: ok ? null : `answered ${status}` })
          })
          response.resume()
        },
      )
      const timer = setTimeout(() => request.destroy(new Error(`no complete answer within ${settings.timeoutMs} ms`)), settings.timeoutMs)
      request.on('error', (error) => finish({ ok: false, status: null, error: error.message }))
      request.end(body)
    })
  }

  #persist(hook: Hook): void {
    // Kept dirty: the periodic flush stores it once storage has room again.
    if (this.tenant.storage?.nearlyFull === true) {
      hook.dirty = true
      return
    }
    hook.dirty = false
    this.#store([hook]).catch((error: unknown) => {
      this.tenant.log.error({ err: error, webhook: hook.record.id }, 'storing webhook state failed')
    })
  }

  async #flushPositions(): Promise<void> {
    // Storage nearly full: positions wait in memory (a crash meanwhile redelivers: at-least-once).
    if (this.tenant.storage?.nearlyFull === true) return
    const dirty = [...this.#hooks.values()].filter((hook) => hook.dirty)
    for (const hook of dirty) hook.dirty = false
    if (dirty.length === 0) return
    try {
      await this.#store(dirty)
    } catch (error) {
      // A failed write (a full disk) is tried again at the next flush; called from a timer, it must not reject.
      for (const hook of dirty) hook.dirty = true
      this.tenant.log.error({ err: error }, 'storing webhook positions failed; trying again at the next flush')
    }
  }

  /** Stops timers and sends (an unfinished delivery is sent again after the restart). */
  async stop(): Promise<void> {
    this.#stopped = true
    if (this.#flushTimer !== null) clearInterval(this.#flushTimer)
    for (const hook of this.#hooks.values()) {
      // The retry state stays: it is stored below and resumes after the restart.
      this.#pause(hook)
      hook.dirty = false
    }
    // Every position, awaited: the store closes next.
    if (this.#hooks.size > 0) await this.#store([...this.#hooks.values()])
  }
}
