/**
 * The console chart's per-minute counts (tenant/activity.ts): requests and items land in
 * their minute, the hour slides (a minute 60 minutes old is gone, a slot reused starts from zero),
 * and the series is always 60 minutes, oldest first.
 */
import t from 'tap'
import { TenantActivity } from '../../tenant/activity.js'

t.test('minutes of the last hour', async (t) => {
  const activity = new TenantActivity()
  const start = Date.UTC(2026, 10, 25, 12, 0, 0)
  activity.record('query', 1, start)
  activity.record('query', 1, start + 59_999)
  activity.record('ingest', 500, start + 30_000)
  activity.record('ingest', 2, start + 60_000)
  let series = activity.lastHour(start + 60_000)
  t.equal(series.length, 60)
  t.equal(series[59]!.at, start + 60_000, 'the current minute is last')
  t.same(series[58], { at: start, queries: 2, ingestRequests: 1, ingestItems: 500 })
  t.same(series[59], { at: start + 60_000, queries: 0, ingestRequests: 1, ingestItems: 2 })
  t.equal(
    series.slice(0, 58).reduce((sum, minute) => sum + minute.queries + minute.ingestRequests, 0),
    0,
  )
  // 59 minutes later the first minute is the oldest; at 60 it is gone.
  series = activity.lastHour(start + 59 * 60_000)
  t.same(series[0], { at: start, queries: 2, ingestRequests: 1, ingestItems: 500 })
  series = activity.lastHour(start + 60 * 60_000)
  t.equal(
    series.find((minute) => minute.at === start),
    undefined,
    'an hour later the minute has left the series',
  )
  t.equal(
    series.reduce((sum, minute) => sum + minute.ingestItems, 0),
    2,
  )
  // The slot of `start` is reused 60 minutes later: it starts from zero.
  activity.record('query', 1, start + 60 * 60_000 + 5)
  t.same(activity.lastHour(start + 60 * 60_000)[59], {
    at: start + 60 * 60_000,
    queries: 1,
    ingestRequests: 0,
    ingestItems: 0,
  })
})
