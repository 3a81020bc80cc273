/**
 * Cluster-wide rate limits (issue 10; SPEC Rate limits 1: a tenant's limit holds whichever node
 * serves the request). A tenant's bucket per dimension lives in Redis (`pricing:rate:<slug>:<dim>`,
 * a hash of the tokens left and when, refilled at the plan's rate up to its burst on Redis's
 * clock). Nodes never ask Redis per request: each takes tokens in leases of a tenth of a second's
 * worth (at least what the request costs) with one Lua script, spends them locally, and asks for
 * the next lease when half of the current one is spent. A request that finds too few tokens here
 * waits for one lease (a round trip), and is refused with 429 only when Redis has none either.
 *
 * Over any stretch of time a tenant gets its burst plus its rate times the time, across all
 * nodes, give or take the leases the nodes hold unspent (at most a tenth of a second's worth
 * each).
 *
 * While Redis is unreachable each node falls back to its own in-process bucket: local limits
 * (SPEC: the node keeps serving). Leases left unspent are given up then.
 * @module
 */
import type { Redis } from 'ioredis'
import { TokenBucket, type Dimension, type RateBucket, type TakeResult } from '../tenant/rate-limits.js'

const takeScript = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
local stored = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(stored[1])
local at = tonumber(stored[2])
if tokens == nil or at == nil then tokens = burst at = now end
tokens = math.min(burst, tokens + math.max(0, now - at) * rate / 1000)
local granted = math.min(want, math.floor(tokens))
tokens = tokens - granted
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / math.max(rate, 0.001) * 1000) + 60000)
return { granted, tostring(tokens) }`

type RateRedis = Redis & { rateTake(key: string, rate: number, burst: number, want: number): Promise<[number, string]> }

/** A lease's size: a tenth of a second's worth of the rate. */
const leaseShareS = 0.1

/** What a shared bucket is made of: the tenant's dimension, its plan's rate and burst, Redis and a clock. */
export interface SharedBucketOptions {
  readonly redis: Redis
  readonly slug: string
  readonly dimension: Dimension
  readonly rate: number | null
  readonly burst: number | null
  /** When the bucket is made: its local stand-in starts full at this time. */
  readonly nowMs: number
  readonly redisUp: () => boolean
  readonly now: () => number
}

export class SharedBucket implements RateBucket {
  readonly #redis: RateRedis
  readonly #key: string
  readonly #local: TokenBucket
  readonly #lease: number
  /** Tokens leased from Redis and not spent yet. */
  #held = 0
  /** Tokens Redis had left after the last lease (for the X-RateLimit-Remaining header). */
  #sharedLeft: number
  #leasing: Promise<void> | null = null
  /**
   * Until when (own clock) Redis is known to be out of tokens: requests that lack tokens here are
   * refused without asking again, so a throttled client costs Redis one lease per node and lease
   * period, not a round trip per request.
   */
  #emptyUntilMs = 0

  readonly rate: number | null
  readonly burst: number | null
  /** Whether Redis answers now (the connection's state): otherwise local limits. */
  readonly redisUp: () => boolean
  /** The clock (when an empty shared bucket may have refilled). */
  readonly now: () => number

  constructor(options: SharedBucketOptions) {
    const { redis, slug, dimension, rate, burst, nowMs } = options
    this.rate = rate
    this.burst = burst
    this.redisUp = options.redisUp
    this.now = options.now
    this.#redis = redis as RateRedis
    if (typeof this.#redis.rateTake !== 'function')
      redis.defineCommand('rateTake', { numberOfKeys: 1, lua: takeScript })
    this.#key = `pricing:rate:${slug}:${dimension}`
    this.#local = new TokenBucket(rate, burst, nowMs)
    this.#lease = rate === null ? 0 : Math.max(1, Math.ceil(rate * leaseShareS))
    this.#sharedLeft = burst ?? 0
  }

  take(cost: number, nowMs: number): TakeResult | Promise<TakeResult> {
    if (this.rate === null || this.burst === null || !this.redisUp()) {
      this.#held = 0
      return this.#local.take(cost, nowMs)
    }
    if (this.#held >= cost) return this.#spend(cost, nowMs)
    if (nowMs < this.#emptyUntilMs) return this.#refused(cost, nowMs)
    return this.#leaseFor(cost).then(() => (this.#held >= cost ? this.#spend(cost, nowMs) : this.#refused(cost, nowMs)))
  }

  #spend(cost: number, nowMs: number): TakeResult {
    this.#held -= cost
    // Half the lease spent: the next one is asked for now, so a steady client rarely waits.
    if (this.#held < this.#lease / 2 && nowMs >= this.#emptyUntilMs) void this.#leaseFor(0).catch(() => undefined)
    return { allowed: true, retryAfterS: 0, headers: this.headers(nowMs) }
  }

  #refused(cost: number, nowMs: number): TakeResult {
    const rate = this.rate!
    const retryAfterS = rate > 0 ? Math.max(1, Math.ceil((cost - this.#held) / rate)) : 3600
    return { allowed: false, retryAfterS, headers: this.headers(nowMs) }
  }

  /** Leases what a request of `cost` lacks, and a lease's worth besides (one lease at a time). */
  async #leaseFor(cost: number): Promise<void> {
    if (this.#leasing !== null) {
      await this.#leasing
      if (this.#held >= cost || cost === 0) return
      // Another waiter may have started the next lease meanwhile: share it.
      if (this.#leasing !== null) return this.#leasing
    }
    const want = Math.min(Math.max(this.#lease, cost - this.#held), this.burst!)
    this.#leasing = this.#redis
      .rateTake(this.#key, this.rate!, this.burst!, want)
      .then(([granted, left]) => {
        this.#held += Number(granted)
        this.#sharedLeft = Number(left)
        // Less than asked for: the shared bucket is empty until about a lease's worth has flowed in.
        if (Number(granted) < want) this.#emptyUntilMs = this.now() + leaseShareS * 1000
      })
      .catch(() => {
        // Redis away: this request is refused; the next ones are limited locally (take() checks the state).
      })
      .finally(() => (this.#leasing = null))
    return this.#leasing
  }

  headers(nowMs: number): Readonly<Record<string, string>> {
    if (this.rate === null || this.burst === null) return {}
    if (!this.redisUp()) return this.#local.headers(nowMs)
    const remaining = Math.min(this.burst, Math.floor(this.#held + this.#sharedLeft))
    const fullAtS = Math.ceil((nowMs + (this.rate > 0 ? ((this.burst - remaining) / this.rate) * 1000 : 0)) / 1000)
    return {
      'x-ratelimit-limit': String(this.burst),
      'x-ratelimit-remaining': String(remaining),
      'x-ratelimit-reset': String(fullAtS),
    }
  }
}
