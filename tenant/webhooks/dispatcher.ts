/**
 * The dispatcher: pushes each webhook's share of the changelog to it (SPEC.md "Webhook delivery").
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
 * sends are asynchronous I/O (tenant/webhooks/delivery.ts), the log reads are bounded
 * (`scanEntriesMax` per pass).
 * @module
 */
import { settingEnabled } from '../../engine/settings.js'
import type { LogEntry } from '../../storage/log-entry.js'
import { renderEntries } from '../changelog.js'
import { inSummaryDetail, summaryDetail } from '../effective-prices/entries.js'
import { deliver } from './delivery.js'
import type { WebhookEnvironment } from './environment.js'
import {
  batchEventsMax,
  retryDelaysS,
  type DeliveryOutcome,
  type Hook,
  type PendingDelivery,
  type WebhookTenant,
} from './model.js'
import type { WebhookStore } from './store.js'

/** Log entries one dispatch pass examines at most (a few milliseconds), so a pass never stalls requests. */
const scanEntriesMax = 5_000
const readChunkEntries = 1_000

export class WebhookDispatcher {
  #stopped = false

  constructor(
    readonly tenant: WebhookTenant,
    readonly env: WebhookEnvironment,
    /** Every hook of the tenant (the registry's map). */
    readonly hooks: ReadonlyMap<number, Hook>,
    readonly store: WebhookStore,
  ) {}

