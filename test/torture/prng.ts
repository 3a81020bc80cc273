/**
 * A small seeded PRNG (mulberry32) for the torture harness: every choice of a session (phases, kill
 * moments, keys, values, batch sizes) comes from it, so a seed replays the same workload. The
 * server's own timing still varies from run to run, so a replay reproduces the choices, not the
 * exact interleaving.
 * @module
 */
export class Prng {
  #state: number

  constructor(seed: number) {
    if (!Number.isInteger(seed)) throw new Error(`seed must be an integer: ${seed}`)
    this.#state = seed >>> 0
  }

  /** A float in [0, 1). */
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0
    let value = this.#state
    value = Math.imul(value ^ (value >>> 15), value | 1)
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61)
    return ((value ^ (value >>> 14)) >>> 0) / 4294967296
  }

  /** An integer in [0, count). */
  index(count: number): number {
    if (!(count >= 1)) throw new Error(`index(count) needs count >= 1: ${count}`)
    return Math.floor(this.next() * count)
  }

  /** An integer in [min, max]. */
  between(min: number, max: number): number {
    return min + this.index(max - min + 1)
  }

  chance(probability: number): boolean {
    return this.next() < probability
  }

  pick<T>(items: readonly T[]): T {
    return items[this.index(items.length)]!
  }

  /** A seeded permutation of `items`. */
  shuffle<T>(items: readonly T[]): T[] {
    const copy = items.slice()
    for (let index = copy.length - 1; index > 0; index--) {
      const other = this.index(index + 1)
      ;[copy[index], copy[other]] = [copy[other]!, copy[index]!]
    }
    return copy
  }

  /** A child generator: its own stream, so adding choices to one part does not shift the others. */
  fork(): Prng {
    return new Prng(Math.floor(this.next() * 2 ** 31))
  }
}
