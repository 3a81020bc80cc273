/**
 * One tenant's LMDB environment: its own directory, so a backup, restore or deletion touches one
 * tenant only. Sub-databases:
 *   log         sequence -> LogEntry (append-only; the changelog), binary (storage/log-entry.ts);
 *               older data dirs hold msgpackr entries, read through a second handle
 *   log_type    [entity_type, last sequence] -> first sequence of a run of consecutive entries of
 *               that type (null: a run of one, the form older data dirs hold) — one key per run, so
 *               a batch of 2,500 prices adds one index key, not 2,500
 *   entities    [catalog type, key] -> version list (the current tables, loaded at startup)
 *   price_runs  [pricelist, SKU] -> the pair's versions as a binary record (storage/price-record.ts)
 *   prices      legacy msgpack form of the same (read at startup, never written)
 *   meta        'sequence' | 'checksum' -> last appended sequence and its checksum;
 *               'actors' -> the writer names price records refer to by index;
 *               'book_snapshot' -> the stamp of the snapshot file a clean shutdown wrote (./book-snapshot.ts)
 *   webhooks    id -> the webhook's registration and delivery state (tenant/webhooks/model.ts)
 * A write is one transaction that appends entries and updates tables; it resolves once durable.
 * The log holds at most `capacity` entries: the commit that passes it evicts the oldest ones (and
 * their type-index runs) in the same transaction.
 * @module
 */
import { randomUUID } from 'node:crypto'
import { mkdirSync } from 'node:fs'
import { open, type Database, type DatabaseOptions, type RootDatabase } from 'lmdb'
import { assert } from '../engine/assert.js'
import { entityTypes, type Catalog, type CatalogType, type Change } from '../engine/catalog.js'
import type { Version } from '../engine/temporal.js'
import type { PriceBook, PriceVersion } from '../engine/prices.js'
import {
  changeContent,
  decodeStoredEntry,
  encodeEntries,
  isRawEntry,
  makeEntry,
  makeEntryOf,
  verifyEntry,
  type EntryContent,
  type LogEntry,
} from './log-entry.js'
import {
  packCatalog,
  readBookSnapshot,
  removeBookSnapshot,
  unpackCatalog,
  writeBookSnapshot,
  type CatalogEntries,
  type SnapshotStamp,
} from './book-snapshot.js'
import { defaultMapRelease, MapRelease, type MapReleaseOptions } from './map-release.js'
import { environmentOptions } from './options.js'
import {
  ActorTable,
  decodeLegacyPriceVersion,
  decodePriceRecord,
  encodePriceRecords,
  measurePriceRecord,
  type LegacyPriceVersion,
  type RecordSize,
} from './price-record.js'

const initialMapSizeBytes = 64 * 1024 * 1024
/** Entities loaded per turn of the event loop at startup (a few milliseconds of work). */
const loadChunkEntries = 5_000
/**
 * Entries one commit evicts at most. In steady state a commit evicts as many as it appends; only a
 * lowered capacity leaves more, which then shrink over the following commits rather than in one
 * transaction of millions of deletes.
 */
export const evictPerCommitMax = 100_000

/** Changes per transaction of `commitInChunks` (a few milliseconds of main-thread work each). */
export const commitChunkChanges = 2_000

export class StorageError extends Error {
  override name = 'StorageError'
  constructor(
    readonly code: 'corrupt_log' | 'io_failed',
    message: string,
  ) {
    super(message)
  }
}

/**
 * Why a commit failed. lmdb-js rejects every write of a failed transaction with a generic "Commit
 * failed" whose `commitError` promise rejects with the cause in the same turn: at a full disk
 * "Input/output error" (LMDB's answer to a short write) or "No space left on device". Waited for
 * a few microtasks only, never a timer: the caller exits at once, before a later transaction can
 * be acknowledged (tenant/runtime.ts). Answers the cause's message, or undefined when there is
 * none or it is not settled by then.
 */
export async function commitFailureCause(error: unknown): Promise<string | undefined> {
  const cause = (error as { commitError?: unknown } | null)?.commitError
  if (!(cause instanceof Promise)) return undefined
  const settled = cause.then(
    () => undefined,
    (reason: unknown) => (reason instanceof Error ? reason.message : String(reason)),
  )
  const hops = (async () => {
    for (let hop = 0; hop < 4; hop++) await undefined
    return undefined
  })()
  return Promise.race([settled, hops])
}

