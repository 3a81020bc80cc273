/**
 * Token buckets per tenant and dimension (`query`, `ingest`), counted in items. A bucket refills at
 * `rate` items per second up to `burst`. Behind this small interface a cluster-wide limiter (e.g.
 * Redis) can replace the in-process one.
 * @module
 */

export type Dimension = 'query' | 'ingest'

export interface TakeResult {
  readonly allowed: boolean
  /** Seconds to wait before the same request can pass (0 when allowed). */
  readonly retryAfterS: number
  readonly headers: Readonly<Record<string, string>>
}

/**
 * A tenant's bucket for one dimension: this in-process one, or the cluster's shared one
 * (cluster/rate-limits.ts), whose `take` may wait for a lease of tokens from Redis.
 */
export interface RateBucket {
  readonly rate: number | null
  readonly burst: number | null
  take(cost: number, nowMs: number): TakeResult | Promise<TakeResult>
  headers(nowMs: number): Readonly<Record<string, string>>
}

/** Makes a tenant's bucket (the registry's; cluster mode gives the shared one). */
export type BucketFactory = (
  slug: string,
  dimension: Dimension,
  rate: number | null,
  burst: number | null,
  nowMs: number,
) => RateBucket

export const localBuckets: BucketFactory = (_slug, _dimension, rate, burst, nowMs) =>
  new TokenBucket(rate, burst, nowMs)

const noHeaders: Readonly<Record<string, string>> = Object.freeze({})
const allowedUnlimited: TakeResult = Object.freeze({ allowed: true, retryAfterS: 0, headers: noHeaders })

export class TokenBucket implements RateBucket {
  #tokens: number
  #updatedMs: number
  /** The last headers answered and what they were made of: an unchanged bucket repeats them. */
  #headers: Readonly<Record<string, string>> = noHeaders
  #headersRemaining = -1
  #headersResetS = -1
  /** Texts that change rarely: the limit never, the reset at most once a second. */
  readonly #limitText: string
  #resetText = ''

  constructor(
    readonly rate: number | null,
    readonly burst: number | null,
    nowMs: number,
  ) {
    this.#tokens = burst ?? Number.POSITIVE_INFINITY
    this.#updatedMs = nowMs
    this.#limitText = burst === null ? '' : String(burst)
  }

  #refill(nowMs: number): void {
    if (this.rate === null || this.burst === null) return
    const elapsedS = Math.max(0, nowMs - this.#updatedMs) / 1000
    this.#tokens = Math.min(this.burst, this.#tokens + elapsedS * this.rate)
    this.#updatedMs = nowMs
  }

  /** The items the bucket holds now (infinite when unlimited). */
  level(nowMs: number): number {
    this.#refill(nowMs)
    return this.#tokens
  }

  /** Takes `cost` items if the bucket holds them. */
  take(cost: number, nowMs: number): TakeResult {
    this.#refill(nowMs)
    if (this.rate === null || this.burst === null) return allowedUnlimited
    if (this.#tokens >= cost) {
      this.#tokens -= cost
      return { allowed: true, retryAfterS: 0, headers: this.headers(nowMs) }
    }
    const retryAfterS = this.rate > 0 ? Math.max(1, Math.ceil((cost - this.#tokens) / this.rate)) : 3600
    return { allowed: false, retryAfterS, headers: this.headers(nowMs) }
  }

  /** Gives back `count` items taken for something that did not happen after all (up to the burst). */
  give(count: number, nowMs: number): void {
    this.#refill(nowMs)
    if (this.burst !== null) this.#tokens = Math.min(this.burst, this.#tokens + count)
  }

  /**
   * The X-RateLimit-* headers for the bucket as it stands. Read-only: the same object is answered
   * again while remaining and reset are unchanged (take() and the answer ask twice per request),
   * and otherwise only the remaining count is converted to text.
   */
  headers(nowMs: number): Readonly<Record<string, string>> {
    if (this.rate === null || this.burst === null) return noHeaders
    this.#refill(nowMs)
    const missing = this.burst - this.#tokens
    const fullAtS = Math.ceil((nowMs + (this.rate > 0 ? (missing / this.rate) * 1000 : 0)) / 1000)
    const remaining = Math.floor(this.#tokens)
    if (remaining === this.#headersRemaining && fullAtS === this.#headersResetS) return this.#headers
    if (fullAtS !== this.#headersResetS) this.#resetText = String(fullAtS)
    this.#headersRemaining = remaining
    this.#headersResetS = fullAtS
    this.#headers = Object.freeze({
      'x-ratelimit-limit': this.#limitText,
      'x-ratelimit-remaining': String(remaining),
      'x-ratelimit-reset': this.#resetText,
    })
    return this.#headers
  }
}
