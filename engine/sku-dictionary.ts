/**
 * SKU codes to dense ids, in shared memory so that worker threads read the same table.
 *
 * An open-addressing hash table (linear probing, at most half full) of 32-byte slots:
 *
 *   [hash, id + 1 (0: empty), length (+ wideFlag), 20 bytes: the code's first 20 characters]
 *
 * A look-up of a code of up to 20 Latin-1 characters (nearly every SKU) reads one slot: one cache
 * line on one memory page. A Map reads its bucket, its entry and the key string, three places far
 * apart; on a tenant with 100,000 SKUs each is a cache miss and often a TLB miss, and a price query
 * looks up every SKU it names. Longer codes, and codes with characters beyond Latin-1, are compared
 * with their full text, kept once per id (`keys` from `offsets[id]` to `offsets[id + 1]`).
 *
 * Writes are the owner's (the main thread's): a slot's words are written before its id, and the id
 * is published with an atomic store. Readers read the id with a plain load (`probe`): an
 * `Atomics.load` there is a call V8 does not inline, and it cost a fifth of a 1,000-SKU query
 * (`perf record` of the server; the query 2,300 us against 1,750 without it, executeQuery in
 * process). That is safe without the load's ordering because slots are written once into zeroed
 * memory and probed linearly: a reader that sees a new id before the slot's other words (a weakly
 * ordered CPU) reads zeros there, the hash and length do not match, and it probes on, as if the
 * code were not there yet; and the code it looks for cannot sit behind a newer slot on its own probe
 * path (every slot before it was taken when it was placed). An aligned Int32 read does not tear.
 * Growth builds new buffers: a new table that the owner publishes like a new generation of the
 * price columns; a reader keeps answering from the table it has until it takes the new one.
 * @module
 */
import { assert } from './assert.js'

/** The shared buffers of one table generation (what a reader needs). */
export interface SkuTable {
  /** capacity x 8 words (capacity a power of two). */
  readonly slots: Int32Array
  /** The same memory as bytes (the inline characters). */
  readonly bytes: Uint8Array
  /** UTF-16 code units of every code, by id. */
  readonly keys: Uint16Array
  /** offsets[id] .. offsets[id + 1]: the code's units in `keys`. */
  readonly offsets: Int32Array
  readonly seed: number
}

/** A dictionary's buffers and counts: what a snapshot keeps (storage/book-snapshot.ts). */
export interface SkuDictionaryImage {
  readonly table: SkuTable
  /** Codes held (ids 0 .. count - 1). */
  readonly count: number
  /** Code units used in `keys`. */
  readonly keyUnits: number
}

export const slotWords = 8
const inlineBytes = 20
/** Set on the length word when the first characters are not all Latin-1 (no inline copy). */
const wideFlag = 1 << 30
const capacityInitial = 1024
const keyUnitsInitial = 16 * 1024

function sharedInt32(count: number): Int32Array {
  return new Int32Array(new SharedArrayBuffer(count * Int32Array.BYTES_PER_ELEMENT))
}

function sharedUint16(count: number): Uint16Array {
  return new Uint16Array(new SharedArrayBuffer(count * Uint16Array.BYTES_PER_ELEMENT))
}

function tableOf(slots: Int32Array, keys: Uint16Array, offsets: Int32Array, seed: number): SkuTable {
  return { slots, bytes: new Uint8Array(slots.buffer), keys, offsets, seed }
}

/** A 32-bit hash of the code's UTF-16 units (murmur-style mixing, seeded per table). */
function hashOf(code: string, seed: number): number {
  let hash = seed
  for (let index = 0; index < code.length; index++) {
    hash = Math.imul(hash ^ code.charCodeAt(index), 0x5bd1e995)
    hash ^= hash >>> 15
  }
  hash = Math.imul(hash ^ (hash >>> 13), 0xc2b2ae35)
  return (hash ^ (hash >>> 16)) | 0
}