/** The environment and its databases; replaced as a whole when the environment is reopened. */
interface Handles {
  readonly root: RootDatabase
  /** Legacy entries (msgpackr). */
  readonly log: Database<LogEntry, number>
  /** The same database as raw bytes: every entry is written through this. */
  readonly logBytes: Database<Buffer, number>
  /** The same database read through `logDecoder` (null for a legacy entry). */
  readonly logEntries: Database<LogEntry | null, number>
  readonly logByType: Database<number | null, [string, number]>
  readonly entities: Database<Version<unknown>[], [string, string]>
  readonly meta: Database<unknown, string>
  readonly priceRuns: Database<Buffer, [string, string]>
  readonly legacyPrices: Database<LegacyPriceVersion[], [string, string]>
  readonly webhooks: Database<StoredWebhook, number>
}

/** A webhook as stored: registration and delivery state; tenant/webhooks/model.ts says what it means. */
export interface StoredWebhook {
  readonly id: number
  readonly [field: string]: unknown
}

/**
 * Decodes log entries straight from lmdb-js's shared read buffer: a decoder without
 * `needsStableBuffer` is handed the reused buffer (with the value's size) instead of a fresh copy of
 * every value, which was a quarter of a changelog page's cost. The decoders copy what they keep
 * (strings and numbers). Read-only: entries are written through `logBytes`.
 */
const logDecoder = {
  encode(): Buffer {
    assert(false, 'log entries are written through the binary handle')
  },
  decode(bytes: Uint8Array, size?: unknown): LogEntry | null {
    const view = bytes.subarray(0, typeof size === 'number' ? size : bytes.length)
    return isRawEntry(view) ? decodeStoredEntry(view) : null
  },
}

function openHandles(path: string): Handles {
  const root = open(environmentOptions(path, initialMapSizeBytes))
  return {
    root,
    log: root.openDB<LogEntry, number>({ name: 'log', keyEncoding: 'uint32' }),
    logBytes: root.openDB<Buffer, number>({ name: 'log', keyEncoding: 'uint32', encoding: 'binary' }),
    // `encoder` is an option of lmdb-js's openDB that its typings leave out.
    logEntries: root.openDB<LogEntry | null, number>({
      name: 'log',
      keyEncoding: 'uint32',
      encoder: logDecoder,
    } as DatabaseOptions & { name: string }),
    logByType: root.openDB<number | null, [string, number]>({ name: 'log_type' }),
    entities: root.openDB<Version<unknown>[], [string, string]>({ name: 'entities' }),
    meta: root.openDB<unknown, string>({ name: 'meta' }),
    // Raw bytes: the record is its own encoding (no msgpack framing, no shared structures).
    priceRuns: root.openDB<Buffer, [string, string]>({ name: 'price_runs', encoding: 'binary' }),
    legacyPrices: root.openDB<LegacyPriceVersion[], [string, string]>({ name: 'prices' }),
    webhooks: root.openDB<StoredWebhook, number>({ name: 'webhooks', keyEncoding: 'uint32' }),
  }
}

export class TenantStore {
  #db: Handles
  readonly #actors: ActorTable
  #sequence: number
  #checksum: string
  /** Highest sequence whose transaction is flushed: readers of the log never see past it. */
  #durableSequence: number
  /** Oldest sequence held (sequence + 1 when the log is empty). */
  #oldest: number
  /** Entries the log holds at most (null: unlimited); the plan's `changelog_capacity`. */
  capacity: number | null = null
  /** When the environment is reopened to give back its map's pages (storage/map-release.ts). */
  readonly mapRelease: MapRelease
  #readersCeiling = Number.POSITIVE_INFINITY
  /** Commits queued and not yet durable, and who waits for there to be none. */
  #inFlight = 0
  /** Told of each durable commit's log and price bytes (the server's storage guard: tenant/storage-guard.ts). */
  onDurable: ((bytes: number) => void) | null = null
  readonly #settledWaiters: (() => void)[] = []

