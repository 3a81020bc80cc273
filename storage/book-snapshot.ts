/**
 * A tenant's price book and catalogue as one binary file, written at a clean shutdown and read at
 * the next start instead of decoding every stored record: with 3 million price versions a start
 * that replays price_runs and entities takes about 10 s of CPU, one that reads this file well
 * under one. The file is only a cache of what LMDB holds, never a source of truth:
 *
 *   - it is stamped with the tenant log's sequence and checksum at the moment it was taken, and
 *     with a random token that the store's meta table names (`book_snapshot`) once the file is
 *     durable; a start uses it only when all three match the store, so a crash before the meta
 *     entry is written, more writes after it (the sequence moves), or a backup's data.mdb copied
 *     in (its meta table does not name this token) all fall back to loading from LMDB;
 *   - every start removes the meta entry and the file, whether it used them or not: the next
 *     start after a crash can never use a file older than writes made since (history retention
 *     rewrites prices without moving the sequence: the removal is what covers it);
 *   - a damaged or truncated file fails its SHA-256 (or its sizes) and is ignored.
 *
 * Layout: magic (8 bytes), header length (uint32 LE), header (msgpackr), then sections, each
 * starting at a multiple of 8, then the SHA-256 of everything before it. The header names each
 * section's element type, used length and the room to allocate for it, so the loader reads the
 * bytes straight into the typed arrays the book keeps (shared ones where the book shares them).
 * The catalogue is one section of msgpackr bytes (records: about 3x faster to decode than the
 * stored entities with their keys), the articles apart from the rest (`packCatalog`); the same bytes
 * seed the query workers' replicas.
 * @module
 */
import { createHash } from 'node:crypto'
import { closeSync, fsyncSync, openSync, readdirSync, readSync, renameSync, rmSync, statSync, writeSync } from 'node:fs'
import path from 'node:path'
import { Packr } from 'msgpackr'
import type { CatalogType } from '../engine/catalog.js'
import { restoredCapacity, type BookImage, type PriceBook } from '../engine/prices.js'
import type { Version } from '../engine/temporal.js'

export const snapshotFileName = 'book.snapshot'
const temporarySuffix = '.tmp'
const magic = Buffer.from('PBSNAP\u0000\u0001', 'latin1')
const formatVersion = 2
const digestBytes = 32
const alignment = 8

/** What ties a file to one state of a store: its log's tail and the token its meta table names. */
export interface SnapshotStamp {
  readonly token: string
  readonly sequence: number
  readonly checksum: string
}

/** Catalogue entries as a replica is built from them: [type, key, versions]. */
export type CatalogEntries = [CatalogType, string, Version<unknown>[]][]

type ElementKind = 'f64' | 'i32' | 'u16' | 'u8'

interface SectionHeader {
  readonly kind: ElementKind
  /** Elements written (the used part). */
  readonly used: number
  /** Elements to allocate when read back (room beyond the used part). */
  readonly capacity: number
  readonly shared: boolean
}

interface Header {
  readonly format: number
  readonly token: string
  readonly sequence: number
  readonly checksum: string
  readonly skuCount: number
  readonly skuKeyUnits: number
  readonly skuSeed: number
  readonly pricelistCodes: string[]
  readonly fieldNames: string[]
  readonly actors: string[]
  readonly livePerPricelist: number[]
  readonly livePairs: number
  readonly poolLive: number
  readonly extrasLive: number
  /** Per pricelist: whether it has an index section (in pricelist order, after the fixed ones). */
  readonly indexed: boolean[]
  readonly sections: SectionHeader[]
}

/** Fixed sections, in file order; then one index section per indexed pricelist, then `catalog`. */
const poolSections = ['from', 'sales', 'extra', 'runCount', 'writtenAt', 'writtenBy'] as const

/**
 * A self-describing msgpackr encoding (record structures inline, none shared): the file and the
 * workers decode it with a fresh instance.
 */
function catalogPackr(): Packr {
  return new Packr({ useRecords: true })
}

/**
 * The catalogue's entries as bytes (the section of the file; the workers' snapshot too): the
 * articles' byte length (uint32 LE), the articles as msgpackr bytes, then every other entry as
 * msgpackr bytes. Apart, because a worker decodes the articles only when a rule or a search needs
 * them (workers/replica.ts): with 100,000 SKUs they are 60 MB of each worker's heap and most of its
 * decode, and the queries of a tenant without rules never read them.
 */
