/**
 * The stored form of one (pricelist, SKU) price: its whole version list as one small binary record,
 * with the writer as an index into the tenant's actor table (kept in the meta database) instead of
 * a client_id string per version. A 3-version pair takes about 90 bytes instead of about 170 as
 * msgpack arrays, so the table is smaller on disk and in the pages a startup load touches.
 *
 *   record   u8 format (1), then versions in order of `from`:
 *   version  f64 from, f64 writtenAt, u32 actor, u8 flags (1 deleted, 2 fields, 4 breaks),
 *            f64 sales (absent when deleted),
 *            fields: u8 count, count x (u16 name bytes, UTF-8 name, f64 value),
 *            breaks: u8 count, count x (f64 quantity, u8 kind, f64 value)
 *
 * Non-goal: the legacy msgpack form (`prices` database) is only decoded, never written.
 * @module
 */
import { assert } from '../engine/assert.js'
import { extrasSlots, type PriceContent, type PriceVersion, type QuantityBreak } from '../engine/prices.js'

const recordFormat = 1
const flagDeleted = 1
const flagFields = 2
const flagBreaks = 4
/** from, writtenAt, actor, flags. */
const versionHeaderBytes = 8 + 8 + 4 + 1
const fieldsMax = 255
const breaksMax = 255

/** Writer names <-> dense ids, persisted as one array under `meta/actors` when it grows. */
export class ActorTable {
  readonly #names: string[]
  readonly #ids = new Map<string, number>()
  /** The number of names already stored: the table must be written when it is exceeded. */
  #storedCount: number

