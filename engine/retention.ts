/**
 * History retention (SPEC setting catalogue `retention.*`; API.md §6): which versions of one
 * (pricelist, SKU) pair a retention pass removes. Versions are sorted by `from`; what goes is always
 * a prefix of the oldest ones:
 * - beyond `maxVersions` (0: no limit), counting from the newest;
 * - or no longer in force anywhere in the last `historyMs`: its successor started at or before
 *   `now - historyMs` (so every as-of read inside the window answers as before);
 * and never the version in force at `now`, one scheduled after it, or one of the
 * `recentVersionsKept` most recent.
 * @module
 */

/** The most recent versions a pass always keeps (API.md §6: at least 3). */
export const recentVersionsKept = 3

export interface RetentionPolicy {
  /** Versions kept at most (0: no limit). */
  readonly maxVersions: number
  /** Versions in force within this many milliseconds before now are kept. */
  readonly historyMs: number
}

/**
 * How many of a pair's oldest versions go: `count` versions, `fromOf(i)` the start of the i-th
 * (ascending).
 */
export function versionsToRemove(
  count: number,
  fromOf: (index: number) => number,
  now: number,
  policy: RetentionPolicy,
): number {
  // The version in force at `now` (the last one started by then); every later one is scheduled.
  let inForce = -1
  for (let index = count - 1; index >= 0; index--) {
    if (fromOf(index) <= now) {
      inForce = index
      break
    }
  }
  // Nothing in force yet: every version is scheduled, all are kept.
  if (inForce < 0) return 0
  const kept = Math.max(0, Math.min(inForce, count - recentVersionsKept))
  let remove = policy.maxVersions > 0 ? Math.max(0, count - policy.maxVersions) : 0
  const windowStart = now - policy.historyMs
  let ended = 0
  while (ended < count - 1 && fromOf(ended + 1) <= windowStart) ended++
  remove = Math.max(remove, ended)
  return Math.min(remove, kept)
}

/** What is wrong with a policy (values the settings' own checks let through), or null. */
export function retentionPolicyProblem(policy: RetentionPolicy): string | null {
  if (!Number.isSafeInteger(policy.maxVersions) || policy.maxVersions < 0)
    return 'retention.max.versions is not a non-negative integer'
  if (!Number.isSafeInteger(policy.historyMs) || policy.historyMs < 1)
    return 'retention.history.ms is not a positive integer'
  return null
}
