/**
 * What a restore changes: the catalogue keys and price pairs whose stored versions differ between
 * the tenant's store and a backup of it, with the backup's versions (none where the backup never
 * held the key). Both stores are read in key order, chunk by chunk, with the event loop free between
 * chunks, and merged like two sorted lists (keys compared as LMDB orders them: `ordered-binary`'s
 * `compareKeys`, the encoding lmdb-js writes). Price records with equal bytes are equal without
 * being decoded. Only the differences are kept in memory.
 * @module
 */
import { isDeepStrictEqual } from 'node:util'
import { compareKeys } from 'ordered-binary'
import type { CatalogType, Change } from '../../engine/catalog.js'
import { priceContentHash, type PriceVersion } from '../../engine/prices.js'
import type { Version } from '../../engine/temporal.js'
import type { PriceChange, TenantStore } from '../tenant-store.js'

/** Keys read per chunk (a few milliseconds of decoding). */
const chunkKeys = 2_000

type Key = [string, string]

interface Keyed<V> {
  readonly key: Key
  /** The stored bytes where equal bytes mean equal versions (price records), else null. */
  readonly raw: Buffer | null
  readonly versions: () => V[]
}

/** A catalogue key that differs: `versions` is the backup's (empty: the backup lacks the key). */
export interface EntityDifference {
  readonly type: CatalogType
  readonly key: string
  readonly versions: Version<unknown>[]
  /** Whether the tenant holds the key now, not deleted. */
  readonly live: boolean
}

/** A price pair that differs, as above. */
export interface PriceDifference {
  readonly pricelist: string
  readonly sku: string
  readonly versions: PriceVersion[]
  readonly live: boolean
}

export interface RestoreDiff {
  readonly entities: EntityDifference[]
  readonly prices: PriceDifference[]
  /** Keys read from either store (each key counted once). */
  readonly compared: number
}

/** Reads one database of a store in key order, a chunk at a time. */
class Cursor<V> {
  #chunk: Keyed<V>[] = []
  #index = 0
  #after: Key | undefined
  #done = false

  constructor(readonly read: (after: Key | undefined, limit: number) => Keyed<V>[]) {}

