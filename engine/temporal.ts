/**
 * Versioned records: for each key the versions sorted by the instant they take effect, found by
 * binary search at `as_of`. A version whose value is null is a soft delete (a tombstone).
 * History is append-only in time: a write never changes what was in force before it.
 * @module
 */
import { assert } from './assert.js'

export interface Version<T> {
  /** Epoch ms from which this version is in force. */
  readonly from: number
  /** The record, or null for a soft delete. */
  readonly value: T | null
  /** Content hash of `value` ('' for a tombstone). */
  readonly hash: string
  /** Epoch ms when the version was written. */
  readonly writtenAt: number
  /** Who wrote it (API key client_id, user or `system`). */
  readonly writtenBy: string
}

export type ChangeType = 'created' | 'updated' | 'deleted'

/** Index of the last version with `from <= at`, or -1. */
export function indexAt<T>(versions: readonly Version<T>[], at: number): number {
  let low = 0
  let high = versions.length - 1
  let found = -1
  while (low <= high) {
    const middle = (low + high) >>> 1
    if (versions[middle]!.from <= at) {
      found = middle
      low = middle + 1
    } else {
      high = middle - 1
    }
  }
  return found
}

/** What a read sees at an instant: the live version and, when one is scheduled, its deletion. */
export interface View<T> {
  readonly version: Version<T>
  readonly value: T
  /** Epoch ms of the deletion in force or scheduled after `at`, else null. */
  readonly deletedAt: number | null
}

/** The `from` of the first version after `at`, or +Infinity. */
export function nextVersionAfter(versions: readonly { from: number }[] | undefined, at: number): number {
  if (versions === undefined) return Number.POSITIVE_INFINITY
  for (const version of versions) if (version.from > at) return version.from
  return Number.POSITIVE_INFINITY
}

/**
 * The record in force at `at`. A record deleted at or before `at` is absent unless
 * `includeDeleted`, which answers the last live version with its deletion time.
 */
export function viewAt<T>(
  versions: readonly Version<T>[] | undefined,
  at: number,
  includeDeleted = false,
): View<T> | null {
  if (versions === undefined) return null
  const index = indexAt(versions, at)
  if (index < 0) return null
  const current = versions[index]!
  if (current.value === null) {
    if (!includeDeleted) return null
    for (let live = index - 1; live >= 0; live--) {
      const version = versions[live]!
      if (version.value !== null) return { version, value: version.value, deletedAt: current.from }
    }
    return null
  }
  const next = versions[index + 1]
  const deletedAt = next !== undefined && next.value === null ? next.from : null
  return { version: current, value: current.value, deletedAt }
}

export interface PlannedWrite<T> {
  readonly versions: Version<T>[]
  readonly changeType: ChangeType
}

/**
 * Plans a write of `value` (null deletes) taking effect at `version.from`. Answers null when it would
 * change nothing: the same content is already in force then (dedup), or a delete of what is absent.
 * `removeLater` drops every version after the new one (a price's remove_future_changes).
 */
export function planWrite<T>(
  versions: readonly Version<T>[] | undefined,
  version: Version<T>,
  options: { removeLater?: boolean; force?: boolean } = {},
): PlannedWrite<T> | null {
  const existing = versions ?? []
  const index = indexAt(existing, version.from)
  const inForce = index >= 0 ? existing[index]! : null
  const liveBefore = inForce !== null && inForce.value !== null
  const hasLater = index + 1 < existing.length
  if (version.value === null && !liveBefore) return null
  const unchanged = inForce !== null && inForce.hash === version.hash
  if (unchanged && !options.force && !(options.removeLater === true && hasLater)) return null
  const next: Version<T>[] = existing.slice(0, index + 1)
  if (inForce !== null && inForce.from === version.from) next.pop()
  next.push(version)
  if (options.removeLater !== true) {
    for (let later = index + 1; later < existing.length; later++) next.push(existing[later]!)
  }
  assert(isSorted(next), 'versions must stay sorted by from')
  const changeType: ChangeType = version.value === null ? 'deleted' : liveBefore ? 'updated' : 'created'
  return { versions: next, changeType }
}

function isSorted<T>(versions: readonly Version<T>[]): boolean {
  for (let index = 1; index < versions.length; index++) {
    if (versions[index - 1]!.from >= versions[index]!.from) return false
  }
  return true
}
