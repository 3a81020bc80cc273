/**
 * Assertions for programmer errors (TigerBeetle's discipline, SQLite's vocabulary).
 * `assert` crashes on a broken invariant; it takes constant messages only so that the hot path builds
 * no strings. `VERIFY` guards O(n) checks: on in tests, off in production.
 * @module
 */

export class AssertionError extends Error {
  override name = 'AssertionError'
}

export const VERIFY = process.env.PRICING_VERIFY === 'true'

export function assert(condition: unknown, message = 'assertion failed'): asserts condition {
  if (!condition) throw new AssertionError(message)
}

/** Documents that a condition is sometimes true and sometimes false; it checks nothing. */
export function maybe(_condition: unknown): void {}