  constructor(
    readonly path: string,
    mapRelease: MapReleaseOptions = defaultMapRelease,
  ) {
    mkdirSync(path, { recursive: true })
    this.#db = openHandles(path)
    this.mapRelease = new MapRelease(mapRelease, () => this.#remap())
    this.#actors = new ActorTable((this.#db.meta.get('actors') as string[] | undefined) ?? [])
    this.#sequence = (this.#db.meta.get('sequence') as number | undefined) ?? 0
    this.#checksum = (this.#db.meta.get('checksum') as string | undefined) ?? ''
    this.#durableSequence = this.#sequence
    this.#oldest = this.#firstHeld()
    this.#verifyTail()
  }

  #firstHeld(): number {
    for (const key of this.#db.log.getKeys({ limit: 1 })) return key
    return this.#sequence + 1
  }

  /** The last log entry's checksum ('' before the first): replicas compare it with their home's. */
  get checksum(): string {
    return this.#checksum
  }

  get sequence(): number {
    return this.#sequence
  }

  /**
   * The last sequence known durable; changelog readers and webhook dispatch stop here. While a
   * restore writes (`holdReaders`), they stop at the sequence before it.
   */
  get durableSequence(): number {
    return Math.min(this.#durableSequence, this.#readersCeiling)
  }

  /**
   * Keeps changelog readers at the current durable sequence until the returned function is called:
   * a restore's entries become readable when its effect does (tenant/runtime.ts `applyRestore`).
   */
  holdReaders(): () => void {
    this.#readersCeiling = this.#durableSequence
    return () => {
      this.#readersCeiling = Number.POSITIVE_INFINITY
    }
  }

  /** The tail of the log must be the entry the meta table names, with a valid chained checksum. */
  #verifyTail(): void {
    if (this.#sequence === 0) return
    const last = this.#entry(this.#sequence)
    if (last === undefined) throw new StorageError('corrupt_log', `log entry ${this.#sequence} missing`)
    verifyEntry(last)
    if (last.checksum !== this.#checksum) {
      throw new StorageError('corrupt_log', `log tail checksum differs at ${this.#sequence}`)
    }
    const previous = this.#entry(this.#sequence - 1)
    if (previous !== undefined && previous.checksum !== last.previousChecksum) {
      throw new StorageError('corrupt_log', `log chain broken at ${this.#sequence}`)
    }
  }

  /** Startup: loads every table into the engine (no log replay). */
  loadInto(catalog: Catalog): number {
    let count = 0
    for (const { key, value } of this.#db.entities.getRange({ snapshot: false })) {
      catalog.apply(key[0] as CatalogType, key[1], value)
      count++
    }
    return count
  }

  /**
   * Startup: as `loadInto`, in chunks of `chunkEntries` with the event loop free between them, so
   * that a large tenant does not block the process (readiness and tenant calls answer 503 meanwhile).
   * Each chunk is its own read from the key after the last one loaded; nothing writes to the tenant
   * until it is loaded. The reads span many turns of the event loop through this environment's
   * handles, so the load holds off map reopens: writes just before it (a restore finished at start)
   * arm the quiet-time reopen, which would otherwise close the environment under a large load.
   */
  async loadIntoGradually(catalog: Catalog, chunkEntries = loadChunkEntries, prices?: PriceBook): Promise<number> {
    const release = this.mapRelease.hold()
    try {
      if (this.mapRelease.running !== null) await this.mapRelease.running
      return await this.#loadChunks(catalog, chunkEntries, prices)
    } finally {
      release()
    }
  }

  async #loadChunks(catalog: Catalog, chunkEntries: number, prices: PriceBook | undefined): Promise<number> {
    const writers = new Map<string, string>()
    if (prices !== undefined) {
      const loaded = await this.#loadSnapshot(catalog, prices, writers)
      if (loaded !== null) return loaded
    }
    let count = await loadRange(this.#db.entities, chunkEntries, (key, value) => {
      for (const version of value) internWriter(version, writers)
      catalog.apply(key[0] as CatalogType, key[1], value)
    })
    if (prices !== undefined) {
      // Legacy records first: a pair written since is in price_runs too, and the later apply wins.
      await loadRange(this.#db.legacyPrices, chunkEntries, (key, value) =>
        prices.apply(key[0], key[1], value.map(decodeLegacyPriceVersion)),
      )
      // Measured first, so that the book is allocated once at its final size.
      const size: RecordSize = { versions: 0, extrasSlots: 0 }
      await loadRange(this.#db.priceRuns, chunkEntries, (_key, value) => measurePriceRecord(value, size))
      prices.reserve(size.versions, size.extrasSlots)
      count += await loadRange(this.#db.priceRuns, chunkEntries, (key, value) =>
        prices.apply(key[0], key[1], decodePriceRecord(value, this.#actors)),
      )
      // Loading appends each pair once: give back the growth slack (and a legacy pair's replaced run).
      prices.compactToFit()
      await this.#remap()
    }
    return count
  }

  /**
   * Startup: the book and catalogue from the snapshot a clean shutdown wrote (./book-snapshot.ts),
   * when the meta table names it and the log has not moved since; answers the keys loaded, or null
   * to load from the tables. Either way the meta entry and the file are removed before anything can
   * write: a snapshot serves one start only. What happened is in `lastLoad`.
   */
  async #loadSnapshot(catalog: Catalog, prices: PriceBook, writers: Map<string, string>): Promise<number | null> {
    const started = performance.now()
    const named = this.#db.meta.get(snapshotMetaKey) as SnapshotStamp | undefined
    const current = named !== undefined && named.sequence === this.#sequence && named.checksum === this.#checksum
    const expected = current ? named : null
    let found = readBookSnapshot(this.path, expected)
    if (found.kind === 'ignored' && named !== undefined && expected === null) {
      const reason = `stale: the store named a snapshot of sequence ${named.sequence}, its log is at ${this.#sequence}`
      found = { kind: 'ignored', reason }
    }
    if (named !== undefined) await this.#db.meta.remove(snapshotMetaKey)
    removeBookSnapshot(this.path)
    const notUsed = (snapshot: 'absent' | 'ignored', reason: string | null): null => {
      this.lastLoad = { snapshot, reason, bytes: 0, ms: 0, catalog: null }
      return null
    }
    if (found.kind !== 'used') return notUsed(found.kind, found.kind === 'ignored' ? found.reason : null)
    // The query workers start on the catalogue while this thread decodes it (they use what they
    // build only if the warm-up's snapshot names these bytes: tenant/runtime.ts).
    this.onSnapshotCatalog?.(found.catalogBytes)
    let entries: CatalogEntries
    try {
      entries = unpackCatalog(found.catalogBytes)
    } catch (error) {
      return notUsed('ignored', `unreadable catalogue: ${error instanceof Error ? error.message : String(error)}`)
    }
    // Checked before anything changes (PriceBook.restore checks its image first, too): a file that
    // passed its SHA-256 but does not fit together leaves both empty, and the tables load instead.
    const refusal = catalogRefusal(entries)
    if (refusal !== null) return notUsed('ignored', refusal)
    try {
      prices.restore(found.image)
    } catch (error) {
      return notUsed('ignored', error instanceof Error ? error.message : String(error))
    }
    for (const entry of entries) for (const version of entry[2]) internWriter(version, writers)
    catalog.load(entries)
    const ms = Math.round(performance.now() - started)
    this.lastLoad = { snapshot: 'used', reason: null, bytes: found.bytes, ms, catalog: found.catalogBytes }
    await this.#remap()
    return entries.length + prices.livePairCount
  }

  /** Told of a snapshot file's catalogue bytes once the file passed its checks, before they are decoded. */
  onSnapshotCatalog: ((bytes: Uint8Array) => void) | null = null

  /** How the last `loadIntoGradually` with a price book went (the tenant logs it; workers reuse `catalog`). */
  lastLoad: LoadReport | null = null

  /**
   * Clean shutdown: writes the snapshot of `prices` and `catalog` (./book-snapshot.ts) once no
   * commit is in flight, then names it in the meta table, durably. Memory and the log agree at that
   * moment: both include every queued commit, and nothing queues one in the same turn. A crash
   * before the meta entry is durable leaves a file no start uses. Answers the file's size.
   */
  async saveSnapshot(prices: PriceBook, catalog: Catalog): Promise<number> {
    const release = this.mapRelease.hold()
    try {
      for (;;) {
        if (this.mapRelease.running !== null) await this.mapRelease.running
        await this.whenSettled()
        if (this.#inFlight === 0 && this.mapRelease.running === null) break
      }
      const stamp: SnapshotStamp = { token: randomUUID(), sequence: this.#sequence, checksum: this.#checksum }
      const bytes = writeBookSnapshot(this.path, stamp, prices, packCatalog(catalog.entries()))
      await this.#db.meta.put(snapshotMetaKey, stamp)
      await this.#db.root.flushed
      return bytes
    } finally {
      release()
    }
  }

  /**
   * Reopens the environment, which unmaps it. The load read every table once through the map, and
   * the pages it touched stay in the process's resident set (RssFile) until unmapped, although
   * nothing reads most of them again: about 100 bytes per stored price version at 3M versions.
   * They remain in the kernel's page cache, which reclaims them as it needs. At startup, before the
   * tenant is loaded, and after writes (storage/map-release.ts) when none is in flight; reads are
   * synchronous, so none holds a handle across it.
   */
  async #remap(): Promise<void> {
    await this.#db.root.close()
    this.#db = openHandles(this.path)
  }

  /**
   * Appends entries for `changes` (and extra log-only entries) and writes the tables in one
   * transaction. Sequence numbers are assigned now, synchronously, so the caller's order is the
   * log's order. Resolves with the entries once the transaction is durable.
   *
   * The puts are queued synchronously, in one event turn: lmdb-js (`eventTurnBatching`) runs them in
   * one transaction on its write thread, so the B-tree work is off the main thread (a
   * `transaction()` callback would run every put on the main thread).
   */
  commit(
    changes: readonly Change[],
    extra: readonly EntryContent[] = [],
    prices: readonly PriceChange[] = [],
    meta: Readonly<Record<string, unknown>> = {},
  ): Promise<LogEntry[]> {
    // While the environment is being reopened, writes wait for it (in call order).
    const reopening = this.mapRelease.running
    if (reopening !== null) return reopening.then(() => this.commit(changes, extra, prices, meta))
    const entries: LogEntry[] = []
    for (const change of changes) entries.push(this.#append(changeContent(change)))
    const versionLists: (readonly PriceVersion[])[] = []
    for (const change of prices) {
      const entry = makeEntryOf(
        this.#sequence + 1,
        'price',
        change.changeType,
        change.sku,
        change.pricelist,
        change.at,
        change.by,
        change.hash,
        this.#checksum,
      )
      this.#sequence = entry.sequence
      this.#checksum = entry.checksum
      entries.push(entry)
      if (change.versions.length > 0) versionLists.push(change.versions)
    }
    for (const content of extra) entries.push(this.#append(content))
    const sequence = this.#sequence
    // Encoded before any put: an encoding failure throws with nothing queued. (A put that threw
    // later, which these keys and plain values do not, would leave a partial batch queued; lmdb-js
    // commits a batch only when the event turn ends, and TenantRuntime.commit exits before that.)
    // A change without versions removes its key (a restore of a backup that never held it).
    const records = encodePriceRecords(versionLists, this.#actors)
    const actors = this.#actors.takeGrowth()
    const stored = encodeEntries(entries)
    const oldest = this.#evict(entries[0]?.sequence ?? this.#sequence + 1)
    for (let index = 0; index < entries.length; index++) {
      // An entry evicted by its own commit (a batch larger than the capacity) is never written.
      if (entries[index]!.sequence >= oldest) this.#db.logBytes.put(entries[index]!.sequence, stored[index]!)
    }
    this.#putTypeRuns(entries, oldest)
    for (const change of changes) {
      if (change.versions.length > 0) this.#db.entities.put([change.type, change.key], change.versions)
      else this.#db.entities.remove([change.type, change.key])
    }
    let recordIndex = 0
    for (const change of prices) {
      const key: [string, string] = [change.pricelist, change.sku]
      if (change.versions.length > 0) {
        this.#db.priceRuns.put(key, records[recordIndex++]!)
        continue
      }
      this.#db.priceRuns.remove(key)
      this.#db.legacyPrices.remove(key)
    }
    if (actors !== null) this.#db.meta.put('actors', actors)
    for (const [key, value] of Object.entries(meta)) this.#db.meta.put(key, value)
    this.#db.meta.put('sequence', sequence)
    const written = this.#db.meta.put('checksum', this.#checksum)
    let bytes = 0
    for (const buffer of stored) bytes += buffer.length
    for (const record of records) bytes += record.length
    return this.#durable(written, bytes, () => {
      // Transactions commit in call order, so every sequence up to this one is durable now.
      if (sequence > this.#durableSequence) this.#durableSequence = sequence
      return entries
    })
  }

  /**
   * As `commit`, in transactions of at most `chunk` changes, one per event turn (no long
   * main-thread turn, no huge transaction), then `meta` in a last one. Not atomic: a
   * restore, its only user, finishes an interrupted run at the next start (tenant/backups/restore.ts).
   */
  async commitInChunks(
    changes: readonly Change[],
    prices: readonly PriceChange[],
    meta: Readonly<Record<string, unknown>>,
    chunk = commitChunkChanges,
    /** Told the changes durable so far, after each transaction (a progress log). */
    progress: (durable: number) => void = () => undefined,
  ): Promise<LogEntry[]> {
    // Queued one per event turn; transactions commit in call order, so the last durable means all are.
    const pending: Promise<LogEntry[]>[] = []
    let durable = 0
    const counted = (committed: Promise<LogEntry[]>, count: number) =>
      committed.then((entries) => {
        durable += count
        progress(durable)
        return entries
      })
    const yieldTurn = () => new Promise((resolve) => setImmediate(resolve))
    for (let start = 0; start < changes.length; start += chunk) {
      const part = changes.slice(start, start + chunk)
      pending.push(counted(this.commit(part), part.length))
      await yieldTurn()
    }
    for (let start = 0; start < prices.length; start += chunk) {
      const part = prices.slice(start, start + chunk)
      pending.push(counted(this.commit([], [], part), part.length))
      await yieldTurn()
    }
    pending.push(this.commit([], [], [], meta))
    return (await Promise.all(pending)).flat()
  }

  /** Resolves with `then()` once the queued transaction (`written`, `bytes`) is flushed to disk. */
  #durable<T>(written: Promise<unknown>, bytes: number, then: () => T): Promise<T> {
    this.mapRelease.started(bytes)
    this.#inFlight++
    const root = this.#db.root
    return written
      .then(async () => {
        await root.flushed
        this.onDurable?.(bytes)
        return then()
      })
      .finally(() => {
        this.mapRelease.settled()
        if (--this.#inFlight === 0) for (const resolve of this.#settledWaiters.splice(0)) resolve()
      })
  }

  /**
   * Rewrites price pairs' version lists in one transaction without log entries: history retention,
   * which removes versions no read inside the kept window answers (what is in force does not
   * change). Resolves once durable.
   */
  rewritePriceRuns(
    runs: readonly { readonly pricelist: string; readonly sku: string; readonly versions: readonly PriceVersion[] }[],
  ): Promise<void> {
    const reopening = this.mapRelease.running
    if (reopening !== null) return reopening.then(() => this.rewritePriceRuns(runs))
    if (runs.length === 0) return Promise.resolve()
    const records = encodePriceRecords(
      runs.map((run) => run.versions),
      this.#actors,
    )
    const actors = this.#actors.takeGrowth()
    let written: Promise<boolean> = Promise.resolve(true)
    let bytes = 0
    for (let index = 0; index < runs.length; index++) {
      written = this.#db.priceRuns.put([runs[index]!.pricelist, runs[index]!.sku], records[index]!)
      bytes += records[index]!.length
    }
    if (actors !== null) written = this.#db.meta.put('actors', actors)
    return this.#durable(written, bytes, () => undefined)
  }

  /** Resolves once no commit is in flight (a restore starts from a settled store). */
  whenSettled(): Promise<void> {
    if (this.#inFlight === 0 && this.mapRelease.running === null) return Promise.resolve()
    return new Promise<void>((resolve) => this.#settledWaiters.push(resolve)).then(async () => {
      if (this.mapRelease.running !== null) await this.mapRelease.running
    })
  }

  /** A value of the meta table (e.g. the marker a restore leaves: tenant/backups/restore.ts). */
  metaValue(key: string): unknown {
    return this.#db.meta.get(key)
  }

  /**
   * Up to `limit` catalogue entries after `after` (undefined: from the first), in key order: a
   * restore compares two stores chunk by chunk (storage/backup/restore-diff.ts).
   */
  entityChunk(
    after: [string, string] | undefined,
    limit: number,
  ): { key: [string, string]; versions: Version<unknown>[] }[] {
    return readChunk(this.#db.entities, after, limit, (key, value) => ({ key, versions: value }))
  }

  /**
   * As `entityChunk`, for price pairs: the binary records (`raw`, decoded on demand), or the legacy
   * ones (`legacy`, decoded).
   */
  priceChunk(
    after: [string, string] | undefined,
    limit: number,
    legacy: boolean,
  ): { key: [string, string]; raw: Buffer | null; versions: () => PriceVersion[] }[] {
    if (legacy)
      return readChunk(this.#db.legacyPrices, after, limit, (key, value) => ({
        key,
        raw: null,
        versions: () => value.map(decodeLegacyPriceVersion),
      }))
    return readChunk(this.#db.priceRuns, after, limit, (key, value) => ({
      key,
      raw: value,
      versions: () => decodePriceRecord(value, this.#actors),
    }))
  }

  /** The writer names price records refer to by index (append-only: an older copy's is a prefix). */
  actorNames(): readonly string[] {
    return (this.#db.meta.get('actors') as string[] | undefined) ?? []
  }

  /**
   * Queues the removal of the entries beyond the capacity, oldest first (at most
   * `evictPerCommitMax`), and of the type-index runs that end before the new oldest entry. A run
   * that straddles it stays: reads skip its evicted part. Answers the new oldest sequence.
   */
  #evict(firstNew: number): number {
    const capacity = this.capacity
    if (capacity === null || this.#sequence - this.#oldest + 1 <= capacity) return this.#oldest
    const target = Math.min(this.#sequence - capacity + 1, this.#oldest + evictPerCommitMax)
    // Earlier commits queued their puts before this one (transactions commit in call order), so
    // every key below this commit's first exists by the time this transaction runs.
    const storedEnd = Math.min(target, firstNew)
    for (let sequence = this.#oldest; sequence < storedEnd; sequence++) this.#db.logBytes.remove(sequence)
    // Every entity type the log may hold: the type index is cleaned per type.
    for (const type of entityTypes) {
      for (const key of this.#db.logByType.getKeys({ start: [type, 0], end: [type, target], snapshot: false }))
        this.#db.logByType.remove(key)
    }
    this.#oldest = target
    return target
  }

  /** One log_type key per run of consecutive entries of one type: [type, last] -> first. */
  #putTypeRuns(entries: readonly LogEntry[], oldest: number): void {
    let start = 0
    for (let index = 1; index <= entries.length; index++) {
      const first = entries[start]!
      const next = entries[index]
      if (
        next !== undefined &&
        next.entityType === first.entityType &&
        next.sequence === entries[index - 1]!.sequence + 1
      )
        continue
      const last = entries[index - 1]!
      if (last.sequence >= oldest)
        this.#db.logByType.put(
          [first.entityType, last.sequence],
          last.sequence === first.sequence ? null : first.sequence,
        )
      start = index
    }
  }

  #append(content: EntryContent): LogEntry {
    const entry = makeEntry(this.#sequence + 1, content, this.#checksum)
    this.#sequence = entry.sequence
    this.#checksum = entry.checksum
    return entry
  }

  /** Oldest sequence still held, or sequence + 1 when the log is empty. */
  oldestSequence(): number {
    return this.#oldest
  }

  /** Up to `limit` entries with sequence >= `from`, optionally of one entity type. */
  readLog(from: number, limit: number, entityType: string | null): LogEntry[] {
    assert(limit > 0, 'changelog page limit')
    const entries: LogEntry[] = []
    const end = this.durableSequence + 1
    if (entityType === null) {
      for (const { key, value } of this.#db.logEntries.getRange({ start: from, end, limit, snapshot: false })) {
        entries.push(value ?? this.#legacyEntry(key))
      }
      return entries
    }
    // Runs are keyed by their last sequence: the first run at or after `from` may start before it.
    const runs = this.#db.logByType.getRange({ start: [entityType, from], end: [entityType, end], snapshot: false })
    for (const { key, value } of runs) {
      const last = Math.min(key[1], end - 1)
      for (let sequence = Math.max(value ?? key[1], from); sequence <= last; sequence++) {
        const entry = this.#entry(sequence)
        if (entry !== undefined) entries.push(entry)
        if (entries.length === limit) return entries
      }
    }
    return entries
  }

  #entry(sequence: number): LogEntry | undefined {
    const entry = this.#db.logEntries.get(sequence)
    return entry === undefined ? undefined : (entry ?? this.#legacyEntry(sequence))
  }

  /** An entry in the msgpack record form of earlier builds. */
  #legacyEntry(sequence: number): LogEntry {
    const legacy = this.#db.log.get(sequence)
    assert(legacy !== undefined, 'legacy log entry')
    return legacy
  }

  /** Every stored webhook, by id. */
  webhooks(): StoredWebhook[] {
    return [...this.#db.webhooks.getRange({ snapshot: false }).map(({ value }) => value)]
  }

  /** Stores webhooks (registration or delivery state); resolves once durable. */
  async putWebhooks(records: readonly StoredWebhook[]): Promise<void> {
    const reopening = this.mapRelease.running
    if (reopening !== null) await reopening
    let written: Promise<boolean> | undefined
    for (const record of records) written = this.#db.webhooks.put(record.id, record)
    if (written === undefined) return
    const root = this.#db.root
    this.mapRelease.started(0)
    try {
      await written
      await root.flushed
    } finally {
      this.mapRelease.settled()
    }
  }

  /**
   * A consistent copy of the environment into the empty `directory` (LMDB's own copy, compacted,
   * from one read transaction, while writes go on). Resolves with the last sequence durable when
   * the copy started: the copy holds at least that much of the log.
   */
  async backup(directory: string): Promise<{ sequenceAtStart: number }> {
    const release = this.mapRelease.hold()
    try {
      if (this.mapRelease.running !== null) await this.mapRelease.running
      const sequenceAtStart = this.#durableSequence
      mkdirSync(directory, { recursive: true })
      await this.#db.root.backup(directory, true)
      return { sequenceAtStart }
    } finally {
      release()
      // The copy read every page through the map: give them back (a reopen at the next quiet moment).
      this.mapRelease.soon()
    }
  }

  async close(): Promise<void> {
    await this.mapRelease.close()
    await this.#db.root.close()
  }
}

/** The meta entry naming the snapshot a clean shutdown wrote (./book-snapshot.ts). */
const snapshotMetaKey = 'book_snapshot'

/** How a start loaded the book: from a snapshot (`used`), or from the tables, and why. */
export interface LoadReport {
  readonly snapshot: 'used' | 'absent' | 'ignored'
  readonly reason: string | null
  readonly bytes: number
  readonly ms: number
  /** The catalogue's packed entries when read from a snapshot (the workers' replicas start from them). */
  readonly catalog: Uint8Array | null
}

/** Why a snapshot's catalogue entries cannot be applied (null: they can): types known, keys named, versions present. */
function catalogRefusal(entries: unknown): string | null {
  if (!Array.isArray(entries)) return 'catalogue: not a list'
  const types = new Set<string>(entityTypes)
  for (const entry of entries as unknown[]) {
    if (!Array.isArray(entry) || entry.length !== 3) return 'catalogue: an entry is not [type, key, versions]'
    const [type, key, versions] = entry as unknown[]
    const known = typeof type === 'string' && types.has(type) && type !== 'price' && typeof key === 'string'
    if (!known) return 'catalogue: an unknown type or key'
    if (!Array.isArray(versions) || versions.length === 0) return 'catalogue: a key without versions'
  }
  return null
}

/** A planned change of one (pricelist, SKU) price: the new version list and what the log records. */
export interface PriceChange {
  readonly pricelist: string
  readonly sku: string
  readonly versions: readonly PriceVersion[]
  readonly changeType: 'created' | 'updated' | 'deleted'
  readonly hash: string
  readonly at: number
  readonly by: string
}

/**
 * Decoding gives every version its own copy of the writer's name, although a tenant has a handful
 * of writers: one string per writer instead (about 40 bytes per loaded version).
 */
function internWriter(version: Version<unknown>, writers: Map<string, string>): void {
  const name = version.writtenBy
  const interned = writers.get(name)
  if (interned === undefined) writers.set(name, name)
  else (version as { writtenBy: string }).writtenBy = interned
}

/** Up to `limit` entries of a database after the key `after`, mapped. */
function readChunk<V, T>(
  db: Database<V, [string, string]>,
  after: [string, string] | undefined,
  limit: number,
  map: (key: [string, string], value: V) => T,
): T[] {
  const items: T[] = []
  for (const { key, value } of db.getRange({ start: after, limit: limit + 1, snapshot: false })) {
    if (after !== undefined && key[0] === after[0] && key[1] === after[1]) continue
    items.push(map(key, value))
    if (items.length === limit) break
  }
  return items
}

/** Loads a database in chunks, yielding to the event loop between them. */
async function loadRange<V>(
  db: Database<V, [string, string]>,
  chunkEntries: number,
  apply: (key: [string, string], value: V) => void,
): Promise<number> {
  assert(chunkEntries > 0, 'load chunk size')
  let count = 0
  let after: [string, string] | undefined
  for (;;) {
    // Each chunk is its own read, from the last key of the previous one.
    const keys = readChunk(db, after, chunkEntries, (key, value) => {
      apply(key, value)
      return key
    })
    count += keys.length
    if (keys.length < chunkEntries) return count
    after = keys[keys.length - 1]
    await new Promise((resolve) => setImmediate(resolve))
  }
}
