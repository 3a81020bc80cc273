/**
 * The moments still to come, earliest first: a binary min-heap of (instant, value). A value may be
 * pushed more than once (a pair's future versions, written again); the caller merges a moment's values.
 * @module
 */
export interface Moment<T> {
  readonly at: number
  readonly value: T
}

export class MomentHeap<T> {
  #items: Moment<T>[] = []

  get size(): number {
    return this.#items.length
  }

  push(at: number, value: T): void {
    const items = this.#items
    items.push({ at, value })
    let index = items.length - 1
    while (index > 0) {
      const parent = (index - 1) >> 1
      if (items[parent]!.at <= at) break
      items[index] = items[parent]!
      index = parent
    }
    items[index] = { at, value }
  }

  /** The earliest instant held, or +Infinity. */
  peek(): number {
    return this.#items[0]?.at ?? Number.POSITIVE_INFINITY
  }

  /** Takes every moment at or before `at`, earliest first. */
  takeUntil(at: number): Moment<T>[] {
    const taken: Moment<T>[] = []
    while (this.#items.length > 0 && this.#items[0]!.at <= at) taken.push(this.#pop())
    return taken
  }

  clear(): void {
    this.#items = []
  }

  #pop(): Moment<T> {
    const items = this.#items
    const top = items[0]!
    const last = items.pop()!
    if (items.length === 0) return top
    let index = 0
    for (;;) {
      const left = 2 * index + 1
      if (left >= items.length) break
      const right = left + 1
      const child = right < items.length && items[right]!.at < items[left]!.at ? right : left
      if (items[child]!.at >= last.at) break
      items[index] = items[child]!
      index = child
    }
    items[index] = last
    return top
  }
}
