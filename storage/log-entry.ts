/**
 * The log entry: one recorded change under its sequence number. The log is the changelog, the
 * webhook source and (later) the replication feed. Each entry carries a checksum of its content
 * chained to the previous entry's checksum, so a gap or a rewrite is detectable.
 *
 * Stored form: a msgpackr-encoded array of the fields in a fixed order (`encodeEntries`; an entry
 * with a `detail` has it as a 12th), written
 * as raw bytes (lmdb's own msgpack records cost about 3 us an entry, the largest cost of a price
 * write; a plain array costs about 0.8 us). Earlier builds wrote lmdb msgpack records and, briefly,
 * the binary record below (it starts with 0xc1, a byte MessagePack never uses); all read back.
 *
 *   u8 0xc1, u8 schemaVersion, f64 sequence, f64 changedAt, u8 changeType,
 *   u8 + UTF-8 entityType, 3 x (u16 + UTF-8: entityCode, compositeKey (0xffff: null), changedBy),
 *   3 x hash (contentHash, previousChecksum, checksum): u8 tag 0 '' | 1 16 bytes of lowercase hex
 *   | 2 u16 + UTF-8 text
 * @module
 */
import { Packr } from 'msgpackr'
import { assert } from '../engine/assert.js'
import { splitKey, type Change, type EntityType } from '../engine/catalog.js'
import { sha256Hex128 } from '../engine/hash.js'
import type { ChangeType } from '../engine/temporal.js'

export const logSchemaVersion = 1
const binaryEntryMarker = 0xc1
const changeTypes: readonly ChangeType[] = ['created', 'updated', 'deleted']
const textNull = 0xffff
const hashEmpty = 0
const hashHex = 1
const hashText = 2
/** Marker, schema version, sequence, changedAt, changeType, and the length bytes of 4 strings and 3 hashes. */
const fixedBytes = 1 + 1 + 8 + 8 + 1 + 1 + 3 * 2 + 3 * 3

export interface LogEntry {
  readonly schemaVersion: number
  readonly sequence: number
  readonly entityType: EntityType | 'test'
  readonly changeType: ChangeType
  readonly entityCode: string
  readonly compositeKey: string | null
  /** Epoch ms of the change. */
  readonly changedAt: number
  readonly changedBy: string
  readonly contentHash: string
  readonly previousChecksum: string
  readonly checksum: string
  /**
   * What an entry says besides its fields, as JSON text (an effective-price event's amounts, moment
   * and cause: tenant/effective-prices/); absent on every other entry. Part of the checksum when
   * present, and stored as a 12th field.
   */
  readonly detail?: string
}

export type EntryContent = Omit<LogEntry, 'schemaVersion' | 'sequence' | 'previousChecksum' | 'checksum'>

export function entryChecksum(sequence: number, content: EntryContent, previousChecksum: string): string {
  // The fields joined by NUL (as Array.join would, without the array).
  const text =
    `${logSchemaVersion}\u0000${sequence}\u0000${content.entityType}\u0000${content.changeType}\u0000${content.entityCode}` +
    `\u0000${content.compositeKey ?? ''}\u0000${content.changedAt}\u0000${content.changedBy}\u0000${content.contentHash}\u0000${previousChecksum}`
  return sha256Hex128(content.detail === undefined ? text : `${text}\u0000${content.detail}`)
}

export function makeEntry(sequence: number, content: EntryContent, previousChecksum: string): LogEntry {
  if (content.detail !== undefined) {
    const entry: LogEntry = {
      schemaVersion: logSchemaVersion,
      sequence,
      entityType: content.entityType,
      changeType: content.changeType,
      entityCode: content.entityCode,
      compositeKey: content.compositeKey,
      changedAt: content.changedAt,
      changedBy: content.changedBy,
      contentHash: content.contentHash,
      previousChecksum,
      checksum: entryChecksum(sequence, content, previousChecksum),
      detail: content.detail,
    }
    verifyShape(entry)
    return entry
  }
  return makeEntryOf(
    sequence,
    content.entityType,
    content.changeType,
    content.entityCode,
    content.compositeKey,
    content.changedAt,
    content.changedBy,
    content.contentHash,
    previousChecksum,
  )
}

/**
 * As makeEntry, from the fields themselves: a price write (one entry per version) builds its entry
 * without an EntryContent object first.
 */
export function makeEntryOf(
  sequence: number,
  entityType: LogEntry['entityType'],
  changeType: ChangeType,
  entityCode: string,
  compositeKey: string | null,
  changedAt: number,
  changedBy: string,
  contentHash: string,
  previousChecksum: string,
): LogEntry {
  const entry: { -readonly [Field in keyof LogEntry]: LogEntry[Field] } = {
    schemaVersion: logSchemaVersion,
    sequence,
    entityType,
    changeType,
    entityCode,
    compositeKey,
    changedAt,
    changedBy,
    contentHash,
    previousChecksum,
    checksum: '',
  }
  entry.checksum = entryChecksum(sequence, entry, previousChecksum)
  // The checksum was just computed from these very fields: recomputing it would prove nothing.
  verifyShape(entry)
  return entry
}

