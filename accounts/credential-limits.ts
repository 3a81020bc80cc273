/**
 * Limits on failed credentials and on mail sent on request (the token endpoint, the admin token,
 * sign-in links): a token bucket per key (a client id with an address, an address, an e-mail
 * address), in a table of bounded size. A bucket that has refilled to its burst knows nothing a new
 * one would not, so those are forgotten first when the table is full, then those not locked out;
 * a lockout goes only when every entry is one. Emptying the whole table at its bound (what was
 * here before) handed every locked-out key a fresh burst.
 * @module
 */
import { TokenBucket } from '../tenant/rate-limits.js'

export class KeyedBuckets {
  /** Insertion order is use order: a bucket is moved to the end at each use (least recent first). */
  readonly #buckets = new Map<string, TokenBucket>()

  constructor(
    /** Items per second a bucket refills. */
    readonly rate: number,
    readonly burst: number,
    /** Keys remembered at most. */
    readonly keysMax: number,
  ) {}

  get size(): number {
    return this.#buckets.size
  }

  /** The bucket of `key`, created full if unknown (the table making room first). */
  bucket(key: string, nowMs: number): TokenBucket {
    let bucket = this.#buckets.get(key)
    if (bucket !== undefined) {
      this.#buckets.delete(key)
      this.#buckets.set(key, bucket)
      return bucket
    }
    if (this.#buckets.size >= this.keysMax) this.#makeRoom(nowMs)
    bucket = new TokenBucket(this.rate, this.burst, nowMs)
    this.#buckets.set(key, bucket)
    return bucket
  }

  /** Whether `key` may spend one item now (an unknown key may: its bucket would be full). */
  allows(key: string, nowMs: number): boolean {
    const bucket = this.#buckets.get(key)
    return bucket === undefined || bucket.level(nowMs) >= 1
  }

  /** Seconds until `key` may spend one item again (0 when it may now). */
  retryAfterS(key: string, nowMs: number): number {
    const bucket = this.#buckets.get(key)
    if (bucket === undefined) return 0
    const missing = 1 - bucket.level(nowMs)
    return missing <= 0 ? 0 : Math.max(1, Math.ceil(missing / this.rate))
  }

  /**
   * Makes room for a new key without forgetting a lockout while anything else can go: first
   * buckets that have refilled (up to an eighth of the table, oldest first), else buckets not
   * locked out (one can still spend an item: up to a sixty-fourth, oldest first), and only when
   * every entry is locked out, the least recently used one. Amortized, a scan per many inserts.
   */
  #makeRoom(nowMs: number): void {
    const refilled = (bucket: TokenBucket): boolean => bucket.level(nowMs) >= this.burst
    if (this.#forget(Math.max(1, Math.floor(this.keysMax / 8)), refilled) > 0) return
    const notLockedOut = (bucket: TokenBucket): boolean => bucket.level(nowMs) >= 1
    if (this.#forget(Math.max(1, Math.floor(this.keysMax / 64)), notLockedOut) > 0) return
    this.#forget(1, () => true)
  }

  /** Deletes up to `count` entries that `forgettable` accepts, least recently used first. */
  #forget(count: number, forgettable: (bucket: TokenBucket) => boolean): number {
    let freed = 0
    for (const [key, bucket] of this.#buckets) {
      if (!forgettable(bucket)) continue
      this.#buckets.delete(key)
      if (++freed >= count) break
    }
    return freed
  }
}
