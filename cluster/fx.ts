/**
 * One FX fetcher for the cluster (issue 10; SPEC `fx.rate.auto.update`: only the master node
 * fetches). The node that holds the `fx-fetcher` lease (cluster/lease.ts) fetches the feed and
 * shares it in Redis (`pricing:fx:latest`, with its fencing token); every node applies a shared
 * feed newer than its own to its tenants (tenant/fx-feed.ts). A holder that lost its lease cannot
 * overwrite a newer holder's feed: the write is refused when its token is lower than the stored one.
 * @module
 */
import type { Redis } from 'ioredis'
import type { FxFeedCluster } from '../tenant/fx-feed.js'
import type { FxFeedRecord } from '../storage/system-store.js'
import type { LeaseKeeper } from './lease.js'

const feedKey = 'pricing:fx:latest'

const publishScript = `
local current = redis.call('HGET', KEYS[1], 'token')
if current and tonumber(current) > tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'token', ARGV[1], 'record', ARGV[2])
return 1`

type FeedRedis = Redis & { fxPublish(key: string, token: number, record: string): Promise<number> }

export class RedisFxFeed implements FxFeedCluster {
  readonly #redis: FeedRedis

  constructor(
    redis: Redis,
    readonly lease: LeaseKeeper,
    readonly checkEveryMs: number,
  ) {
    this.#redis = redis as FeedRedis
    if (typeof this.#redis.fxPublish !== 'function')
      redis.defineCommand('fxPublish', { numberOfKeys: 1, lua: publishScript })
  }

  isFetcher(): boolean {
    return this.lease.token !== null
  }

  async publish(record: FxFeedRecord): Promise<void> {
    const token = this.lease.token
    if (token === null) throw new Error('the fetcher lease was lost before the feed could be shared')
    const stored = await this.#redis.fxPublish(feedKey, token, JSON.stringify(record))
    if (stored !== 1) throw new Error(`a newer fetcher (token above ${token}) shared a feed already`)
  }

  async latest(): Promise<FxFeedRecord | null> {
    const text = await this.#redis.hget(feedKey, 'record')
    return text === null ? null : (JSON.parse(text) as FxFeedRecord)
  }
}
