/**
 * Thinning (storage/backup/thinning.ts) over a simulated year: an automatic backup every 10
 * minutes, thinning every hour, plus manual and retained backups. At the end each age band holds
 * exactly the spec's count (every backup under 4 hours, one per hour to a day, one per day to a
 * week, one per week to 4 weeks, one per month to 6 months, none older), each kept backup is the
 * first of its period, manual and retained backups all survive, and a second pass deletes nothing.
 */
import t from 'tap'
import { backupsToThin, type ThinnableBackup } from '../../storage/backup/thinning.js'

const minuteMs = 60_000
const hourMs = 60 * minuteMs
const dayMs = 24 * hourMs
const start = Date.UTC(2025, 0, 1)

t.test('a year of backups every 10 minutes, thinned hourly', async (t) => {
  let backups: ThinnableBackup[] = []
  let now = start
  const end = start + 365 * dayMs
  let created = 0
  for (; now <= end; now += 10 * minuteMs) {
    const id = `acme-${new Date(now).toISOString()}`
    // Every 1,000th backup is retained; every day at 12:05 a manual one.
    backups.push({ id, created: now, type: 'automatic', retain: created % 1_000 === 999 })
    created++
    if (now % dayMs === 12 * hourMs)
      backups.push({ id: `${id}-manual`, created: now + 5 * minuteMs, type: 'manual', retain: false })
    if (now % hourMs === 0) {
      const doomed = backupsToThin(backups, now)
      backups = backups.filter((backup) => !doomed.has(backup.id))
    }
  }
  now -= 10 * minuteMs
  const automatic = backups.filter((backup) => backup.type === 'automatic' && !backup.retain)
  const aged = (from: number, until: number) =>
    automatic.filter((backup) => now - backup.created >= from && now - backup.created < until)
  t.equal(aged(0, 4 * hourMs).length, 24, 'under 4 hours: every backup (24 at 10 minutes)')
  const hours = aged(4 * hourMs, dayMs)
  t.equal(hours.length, 20, 'from 4 to 24 hours: one per hour')
  t.ok(
    hours.every((backup) => backup.created % hourMs === 0),
    'each the first of its hour',
  )
  const days = aged(dayMs, 7 * dayMs)
  t.equal(days.length, 6, 'from 1 to 7 days: one per day')
  t.ok(
    days.every((backup) => backup.created % dayMs === 0),
    'each the first of its day',
  )
  const weeks = aged(7 * dayMs, 28 * dayMs)
  t.ok(
    weeks.length >= 3 && weeks.length <= 4,
    `from 1 to 4 weeks: one per week (${weeks.length}: the band spans parts of 4 calendar weeks)`,
  )
  t.ok(
    weeks.every((backup) => new Date(backup.created).getUTCDay() === 1 || backup === weeks[0]),
    'each the first of its week (Monday), but the oldest, cut by the band',
  )
  t.equal(
    new Set(weeks.map((backup) => Math.floor((backup.created - 4 * dayMs) / (7 * dayMs)))).size,
    weeks.length,
    'no two in one week',
  )
  const months = aged(28 * dayMs, 183 * dayMs)
  t.ok(months.length >= 5 && months.length <= 6, `from 4 weeks to 6 months: one per month (${months.length})`)
  t.equal(
    new Set(months.map((backup) => new Date(backup.created).toISOString().slice(0, 7))).size,
    months.length,
    'no two in one month',
  )
  t.equal(aged(183 * dayMs, Number.POSITIVE_INFINITY).length, 0, 'older than 6 months: none')
  const retained = backups.filter((backup) => backup.retain)
  t.equal(retained.length, Math.floor(created / 1_000), 'every retained backup survives, whatever its age')
  const manual = backups.filter((backup) => backup.type === 'manual')
  t.equal(manual.length, 365, 'every manual backup survives')
  t.equal(backupsToThin(backups, now).size, 0, 'a second pass at the same time deletes nothing')
})

t.test('edges: empty, only new, a clock step back, ties', async (t) => {
  t.same([...backupsToThin([], start)], [])
  const fresh: ThinnableBackup[] = Array.from({ length: 30 }, (_, index) => ({
    id: `b${index}`,
    created: start - index * minuteMs,
    type: 'automatic',
    retain: false,
  }))
  t.equal(backupsToThin(fresh, start).size, 0, 'nothing under 4 hours goes')
  t.equal(backupsToThin(fresh, start - hourMs).size, 0, 'backups from the future (the clock went back) are kept')
  const tie: ThinnableBackup[] = [
    { id: 'b', created: start, type: 'automatic', retain: false },
    { id: 'a', created: start, type: 'automatic', retain: false },
  ]
  t.same([...backupsToThin(tie, start + 5 * hourMs)], ['b'], 'equal times: the lower id is kept')
  t.same(
    [...backupsToThin([{ id: 'old', created: start, type: 'automatic', retain: false }], start + 200 * dayMs)],
    ['old'],
    'older than 6 months goes even if alone',
  )
})
