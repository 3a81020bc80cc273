/**
 * What a webhook is, shared by the files that handle one (registry, dispatcher, delivery, store):
 * the stored and answered record, the dispatcher's working state of it (`Hook`), the settings and
 * the limits. It holds no behaviour, so each of those files can import it without a circle.
 * @module
 */
import type { Catalog } from '../../engine/catalog.js'
import type { StoredWebhook, TenantStore } from '../../storage/tenant-store.js'
import type { Logger } from 'pino'

/** Seconds before retry 1 to 10 (SPEC.md "Webhook delivery" 5); the failure after the last drops. */
export const retryDelaysS: readonly number[] = Object.freeze([1, 2, 4, 8, 16, 32, 64, 128, 256, 300])
/** Events in one POST at most; a larger backlog goes out in consecutive POSTs. */
export const batchEventsMax = 1_000
/** Webhooks a tenant may register, active or not. */
export const webhooksPerTenantMax = 25

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

/** A webhook as stored and answered (the secret never leaves these modules but for signing). */
export interface Webhook extends StoredWebhook {
  readonly id: number
  url: string
  secret: string | null
  entityTypeFilter: string | null
  /**
   * Effective-price events of a whole list one per SKU rather than one summary (absent on records
   * stored before it existed: false). tenant/effective-prices/.
   */
  effectivePricePerSku?: boolean
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
  readonly effective_price_per_sku?: boolean
  readonly active?: boolean
}

/** What the webhooks need of a tenant (TenantRuntime). */
export interface WebhookTenant {
  readonly slug: string
  readonly store: TenantStore
  readonly catalog: Catalog
  readonly limits: { readonly webhooks: boolean }
  readonly log: Logger
  /** Storage nearly full (tenant/storage-guard.ts): delivery state stays in memory until there is room. */
  readonly storage?: { readonly nearlyFull: boolean }
}

/** How one POST went. */
export interface DeliveryOutcome {
  readonly ok: boolean
  readonly status: number | null
  readonly error: string | null
}

/** The delivery in progress: its events as JSON, how many, the last sequence it covers, whether more follow. */
export interface PendingDelivery {
  readonly eventsJson: string
  readonly count: number
  readonly to: number
  readonly full: boolean
}

/** The dispatcher's working state of one webhook besides its stored record. */
export class Hook {
  timer: NodeJS.Timeout | null = null
  inFlight: AbortController | null = null
  /** Bumped by deactivation and reactivation: a send that started before ignores its outcome. */
  generation = 0
  /** The delivery in progress. */
  delivery: PendingDelivery | null = null
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
