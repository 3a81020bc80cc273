/**
 * A forked catalogue's table of one entity type (engine/catalog.ts `fork`): the keys the fork wrote,
 * over the original's table, which it reads and never changes. Copying the original's Map instead
 * would cost the fork time in proportion to the table (a million mappings take a few hundred
 * milliseconds of the main thread) for a dry run that writes one of them. A Map itself, so that the
 * catalogue reads a fork's tables as it reads its own; keys are never removed from it.
 * @module
 */
import { assert } from '../assert.js'

export class LayeredTable<Value> extends Map<string, Value> {
  readonly #base: ReadonlyMap<string, Value>
  /** Own keys the base does not hold. */
  #added = 0

  constructor(base: ReadonlyMap<string, Value>) {
    super()
    this.#base = base
  }

  /** The keys the fork wrote, with their versions: what a worker replays over its own table. */
  *own(): MapIterator<[string, Value]> {
    yield* super.entries()
  }

  override get(key: string): Value | undefined {
    const own = super.get(key)
    return own !== undefined ? own : this.#base.get(key)
  }

  override has(key: string): boolean {
    return super.has(key) || this.#base.has(key)
  }

  override set(key: string, value: Value): this {
    if (!super.has(key) && !this.#base.has(key)) this.#added++
    return super.set(key, value)
  }

  override delete(_key: string): boolean {
    assert(false, 'a forked table never removes a key')
    return false
  }

  override get size(): number {
    return this.#base.size + this.#added
  }

  override *keys(): MapIterator<string> {
    yield* this.#base.keys()
    for (const key of super.keys()) if (!this.#base.has(key)) yield key
  }

  override *entries(): MapIterator<[string, Value]> {
    for (const key of this.keys()) yield [key, this.get(key)!]
  }

  override [Symbol.iterator](): MapIterator<[string, Value]> {
    return this.entries()
  }

  override *values(): MapIterator<Value> {
    for (const key of this.keys()) yield this.get(key)!
  }

  override forEach(callback: (value: Value, key: string, map: Map<string, Value>) => void): void {
    for (const [key, value] of this.entries()) callback(value, key, this)
  }
}
