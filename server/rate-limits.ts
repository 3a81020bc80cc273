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
  readonly headers: Record<string, string>
}

export class TokenBucket {
  #tokens: number
  #updatedMs: number

  constructor(
    readonly rate: number | null,
    readonly burst: number | null,
    nowMs: number,
  ) {
    this.#tokens = burst ?? Number.POSITIVE_INFINITY
    this.#updatedMs = nowMs
  }

  #refill(nowMs: number): void {
    if (this.rate === null || this.burst === null) return
    const elapsedS = Math.max(0, nowMs - this.#updatedMs) / 1000
    this.#tokens = Math.min(this.burst, this.#tokens + elapsedS * this.rate)
    this.#updatedMs = nowMs
  }

  /** Takes `cost` items if the bucket holds them. */
  take(cost: number, nowMs: number): TakeResult {
    this.#refill(nowMs)
    if (this.rate === null || this.burst === null) {
      return { allowed: true, retryAfterS: 0, headers: {} }
    }
    if (this.#tokens >= cost) {
      this.#tokens -= cost
      return { allowed: true, retryAfterS: 0, headers: this.headers(nowMs) }
    }
    const retryAfterS = this.rate > 0 ? Math.max(1, Math.ceil((cost - this.#tokens) / this.rate)) : 3600
    return { allowed: false, retryAfterS, headers: this.headers(nowMs) }
  }

  /** The X-RateLimit-* headers for the bucket as it stands. */
  headers(nowMs: number): Record<string, string> {
    if (this.rate === null || this.burst === null) return {}
    this.#refill(nowMs)
    const missing = this.burst - this.#tokens
    const fullAtS = Math.ceil((nowMs + (this.rate > 0 ? (missing / this.rate) * 1000 : 0)) / 1000)
    return {
      'x-ratelimit-limit': String(this.burst),
      'x-ratelimit-remaining': String(Math.floor(this.#tokens)),
      'x-ratelimit-reset': String(fullAtS),
    }
  }
}
