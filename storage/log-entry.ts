/**
 * The log entry: one recorded change, msgpackr-encoded under its sequence number. The log is the
 * changelog, the webhook source and (later) the replication feed. Each entry carries a checksum of
 * its content chained to the previous entry's checksum, so a gap or a rewrite is detectable.
 * @module
 */
import { createHash } from 'node:crypto'
import { assert } from '../engine/assert.js'
import type { EntityType } from '../engine/catalog.js'
import type { ChangeType } from '../engine/temporal.js'

export const logSchemaVersion = 1

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
}

export type EntryContent = Omit<LogEntry, 'schemaVersion' | 'sequence' | 'previousChecksum' | 'checksum'>

export function entryChecksum(
  sequence: number,
  content: EntryContent,
  previousChecksum: string,
): string {
  const text = [
    logSchemaVersion,
    sequence,
    content.entityType,
    content.changeType,
    content.entityCode,
    content.compositeKey ?? '',
    content.changedAt,
    content.changedBy,
    content.contentHash,
    previousChecksum,
  ].join('\u0000')
  return createHash('sha256').update(text).digest('hex').slice(0, 32)
}

export function makeEntry(sequence: number, content: EntryContent, previousChecksum: string): LogEntry {
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
  }
  verifyEntry(entry)
  return entry
}

/** Paired with makeEntry: checks an entry right before it is written and right after it is read. */
export function verifyEntry(entry: LogEntry): void {
  assert(entry.schemaVersion === logSchemaVersion, 'log entry schema version')
  assert(Number.isSafeInteger(entry.sequence) && entry.sequence > 0, 'log entry sequence')
  assert(typeof entry.entityCode === 'string', 'log entry code')
  assert(
    entry.checksum === entryChecksum(entry.sequence, entry, entry.previousChecksum),
    'log entry checksum',
  )
}
