/**
 * Which versions history retention removes (engine/retention.ts), over random version lists
 * (fast-check): never the version in force, one scheduled after it, or one of the 3 most recent;
 * with only the time window, exactly the versions that ended before it (so every as-of read inside
 * the window answers as before); with a count, no more than it keeps unless protection says so.
 */
import fc from 'fast-check'
import t from 'tap'
import { recentVersionsKept, versionsToRemove } from '../../engine/retention.js'

const day = 86_400_000
const now = 1_000 * day

/** Sorted distinct starts around `now` (some scheduled after it). */
const starts = fc
  .uniqueArray(fc.integer({ min: now - 400 * day, max: now + 30 * day }), { minLength: 0, maxLength: 40 })
  .map((values) => values.sort((a, b) => a - b))
const policy = fc.record({
  maxVersions: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 20 })),
  historyMs: fc.integer({ min: 1, max: 200 * day }),
})

/** Index of the version in force at `at`, or -1. */
function inForceAt(froms: readonly number[], at: number): number {
  let found = -1
  for (let index = 0; index < froms.length && froms[index]! <= at; index++) found = index
  return found
}

t.test('protected versions always stay; the window and the count are honoured', async (t) => {
  fc.assert(
    fc.property(starts, policy, (froms, rules) => {
      const remove = versionsToRemove(froms.length, (index) => froms[index]!, now, rules)
      const inForce = inForceAt(froms, now)
      const protectedFrom = inForce < 0 ? 0 : Math.max(0, Math.min(inForce, froms.length - recentVersionsKept))
      if (remove < 0 || remove > protectedFrom) return false
      const windowStart = now - rules.historyMs
      if (rules.maxVersions === 0) {
        // Each removed version ended before the window; the first kept one did not (or is protected).
        for (let index = 0; index < remove; index++) if (froms[index + 1]! > windowStart) return false
        if (remove < protectedFrom && froms[remove + 1]! <= windowStart) return false
        // As-of reads inside the window answer the same version.
        const kept = froms.slice(remove)
        for (const at of [windowStart, windowStart + 1, now, ...froms.filter((from) => from >= windowStart)]) {
          const before = inForceAt(froms, at)
          const after = inForceAt(kept, at)
          if (before !== (after < 0 ? -1 : after + remove)) return false
        }
      } else if (froms.length - remove > rules.maxVersions && remove < protectedFrom) {
        return false
      }
      return true
    }),
    { seed: 8, numRuns: 5_000 },
  )
  t.pass('5,000 random version lists')
})

t.test('named cases', async (t) => {
  const froms = Array.from({ length: 10 }, (_, index) => now - (10 - index) * day)
  const of = (index: number) => froms[index]!
  t.equal(versionsToRemove(10, of, now, { maxVersions: 0, historyMs: 30 * day }), 0, 'all within 30 days: none')
  t.equal(
    versionsToRemove(10, of, now, { maxVersions: 0, historyMs: 4.5 * day }),
    5,
    'a 4.5-day window keeps the 5 in force within it',
  )
  t.equal(
    versionsToRemove(10, of, now, { maxVersions: 2, historyMs: 30 * day }),
    7,
    'max 2 still keeps the 3 most recent',
  )
  t.equal(versionsToRemove(10, of, now, { maxVersions: 0, historyMs: 1 }), 7, 'a tiny window: the 3 most recent stay')
  const scheduled = [now - 3 * day, now - 2 * day, now - day, now + day, now + 2 * day]
  t.equal(
    versionsToRemove(5, (index) => scheduled[index]!, now, { maxVersions: 1, historyMs: 1 }),
    2,
    'in force and the 2 scheduled stay',
  )
  t.equal(
    versionsToRemove(2, (index) => [now + day, now + 2 * day][index]!, now, { maxVersions: 1, historyMs: 1 }),
    0,
    'nothing in force yet: all stay',
  )
})
