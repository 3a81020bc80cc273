/**
 * A home publishes its commits to the replicas' stream in sequence order, whatever order their
 * durability settles in, and a commit whose XADD failed while Redis answered is published on the
 * next retry (cluster/replication.ts). A bench run found both: LMDB settled a later batch's
 * durability first, its XADD went first, the earlier batch's XADD was refused ("ID equal or smaller
 * than the top item"), and everything after it stayed queued until Redis reconnected, which it
 * never did; the replicas stood still at a sequence while reads at a newer one went to the home.
 * Real Redis, the home's own code; the batches stand for durable commits.
 */
import { pino } from 'pino'
import t from 'tap'
import { connectRedis } from '../../cluster/redis.js'
import { Replication } from '../../cluster/replication.js'
import type { CommittedBatch, TenantRegistry, TenantRuntime } from '../../tenant/runtime.js'
import type { LogEntry } from '../../storage/log-entry.js'
import { redisForTest } from '../helpers/redis.js'
import { until } from '../helpers/until.js'

const redis = await redisForTest(t)
if (redis !== null) {
  const client = connectRedis(redis.url)
  t.teardown(() => client.disconnect())
  await until(() => client.status === 'ready', 5_000, 'Redis connected')
  const replication = new Replication(client, {} as TenantRegistry, pino({ level: 'silent' }), Date.now)
  replication.start()
  t.teardown(() => replication.stop())
  const tenantNamed = (slug: string) => ({ slug, log: pino({ level: 'silent' }) }) as unknown as TenantRuntime
  const batch = (first: number, last: number): CommittedBatch => ({
    changes: [],
    extra: [],
    prices: [],
    entries: Array.from(
      { length: last - first + 1 },
      (_, index) => ({ sequence: first + index, checksum: `c${first + index}` }) as unknown as LogEntry,
    ),
  })
  const streamIds = async (slug: string) => (await client.xrange(`pricing:log:${slug}`, '-', '+')).map(([id]) => id)

  t.test('a later batch durable first is still published after the earlier one', async (t) => {
    const tenant = tenantNamed('order')
    let settleFirst!: (value: CommittedBatch) => void
    const first = new Promise<CommittedBatch>((resolve) => (settleFirst = resolve))
    const publishedFirst = replication.committed(tenant, first)
    const publishedSecond = replication.committed(tenant, Promise.resolve(batch(3, 4)))
    // The second is durable and waits for the first.
    await new Promise((resolve) => setTimeout(resolve, 100))
    t.same(await streamIds('order'), [], 'nothing is published while the earlier batch is not durable')
    settleFirst(batch(1, 2))
    await Promise.all([publishedFirst, publishedSecond])
    t.same(await streamIds('order'), ['2-0', '4-0'], 'the stream holds both batches, in sequence order')
    t.equal(replication.queuedCommits, 0, 'no batch was refused and queued')
  })

  t.test('a commit whose XADD failed while Redis answers is published by the retry', async (t) => {
    const tenant = tenantNamed('retry')
    // A key of the wrong type makes the XADD fail with Redis up (as an out-of-order id did).
    await client.set('pricing:log:retry', 'not a stream')
    await replication.committed(tenant, Promise.resolve(batch(1, 1)))
    await replication.committed(tenant, Promise.resolve(batch(2, 3)))
    t.equal(replication.queuedCommits, 2, 'both commits are queued, in order')
    await client.del('pricing:log:retry')
    const waitedMs = await until(() => replication.queuedCommits === 0, 5_000, 'the queue published')
    t.ok(
      waitedMs <= 2_500,
      `published by the retry ${waitedMs} ms after the stream could take it (retry every 1,000 ms)`,
    )
    t.same(await streamIds('retry'), ['1-0', '3-0'], 'both in order')
  })

  t.test('a queued commit that Redis already has (its answer was lost) is skipped, not refused', async (t) => {
    const tenant = tenantNamed('lost-answer')
    await client.set('pricing:log:lost-answer', 'not a stream')
    await replication.committed(tenant, Promise.resolve(batch(1, 5)))
    t.equal(replication.queuedCommits, 1)
    // The XADD "reached Redis": the stream has the commit ending at 5.
    await client.del('pricing:log:lost-answer')
    await client.xadd('pricing:log:lost-answer', '5-*', 'b', 'published before the answer was lost')
    await until(() => replication.queuedCommits === 0, 5_000, 'the queue emptied')
    await replication.committed(tenant, Promise.resolve(batch(6, 6)))
    t.same(await streamIds('lost-answer'), ['5-0', '6-0'], 'the commit is there once, and the next one follows it')
    t.equal(replication.queuedCommits, 0)
  })
}