export function packCatalog(entries: Iterable<[CatalogType, string, Version<unknown>[]]>): Buffer {
  const articles: CatalogEntries = []
  const others: CatalogEntries = []
  for (const entry of entries) (entry[0] === 'article' ? articles : others).push(entry)
  const packr = catalogPackr()
  const packedArticles = packr.pack(articles)
  const packedOthers = packr.pack(others)
  const bytes = Buffer.allocUnsafe(4 + packedArticles.length + packedOthers.length)
  bytes.writeUInt32LE(packedArticles.length, 0)
  bytes.set(packedArticles, 4)
  bytes.set(packedOthers, 4 + packedArticles.length)
  return bytes
}

/** The two parts of `packCatalog`'s bytes, as views (no copy): decode each with `unpackEntries`. */
export function catalogParts(bytes: Uint8Array): { readonly articles: Uint8Array; readonly others: Uint8Array } {
  if (bytes.length < 4) throw new Error('catalogue: too short')
  const length = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(0, true)
  if (4 + length > bytes.length) throw new Error('catalogue: article part past the end')
  return { articles: bytes.subarray(4, 4 + length), others: bytes.subarray(4 + length) }
}

/** Entries as self-describing msgpackr bytes, as one part of `packCatalog` (a worker keeps article changes so). */
export function packEntries(entries: CatalogEntries): Buffer {
  return catalogPackr().pack(entries)
}

/** One part's entries (`catalogParts`), or `packEntries`' bytes. */
export function unpackEntries(part: Uint8Array): CatalogEntries {
  return catalogPackr().unpack(part) as CatalogEntries
}

/** Every entry of `packCatalog`'s bytes: the articles, then the others. */
export function unpackCatalog(bytes: Uint8Array): CatalogEntries {
  const { articles, others } = catalogParts(bytes)
  const entries = unpackEntries(articles)
  for (const entry of unpackEntries(others)) entries.push(entry)
  return entries
}

function kindOf(array: Float64Array | Int32Array | Uint16Array | Uint8Array): ElementKind {
  if (array instanceof Float64Array) return 'f64'
  if (array instanceof Int32Array) return 'i32'
  if (array instanceof Uint16Array) return 'u16'
  return 'u8'
}

const bytesPer: Record<ElementKind, number> = { f64: 8, i32: 4, u16: 2, u8: 1 }

function padding(offset: number): number {
  return (alignment - (offset % alignment)) % alignment
}

/**
 * Writes the snapshot of `book` and `catalog` (the packed entries) for `stamp` into `directory`:
 * a temporary file, flushed, then renamed over the old one, and the directory flushed. Answers
 * the file's size. Synchronous: the book does not change under it.
 */
