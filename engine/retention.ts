/**
 * History retention (SPEC setting catalogue `retention.*`; API.md §6): which versions of one
 * (pricelist, SKU) pair a retention pass removes. Versions are sorted by `from`; what goes is always
 * a prefix of the oldest ones:
 * - beyond `maxVersions` (0: no limit), counting from the newest;
 * - or no longer in force anywhere in the last `historyMs`: its successor started at or before
 *   `now - historyMs` (so every as-of read inside the window answers as before);
 * and never the version in force at `now`, one scheduled after it, or one of the
 * `recentVersionsKept` most recent; nor, with `priorPriceMs` (the tenant's `omnibus.days`), a
 * version a running reduction's prior price reads (engine/prior-price/): the versions before the
 * one in force whose sales only fell or stayed form the run a reduction in force began in, and the
 * version in force `priorPriceMs` before the run's first one stays, with every later one, when
 * the run holds a fall. A reduction a list inherits began within the run of the pair it reads (a
 * rise of that pair after the reduction's start would have raised the price too), for rules that
 * rise with their input. Not kept: what a reduction made by a VAT or FX change alone reads before
 * `historyMs` (docs/api.md, "Prior price").
 * @module
 */

/** The most recent versions a pass always keeps (API.md §6: at least 3). */
export const recentVersionsKept = 3

export interface RetentionPolicy {
  /** Versions kept at most (0: no limit). */
  readonly maxVersions: number
  /** Versions in force within this many milliseconds before now are kept. */
  readonly historyMs: number
  /** `omnibus.days` in milliseconds: what a running reduction's prior price reads is kept (with `salesOf`). */
  readonly priorPriceMs?: number
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
  /** The i-th version's sales, NaN for a deletion: needed with `policy.priorPriceMs`. */
  salesOf: ((index: number) => number) | null = null,
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
  if (salesOf !== null && policy.priorPriceMs !== undefined)
    return Math.min(remove, kept, priorPriceNeeds(fromOf, salesOf, inForce, policy.priorPriceMs))
  return Math.min(remove, kept)
}

/**
 * How many of the oldest versions a running reduction's prior price does not read: those that
 * ended before `priorPriceMs` ahead of the run of falling or equal sales that ends at `inForce`.
 */
function priorPriceNeeds(
  fromOf: (index: number) => number,
  salesOf: (index: number) => number,
  inForce: number,
  priorPriceMs: number,
): number {
  let first = inForce
  let fell = false
  // Back while the earlier version's sales were higher or the same (a deletion or a rise ends it).
  while (first > 0 && salesOf(first - 1) >= salesOf(first)) {
    if (salesOf(first - 1) > salesOf(first)) fell = true
    first--
  }
  // No fall in the run: no reduction of this pair's own is in force, nothing more to keep.
  if (!fell) return inForce
  const keepFrom = fromOf(first) - priorPriceMs
  let needed = first
  while (needed > 0 && fromOf(needed) > keepFrom) needed--
  return needed
}

/** What is wrong with a policy (values the settings' own checks let through), or null. */
export function retentionPolicyProblem(policy: RetentionPolicy): string | null {
  if (!Number.isSafeInteger(policy.maxVersions) || policy.maxVersions < 0)
    return 'retention.max.versions is not a non-negative integer'
  if (!Number.isSafeInteger(policy.historyMs) || policy.historyMs < 1)
    return 'retention.history.ms is not a positive integer'
  return null
}