/** The id of `code` in `table`, or -1. Any thread. */
export function lookupSku(table: SkuTable, code: string): number {
  return probe(table, code, hashOf(code, table.seed))
}

const stepHashes = new Int32Array(256)

/**
 * Ids of `count` codes from `start` into `ids` (-1: absent): first every hash (arithmetic only),
 * then every probe, so that the probes' cache misses overlap instead of waiting one by one.
 */
export function lookupSkus(
  table: SkuTable,
  codes: readonly string[],
  start: number,
  count: number,
  ids: Int32Array,
): void {
  const seed = table.seed
  for (let done = 0; done < count; done += stepHashes.length) {
    const chunk = Math.min(stepHashes.length, count - done)
    for (let index = 0; index < chunk; index++) stepHashes[index] = hashOf(codes[start + done + index]!, seed)
    for (let index = 0; index < chunk; index++)
      ids[done + index] = probe(table, codes[start + done + index]!, stepHashes[index]!)
  }
}

function probe(table: SkuTable, code: string, hash: number): number {
  const slots = table.slots
  const mask = (slots.length >>> 3) - 1
  const length = code.length
  for (let slot = hash & mask; ; slot = (slot + 1) & mask) {
    const base = slot << 3
    // A plain load (see the module comment).
    const idPlusOne = slots[base + 1]!
    if (idPlusOne === 0) return -1
    if (slots[base] === hash && (slots[base + 2]! & ~wideFlag) === length && matches(table, base, idPlusOne - 1, code))
      return idPlusOne - 1
  }
}

function matches(table: SkuTable, base: number, id: number, code: string): boolean {
  const length = code.length
  let index = 0
  if ((table.slots[base + 2]! & wideFlag) === 0) {
    const bytes = table.bytes
    const at = (base + 3) << 2
    const inline = Math.min(length, inlineBytes)
    for (; index < inline; index++) if (bytes[at + index] !== code.charCodeAt(index)) return false
    if (index === length) return true
  }
  const keys = table.keys
  const start = table.offsets[id]!
  for (; index < length; index++) if (keys[start + index] !== code.charCodeAt(index)) return false
  return true
}

/** The owner's side: interning, growth. */
export class SkuDictionary {
  #table: SkuTable
  #count = 0
  #keyUnits = 0