  constructor(names: readonly string[]) {
    this.#names = [...names]
    for (const [id, name] of this.#names.entries()) this.#ids.set(name, id)
    this.#storedCount = this.#names.length
  }

  id(name: string): number {
    let id = this.#ids.get(name)
    if (id === undefined) {
      id = this.#names.length
      this.#names.push(name)
      this.#ids.set(name, id)
    }
    return id
  }

  name(id: number): string {
    const name = this.#names[id]
    assert(name !== undefined, 'price record names a known actor')
    return name
  }

  /** The full table when names were added since the last call (to store with the commit), else null. */
  takeGrowth(): string[] | null {
    if (this.#names.length === this.#storedCount) return null
    this.#storedCount = this.#names.length
    return [...this.#names]
  }
}

function contentBytes(content: PriceContent): number {
  let size = 8
  if (content.fields !== null) {
    size += 1
    for (const name in content.fields) size += 2 + Buffer.byteLength(name) + 8
  }
  if (content.breaks !== null) size += 1 + content.breaks.length * 17
  return size
}

/** Bytes of a pair's record. */
export function priceRecordBytes(versions: readonly PriceVersion[]): number {
  let size = 1
  for (const version of versions)
    size += versionHeaderBytes + (version.content === null ? 0 : contentBytes(version.content))
  return size
}

/**
 * The records of many pairs in one buffer (one allocation per commit, not one per pair), as views.
 * LMDB copies each value when the transaction runs; the buffer stays referenced until then.
 */
export function encodePriceRecords(versionLists: readonly (readonly PriceVersion[])[], actors: ActorTable): Buffer[] {
  let total = 0
  for (const versions of versionLists) total += priceRecordBytes(versions)
  const buffer = Buffer.allocUnsafeSlow(total)
  const view = new DataView(buffer.buffer, buffer.byteOffset, total)
  const records: Buffer[] = []
  let cursor = 0
  for (const versions of versionLists) {
    const end = writeRecord(buffer, view, cursor, versions, actors)
    records.push(buffer.subarray(cursor, end))
    cursor = end
  }
  assert(cursor === total, 'price records size')
  return records
}

function writeRecord(
  buffer: Buffer,
  view: DataView,
  start: number,
  versions: readonly PriceVersion[],
  actors: ActorTable,
): number {
  assert(versions.length > 0, 'a stored price has at least one version')
  let cursor = start
  view.setUint8(cursor++, recordFormat)
  for (const version of versions) {
    const content = version.content
    view.setFloat64(cursor, version.from, true)
    view.setFloat64(cursor + 8, version.writtenAt, true)
    view.setUint32(cursor + 16, actors.id(version.writtenBy), true)
    let flags = 0
    if (content === null) flags = flagDeleted
    else flags = (content.fields === null ? 0 : flagFields) | (content.breaks === null ? 0 : flagBreaks)
    view.setUint8(cursor + 20, flags)
    cursor += versionHeaderBytes
    if (content !== null) cursor = writeContent(buffer, view, cursor, content)
  }
  return cursor
}

function writeContent(buffer: Buffer, view: DataView, start: number, content: PriceContent): number {
  let cursor = start
  view.setFloat64(cursor, content.sales, true)
  cursor += 8
  if (content.fields !== null) {
    const names = Object.keys(content.fields)
    assert(names.length <= fieldsMax, 'price record field count')
    view.setUint8(cursor++, names.length)
    for (const name of names) {
      const length = buffer.write(name, cursor + 2, 'utf8')
      view.setUint16(cursor, length, true)
      cursor += 2 + length
      view.setFloat64(cursor, content.fields[name]!, true)
      cursor += 8
    }
  }
  if (content.breaks !== null) {
    assert(content.breaks.length <= breaksMax, 'price record break count')
    view.setUint8(cursor++, content.breaks.length)
    for (const entry of content.breaks) {
      view.setFloat64(cursor, entry.quantity, true)
      view.setUint8(cursor + 8, entry.kind)
      view.setFloat64(cursor + 9, entry.value, true)
      cursor += 17
    }
  }
  return cursor
}

export function decodePriceRecord(buffer: Uint8Array, actors: ActorTable): PriceVersion[] {
  const view = new DataView(buffer.buffer, buffer.byteOffset, buffer.byteLength)
  assert(buffer.byteLength > versionHeaderBytes && view.getUint8(0) === recordFormat, 'price record format')
  const versions: PriceVersion[] = []
  let cursor = 1
  while (cursor < buffer.byteLength) {
    const from = view.getFloat64(cursor, true)
    const writtenAt = view.getFloat64(cursor + 8, true)
    const writtenBy = actors.name(view.getUint32(cursor + 16, true))
    const flags = view.getUint8(cursor + 20)
    cursor += versionHeaderBytes
    if ((flags & flagDeleted) !== 0) {
      versions.push({ from, content: null, writtenAt, writtenBy })
      continue
    }
    const sales = view.getFloat64(cursor, true)
    cursor += 8
    let fields: Record<string, number> | null = null
    if ((flags & flagFields) !== 0) {
      fields = {}
      const count = view.getUint8(cursor++)
      for (let index = 0; index < count; index++) {
        const length = view.getUint16(cursor, true)
        const name = Buffer.from(buffer.buffer, buffer.byteOffset + cursor + 2, length).toString('utf8')
        cursor += 2 + length
        fields[name] = view.getFloat64(cursor, true)
        cursor += 8
      }
    }
    let breaks: QuantityBreak[] | null = null
    if ((flags & flagBreaks) !== 0) {
      breaks = []
      const count = view.getUint8(cursor++)
      for (let index = 0; index < count; index++) {
        breaks.push({
          quantity: view.getFloat64(cursor, true),
          kind: view.getUint8(cursor + 8) as 0 | 1,
          value: view.getFloat64(cursor + 9, true),
        })
        cursor += 17
      }
    }
    versions.push({ from, content: { sales, fields, breaks }, writtenAt, writtenBy })
  }
  assert(cursor === buffer.byteLength, 'price record ends on a version')
  return versions
}

/** What a record takes in the price book: versions, and extras slots (engine/prices.ts layout). */
export interface RecordSize {
  versions: number
  extrasSlots: number
}

/** Adds a record's versions and extras slots to `size`, reading only lengths (no allocation). */
export function measurePriceRecord(buffer: Uint8Array, size: RecordSize): void {
  const view = new DataView(buffer.buffer, buffer.byteOffset, buffer.byteLength)
  let cursor = 1
  while (cursor < buffer.byteLength) {
    const flags = view.getUint8(cursor + 20)
    cursor += versionHeaderBytes
    size.versions++
    if ((flags & flagDeleted) !== 0) continue
    cursor += 8
    let fieldCount = 0
    let breakCount = 0
    if ((flags & flagFields) !== 0) {
      fieldCount = view.getUint8(cursor++)
      for (let index = 0; index < fieldCount; index++) cursor += 2 + view.getUint16(cursor, true) + 8
    }
    if ((flags & flagBreaks) !== 0) {
      breakCount = view.getUint8(cursor++)
      cursor += breakCount * 17
    }
    if (fieldCount > 0 || breakCount > 0) size.extrasSlots += extrasSlots(breakCount, fieldCount)
  }
}

/** Legacy stored form (`prices` database): [from, sales | null, writtenAt, writtenBy, fields, breaks]. */
export type LegacyPriceVersion = [
  number,
  number | null,
  number,
  string,
  Record<string, number> | null,
  [number, number, number][] | null,
]

export function decodeLegacyPriceVersion(stored: LegacyPriceVersion): PriceVersion {
  const [from, sales, writtenAt, writtenBy, fields, breaks] = stored
  if (sales === null) return { from, content: null, writtenAt, writtenBy }
  const decodedBreaks =
    breaks === null
      ? null
      : breaks.map(([quantity, kind, value]): QuantityBreak => ({ quantity, kind: kind as 0 | 1, value }))
  return { from, content: { sales, fields, breaks: decodedBreaks }, writtenAt, writtenBy }
}
