/**
 * Answer bytes from a worker to the main thread without a new buffer per answer.
 *
 * A transferred answer arrives on the main thread as a new ArrayBuffer: V8 counts its bytes as
 * external memory, and at 200 KB per 1,000-SKU answer and hundreds of answers a second that
 * pressure started a full mark-compact of the main thread's heap (the catalogue, ~140 MB) three
 * times a second, about 80 ms of marking each: a quarter of the main thread, in steps of up to 16 ms
 * in front of every small request (issue 12, `--trace-gc`). So each worker writes its answers into
 * a ring in a SharedArrayBuffer of its own, sent to the main thread once; a result names the bytes,
 * and the main thread writes them to the socket (uWS copies what it cannot send at once) and
 * releases them. Nothing is allocated per answer on either side.
 *
 * Layout: Int32 `consumed` (bytes released, wrapping 32-bit arithmetic), 4 bytes padding, then
 * `capacity` bytes of ring (a power of two). The worker alone advances `produced`; an answer is
 * placed whole (a tail too short is skipped and counted with it), and only when the bytes in flight
 * (`produced - consumed`) leave room. The main thread releases in the order the worker placed
 * (a release that comes early waits for those before it), so `consumed` never passes bytes still
 * to be written. An answer that does not fit, or is larger than a quarter of the ring, travels as a
 * transferred buffer as before.
 * @module
 */
import { assert } from '../engine/assert.js'

const headerBytes = 8
export const arenaCapacityDefault = 4 * 1024 * 1024

/** Where an answer lies in a worker's arena. */
export interface ArenaPlacement {
  readonly arena: number
  /** The arena's buffer the first time the main thread hears of it, null after. */
  readonly buffer: SharedArrayBuffer | null
  /** `produced` before this answer (the release order). */
  readonly sequence: number
  readonly start: number
  /** Bytes this answer holds in the ring: its length plus a skipped tail. */
  readonly reserved: number
  readonly length: number
}

/** The worker's side: places answers. */
export class AnswerArena {
  readonly #buffer: SharedArrayBuffer
  readonly #control: Int32Array
  readonly #bytes: Uint8Array
  readonly #capacity: number
  #produced = 0
  #announced = false

  constructor(
    readonly id: number,
    capacity = arenaCapacityDefault,
  ) {
    if (!(capacity > 0 && (capacity & (capacity - 1)) === 0))
      throw new RangeError(`arena capacity must be a power of two, got ${capacity}`)
    this.#capacity = capacity
    this.#buffer = new SharedArrayBuffer(headerBytes + capacity)
    this.#control = new Int32Array(this.#buffer, 0, 1)
    this.#bytes = new Uint8Array(this.#buffer, headerBytes, capacity)
  }

  /** Copies `answer` into the ring; null when it does not fit now (or ever: over a quarter). */
  place(answer: Uint8Array): ArenaPlacement | null {
    const length = answer.length
    if (length > this.#capacity >>> 2) return null
    const position = this.#produced & (this.#capacity - 1)
    const skip = position + length > this.#capacity ? this.#capacity - position : 0
    const reserved = skip + length
    const inFlight = (this.#produced - Atomics.load(this.#control, 0)) | 0
    if (inFlight + reserved > this.#capacity) return null
    const start = skip === 0 ? position : 0
    this.#bytes.set(answer, start)
    const sequence = this.#produced
    this.#produced = (this.#produced + reserved) | 0
    const buffer = this.#announced ? null : this.#buffer
    this.#announced = true
    return { arena: this.id, buffer, sequence, start, reserved, length }
  }
}

interface ReaderArena {
  readonly bytes: Buffer
  readonly control: Int32Array
  consumed: number
  /** Releases that came before their turn: sequence -> reserved. */
  readonly early: Map<number, number>
}

/** The main thread's side: the answer bytes of a placement, and their release. */
export class ArenaReader {
  readonly #arenas = new Map<number, ReaderArena>()

  /** The answer's bytes (a view: valid until `release`) and the release, to be called once written. */
  open(placement: ArenaPlacement): { bytes: Buffer; release: () => void } {
    let arena = this.#arenas.get(placement.arena)
    if (arena === undefined) {
      assert(placement.buffer !== null, 'an answer arena was never announced before its answer')
      const buffer = placement.buffer
      arena = {
        bytes: Buffer.from(buffer, headerBytes, buffer.byteLength - headerBytes),
        control: new Int32Array(buffer, 0, 1),
        consumed: 0,
        early: new Map(),
      }
      this.#arenas.set(placement.arena, arena)
    }
    const reader = arena
    let released = false
    return {
      bytes: reader.bytes.subarray(placement.start, placement.start + placement.length),
      release: () => {
        if (released) return
        released = true
        this.#release(reader, placement.sequence, placement.reserved)
      },
    }
  }

  #release(arena: ReaderArena, sequence: number, reserved: number): void {
    if (sequence !== arena.consumed) {
      arena.early.set(sequence, reserved)
      return
    }
    let consumed = (arena.consumed + reserved) | 0
    for (let next = arena.early.get(consumed); next !== undefined; next = arena.early.get(consumed)) {
      arena.early.delete(consumed)
      consumed = (consumed + next) | 0
    }
    arena.consumed = consumed
    Atomics.store(arena.control, 0, consumed)
  }
}