  // Below 2^30: a small integer in V8 (no boxed number in the table object).
  constructor(seed = Math.floor(Math.random() * 2 ** 30)) {
    this.#table = tableOf(
      sharedInt32(capacityInitial * slotWords),
      sharedUint16(keyUnitsInitial),
      sharedInt32(capacityInitial + 1),
      seed,
    )
  }

  /** The current generation's buffers (a new object after growth). */
  get table(): SkuTable {
    return this.#table
  }

  get size(): number {
    return this.#count
  }

  lookup(code: string): number {
    return lookupSku(this.#table, code)
  }

  /**
   * Adds `code` with the next id (the caller has looked it up: it is not in the table). Answers
   * true when the table grew (new buffers to publish).
   */
  add(code: string): boolean {
    let grew = false
    const id = this.#count
    if (
      (id + 1) * 2 > this.#table.slots.length >>> 3 ||
      id + 2 > this.#table.offsets.length ||
      this.#keyUnits + code.length > this.#table.keys.length
    ) {
      this.#grow(code.length)
      grew = true
    }
    const table = this.#table
    const keys = table.keys
    const start = this.#keyUnits
    for (let index = 0; index < code.length; index++) keys[start + index] = code.charCodeAt(index)
    this.#keyUnits = start + code.length
    table.offsets[id] = start
    table.offsets[id + 1] = this.#keyUnits
    this.#place(table, hashOf(code, table.seed), id, code)
    this.#count = id + 1
    return grew
  }

  /** Writes the slot of a new entry, its id last. */
  #place(table: SkuTable, hash: number, id: number, code: string): void {
    const slots = table.slots
    const mask = (slots.length >>> 3) - 1
    let slot = hash & mask
    while (slots[(slot << 3) + 1] !== 0) slot = (slot + 1) & mask
    const base = slot << 3
    slots[base] = hash
    let wide = 0
    const inline = Math.min(code.length, inlineBytes)
    for (let index = 0; index < inline; index++) if (code.charCodeAt(index) > 0xff) wide = wideFlag
    slots[base + 2] = code.length | wide
    if (wide === 0) {
      const at = (base + 3) << 2
      for (let index = 0; index < inline; index++) table.bytes[at + index] = code.charCodeAt(index)
    }
    Atomics.store(slots, base + 1, id + 1)
  }

  /** New buffers with room for one more entry of `units` code units; the slots are rehashed from their words. */
  #grow(units: number): void {
    const old = this.#table
    let capacity = old.slots.length >>> 3
    while ((this.#count + 1) * 2 > capacity) capacity *= 2
    let keyCapacity = old.keys.length
    while (this.#keyUnits + units > keyCapacity) keyCapacity *= 2
    let offsetCapacity = old.offsets.length
    while (this.#count + 2 > offsetCapacity) offsetCapacity *= 2
    const keys = sharedUint16(keyCapacity)
    keys.set(old.keys.subarray(0, this.#keyUnits))
    const offsets = sharedInt32(offsetCapacity)
    offsets.set(old.offsets.subarray(0, this.#count + 1))
    let slots = old.slots
    if (capacity !== old.slots.length >>> 3) {
      slots = sharedInt32(capacity * slotWords)
      const mask = capacity - 1
      for (let base = 0; base < old.slots.length; base += slotWords) {
        if (old.slots[base + 1] === 0) continue
        let slot = old.slots[base]! & mask
        while (slots[(slot << 3) + 1] !== 0) slot = (slot + 1) & mask
        slots.set(old.slots.subarray(base, base + slotWords), slot << 3)
      }
    } else {
      // Same capacity: a copy, so the old generation's readers keep a table that does not change
      // under their old key buffers.
      slots = sharedInt32(capacity * slotWords)
      slots.set(old.slots)
    }
    this.#table = tableOf(slots, keys, offsets, old.seed)
  }

  /**
   * The table as it stands, for a snapshot of the price book (storage/book-snapshot.ts): the
   * buffers themselves (no copy) and the counts that say how much of them is used.
   */
  image(): SkuDictionaryImage {
    return { table: this.#table, count: this.#count, keyUnits: this.#keyUnits }
  }

  /**
   * Takes over a table read back from a snapshot (an empty dictionary only): the slots are used as
   * they are, so a start does not hash and place every code again.
   */
  restore(image: SkuDictionaryImage): void {
    assert(this.#count === 0, 'a SKU dictionary is restored only when empty')
    const { table, count, keyUnits } = image
    const capacity = table.slots.length >>> 3
    const valid =
      capacity > 0 &&
      (capacity & (capacity - 1)) === 0 &&
      table.slots.length === capacity * slotWords &&
      count * 2 <= capacity &&
      count + 1 <= table.offsets.length &&
      keyUnits <= table.keys.length
    if (!valid) throw new Error('SKU dictionary image: inconsistent sizes')
    this.#table = tableOf(table.slots, table.keys, table.offsets, table.seed)
    this.#count = count
    this.#keyUnits = keyUnits
  }

  /** The code of every id, in id order (from the kept text: a restored table has no strings). */
  codes(): string[] {
    const { keys, offsets } = this.#table
    const codes: string[] = new Array<string>(this.#count)
    for (let id = 0; id < this.#count; id++) {
      codes[id] = String.fromCharCode.apply(null, keys.subarray(offsets[id]!, offsets[id + 1]!) as unknown as number[])
    }
    return codes
  }

  /** Bytes of the shared buffers. */
  get byteSize(): number {
    const table = this.#table
    return table.slots.byteLength + table.keys.byteLength + table.offsets.byteLength
  }
}