  /** The next item without taking it (null at the end). */
  async peek(): Promise<Keyed<V> | null> {
    if (this.#index < this.#chunk.length) return this.#chunk[this.#index]!
    if (this.#done) return null
    if (this.#after !== undefined) await new Promise((resolve) => setImmediate(resolve))
    this.#chunk = this.read(this.#after, chunkKeys)
    this.#index = 0
    if (this.#chunk.length < chunkKeys) this.#done = true
    if (this.#chunk.length === 0) return null
    this.#after = this.#chunk[this.#chunk.length - 1]!.key
    return this.#chunk[0]!
  }

  async take(): Promise<Keyed<V> | null> {
    const item = await this.peek()
    if (item !== null) this.#index++
    return item
  }
}

/** Two sorted sources as one; on equal keys the `preferred` one wins (the other is skipped). */
class MergedCursor<V> {
  constructor(
    readonly preferred: Cursor<V>,
    readonly other: Cursor<V>,
  ) {}

  async take(): Promise<Keyed<V> | null> {
    const first = await this.preferred.peek()
    const second = await this.other.peek()
    if (first === null) return this.other.take()
    if (second === null) return this.preferred.take()
    const order = compareKeys(first.key, second.key)
    if (order > 0) return this.other.take()
    if (order === 0) await this.other.take()
    return this.preferred.take()
  }
}

/** Every price pair of a store: binary records, and legacy ones where no record replaced them. */
function priceCursor(store: TenantStore, rawComparable: boolean): MergedCursor<PriceVersion> {
  return new MergedCursor(
    new Cursor((after, limit) =>
      store.priceChunk(after, limit, false).map((item) => (rawComparable ? item : { ...item, raw: null })),
    ),
    new Cursor((after, limit) => store.priceChunk(after, limit, true)),
  )
}

/**
 * Whether equal record bytes mean equal versions: records name writers by their index in each
 * store's writer table, which only grows, so it holds when the backup's table is a prefix of the
 * tenant's (always, for a backup of this tenant). Then most pairs compare without being decoded.
 */
function sameWriterIndexes(current: TenantStore, backup: TenantStore): boolean {
  const mine = current.actorNames()
  const theirs = backup.actorNames()
  return theirs.length <= mine.length && theirs.every((name, index) => mine[index] === name)
}

/**
 * Merges two sorted sources; `differs` receives each key whose versions are not equal, with the
 * backup's versions (empty: absent there) and whether the current store holds it live (`isLive`).
 */
async function compare<V>(
  current: { take(): Promise<Keyed<V> | null> },
  backup: { take(): Promise<Keyed<V> | null> },
  isLive: (versions: V[]) => boolean,
  differs: (key: Key, versions: V[], live: boolean) => void,
): Promise<number> {
  let compared = 0
  let left = await current.take()
  let right = await backup.take()
  while (left !== null || right !== null) {
    compared++
    const order = left === null ? 1 : right === null ? -1 : compareKeys(left.key, right.key)
    if (order < 0) {
      differs(left!.key, [], isLive(left!.versions()))
      left = await current.take()
    } else if (order > 0) {
      differs(right!.key, right!.versions(), false)
      right = await backup.take()
    } else {
      if (left!.raw === null || right!.raw === null || !left!.raw.equals(right!.raw)) {
        const mine = left!.versions()
        const theirs = right!.versions()
        if (!isDeepStrictEqual(mine, theirs)) differs(right!.key, theirs, isLive(mine))
      }
      left = await current.take()
      right = await backup.take()
    }
  }
  return compared
}

/** The differences that turn `current`'s tables into `backup`'s. Neither store is written to. */
export async function restoreDiff(current: TenantStore, backup: TenantStore): Promise<RestoreDiff> {
  const entities: EntityDifference[] = []
  const prices: PriceDifference[] = []
  const entityCursor = (store: TenantStore): Cursor<Version<unknown>> =>
    new Cursor((after, limit) =>
      store.entityChunk(after, limit).map((item) => ({ key: item.key, raw: null, versions: () => item.versions })),
    )
  const entityLive = (versions: Version<unknown>[]): boolean =>
    versions.length > 0 && versions[versions.length - 1]!.value !== null
  const priceLive = (versions: PriceVersion[]): boolean =>
    versions.length > 0 && versions[versions.length - 1]!.content !== null
  let compared = await compare(entityCursor(current), entityCursor(backup), entityLive, (key, versions, live) => {
    entities.push({ type: key[0] as CatalogType, key: key[1], versions, live })
  })
  const rawComparable = sameWriterIndexes(current, backup)
  compared += await compare(
    priceCursor(current, rawComparable),
    priceCursor(backup, rawComparable),
    priceLive,
    (key, versions, live) => {
      prices.push({ pricelist: key[0], sku: key[1], versions, live })
    },
  )
  return { entities, prices, compared }
}

/**
 * The writes that apply a diff, each with what its changelog entry records: `deleted` where the
 * backup lacks the key or holds it deleted, else `updated` where the tenant holds it live now, else
 * `created` (absent or deleted now, live in the backup);
 * the hash of the restored content; `at` and `by` of the restore. A change without versions removes
 * its key.
 */
export function restoreChanges(
  diff: RestoreDiff,
  at: number,
  by: string,
): { changes: Change[]; prices: PriceChange[] } {
  const changes: Change[] = diff.entities.map((difference) => {
    const last = difference.versions[difference.versions.length - 1]
    const live = last !== undefined && last.value !== null
    return {
      type: difference.type,
      key: difference.key,
      versions: difference.versions,
      changeType: !live ? 'deleted' : difference.live ? 'updated' : 'created',
      hash: live ? last.hash : '',
      at,
      by,
    }
  })
  const prices: PriceChange[] = diff.prices.map((difference) => {
    const content = difference.versions[difference.versions.length - 1]?.content ?? null
    return {
      pricelist: difference.pricelist,
      sku: difference.sku,
      versions: difference.versions,
      changeType: content === null ? 'deleted' : difference.live ? 'updated' : 'created',
      hash: content === null ? '' : priceContentHash(content),
      at,
      by,
    }
  })
  return { changes, prices }
}
