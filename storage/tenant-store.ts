/**
 * One tenant's LMDB environment: its own directory, so a backup, restore or deletion touches one
 * tenant only. Sub-databases:
 *   log       sequence -> LogEntry (append-only; the changelog)
 *   log_type  [entity_type, sequence] -> null (changelog reads filtered by type)
 *   entities  [catalog type, key] -> version list (the current tables, loaded at startup)
 *   meta      'sequence' | 'checksum' -> last appended sequence and its checksum
 * A write is one transaction that appends entries and updates tables; it resolves once durable.
 * @module
 */
import { mkdirSync } from 'node:fs'
import { open, type Database, type RootDatabase } from 'lmdb'
import { assert } from '../engine/assert.js'
import type { Catalog, CatalogType, Change } from '../engine/catalog.js'
import { splitKey } from '../engine/catalog.js'
import type { Version } from '../engine/temporal.js'
import type { PriceBook, PriceVersion, QuantityBreak } from '../engine/prices.js'
import { makeEntry, verifyEntry, type EntryContent, type LogEntry } from './log-entry.js'
import { environmentOptions } from './options.js'

const initialMapSizeBytes = 64 * 1024 * 1024
/** Entities loaded per turn of the event loop at startup (a few milliseconds of work). */
const loadChunkEntries = 5_000

export class StorageError extends Error {
  override name = 'StorageError'
  constructor(
    readonly code: 'corrupt_log' | 'io_failed',
    message: string,
  ) {
    super(message)
  }
}

export class TenantStore {
  readonly #root: RootDatabase
  readonly #log: Database<LogEntry, number>
  readonly #logByType: Database<null, [string, number]>
  readonly #entities: Database<Version<unknown>[], [string, string]>
  readonly #meta: Database<unknown, string>
  readonly #prices: Database<StoredPriceVersion[], [string, string]>
  #sequence: number
  #checksum: string
  /** Highest sequence whose transaction is flushed: readers of the log never see past it. */
  #durableSequence: number

  constructor(readonly path: string) {
    mkdirSync(path, { recursive: true })
    this.#root = open(environmentOptions(path, initialMapSizeBytes))
    this.#log = this.#root.openDB<LogEntry, number>({ name: 'log', keyEncoding: 'uint32' })
    this.#logByType = this.#root.openDB<null, [string, number]>({ name: 'log_type' })
    this.#entities = this.#root.openDB<Version<unknown>[], [string, string]>({ name: 'entities' })
    this.#meta = this.#root.openDB<unknown, string>({ name: 'meta' })
    this.#prices = this.#root.openDB<StoredPriceVersion[], [string, string]>({ name: 'prices' })
    this.#sequence = (this.#meta.get('sequence') as number | undefined) ?? 0
    this.#checksum = (this.#meta.get('checksum') as string | undefined) ?? ''
    this.#durableSequence = this.#sequence
    this.#verifyTail()
  }

  get sequence(): number {
    return this.#sequence
  }

  /** The last sequence known durable; changelog readers and webhook dispatch stop here. */
  get durableSequence(): number {
    return this.#durableSequence
  }

  /** The tail of the log must be the entry the meta table names, with a valid chained checksum. */
  #verifyTail(): void {
    if (this.#sequence === 0) return
    const last = this.#log.get(this.#sequence)
    if (last === undefined) throw new StorageError('corrupt_log', `log entry ${this.#sequence} missing`)
    verifyEntry(last)
    if (last.checksum !== this.#checksum) {
      throw new StorageError('corrupt_log', `log tail checksum differs at ${this.#sequence}`)
    }
    const previous = this.#log.get(this.#sequence - 1)
    if (previous !== undefined && previous.checksum !== last.previousChecksum) {
      throw new StorageError('corrupt_log', `log chain broken at ${this.#sequence}`)
    }
  }

  /** Startup: loads every table into the engine (no log replay). */
  loadInto(catalog: Catalog): number {
    let count = 0
    for (const { key, value } of this.#entities.getRange({ snapshot: false })) {
      catalog.apply(key[0] as CatalogType, key[1], value)
      count++
    }
    return count
  }

