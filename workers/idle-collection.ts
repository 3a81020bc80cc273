/**
 * A full garbage collection in a price worker once its replication work is over: V8 collects when
 * a thread allocates, and an idle worker does not. Measured with `npm run bench:memory` (10,000
 * SKUs): after a restart each worker's heap held 55 MiB where a collection leaves 20 (the
 * snapshot's decode and the warm-up query), and after a live ingest the sync messages that idle
 * workers had not collected held 48 MiB of past price-column generations (shared buffers) alive:
 * RSS 215 MiB and 271 MiB where a collection of every thread gives 178 and 244.
 *
 * V8 has no collection on demand without `--expose-gc`; as jest-leak-detector does, the flag is set
 * for one moment, long enough for a new context to get `gc`, and then unset again (no other code
 * sees a `gc` global). Where that does not work the worker runs as before.
 * @module
 */
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'

/**
 * Two collections once replication is quiet: one after a quiet tick (1-2 s), which frees the
 * objects and the past column generations they held, and one after seven (7-8 s): V8 gives back
 * the young generation's room (32 MiB per thread once grown) only in a collection that finds the
 * allocation rate low over about the last 5 s (checked in a worker after an allocation burst: a
 * collection 5 s later kept the 32 MiB, one 6 s later shrank it to 1).
 */
const tickMs = 1_000
const collectAtQuietTicks = [1, 7]

function collector(): (() => void) | null {
  try {
    setFlagsFromString('--expose-gc')
    const gc = runInNewContext('gc') as unknown
    return typeof gc === 'function' ? (gc as () => void) : null
  } catch {
    return null
  } finally {
    setFlagsFromString('--no-expose-gc')
  }
}

export class IdleCollection {
  // Built at the worker's start, before it announces itself on the replication channel
  // (./replica.ts): the pool ends no thread before that announcement (QueryPool.close), since an
  // end inside this context's bootstrap makes V8 print 'Failing script:' and the source on stdout.
  readonly #gc = collector()
  /** Replication work done since the last collection (snapshots installed, messages applied). */
  #work = 0
  /** `#work` at the last tick, and how many ticks in a row found it unchanged. */
  #seen = 0
  #quiet = 0
  #timer: NodeJS.Timeout | null = null

  /** Counts replication work: a collection follows once it has been quiet for a while. */
  noteWork(): void {
    this.#work++
    if (this.#timer !== null || this.#gc === null) return
    this.#seen = this.#work
    this.#quiet = 0
    // Unref'd: a pending collection never keeps the thread alive.
    this.#timer = setInterval(() => this.#tick(), tickMs).unref()
  }

  /**
   * Collects now (the end of a start's warm-ups: the decode's garbage goes before the worker counts
   * as ready), and again once quiet (for the young generation's room).
   */
  collectNow(): void {
    if (this.#gc === null) return
    this.#gc()
    this.noteWork()
  }

  #tick(): void {
    if (this.#work !== this.#seen) {
      this.#seen = this.#work
      this.#quiet = 0
      return
    }
    this.#quiet++
    if (collectAtQuietTicks.includes(this.#quiet)) this.#gc!()
    if (this.#quiet < collectAtQuietTicks[collectAtQuietTicks.length - 1]!) return
    clearInterval(this.#timer!)
    this.#timer = null
  }
}
