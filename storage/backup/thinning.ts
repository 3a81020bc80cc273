/**
 * Thinning of automatic backups (SPEC "Backup and restore rules" 2), a pure function of the
 * backups and the current time, run once per hour by the scheduler:
 *
 * | age | kept |
 * |---|---|
 * | under 4 hours | every backup |
 * | 4 to 24 hours | one per hour |
 * | 1 to 7 days | one per day |
 * | 1 to 4 weeks | one per week |
 * | 4 weeks to 6 months | one per month |
 * | over 6 months | none |
 *
 * Manual backups and backups with `retain` are never deleted automatically. "One per period" is
 * the oldest backup of each UTC calendar period (hour, day, ISO week from Monday, month) among
 * those of that age band: a backup kept once stays the oldest of its longer periods too, so a kept
 * backup is not traded for a newer one at the next run. 6 months is 183 days.
 * @module
 */

export interface ThinnableBackup {
  readonly id: string
  /** Epoch ms. */
  readonly created: number
  readonly type: 'automatic' | 'manual'
  readonly retain: boolean
}

const hourMs = 3_600_000
const dayMs = 24 * hourMs
const weekMs = 7 * dayMs
/** 1970-01-05 was a Monday: weeks counted from it start on Mondays. */
const mondayEpochMs = 4 * dayMs

interface Band {
  /** Ages from (inclusive) ... */
  readonly fromMs: number
  /** ... until (exclusive). */
  readonly untilMs: number
  /** The period a backup falls in; null: keep every backup of the band. */
  readonly period: ((created: number) => number) | null
}

const bands: readonly Band[] = [
  { fromMs: 0, untilMs: 4 * hourMs, period: null },
  { fromMs: 4 * hourMs, untilMs: dayMs, period: (created) => Math.floor(created / hourMs) },
  { fromMs: dayMs, untilMs: 7 * dayMs, period: (created) => Math.floor(created / dayMs) },
  { fromMs: 7 * dayMs, untilMs: 28 * dayMs, period: (created) => Math.floor((created - mondayEpochMs) / weekMs) },
  {
    fromMs: 28 * dayMs,
    untilMs: 183 * dayMs,
    period: (created) => {
      const date = new Date(created)
      return date.getUTCFullYear() * 12 + date.getUTCMonth()
    },
  },
]

/** The ids of the automatic backups thinning deletes at `nowMs`. */
export function backupsToThin(backups: readonly ThinnableBackup[], nowMs: number): Set<string> {
  const doomed = new Set<string>()
  // Oldest first, so that the first backup seen in a period is the one kept.
  const candidates = backups
    .filter((backup) => backup.type === 'automatic' && !backup.retain)
    .sort((left, right) => left.created - right.created || (left.id < right.id ? -1 : 1))
  const kept = bands.map(() => new Set<number>())
  for (const backup of candidates) {
    const age = nowMs - backup.created
    const index = bands.findIndex((band) => age >= band.fromMs && age < band.untilMs)
    // Younger than now (a clock step back) counts as new; past the last band, deleted.
    if (age < 0) continue
    if (index < 0) {
      doomed.add(backup.id)
      continue
    }
    const band = bands[index]!
    if (band.period === null) continue
    const period = band.period(backup.created)
    if (kept[index]!.has(period)) doomed.add(backup.id)
    else kept[index]!.add(period)
  }
  return doomed
}
