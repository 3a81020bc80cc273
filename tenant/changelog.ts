/**
 * The changelog's shapes, shared by GET /changelog (http/routes/changelog.ts) and the webhook
 * dispatcher (./webhooks/dispatcher.ts): the opaque cursor and an entry as the API renders it.
 * A cursor is base64url of `v1:<sequence>`, the first sequence the next read starts at; the version
 * prefix lets the format change without breaking cursors clients hold.
 * @module
 */
import { formatInstant } from '../engine/time.js'
import type { LogEntry } from '../storage/log-entry.js'
import { validationError } from '../platform/errors.js'

const cursorPrefix = 'v1:'
/** Long enough for any cursor this module makes (a safe integer is at most 16 digits). */
export const cursorLengthMax = 64
const cursorText = /^[A-Za-z0-9_-]+$/
const cursorSequence = /^v1:(0|[1-9][0-9]{0,15})$/

export function encodeCursor(sequence: number): string {
  return Buffer.from(`${cursorPrefix}${sequence}`, 'utf8').toString('base64url')
}

/** The sequence a cursor names; 400 when it is not one this module made. */
export function decodeCursor(cursor: string): number {
  const decoded = cursorText.test(cursor) ? Buffer.from(cursor, 'base64url').toString('utf8') : ''
  const match = cursorSequence.exec(decoded)
  const sequence = match === null ? Number.NaN : Number(match[1])
  // Re-encoding must give the cursor back, so that two spellings never name one position.
  if (!Number.isSafeInteger(sequence) || encodeCursor(sequence) !== cursor) {
    throw validationError([
      { path: 'query/cursor', message: 'is not a cursor of this changelog; pass next_cursor back unchanged' },
    ])
  }
  return sequence
}

export function renderEntry(entry: LogEntry, changedAt = formatInstant(entry.changedAt)): Record<string, unknown> {
  const rendered: Record<string, unknown> = {
    sequence: entry.sequence,
    entity_type: entry.entityType,
    change_type: entry.changeType,
    entity_code: entry.entityCode,
    composite_key: entry.compositeKey,
    changed_at: changedAt,
    changed_by: entry.changedBy,
    content_hash: entry.contentHash,
  }
  // An effective-price event's amounts, moment and cause (tenant/effective-prices/), after the fields.
  return entry.detail === undefined ? rendered : Object.assign(rendered, JSON.parse(entry.detail))
}

/**
 * A page of entries as the API answers them. The entries of one commit share their time, so the
 * formatted time is reused while it repeats (formatting was half of a page's rendering).
 */
export function renderEntries(entries: readonly LogEntry[]): Record<string, unknown>[] {
  let lastMs = Number.NaN
  let lastText = ''
  return entries.map((entry) => {
    if (entry.changedAt !== lastMs) {
      lastMs = entry.changedAt
      lastText = formatInstant(lastMs)
    }
    return renderEntry(entry, lastText)
  })
}
