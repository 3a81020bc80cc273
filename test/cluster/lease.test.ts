/**
 * Leases in a real Redis (cluster/lease.ts): of three keepers of one lease exactly one holds it;
 * fencing tokens rise with each holder; a holder that dies without giving it back is replaced
 * within two lease intervals; one that gives it back is replaced at the next try; while Redis is
 * down the holder stops trusting its lease before the key could expire, and after Redis returns
 * one keeper holds it again.
 */
import t from 'tap'
import type { Redis } from 'ioredis'
import { LeaseKeeper } from '../../cluster/lease.js'
import { connectRedis } from '../../cluster/redis.js'
import { noRedis, redisServerPath, RedisServer } from '../helpers/redis.js'
import { until } from '../helpers/until.js'

const ttlMs = 600
const executable = redisServerPath()

interface Keeper {
  readonly name: string
  readonly keeper: LeaseKeeper
  readonly events: string[]
  readonly redis: Redis
}

if (executable === null) {
  t.skip(noRedis, () => {})
} else {
  const server = await RedisServer.start(executable)
  t.teardown(() => server.stop())
  const keepers: Keeper[] = []
  function keeper(name: string, lease = 'fx-fetcher'): Keeper {
    const events: string[] = []
    const redis = connectRedis(server.url)
    const made: Keeper = {
      name,
      events,
      redis,
      keeper: new LeaseKeeper(
        redis,
        { name: lease, owner: name, ttlMs },
        { acquired: (token) => events.push(`acquired ${token}`), lost: (reason) => events.push(`lost: ${reason}`) },
        Date.now,
      ),
    }
    keepers.push(made)
    return made
  }
  t.teardown(async () => {
    for (const made of keepers) {
      await made.keeper.stop(false)
      made.redis.disconnect()
    }
  })
  const holders = (group: Keeper[]) => group.filter((made) => made.keeper.token !== null)

  t.test('one holder of three; a dead holder is replaced within two intervals, with a higher token', async (t) => {
    const group = [keeper('a'), keeper('b'), keeper('c')]
    for (const made of group) made.keeper.start()
    await until(() => holders(group).length === 1, 2_000)
    await new Promise((resolve) => setTimeout(resolve, ttlMs * 2))
    t.equal(holders(group).length, 1, 'still exactly one after two intervals of renewals')
    const first = holders(group)[0]!
    const firstToken = first.keeper.token!
    t.same(first.events, [`acquired ${firstToken}`], 'held throughout, never lost')
    // The holder dies: it stops renewing and never gives the lease back.
    await first.keeper.stop(false)
    const rest = group.filter((made) => made !== first)
    const took = await until(() => holders(rest).length === 1, ttlMs * 2)
    t.ok(took < ttlMs * 2, `another node holds it ${took} ms after the holder died (lease ${ttlMs} ms)`)
    const second = holders(rest)[0]!
    t.ok(second.keeper.token! > firstToken, `its fencing token is higher (${second.keeper.token} > ${firstToken})`)
    // Given back: the next try of the third takes it, well before the key would have expired.
    await second.keeper.stop(true)
    const third = rest.find((made) => made !== second)!
    const quick = await until(() => third.keeper.token !== null, ttlMs)
    t.ok(quick <= ttlMs / 3 + 200, `a released lease is taken at the next try (${quick} ms)`)
    t.ok(third.keeper.token! > second.events.length, 'with a higher token again')
    await third.keeper.stop(true)
  })

  t.test(
    'Redis down: the holder stops trusting its lease in time; after Redis returns one holds it again',
    async (t) => {
      const group = [keeper('x', 'outage'), keeper('y', 'outage')]
      for (const made of group) made.keeper.start()
      await until(() => holders(group).length === 1, 2_000)
      const holder = holders(group)[0]!
      await server.stop()
      const lostIn = await until(() => holder.events.some((event) => event.startsWith('lost')), ttlMs * 2)
      t.ok(
        lostIn <= ttlMs,
        `the holder lets go within the lease time (${lostIn} ms), before the key could pass to another`,
      )
      t.equal(holders(group).length, 0, 'nobody holds it while Redis is down')
      t.match(holder.events.at(-1), /^lost: not renewed in time/)
      await server.start()
      const back = await until(() => holders(group).length === 1, 5_000)
      t.pass(`one keeper holds it again ${back} ms after Redis returned`)
    },
  )
}
