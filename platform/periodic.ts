/**
 * A background job that runs one tick at a time: the first after a delay, each next one a delay
 * after the previous ended. `stop` cancels the next tick and waits for one under way. The backup
 * and history-retention schedulers run on it.
 * @module
 */
export class Periodic {
  #timer: NodeJS.Timeout | null = null
  #running: Promise<void> | null = null
  #stopped = false

  constructor(
    readonly tick: () => Promise<void>,
    /** Milliseconds from the end of a tick to the next. */
    readonly nextDelayMs: number,
  ) {}

  get stopped(): boolean {
    return this.#stopped
  }

  start(firstDelayMs: number): void {
    this.#schedule(firstDelayMs)
  }

  #schedule(delayMs: number): void {
    if (this.#stopped) return
    this.#timer = setTimeout(() => {
      this.#running = this.tick().finally(() => {
        this.#running = null
        this.#schedule(this.nextDelayMs)
      })
    }, delayMs)
    this.#timer.unref()
  }

  async stop(): Promise<void> {
    this.#stopped = true
    if (this.#timer !== null) clearTimeout(this.#timer)
    if (this.#running !== null) await this.#running
  }
}