  /** A commit is durable: wake the webhooks it concerns. */
  notify(entries: readonly LogEntry[]): void {
    if (this.#stopped || this.hooks.size === 0 || entries.length === 0) return
    this.#timed(() => this.#wake(entries))
  }

  /** Sends `eventsJson` once, without retries; the outcome shows in `lastDelivery` (a test event). */
  sendOnce(hook: Hook, eventsJson: string): void {
    const request = { record: hook.record, eventsJson, attempt: 1, signal: new AbortController().signal }
    void deliver(this.env, request).then((outcome) => {
      this.#record(hook, outcome)
      void this.store.persist(hook)
    })
  }

  /** Runs the hook's next step after `delayMs` (unless one is scheduled already or the dispatcher stopped). */
  schedule(hook: Hook, delayMs: number): void {
    if (this.#stopped || hook.timer !== null) return
    hook.timer = setTimeout(() => {
      hook.timer = null
      this.#timed(() => this.#run(hook))
    }, delayMs)
  }

  /** Stops a send in flight (its outcome is ignored) and any scheduled step; the state stays. */
  pause(hook: Hook): void {
    hook.generation++
    hook.inFlight?.abort()
    hook.inFlight = null
    if (hook.timer !== null) clearTimeout(hook.timer)
    hook.timer = null
  }

  /** Stops a delivery in progress (it is dropped) and any scheduled attempt. */
  halt(hook: Hook): void {
    this.pause(hook)
    hook.delivery = null
    hook.waitingSince = null
    hook.record.retry = null
  }

  /** Stops timers and sends (an unfinished delivery is sent again after the restart). */
  stop(): void {
    this.#stopped = true
    // The retry state stays: it is stored at shutdown and resumes after the restart.
    for (const hook of this.hooks.values()) this.pause(hook)
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
    for (const hook of this.hooks.values()) {
      if (!hook.record.active) continue
      if (hook.inFlight !== null) {
        hook.waitingSince ??= this.env.now()
        continue
      }
      if (hook.timer !== null || hook.record.retry !== null) continue
      // Registered (or reactivated) after these entries were recorded: none of them is its.
      if (hook.record.cursor > last) continue
      if (hook.record.cursor < first) {
        this.schedule(hook, this.env.settings.batchMs)
        continue
      }
      // Caught up: these entries are its only pending ones. Skip them at once when none would go.
      recorded ??= this.#deliverable(entries)
      if (recorded(hook.record.entityTypeFilter)) this.schedule(hook, this.env.settings.batchMs)
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

  /** One step of a webhook: collect a batch (or take the one being retried) and send it. */
  #run(hook: Hook): void {
    const record = hook.record
    if (this.#stopped || !record.active || hook.inFlight !== null || hook.unopened !== null) return
    const store = this.tenant.store
    if (!this.tenant.limits.webhooks) {
      // The plan has no webhooks (any longer): what is recorded meanwhile is not delivered.
      this.halt(hook)
      record.cursor = store.durableSequence + 1
      void this.store.persist(hook)
      return
    }
    // A delivery in progress keeps its events in memory; only what must be read again can be gone.
    const oldest = store.oldestSequence()
    if (hook.delivery === null && record.cursor < oldest) {
      const skipped = oldest - record.cursor
      this.tenant.log.warn(
        { webhook: record.id, skipped },
        'webhook position evicted from the changelog; continuing at the oldest entry',
      )
      record.cursor = oldest
      if (record.retry !== null && record.retry.to < oldest) record.retry = null
    }
    if (hook.delivery === null) {
      // A retry after a restart reads its delivery again (the same range, unless the filter changed).
      const batch = this.#collect(
        record.cursor,
        record.retry?.to ?? store.durableSequence,
        record.entityTypeFilter,
        record.effectivePricePerSku === true,
      )
      const to = batch.through
      if (batch.events.length === 0) {
        record.cursor = to + 1
        record.retry = null
        hook.dirty = true
        if (record.cursor <= store.durableSequence) this.schedule(hook, 0)
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
    const request = { record, eventsJson: delivery.eventsJson, attempt, signal: controller.signal }
    void deliver(this.env, request).then((outcome) => {
      if (generation !== hook.generation) return
      hook.inFlight = null
      this.#timed(() => this.#settle(hook, delivery, attempt, outcome))
    })
  }

  /** After an attempt: advance, retry later or drop, and go on with what is pending. */
  #settle(hook: Hook, delivery: PendingDelivery, attempt: number, outcome: DeliveryOutcome): void {
    const record = hook.record
    const metrics = this.env.metrics
    this.#record(hook, outcome)
    if (!outcome.ok && attempt <= retryDelaysS.length) {
      const delayMs = retryDelaysS[attempt - 1]! * 1000 * this.env.settings.retryScale
      record.retry = { to: delivery.to, failures: attempt, nextAt: this.env.now() + delayMs }
      metrics.webhookDeliveries.inc({ outcome: 'retry' })
      // The next attempt waits until this failure count is on disk: a crash then loses at most the
      // attempt in flight, so a retry after a restart carries the number it would have had.
      const generation = hook.generation
      void this.store.persist(hook).then(() => {
        if (generation === hook.generation) this.schedule(hook, delayMs)
      })
      return
    }
    if (outcome.ok) {
      metrics.webhookDeliveries.inc({ outcome: 'delivered' })
      metrics.webhookEvents.inc(delivery.count)
    } else {
      metrics.webhookDeliveries.inc({ outcome: 'dropped' })
      const { error, status } = outcome
      this.tenant.log.warn(
        { webhook: record.id, events: delivery.count, attempts: attempt, error, status },
        'webhook delivery dropped after its last retry',
      )
    }
    record.cursor = delivery.to + 1
    record.retry = null
    hook.delivery = null
    void this.store.persist(hook)
    if (record.cursor > this.tenant.store.durableSequence) {
      hook.waitingSince = null
      return
    }
    const since = hook.waitingSince ?? this.env.now()
    hook.waitingSince = null
    this.schedule(hook, delivery.full ? 0 : Math.max(0, since + this.env.settings.batchMs - this.env.now()))
  }

  #record(hook: Hook, outcome: DeliveryOutcome): void {
    hook.record.lastDelivery = { at: this.env.now(), status: outcome.status, error: outcome.error }
  }

  /**
   * Up to `batchEventsMax` deliverable events from `from` to `to` (inclusive) of the filter's type,
   * examining at most `scanEntriesMax` entries. `through` is the last sequence examined; `full`
   * says that more may follow at once.
   */
  #collect(
    from: number,
    to: number,
    filter: string | null,
    perSku: boolean,
  ): { events: LogEntry[]; through: number; full: boolean } {
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
        if (enabled(entry.changedAt) && wanted(entry, perSku)) events.push(entry)
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
}

/**
 * Whether a webhook takes an entry: a whole list's effective-price change reaches a webhook as its
 * summary, or (effective_price_per_sku) as the per-SKU events recorded beside it
 * (tenant/effective-prices/entries.ts puts the flag first in the detail).
 */
function wanted(entry: LogEntry, perSku: boolean): boolean {
  const detail = entry.detail
  if (detail === undefined) return true
  if (detail.startsWith(summaryDetail)) return !perSku
  if (detail.startsWith(inSummaryDetail)) return perSku
  return true
}
