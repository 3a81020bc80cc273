/**
 * Tenant runtimes: each tenant's record and plan limits, its LMDB store, its in-memory catalogue and
 * its rate-limit buckets. Writes go through `commit`: the planned changes are applied to memory at
 * once (so that the next request plans against them) and resolve when the transaction is durable.
 * @module
 */
import path from 'node:path'
import type { Logger } from 'pino'
import { Catalog, type Change } from '../engine/catalog.js'
import { PriceBook, type PriceVersion } from '../engine/prices.js'
import type { SystemStore, TenantRecord } from '../storage/system-store.js'
import { commitFailureCause, StorageError, TenantStore, type PriceChange } from '../storage/tenant-store.js'
import type { EntryContent, LogEntry } from '../storage/log-entry.js'
import type { QueryInput } from '../workers/execute.js'
import type { QueryPool } from '../workers/pool.js'
import { assert } from '../engine/assert.js'
import { ApiError } from '../platform/errors.js'
import { effectiveLimits, type Limits } from './plans.js'
import { TenantBackups } from '../storage/backup/backups.js'
import { localBuckets, type BucketFactory, type Dimension, type RateBucket } from './rate-limits.js'
import { plentyOfRoom, storageFullError, type StorageState } from './storage-guard.js'
import { TenantActivity } from './activity.js'
import type { WebhookEnvironment } from './webhooks/environment.js'
import { TenantWebhooks } from './webhooks/registry.js'

export const slugPattern = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/

/** A home's committed batch, as its replicas apply it. */
export interface CommittedBatch {
  readonly changes: readonly Change[]
  readonly extra: readonly EntryContent[]
  readonly prices: readonly PriceChange[]
  readonly entries: readonly LogEntry[]
  /** Meta values stored with the batch (the last effective-price moment done), for a replica to store too. */
  readonly meta?: Readonly<Record<string, unknown>>
}

/** Where a home node's commits go before they are acknowledged (cluster mode: cluster/replication.ts). */
export interface ReplicationSink {
  /**
   * Told of each commit as it is queued, synchronously and so in sequence order, with the promise
   * of its durable batch; resolves once the batch is published. Batches are published in the order
   * they were queued, whatever order their durability promises settle in.
   */
  committed(tenant: TenantRuntime, durable: Promise<CommittedBatch>): Promise<void>
}

/** The changes a unit of work (`TenantRuntime.write`) applied to memory, for it to store. */
export interface AppliedWrites {
  readonly changes: Change[]
  readonly prices: PriceChange[]
}

/** What a tenant runtime is built from: one object, so a call names what it passes. */
export interface TenantRuntimeOptions {
  readonly record: TenantRecord
  /** The system store (the tenant's restore status lives there: tenant/backups/restore.ts). */
  readonly system: SystemStore
  readonly dataDir: string
  readonly logger: Logger
  /** The clock (server/main.ts gives `Date.now`); durations are measured with `performance.now`. */
  readonly now: () => number
  /** When the tenant opens: its rate-limit buckets start full at this time. */
  readonly openedAtMs: number
  /** Worker threads for large price queries (null: every query runs on the main thread). */
  readonly queryPool?: QueryPool | null
  readonly workerThresholdSkus?: number
  /** Null where no environment is given (tools): no webhooks then. */
  readonly webhookEnvironment?: WebhookEnvironment | null
  /** Bytes this tenant's backups may take together (0: only the free-disk check). */
  readonly backupDiskMaxBytes?: number
  /** Its rate-limit buckets: in-process, or shared by a cluster's nodes (cluster/rate-limits.ts). */
  readonly bucketFactory?: BucketFactory
  /** Whether the data directory is nearly full (tenant/storage-guard.ts): writers put their writes off meanwhile. */
  readonly storage?: StorageState
  /** Told of the bytes of each durable commit (the storage guard samples early after many). */
  readonly onDurable?: ((bytes: number) => void) | null
}