export function writeBookSnapshot(
  directory: string,
  stamp: SnapshotStamp,
  book: PriceBook,
  catalog: Uint8Array,
): number {
  const image = book.image()
  const arrays: { array: Float64Array | Int32Array | Uint16Array | Uint8Array; capacity: number; shared: boolean }[] =
    []
  const poolCapacity = restoredCapacity(image.from.length, image.poolLive, false)
  // Who and when stay on the main thread (engine/prices.ts): not shared.
  for (const name of poolSections) {
    arrays.push({ array: image[name], capacity: poolCapacity, shared: name !== 'writtenAt' && name !== 'writtenBy' })
  }
  const extrasCapacity = restoredCapacity(image.extras.length, image.extrasLive, true)
  arrays.push({ array: image.extras, capacity: extrasCapacity, shared: true })
  const skus = image.skus.table
  arrays.push({ array: skus.slots, capacity: skus.slots.length, shared: true })
  arrays.push({ array: skus.keys.subarray(0, image.skus.keyUnits), capacity: skus.keys.length, shared: true })
  arrays.push({ array: skus.offsets.subarray(0, image.skus.count + 1), capacity: skus.offsets.length, shared: true })
  for (const index of image.index)
    if (index !== null) arrays.push({ array: index, capacity: index.length, shared: true })
  arrays.push({ array: catalog, capacity: catalog.length, shared: false })
  const header: Header = {
    format: formatVersion,
    token: stamp.token,
    sequence: stamp.sequence,
    checksum: stamp.checksum,
    skuCount: image.skus.count,
    skuKeyUnits: image.skus.keyUnits,
    skuSeed: skus.seed,
    pricelistCodes: [...image.pricelistCodes],
    fieldNames: [...image.fieldNames],
    actors: [...image.actors],
    livePerPricelist: [...image.livePerPricelist],
    livePairs: image.livePairs,
    poolLive: image.poolLive,
    extrasLive: image.extrasLive,
    indexed: image.index.map((index) => index !== null),
    sections: arrays.map(({ array, capacity, shared }) => ({
      kind: kindOf(array),
      used: array.length,
      capacity,
      shared,
    })),
  }
  const headerBytes = new Packr({ useRecords: false }).pack(header)
  const temporary = path.join(directory, snapshotFileName + temporarySuffix)
  const fd = openSync(temporary, 'w', 0o600)
  let written = false
  try {
    const hash = createHash('sha256')
    let offset = 0
    const put = (bytes: Uint8Array): void => {
      hash.update(bytes)
      for (let done = 0; done < bytes.length; ) done += writeSync(fd, bytes, done, bytes.length - done)
      offset += bytes.length
    }
    const length = Buffer.alloc(4)
    length.writeUInt32LE(headerBytes.length)
    put(magic)
    put(length)
    put(headerBytes)
    put(new Uint8Array(padding(offset)))
    for (const { array } of arrays) {
      put(new Uint8Array(array.buffer, array.byteOffset, array.byteLength))
      put(new Uint8Array(padding(offset)))
    }
    const digest = hash.digest()
    for (let done = 0; done < digest.length; ) done += writeSync(fd, digest, done, digest.length - done)
    fsyncSync(fd)
    written = true
  } finally {
    closeSync(fd)
    // A full disk, say: the partial file goes at once rather than at the next start.
    if (!written) rmSync(temporary, { force: true })
  }
  renameSync(temporary, path.join(directory, snapshotFileName))
  syncDirectory(directory)
  return statSync(path.join(directory, snapshotFileName)).size
}

/** What a start found: the state to take over, or why there was none to use. */
export type SnapshotRead =
  | {
      readonly kind: 'used'
      readonly image: BookImage
      /** The catalogue section, not decoded yet (`unpackCatalog`): the caller may hand it on first. */
      readonly catalogBytes: Uint8Array
      readonly bytes: number
    }
  | { readonly kind: 'absent' }
  | { readonly kind: 'ignored'; readonly reason: string }

/**
 * Reads the snapshot in `directory` when its stamp is `expected` (the store's meta entry and log
 * tail); otherwise, or when it fails any check, says why it is not used. Never throws for a bad
 * file: the caller then loads from LMDB.
 */
export function readBookSnapshot(directory: string, expected: SnapshotStamp | null): SnapshotRead {
  const file = path.join(directory, snapshotFileName)
  let fd: number
  try {
    fd = openSync(file, 'r')
  } catch {
    if (expected === null) return { kind: 'absent' }
    return { kind: 'ignored', reason: 'the store names a snapshot but its file is missing' }
  }
  try {
    if (expected === null) {
      return {
        kind: 'ignored',
        reason: 'the store names no snapshot (a crash after it was written, or a restored data.mdb)',
      }
    }
    return readOpen(fd, statSync(file).size, expected)
  } catch (error) {
    return { kind: 'ignored', reason: `unreadable: ${error instanceof Error ? error.message : String(error)}` }
  } finally {
    closeSync(fd)
  }
}