  /**
   * Startup: as `loadInto`, in chunks of `chunkEntries` with the event loop free between them, so
   * that a large tenant does not block the process (readiness and tenant calls answer 503 meanwhile).
   * Each chunk is its own read from the key after the last one loaded; nothing writes to the tenant
   * until it is loaded.
   */
  async loadIntoGradually(catalog: Catalog, chunkEntries = loadChunkEntries, prices?: PriceBook): Promise<number> {
    let count = await loadRange(this.#entities, chunkEntries, (key, value) => catalog.apply(key[0] as CatalogType, key[1], value))
    if (prices !== undefined) {
      count += await loadRange(this.#prices, chunkEntries, (key, value) => prices.apply(key[0], key[1], value.map(decodePriceVersion)))
    }
    return count
  }

  /**
   * Appends entries for `changes` (and extra log-only entries) and writes the tables in one
   * transaction. Sequence numbers are assigned now, synchronously, so the caller's order is the
   * log's order. Resolves with the entries once the transaction is durable.
   */
  commit(changes: readonly Change[], extra: readonly EntryContent[] = [], prices: readonly PriceChange[] = []): Promise<LogEntry[]> {
    const entries: LogEntry[] = []
    for (const change of changes) {
      const [entityCode, compositeKey] = splitKey(change.key)
      entries.push(this.#append({
        entityType: change.type,
        changeType: change.changeType,
        entityCode,
        compositeKey,
        changedAt: change.at,
        changedBy: change.by,
        contentHash: change.hash,
      }))
    }
    for (const change of prices) {
      entries.push(this.#append({
        entityType: 'price',
        changeType: change.changeType,
        entityCode: change.sku,
        compositeKey: change.pricelist,
        changedAt: change.at,
        changedBy: change.by,
        contentHash: change.hash,
      }))
    }
    for (const content of extra) entries.push(this.#append(content))
    const sequence = this.#sequence
    const checksum = this.#checksum
    const written = this.#root.transaction(() => {
      for (const entry of entries) {
        this.#log.put(entry.sequence, entry)
        this.#logByType.put([entry.entityType, entry.sequence], null)
      }
      for (const change of changes) this.#entities.put([change.type, change.key], change.versions)
      for (const change of prices) this.#prices.put([change.pricelist, change.sku], change.versions.map(encodePriceVersion))
      this.#meta.put('sequence', sequence)
      this.#meta.put('checksum', checksum)
    })
    return written.then(async () => {
      await this.#root.flushed
      // Transactions commit in call order, so every sequence up to this one is durable now.
      if (sequence > this.#durableSequence) this.#durableSequence = sequence
      return entries
    })
  }

  #append(content: EntryContent): LogEntry {
    const entry = makeEntry(this.#sequence + 1, content, this.#checksum)
    this.#sequence = entry.sequence
    this.#checksum = entry.checksum
    return entry
  }

  /** Oldest sequence still held (1 until eviction exists), or sequence+1 when the log is empty. */
  oldestSequence(): number {
    for (const key of this.#log.getKeys({ limit: 1 })) return key
    return this.#sequence + 1
  }

  /** Up to `limit` entries with sequence >= `from`, optionally of one entity type. */
  readLog(from: number, limit: number, entityType: string | null): LogEntry[] {
    assert(limit > 0, 'changelog page limit')
    const entries: LogEntry[] = []
    const end = this.#durableSequence + 1
    if (entityType === null) {
      for (const entry of this.#log.getRange({ start: from, end, limit, snapshot: false })) {
        entries.push(entry.value)
      }
      return entries
    }
    const keys = this.#logByType.getKeys({
      start: [entityType, from],
      end: [entityType, end],
      limit,
      snapshot: false,
    })
    for (const key of keys) {
      const entry = this.#log.get(key[1])
      if (entry !== undefined) entries.push(entry)
    }
    return entries
  }

  async close(): Promise<void> {
    await this.#root.close()
  }
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

/** Compact stored form: [from, sales | null (deleted), writtenAt, writtenBy, fields, breaks]. */
type StoredPriceVersion = [number, number | null, number, string, Record<string, number> | null, [number, number, number][] | null]

function encodePriceVersion(version: PriceVersion): StoredPriceVersion {
  const content = version.content
  if (content === null) return [version.from, null, version.writtenAt, version.writtenBy, null, null]
  const breaks = content.breaks === null ? null : content.breaks.map((entry): [number, number, number] => [entry.quantity, entry.kind, entry.value])
  return [version.from, content.sales, version.writtenAt, version.writtenBy, content.fields === null ? null : { ...content.fields }, breaks]
}

function decodePriceVersion(stored: StoredPriceVersion): PriceVersion {
  const [from, sales, writtenAt, writtenBy, fields, breaks] = stored
  if (sales === null) return { from, content: null, writtenAt, writtenBy }
  const decodedBreaks = breaks === null ? null : breaks.map(([quantity, kind, value]): QuantityBreak => ({ quantity, kind: kind as 0 | 1, value }))
  return { from, content: { sales, fields, breaks: decodedBreaks }, writtenAt, writtenBy }
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
    let loaded = 0
    for (const { key, value } of db.getRange({ start: after, limit: chunkEntries + 1, snapshot: false })) {
      // The range starts at the last key of the previous chunk, which is loaded already.
      if (after !== undefined && key[0] === after[0] && key[1] === after[1]) continue
      apply(key, value)
      after = key
      if (++loaded === chunkEntries) break
    }
    count += loaded
    if (loaded < chunkEntries) return count
    await new Promise((resolve) => setImmediate(resolve))
  }
}