function verifyShape(entry: LogEntry): void {
  assert(entry.schemaVersion === logSchemaVersion, 'log entry schema version')
  assert(Number.isSafeInteger(entry.sequence) && entry.sequence > 0, 'log entry sequence')
  assert(typeof entry.entityCode === 'string', 'log entry code')
  assert(typeof entry.checksum === 'string' && entry.checksum.length === 32, 'log entry checksum length')
}

/** Paired with makeEntry: checks an entry read back from storage, checksum included. */
export function verifyEntry(entry: LogEntry): void {
  verifyShape(entry)
  assert(entry.checksum === entryChecksum(entry.sequence, entry, entry.previousChecksum), 'log entry checksum')
}

/** Does a stored value hold a binary entry (rather than a legacy msgpackr one)? */
export function isBinaryEntry(bytes: Uint8Array): boolean {
  return bytes.length > 0 && bytes[0] === binaryEntryMarker
}

/** The first byte of a stored entry as a msgpackr array of its 11 fields (MessagePack fixarray 11). */
const arrayEntryMarker = 0x9b
/** The same with its detail as a 12th field (fixarray 12). */
const detailEntryMarker = 0x9c
const packr = new Packr({ useRecords: false, moreTypes: false })

/** Does a stored value hold an entry this module writes or wrote (not a legacy lmdb record)? */
export function isRawEntry(bytes: Uint8Array): boolean {
  return (
    bytes.length > 0 &&
    (bytes[0] === arrayEntryMarker || bytes[0] === detailEntryMarker || bytes[0] === binaryEntryMarker)
  )
}

/**
 * The stored form of entries: each a msgpackr-encoded array of its fields in a fixed order
 * (about 0.8 us and 170 bytes an entry; field names are not repeated in every entry).
 */
export function encodeEntries(entries: readonly LogEntry[]): Buffer[] {
  const stored = new Array<Buffer>(entries.length)
  // One array refilled per entry: msgpackr reads it during pack() only, so no array per entry.
  const fields = packFields
  for (let index = 0; index < entries.length; index++) {
    const entry = entries[index]!
    fields[0] = entry.schemaVersion
    fields[1] = entry.sequence
    fields[2] = entry.entityType
    fields[3] = entry.changeType
    fields[4] = entry.entityCode
    fields[5] = entry.compositeKey
    fields[6] = entry.changedAt
    fields[7] = entry.changedBy
    fields[8] = entry.contentHash
    fields[9] = entry.previousChecksum
    fields[10] = entry.checksum
    if (entry.detail === undefined) stored[index] = packr.pack(fields)
    else {
      fields[11] = entry.detail
      stored[index] = packr.pack(fields)
      fields.length = 11
    }
  }
  fields.fill(null)
  return stored
}

/** The scratch array `encodeEntries` packs each entry from, in the stored order of the fields. */
const packFields: (string | number | null)[] = new Array(11).fill(null)

/** Reads a stored entry (msgpackr array, or the binary form of earlier builds). */
export function decodeStoredEntry(bytes: Uint8Array): LogEntry {
  if (bytes[0] !== arrayEntryMarker && bytes[0] !== detailEntryMarker) return decodeEntry(bytes)
  const fields = packr.unpack(bytes) as unknown[]
  assert(Array.isArray(fields) && (fields.length === 11 || fields.length === 12), 'log entry array')
  const entry: LogEntry = {
    schemaVersion: fields[0] as number,
    sequence: fields[1] as number,
    entityType: fields[2] as EntityType,
    changeType: fields[3] as ChangeType,
    entityCode: fields[4] as string,
    compositeKey: fields[5] as string | null,
    changedAt: fields[6] as number,
    changedBy: fields[7] as string,
    contentHash: fields[8] as string,
    previousChecksum: fields[9] as string,
    checksum: fields[10] as string,
  }
  return fields.length === 11 ? entry : { ...entry, detail: fields[11] as string }
}

/** Worst-case bytes of a string as UTF-8 (one UTF-16 unit takes at most 3 bytes). */
function textBound(text: string): number {
  return text.length * 3
}

/** The compact binary form (read back; written by earlier builds), in one buffer, as views. */
export function encodeBinaryEntries(entries: readonly LogEntry[]): Buffer[] {
  let bound = 0
  for (const entry of entries) {
    bound +=
      fixedBytes + textBound(entry.entityType) + textBound(entry.entityCode) + textBound(entry.compositeKey ?? '')
    bound +=
      textBound(entry.changedBy) +
      textBound(entry.contentHash) +
      textBound(entry.previousChecksum) +
      textBound(entry.checksum)
  }
  const buffer = Buffer.allocUnsafeSlow(bound)
  const view = new DataView(buffer.buffer, buffer.byteOffset, bound)
  const records: Buffer[] = []
  let cursor = 0
  for (const entry of entries) {
    const end = writeEntry(buffer, view, cursor, entry)
    records.push(buffer.subarray(cursor, end))
    cursor = end
  }
  assert(cursor <= bound, 'log entries fit their bound')
  return records
}

