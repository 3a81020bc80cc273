/**
 * A lease in Redis (issue 10): at most one holder of a named role at a time (the node that fetches
 * the FX feed; later a tenant's home), never a home-made consensus.
 *
 * - Taken with `SET key owner NX PX ttl`, kept by renewing (`PEXPIRE` only if the owner is still
 *   the holder, in one Lua script), given back with a compare-and-delete.
 * - Each acquisition increments a fencing counter; the holder's token goes with what it does
 *   under the lease, so a writer can refuse a holder that lost it (paused, cut off) in favour of a
 *   newer one.
 * - A holder trusts its lease only until `renewed + 0.8 x ttl` on its own clock: when Redis cannot
 *   be reached, it stops acting before the key can expire for the others.
 * - The keeper tries every ttl/3: a dead holder's lease passes to another node within ttl + ttl/3,
 *   under two lease intervals.
 * @module
 */
import type { Redis } from 'ioredis'

const acquireScript = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return redis.call('INCR', KEYS[2])
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return tonumber(redis.call('GET', KEYS[2]))
end
return false`
const renewScript = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`
const releaseScript = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`

/** The share of the TTL a holder trusts its lease for after a renewal began (clock drift, latency). */
const trustedShare = 0.8

export interface LeaseOptions {
  /** The role: `fx-fetcher`, … (the Redis keys are `pricing:lease:<name>` and `…:fence`). */
  readonly name: string
  /** This node's id. */
  readonly owner: string
  readonly ttlMs: number
  /** Asked before each attempt to take the lease while it is not held (a region's home: cluster/placement.ts). */
  readonly mayAcquire?: () => Promise<boolean>
}

export interface LeaseEvents {
  acquired(token: number): void
  lost(reason: string): void
}

type LeaseRedis = Redis & {
  leaseAcquire(key: string, fence: string, owner: string, ttlMs: number): Promise<number | null>
  leaseRenew(key: string, owner: string, ttlMs: number): Promise<number>
  leaseRelease(key: string, owner: string): Promise<number>
}

function withScripts(redis: Redis): LeaseRedis {
  const scripted = redis as LeaseRedis
  if (typeof scripted.leaseAcquire !== 'function') {
    redis.defineCommand('leaseAcquire', { numberOfKeys: 2, lua: acquireScript })
    redis.defineCommand('leaseRenew', { numberOfKeys: 1, lua: renewScript })
    redis.defineCommand('leaseRelease', { numberOfKeys: 1, lua: releaseScript })
  }
  return scripted
}

export class LeaseKeeper {
  readonly #redis: LeaseRedis
  readonly #key: string
  readonly #fence: string
  #token: number | null = null
  /** Until when (own clock, ms) the held lease is trusted. */
  #trustedUntil = 0
  #timer: NodeJS.Timeout | null = null
  #busy = false
  #stopped = false

  constructor(
    redis: Redis,
    readonly options: LeaseOptions,
    readonly events: LeaseEvents,
    readonly now: () => number,
  ) {
    this.#redis = withScripts(redis)
    this.#key = `pricing:lease:${options.name}`
    this.#fence = `${this.#key}:fence`
  }

  /** The fencing token while the lease is held and trusted, else null. */
  get token(): number | null {
    if (this.#token !== null && this.now() >= this.#trustedUntil) this.#lose('not renewed in time (Redis unreachable?)')
    return this.#token
  }

  start(): void {
    this.#stopped = false
    void this.#tick()
  }

  /** Tries at once instead of at the next period (Redis came back). */
  poke(): void {
    if (this.#stopped || this.#busy) return
    if (this.#timer !== null) clearTimeout(this.#timer)
    void this.#tick()
  }

  /** Stops trying; `release` gives a held lease back at once (otherwise it runs out). */
  async stop(release = true): Promise<void> {
    this.#stopped = true
    if (this.#timer !== null) clearTimeout(this.#timer)
    this.#timer = null
    const held = this.#token !== null
    this.#token = null
    if (held && release) await this.#redis.leaseRelease(this.#key, this.options.owner).catch(() => 0)
  }

  async #tick(): Promise<void> {
    if (this.#stopped || this.#busy) return
    this.#busy = true
    const started = this.now()
    try {
      if (this.#token === null) {
        const may = this.options.mayAcquire === undefined ? true : await this.options.mayAcquire()
        const token = !may
          ? null
          : await this.#redis.leaseAcquire(this.#key, this.#fence, this.options.owner, this.options.ttlMs)
        if (token !== null && !this.#stopped) {
          this.#token = Number(token)
          this.#trustedUntil = started + this.options.ttlMs * trustedShare
          this.events.acquired(this.#token)
        }
      } else {
        const renewed = await this.#redis.leaseRenew(this.#key, this.options.owner, this.options.ttlMs)
        if (renewed === 1) this.#trustedUntil = started + this.options.ttlMs * trustedShare
        else this.#lose('taken over: the lease expired before it was renewed')
      }
    } catch {
      // Redis unreachable: a held lease is trusted until its deadline (the `token` getter checks).
      if (this.#token !== null && this.now() >= this.#trustedUntil)
        this.#lose('not renewed in time (Redis unreachable)')
    } finally {
      this.#busy = false
      if (!this.#stopped) {
        // A holder looks again by its trust deadline at the latest, so a lease it cannot renew is let go on time.
        const period = Math.floor(this.options.ttlMs / 3)
        const delay = this.#token === null ? period : Math.min(period, this.#trustedUntil - this.now())
        this.#timer = setTimeout(() => void this.#tick(), Math.max(1, delay))
        this.#timer.unref()
      }
    }
  }

  #lose(reason: string): void {
    if (this.#token === null) return
    this.#token = null
    this.events.lost(reason)
  }
}