/**
 * One tenant's state. Fields that change while the tenant serves (its record and limits, restore,
 * role, replication sink, load and warm-up) are read-only from outside: they change through the
 * methods below, whose names say what happens (`beginRestore`, `becomeReplica`, `update`, ...).
 */
export class TenantRuntime {
  readonly store: TenantStore
  readonly slug: string
  readonly catalog = new Catalog()
  readonly prices = new PriceBook()
  readonly log: Logger
  /** The system store (the tenant's restore status lives there: tenant/backups/restore.ts). */
  readonly system: SystemStore
  /** Worker threads for large price queries (null: every query runs on the main thread). */
  readonly queryPool: QueryPool | null
  readonly workerThresholdSkus: number
  /** Its rate-limit buckets: in-process, or shared by a cluster's nodes (cluster/rate-limits.ts). */
  readonly bucketFactory: BucketFactory
  /** Webhook registrations and their dispatcher (null where no environment was given: tools). */
  readonly webhooks: TenantWebhooks | null
  /** Backups on disk, under `<data>/backups/<slug>/` (storage/backup/backups.ts). */
  readonly backups: TenantBackups
  /** Requests and items per minute over the last hour (the console's chart). */
  readonly activity = new TenantActivity()
  /** Whether the data directory is nearly full (tenant/storage-guard.ts): writers put their writes off meanwhile. */
  readonly storage: StorageState
  /** The clock: every reading of the time of day goes through it. */
  readonly now: () => number
  #record: TenantRecord
  #limits: Limits
  #buckets: Record<Dimension, RateBucket>
  #loaded = false
  #restoring: string | null = null
  #role: 'home' | 'replica' = 'home'
  #replication: ReplicationSink | null = null

  constructor(options: TenantRuntimeOptions) {
    const { record, dataDir } = options
    this.#record = record
    this.slug = record.slug
    this.system = options.system
    this.now = options.now
    this.queryPool = options.queryPool ?? null
    this.workerThresholdSkus = options.workerThresholdSkus ?? Number.POSITIVE_INFINITY
    this.bucketFactory = options.bucketFactory ?? localBuckets
    this.storage = options.storage ?? plentyOfRoom
    const backupsDir = path.join(dataDir, 'backups', record.slug)
    this.backups = new TenantBackups(backupsDir, record.slug, options.backupDiskMaxBytes ?? 0)
    this.#limits = effectiveLimits(record.tier, record.limits)
    this.store = new TenantStore(path.join(dataDir, 'tenants', record.slug))
    this.store.capacity = this.#limits.changelog_capacity
    this.store.onDurable = options.onDurable ?? null
    this.#buckets = this.#makeBuckets(options.openedAtMs)
    this.log = options.logger.child({ tenant: record.slug })
    const environment = options.webhookEnvironment ?? null
    this.webhooks = environment === null ? null : new TenantWebhooks(this, environment)
  }

  get record(): TenantRecord {
    return this.#record
  }

  get limits(): Limits {
    return this.#limits
  }

  get buckets(): Readonly<Record<Dimension, RateBucket>> {
    return this.#buckets
  }

  /** Whether the tenant's data is in memory (`load`, `loadGradually`). */
  get loaded(): boolean {
    return this.#loaded
  }

  /** The backup being restored (tenant/backups/restore.ts): writes answer 503 meanwhile. */
  get restoring(): string | null {
    return this.#restoring
  }

  /**
   * `home`: this node writes the tenant (always, on a node on its own). `replica` (cluster mode):
   * another node writes it and this one applies its log (cluster/replication.ts); nothing here
   * writes the tenant's data then (FX feeds, webhooks and the API's writes are the home's).
   */
  get role(): 'home' | 'replica' {
    return this.#role
  }

  /** Cluster mode: where a home's durable commits go before they are acknowledged (cluster/replication.ts). */
  get replication(): ReplicationSink | null {
    return this.#replication
  }