function readOpen(fd: number, size: number, expected: SnapshotStamp): SnapshotRead {
  const hash = createHash('sha256')
  let offset = 0
  const take = (bytes: Uint8Array): void => {
    if (offset + bytes.length > size - digestBytes) throw new Error('truncated')
    for (let done = 0; done < bytes.length; ) {
      const read = readSync(fd, bytes, done, bytes.length - done, offset + done)
      if (read === 0) throw new Error('truncated')
      done += read
    }
    hash.update(bytes)
    offset += bytes.length
  }
  const prefix = Buffer.alloc(magic.length + 4)
  take(prefix)
  if (!prefix.subarray(0, magic.length).equals(magic))
    return { kind: 'ignored', reason: 'not a snapshot of this format' }
  const headerBytes = Buffer.alloc(prefix.readUInt32LE(magic.length))
  take(headerBytes)
  const header = new Packr({ useRecords: false }).unpack(headerBytes) as Header
  if (header.format !== formatVersion) {
    return { kind: 'ignored', reason: `format ${String(header.format)}, not ${formatVersion}` }
  }
  if (
    header.token !== expected.token ||
    header.sequence !== expected.sequence ||
    header.checksum !== expected.checksum
  ) {
    return {
      kind: 'ignored',
      reason: `stale: taken at sequence ${header.sequence}, the store is at ${expected.sequence}`,
    }
  }
  const indexCount = header.indexed.filter(Boolean).length
  if (header.sections.length !== poolSections.length + 4 + indexCount + 1) throw new Error('section count')
  take(new Uint8Array(padding(offset)))
  const arrays = header.sections.map((section) => {
    const sized = section.used >= 0 && section.used <= section.capacity && Number.isSafeInteger(section.capacity)
    if (!sized) throw new Error('section sizes')
    const bytes = bytesPer[section.kind]
    if (bytes === undefined) throw new Error('section kind')
    if (offset + section.used * bytes > size - digestBytes) throw new Error('truncated')
    const length = section.capacity * bytes
    const buffer = section.shared ? new SharedArrayBuffer(length) : new ArrayBuffer(length)
    take(new Uint8Array(buffer, 0, section.used * bytes))
    take(new Uint8Array(padding(offset)))
    return typed(section.kind, buffer, section.used)
  })
  const digest = Buffer.alloc(digestBytes)
  const whole = offset + digestBytes === size && readSync(fd, digest, 0, digestBytes, offset) === digestBytes
  if (!whole) throw new Error('trailing bytes')
  if (!hash.digest().equals(digest)) return { kind: 'ignored', reason: 'damaged: its SHA-256 does not match' }
  let at = 0
  const next = <T>(): T => arrays[at++] as T
  type PoolColumns = Record<(typeof poolSections)[number], never>
  const pool = Object.fromEntries(poolSections.map((name) => [name, next()])) as PoolColumns
  const extras = next<Float64Array>()
  const slots = next<Int32Array>()
  const keys = next<Uint16Array>()
  const offsets = next<Int32Array>()
  const index = header.indexed.map((indexed) => (indexed ? next<Int32Array>() : null))
  const catalogBytes = next<Uint8Array>()
  const image: BookImage = {
    skus: {
      table: {
        slots: wholeOf(slots),
        bytes: new Uint8Array(slots.buffer),
        keys: wholeOf(keys),
        offsets: wholeOf(offsets),
        seed: header.skuSeed,
      },
      count: header.skuCount,
      keyUnits: header.skuKeyUnits,
    },
    pricelistCodes: header.pricelistCodes,
    fieldNames: header.fieldNames,
    actors: header.actors,
    livePerPricelist: header.livePerPricelist,
    livePairs: header.livePairs,
    poolLive: header.poolLive,
    extrasLive: header.extrasLive,
    ...pool,
    extras,
    index: index.map((array) => (array === null ? null : wholeOf(array))),
  }
  return { kind: 'used', image, catalogBytes, bytes: size }
}

/** The used part of a freshly read section, as its typed array. */
type Section = Float64Array | Int32Array | Uint16Array | Uint8Array

function typed(kind: ElementKind, buffer: ArrayBufferLike, used: number): Section {
  switch (kind) {
    case 'f64':
      return new Float64Array(buffer, 0, used)
    case 'i32':
      return new Int32Array(buffer, 0, used)
    case 'u16':
      return new Uint16Array(buffer, 0, used)
    case 'u8':
      return new Uint8Array(buffer, 0, used)
  }
}

/** The whole allocation behind a section's view (tables keep their room: their sizes are their capacity). */
function wholeOf<T extends Int32Array | Uint16Array>(view: T): T {
  return new (view.constructor as new (buffer: ArrayBufferLike) => T)(view.buffer)
}

/** Removes the snapshot file and any temporary one left by a crash while writing it. */
export function removeBookSnapshot(directory: string): void {
  for (const name of readdirSync(directory)) {
    const ours = name === snapshotFileName || name === snapshotFileName + temporarySuffix
    if (ours) rmSync(path.join(directory, name), { force: true })
  }
}

/** Flushes a directory's entries (a rename is durable once its directory is). */
function syncDirectory(directory: string): void {
  const fd = openSync(directory, 'r')
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}