function writeEntry(buffer: Buffer, view: DataView, start: number, entry: LogEntry): number {
  const changeType = changeTypes.indexOf(entry.changeType)
  assert(changeType >= 0, 'log entry change type')
  view.setUint8(start, binaryEntryMarker)
  view.setUint8(start + 1, entry.schemaVersion)
  view.setFloat64(start + 2, entry.sequence, true)
  view.setFloat64(start + 10, entry.changedAt, true)
  view.setUint8(start + 18, changeType)
  const typeLength = buffer.write(entry.entityType, start + 20, 'utf8')
  assert(typeLength <= 0xff, 'log entry type length')
  view.setUint8(start + 19, typeLength)
  let cursor = start + 20 + typeLength
  cursor = writeText(buffer, view, cursor, entry.entityCode)
  cursor = writeText(buffer, view, cursor, entry.compositeKey)
  cursor = writeText(buffer, view, cursor, entry.changedBy)
  cursor = writeHash(buffer, view, cursor, entry.contentHash)
  cursor = writeHash(buffer, view, cursor, entry.previousChecksum)
  return writeHash(buffer, view, cursor, entry.checksum)
}

function writeText(buffer: Buffer, view: DataView, cursor: number, text: string | null): number {
  if (text === null) {
    view.setUint16(cursor, textNull, true)
    return cursor + 2
  }
  const length = buffer.write(text, cursor + 2, 'utf8')
  assert(length < textNull, 'log entry text length')
  view.setUint16(cursor, length, true)
  return cursor + 2 + length
}

function writeHash(buffer: Buffer, view: DataView, cursor: number, hash: string): number {
  if (hash === '') {
    view.setUint8(cursor, hashEmpty)
    return cursor + 1
  }
  if (writeHex(buffer, cursor + 1, hash)) {
    view.setUint8(cursor, hashHex)
    return cursor + 17
  }
  view.setUint8(cursor, hashText)
  return writeText(buffer, view, cursor + 1, hash)
}

/**
 * Writes 32 lowercase hex digits as 16 bytes; false (bytes written are then overwritten) for any
 * other text, which is stored as text so that it reads back unchanged (the native hex decoder
 * accepts upper case too, and stops at the first non-digit).
 */
function writeHex(buffer: Buffer, start: number, hash: string): boolean {
  return hash.length === 32 && buffer.write(hash, start, 16, 'hex') === 16 && hash.toLowerCase() === hash
}

/** Reads a binary entry back (see `isBinaryEntry`); verifyEntry checks it. */
export function decodeEntry(bytes: Uint8Array): LogEntry {
  assert(isBinaryEntry(bytes), 'binary log entry marker')
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const reader = { cursor: 20 + view.getUint8(19) }
  const changeType = changeTypes[view.getUint8(18)]
  assert(changeType !== undefined, 'log entry change type')
  const entry: LogEntry = {
    schemaVersion: view.getUint8(1),
    sequence: view.getFloat64(2, true),
    entityType: buffer.toString('utf8', 20, reader.cursor) as LogEntry['entityType'],
    changeType,
    entityCode: readText(buffer, view, reader) ?? '',
    compositeKey: readText(buffer, view, reader),
    changedAt: view.getFloat64(10, true),
    changedBy: readText(buffer, view, reader) ?? '',
    contentHash: readHash(buffer, view, reader),
    previousChecksum: readHash(buffer, view, reader),
    checksum: readHash(buffer, view, reader),
  }
  assert(reader.cursor === bytes.byteLength, 'binary log entry length')
  return entry
}

function readText(buffer: Buffer, view: DataView, reader: { cursor: number }): string | null {
  const length = view.getUint16(reader.cursor, true)
  reader.cursor += 2
  if (length === textNull) return null
  const text = buffer.toString('utf8', reader.cursor, reader.cursor + length)
  reader.cursor += length
  return text
}

function readHash(buffer: Buffer, view: DataView, reader: { cursor: number }): string {
  const tag = view.getUint8(reader.cursor++)
  if (tag === hashEmpty) return ''
  if (tag === hashHex) {
    reader.cursor += 16
    return buffer.toString('hex', reader.cursor - 16, reader.cursor)
  }
  assert(tag === hashText, 'log entry hash tag')
  return readText(buffer, view, reader) ?? ''
}

/** What the log records for a catalogue change (entity code and composite key from its key). */
export function changeContent(change: Change): EntryContent {
  const [entityCode, compositeKey] = splitKey(change.key)
  return {
    entityType: change.type,
    changeType: change.changeType,
    entityCode,
    compositeKey,
    changedAt: change.at,
    changedBy: change.by,
    contentHash: change.hash,
  }
}