  #restores = 0

  /** Restores begun since the runtime opened: whoever keeps state derived from the data compares it. */
  get restores(): number {
    return this.#restores
  }

  /** Told of each batch this runtime commits, when it is queued (its changes are in memory then). */
  readonly #committed: ((changes: readonly Change[], prices: readonly PriceChange[]) => void)[] = []

  /** Registers a listener of committed batches (the effective-price events: tenant/effective-prices/). */
  onCommitted(listener: (changes: readonly Change[], prices: readonly PriceChange[]) => void): void {
    this.#committed.push(listener)
  }

  /** A restore of `backupId` starts: from now on writes are refused (tenant/backups/restore.ts). */
  beginRestore(backupId: string): void {
    assert(this.#restoring === null, `tenant ${this.slug}: a restore of ${this.#restoring} is running`)
    this.#restoring = backupId
    this.#restores++
  }

  /** The restore is over (completed, failed, or its start not stored): writes resume. */
  endRestore(): void {
    this.#restoring = null
  }

  /**
   * This node writes the tenant (cluster mode: it holds the region's home lease); its commits go to
   * `replication` before they are acknowledged (null: nowhere, on a node on its own).
   */
  becomeHome(replication: ReplicationSink | null): void {
    this.#role = 'home'
    this.#replication = replication
  }

  /** Another node writes the tenant: this one applies its log and writes nothing of its own. */
  becomeReplica(): void {
    this.#role = 'replica'
    this.#replication = null
  }

  #makeBuckets(nowMs: number): Record<Dimension, RateBucket> {
    return {
      query: this.bucketFactory(this.slug, 'query', this.#limits.query_rate, this.#limits.query_burst, nowMs),
      ingest: this.bucketFactory(this.slug, 'ingest', this.#limits.ingest_rate, this.#limits.ingest_burst, nowMs),
    }
  }

  /**
   * A new record (tier, overrides, status): recompute limits and resize the buckets whose rate or
   * burst changed. An unchanged bucket keeps its level, so an unrelated change (status, quota) does
   * not hand out a fresh burst.
   */
  update(record: TenantRecord, nowMs: number): void {
    this.#record = record
    this.#limits = effectiveLimits(record.tier, record.limits)
    this.store.capacity = this.#limits.changelog_capacity
    const fresh = this.#makeBuckets(nowMs)
    for (const dimension of ['query', 'ingest'] as const) {
      const old = this.#buckets[dimension]
      if (old.rate === fresh[dimension].rate && old.burst === fresh[dimension].burst) fresh[dimension] = old
    }
    this.#buckets = fresh
  }

  /**
   * Whether the query workers hold this tenant's replica and have run a query on it (`warm`), or
   * there is nothing to warm: /readyz waits for it, so the first large query after a start finds its
   * worker ready instead of building a replica (seconds at 3 million versions).
   */
  get warmed(): boolean {
    return this.#warmed
  }

  /** Workers that finished the warm-up together, of how many (null: not warmed by the pool). */
  get warmedWorkers(): { readonly workers: number; readonly warmed: number } | null {
    return this.#warmedWorkers
  }

  #warmed = false
  #warmedWorkers: { readonly workers: number; readonly warmed: number } | null = null
  /** Whether the load sent the query workers its snapshot file's catalogue ahead (logged with the warm-up). */
  #prefetched = false
  /** The change count right after the load (catalogue and price writes move it: engine/prices.ts). */
  #loadedChangeCount = -1

  load(): void {
    const keys = this.store.loadInto(this.catalog)
    this.#loaded = true
    // Loaded at once: a tenant created or placed while the server runs, which /readyz does not wait for.
    this.#warmed = true
    this.webhooks?.start()
    this.log.info({ keys, sequence: this.store.sequence }, 'tenant loaded')
  }

  /** As `load`, yielding to the event loop between chunks (startup: the server answers meanwhile). */
  async loadGradually(): Promise<void> {
    const started = performance.now()
    // A snapshot file's catalogue goes to the query workers before this thread decodes it: they
    // build their replicas' catalogues meanwhile, for the warm-up (workers/pool.ts `prefetch`).
    const pool = this.queryPool
    this.store.onSnapshotCatalog =
      pool === null ? null : (bytes) => (this.#prefetched = pool.prefetch(this.slug, bytes))
    const keys = await this.store.loadIntoGradually(this.catalog, undefined, this.prices)
    this.store.onSnapshotCatalog = null
    this.#loadedChangeCount = this.prices.changeCount
    this.#loaded = true
    this.webhooks?.start()
    // From the snapshot of the last clean shutdown, or from the tables (and why: storage/book-snapshot.ts).
    const report = this.store.lastLoad
    const snapshot =
      report === null ? null : { used: report.snapshot === 'used', reason: report.reason, bytes: report.bytes }
    const ms = Math.round(performance.now() - started)
    this.log.info({ keys, sequence: this.store.sequence, ms, snapshot }, 'tenant loaded')
    if (report?.snapshot === 'ignored') {
      this.log.warn({ reason: report.reason }, 'book snapshot ignored: loaded from the tables')
    }
  }

  /**
   * Builds the tenant's replica on every query worker and runs a query of the worker threshold's
   * size on each (http/routes/price-reads.ts sends those there), right after the load: nothing
   * has been written since, so the load's packed catalogue, if any, is still the catalogue.
   */
  async warm(): Promise<void> {
    const pool = this.queryPool
    if (pool === null) {
      this.#warmed = true
      this.#dropLoadedCatalog()
      return
    }
    const started = performance.now()
    // The snapshot file's catalogue bytes, while they are still the catalogue: no write since the load.
    const catalog = (): Uint8Array | null =>
      this.prices.changeCount === this.#loadedChangeCount ? (this.store.lastLoad?.catalog ?? null) : null
    const query = warmQuery(this, this.now(), Math.min(this.workerThresholdSkus, warmQuerySkusMax))
    try {
      this.#warmedWorkers = await pool.warm(this, catalog, query)
      const ms = Math.round(performance.now() - started)
      this.log.info({ ...this.#warmedWorkers, ms, prefetched: this.#prefetched }, 'query workers warmed')
    } catch (error) {
      // The tenant serves anyway: its first large query builds what is missing, as before.
      this.log.warn({ err: error }, 'query workers not warmed')
    } finally {
      this.#warmed = true
      this.#dropLoadedCatalog()
    }
  }

  /** The snapshot's catalogue bytes are for the warm-up only (25 MB at 100,000 articles). */
  #dropLoadedCatalog(): void {
    const report = this.store.lastLoad
    if (report !== null && report.catalog !== null) this.store.lastLoad = { ...report, catalog: null }
  }

  /**
   * Clean shutdown: the book and catalogue as a snapshot file for the next start (only for a tenant
   * that is loaded and not in the middle of a restore). A failure costs the next start its speed,
   * nothing else: it is logged and the shutdown goes on.
   */
  async saveSnapshot(): Promise<void> {
    if (!this.loaded || this.restoring !== null) return
    const started = performance.now()
    try {
      const bytes = await this.store.saveSnapshot(this.prices, this.catalog)
      const ms = Math.round(performance.now() - started)
      this.log.info({ bytes, ms, sequence: this.store.sequence }, 'book snapshot written')
    } catch (error) {
      this.log.warn({ err: error }, 'book snapshot not written: the next start loads from the tables')
    }
  }

  /**
   * Applies planned changes to memory and stores them with their log entries in one durable
   * transaction. A storage failure after memory changed leaves the two apart: the process exits and
   * reloads from LMDB, which never holds an unacknowledged half.
   */
  async commit(
    changes: readonly Change[],
    extra: readonly EntryContent[] = [],
    prices: readonly PriceChange[] = [],
    options: {
      applied?: boolean
      meta?: Readonly<Record<string, unknown>>
      /** Entries that report on the data and change none (effective-price events): caches stay valid. */
      events?: boolean
    } = {},
  ): Promise<LogEntry[]> {
    if (changes.length === 0 && extra.length === 0 && prices.length === 0) return []
    // Cluster mode: a replica's data changes only by its home's log (placement sends writes there).
    if (this.role !== 'home')
      throw new Error(
        `tenant ${this.slug} is a replica here: its writes go to the home node of region ${this.record.region}`,
      )
    // Requests are refused at dispatch during a restore; this catches a writer that waited on
    // something (a feed fetch) since. An `applied` batch plans and commits in one turn, after the
    // dispatch check.
    if (this.restoring !== null && options.applied !== true) throw restoringError(this.restoring)
    // The same for storage nearly full (tenant/storage-guard.ts), before memory changes: a writer
    // that waited since the dispatch check (a feed fetch) gets 503 storage_full.
    if (this.storage.nearlyFull && options.applied !== true) throw storageFullError()
    // Batches apply each item while planning (later items plan against earlier ones); `applied` says so.
    if (options.applied !== true) {
      for (const change of changes) this.catalog.apply(change.type, change.key, change.versions)
      for (const change of prices) this.prices.apply(change.pricelist, change.sku, change.versions)
    }
    // Answer caches compare this count; price writes count themselves in the price book.
    if ((changes.length > 0 || extra.length > 0) && options.events !== true) this.prices.noteChange()
    // Workers see the change before the caller is answered, so no later query of theirs misses it.
    this.queryPool?.publish(
      this,
      changes.map((change) => [change.type, change.key, change.versions]),
    )
    let entries: LogEntry[]
    const stored = this.store.commit(changes, extra, prices, options.meta)
    // Told synchronously, in commit order, what the batch brings into force (tenant/effective-prices/).
    for (const listener of this.#committed) listener(changes, prices)
    // Cluster mode: the replicas' copy is in Redis before the writer hears "done". Registered now,
    // in sequence order: durability promises may settle out of that order.
    const published = this.replication?.committed(
      this,
      stored.then((logged) => ({ changes, extra, prices, entries: logged, meta: options.meta })),
    )
    try {
      entries = await stored
    } catch (error) {
      this.log.fatal(
        { err: error, cause: await commitFailureCause(error) },
        'storage commit failed; exiting so that memory reloads from LMDB',
      )
      process.exit(70)
    }
    if (published !== undefined) await published
    if (this.role === 'home') this.webhooks?.notify(entries)
    return entries
  }

  /**
   * One write's unit of work (tenant/writes/core.ts `applyBatch`): refused on a replica, while a
   * restore runs or while storage is nearly full, as `commit` refuses; then `work` plans each item
   * and applies it to memory (later items plan against earlier ones), recording the changes in
   * `applied`, and the runtime stores them in one durable commit. When `work` throws part-way, what
   * it applied is stored before the error goes on, so memory and disk stay alike.
   */
  async write<T>(work: (applied: AppliedWrites) => T): Promise<T> {
    // As `commit` checks, but before memory changes: a replica's data changes only by its home's log.
    if (this.role !== 'home') throw replicaWriteError(this)
    if (this.restoring !== null) throw restoringError(this.restoring)
    if (this.storage.nearlyFull) throw storageFullError()
    const applied: AppliedWrites = { changes: [], prices: [] }
    let result: T
    try {
      result = work(applied)
    } catch (error) {
      await this.commit(applied.changes, [], applied.prices, { applied: true })
      throw error
    }
    await this.commit(applied.changes, [], applied.prices, { applied: true })
    return result
  }

  /** Sets (or, with no versions, removes) each key's versions in memory; workers see the change. */
  #replaceInMemory(changes: readonly Change[], prices: readonly PriceChange[]): void {
    for (const change of changes) {
      if (change.versions.length === 0) this.catalog.remove(change.type, change.key)
      else this.catalog.apply(change.type, change.key, change.versions)
    }
    for (const change of prices) {
      if (change.versions.length === 0) this.prices.remove(change.pricelist, change.sku)
      else this.prices.apply(change.pricelist, change.sku, change.versions)
    }
    this.prices.noteChange()
    this.queryPool?.publish(
      this,
      changes.map((change) => [change.type, change.key, change.versions]),
    )
  }

  /**
   * A replica applies a batch of its home's log (cluster/replication.ts): the same changes in the
   * same order give the same entries, sequences and checksums as on the home; answers the last
   * entry's checksum for the caller to compare.
   */
  async applyReplicated(
    changes: readonly Change[],
    extra: readonly EntryContent[],
    prices: readonly PriceChange[],
    meta: Readonly<Record<string, unknown>> = {},
  ): Promise<string> {
    this.#replaceInMemory(changes, prices)
    let entries: LogEntry[]
    try {
      entries = await this.store.commit(changes, extra, prices, meta)
    } catch (error) {
      this.log.fatal(
        { err: error, cause: await commitFailureCause(error) },
        'storage commit of a replicated batch failed; exiting so that memory reloads from LMDB',
      )
      process.exit(70)
    }
    return entries.at(-1)?.checksum ?? ''
  }

  /**
   * Replaces pairs' version lists in memory and on disk without changelog entries (history
   * retention: tenant/retention/pass.ts). Memory first, like every write; the workers see the
   * columns' new generation, if any, before the transaction is durable.
   */
  async rewritePrices(
    runs: readonly { readonly pricelist: string; readonly sku: string; readonly versions: readonly PriceVersion[] }[],
  ): Promise<void> {
    if (runs.length === 0) return
    for (const run of runs) this.prices.apply(run.pricelist, run.sku, run.versions)
    this.queryPool?.publish(this, [])
    try {
      await this.store.rewritePriceRuns(runs)
    } catch (error) {
      this.log.fatal(
        { err: error, cause: await commitFailureCause(error) },
        'storage commit of history retention failed; exiting so that memory reloads from LMDB',
      )
      process.exit(70)
    }
  }

  /**
   * Turns the tenant's data into a backup's: the differences (storage/backup/restore-diff.ts
   * `restoreChanges`) and their log entries are written in transactions of 2,000, durable one after
   * another, then the restore's `marker` (meta table entries naming it: tenant/backups/restore.ts);
   * reads answer from memory, which changes only afterwards, in one step that no query sees
   * half-done (workers/pool.ts `exclusive`); changelog readers and webhooks see the entries from
   * that step on. A crash in between leaves a partly written restore, which the next start
   * finishes before the tenant serves.
   */
  async applyRestore(
    changes: readonly Change[],
    prices: readonly PriceChange[],
    marker: Readonly<Record<string, unknown>>,
  ): Promise<{ entries: LogEntry[]; timings: { writeMs: number; swapMs: number } }> {
    const releaseReaders = this.store.holdReaders()
    let entries: LogEntry[]
    const writeStarted = performance.now()
    try {
      const total = changes.length + prices.length
      entries = await this.store.commitInChunks(changes, prices, marker, undefined, (durable) =>
        this.log.debug({ durable, total }, 'restore changes durable'),
      )
    } catch (error) {
      this.log.fatal(
        { err: error, cause: await commitFailureCause(error) },
        'storage commit of a restore failed; exiting: the next start finishes the restore',
      )
      process.exit(70)
    }
    const writeMs = performance.now() - writeStarted
    let swapMs = 0
    const swap = (): void => {
      const swapStarted = performance.now()
      this.#replaceInMemory(changes, prices)
      swapMs = performance.now() - swapStarted
    }
    try {
      if (this.queryPool === null) swap()
      else await this.queryPool.exclusive(this, swap)
    } finally {
      releaseReaders()
    }
    if (this.replication !== null && entries.length > 0)
      await this.replication.committed(this, Promise.resolve({ changes, extra: [], prices, entries }))
    if (this.role === 'home') this.webhooks?.notify(entries)
    // The swap is the one long main-thread turn of a restore.
    return { entries, timings: { writeMs: Math.round(writeMs), swapMs: Math.round(swapMs) } }
  }
}

/** SKUs of the warm-up query at most (the worker threshold's size, if smaller). */
const warmQuerySkusMax = 1_000

/**
 * A query like a storefront's for the warm-up (`TenantRuntime.warm`): `skuCount` SKUs spread over
 * the book, every pricelist with prices that is in force at `at` in the first one's currency, the
 * first tax area in force. Null when the tenant has none of these yet.
 */
function warmQuery(tenant: TenantRuntime, at: number, skuCount: number): QueryInput | null {
  const codes = tenant.prices.skuCodes
  const pricelists: string[] = []
  let currency: string | null = null
  for (const code of tenant.prices.pricelistsWithPrices()) {
    const pricelist = tenant.catalog.get('pricelist', code, at)
    if (pricelist === null) continue
    currency ??= pricelist.currency_code
    if (pricelist.currency_code === currency) pricelists.push(code)
  }
  const taxArea = tenant.catalog.keys('tax_area').find((code) => tenant.catalog.get('tax_area', code, at) !== null)
  if (codes.length === 0 || currency === null || taxArea === undefined || !(skuCount > 0)) return null
  const count = Math.min(codes.length, skuCount)
  const step = codes.length / count
  const skus = Array.from({ length: count }, (_, index) => codes[Math.floor(index * step)]!)
  pricelists.sort()
  return { at, cacheable: false, taxArea, skus, pricelists, currency, rounding: null, sortOrder: null, quantity: 1 }
}

/** A write on a replica: placement sends writes to the home node, so only a race or a bug gets here. */
function replicaWriteError(tenant: TenantRuntime): Error {
  const { slug, record } = tenant
  return new Error(`tenant ${slug} is a replica here: its writes go to the home node of region ${record.region}`)
}

/** Seconds a writer waits during a restore (SPEC "Restore write-block retry hint"). */
export const restoreRetryAfterS = 15

/** The answer to a write while a restore runs: 503 with `Retry-After: 15`. */
export function restoringError(backupId: string): ApiError {
  return new ApiError(
    'restoring',
    `The tenant is being restored from backup ${backupId}; writes resume when it completes`,
    {},
    restoreRetryAfterS,
  )
}

/** What the registry opens every tenant with: the runtime's options but the record and the time. */
export type TenantRegistryOptions = Omit<TenantRuntimeOptions, 'record' | 'openedAtMs'>

export class TenantRegistry {
  readonly #tenants = new Map<string, TenantRuntime>()

  readonly #options: TenantRegistryOptions
  readonly system: SystemStore
  readonly dataDir: string
  readonly queryPool: QueryPool | null
  readonly webhookEnvironment: WebhookEnvironment | null
  /** Whether the data directory is nearly full, for every tenant (tenant/storage-guard.ts). */
  readonly storage: StorageState
  /** Told of each tenant opened (cluster mode places it: home or replica, cluster/node.ts). */
  #opened: ((runtime: TenantRuntime) => void) | null = null

  constructor(options: TenantRegistryOptions) {
    this.#options = options
    this.system = options.system
    this.dataDir = options.dataDir
    this.queryPool = options.queryPool ?? null
    this.webhookEnvironment = options.webhookEnvironment ?? null
    this.storage = options.storage ?? plentyOfRoom
  }

  /** Cluster mode: each tenant opened from now on is placed (home or replica: cluster/node.ts). */
  whenOpened(listener: (runtime: TenantRuntime) => void): void {
    this.#opened = listener
  }

  get(slug: string): TenantRuntime | undefined {
    return this.#tenants.get(slug)
  }

  all(): TenantRuntime[] {
    return [...this.#tenants.values()]
  }

  get allLoaded(): boolean {
    for (const tenant of this.#tenants.values()) if (!tenant.loaded) return false
    return true
  }

  /** Every tenant loaded and warmed on the query workers (`TenantRuntime.warm`): what /readyz waits for. */
  get allReady(): boolean {
    for (const tenant of this.#tenants.values()) if (!tenant.loaded || !tenant.warmed) return false
    return true
  }

  /**
   * The query workers and how many of them every tenant warmed (the fewest over tenants warmed by
   * the pool; all of them when none was), for /readyz; null without workers.
   */
  warmedWorkers(): { threads: number; warmed: number } | null {
    if (this.queryPool === null) return null
    let warmed = this.queryPool.threads
    for (const tenant of this.#tenants.values()) {
      if (tenant.warmedWorkers !== null) warmed = Math.min(warmed, tenant.warmedWorkers.warmed)
    }
    return { threads: this.queryPool.threads, warmed }
  }

  /** Opens a tenant's store (not yet loaded). */
  open(record: TenantRecord, nowMs: number): TenantRuntime {
    let runtime: TenantRuntime
    try {
      runtime = new TenantRuntime({ ...this.#options, record, openedAtMs: nowMs })
    } catch (error) {
      if (error instanceof StorageError && error.code === 'corrupt_log')
        throw damagedLogError(record.slug, this.dataDir, error)
      throw error
    }
    this.#tenants.set(record.slug, runtime)
    this.#opened?.(runtime)
    return runtime
  }

  /**
   * Opens every tenant, runs `opened` (an interrupted restore is settled there), then loads them one
   * by one, in chunks that leave the event loop free.
   */
  async loadAll(nowMs: number, opened: () => Promise<void> = async () => undefined): Promise<void> {
    const runtimes = this.system.listTenants().map((record) => this.open(record, nowMs))
    // Between opening and loading: stores are readable, and no tenant serves yet.
    await opened()
    // Each tenant warms its workers while the next one loads.
    const warming: Promise<void>[] = []
    for (const runtime of runtimes) {
      await runtime.loadGradually()
      warming.push(runtime.warm())
    }
    await Promise.all(warming)
  }

  async close(): Promise<void> {
    for (const tenant of this.#tenants.values()) await tenant.webhooks?.stop()
    this.webhookEnvironment?.close()
    for (const tenant of this.#tenants.values()) await tenant.saveSnapshot()
    for (const tenant of this.#tenants.values()) await tenant.store.close()
  }
}

/**
 * A tenant's log that fails its check at start (a missing tail entry, a broken hash chain): the
 * server does not serve a tenant whose history it cannot vouch for, so the start stops, and the
 * message says which tenant and the two ways out (README, Operations: Restore, last resort).
 */
function damagedLogError(slug: string, dataDir: string, error: StorageError): Error {
  const tenantDir = path.join(dataDir, 'tenants', slug)
  const backupsDir = path.join(dataDir, 'backups', slug)
  return new Error(
    `tenant ${slug}: its log is damaged (${error.message}) in ${tenantDir}. With the service stopped, either ` +
      `(1) restore a backup: move ${tenantDir} aside, create it again and copy into it the data.mdb of the newest backup ` +
      `under ${backupsDir}/ (\`pricing-service backup list ${slug} --data-dir ${dataDir}\` lists them), or ` +
      `(2) move ${tenantDir} aside to start with the tenant empty. Either way its changelog restarts from that point: ` +
      `changelog readers and webhook receivers must resynchronise (README: Operations, Restore).`,
    { cause: error },
  )
}
