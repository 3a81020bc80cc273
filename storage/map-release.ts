/**
 * When a tenant's LMDB environment gives back the pages its map holds.
 *
 * Every page a write transaction reads or copies (B-tree descents into price_runs, the rightmost
 * log leaf, freed pages reused) is faulted into the map and stays in the process's resident set
 * (RssFile) until the environment is unmapped, although the engine never reads most of them again:
 * a 3-million-version ingest left the whole 660 MB file resident, about 230 bytes per version
 * (issue 12). The kernel can reclaim them as page cache, but RSS is what operators and container
 * limits see. Reopening the environment unmaps them; they stay in the page cache.
 *
 * The store reopens (1) after `dueBytes` written since the last reopen, at the next moment no write
 * is in flight (new writes wait meanwhile: one flush at most, once per `dueBytes`), so that
 * continuous writing keeps the map bounded; and (2) once writes have been quiet for `idleMs`
 * after at least `idleBytes`, so that a burst gives its pages back when it ends.
 * @module
 */

export interface MapReleaseOptions {
  /** Written bytes after which the next quiet moment reopens (writes wait for it). */
  readonly dueBytes: number
  /** Written bytes after which `idleMs` without writes reopens. */
  readonly idleBytes: number
  readonly idleMs: number
}

export const defaultMapRelease: MapReleaseOptions = {
  dueBytes: 64 * 1024 * 1024,
  idleBytes: 4 * 1024 * 1024,
  idleMs: 1_000,
}

export class MapRelease {
  #written = 0
  #pending = 0
  #drained: (() => void) | null = null
  #idleTimer: NodeJS.Timeout | null = null
  /** Set while a reopen waits for the writes in flight or runs: new writes wait for it. */
  running: Promise<void> | null = null
  #closed = false
  /** Holders that need the environment open as it is (a backup's copy runs on it). */
  #holds = 0
  /** A reopen came due while held: it starts when the last hold ends. */
  #wanted = false
  /** Reopens done (a metric for tests and operators). */
  count = 0

  constructor(
    readonly options: MapReleaseOptions,
    readonly reopen: () => Promise<void>,
  ) {}

  /** A write was queued: `bytes` are about to be written. */
  started(bytes: number): void {
    this.#pending++
    this.#written += bytes
    if (this.#idleTimer !== null) {
      clearTimeout(this.#idleTimer)
      this.#idleTimer = null
    }
    if (this.#written >= this.options.dueBytes && this.running === null) this.#start()
  }

  /**
   * Keeps the environment from being reopened until the returned function is called (a copy
   * reads it meanwhile). A reopen already under way finishes first: await `running` before using
   * the environment. Writes go on while held; a reopen that comes due waits for the last hold.
   */
  hold(): () => void {
    this.#holds++
    let held = true
    return () => {
      if (!held) return
      held = false
      this.#holds--
      if (this.#holds === 0 && this.#wanted && this.running === null && !this.#closed) {
        this.#wanted = false
        this.#start()
      }
    }
  }

  /**
   * Reopens at the next quiet moment whatever was written: a backup's copy read the whole file
   * through the map, and those pages would stay resident until the next reopen.
   */
  soon(): void {
    if (this.running === null && !this.#closed) this.#start()
  }

  /** A write is durable (or failed). */
  settled(): void {
    this.#pending--
    if (this.#pending === 0 && this.#drained !== null) {
      this.#drained()
      this.#drained = null
    }
    if (
      this.#pending === 0 &&
      this.running === null &&
      this.#written >= this.options.idleBytes &&
      this.#idleTimer === null &&
      !this.#closed
    ) {
      this.#idleTimer = setTimeout(() => {
        this.#idleTimer = null
        if (this.#pending === 0 && this.running === null && !this.#closed) this.#start()
      }, this.options.idleMs)
      this.#idleTimer.unref()
    }
  }

  #start(): void {
    if (this.#holds > 0) {
      this.#wanted = true
      return
    }
    const run = async (): Promise<void> => {
      if (this.#pending > 0) await new Promise<void>((resolve) => (this.#drained = resolve))
      // In a turn of its own: the close and reopen then run in one chain of microtasks, with no
      // request handler (each a turn of the event loop) between them to read a closed handle.
      await new Promise((resolve) => setImmediate(resolve))
      if (this.#closed) return
      await this.reopen()
      this.#written = 0
      this.count++
    }
    this.running = run().finally(() => {
      this.running = null
    })
  }

  /** Stops the idle timer; resolves once a reopen under way has finished. */
  async close(): Promise<void> {
    this.#closed = true
    if (this.#idleTimer !== null) clearTimeout(this.#idleTimer)
    this.#idleTimer = null
    if (this.running !== null) await this.running.catch(() => undefined)
  }
}
