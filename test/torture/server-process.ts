/**
 * The server under torture: the real compiled server started as its own child process on one data
 * directory for the whole session, so a SIGKILL is a real one (no shutdown code runs). Every start
 * is timed from the spawn to the first 200 of /readyz. Stdout and stderr of every process go to one
 * log file of the session (kept for diagnosis) and are scanned for fatal lines.
 * @module
 */
import { appendFileSync } from 'node:fs'
import { TestServer } from '../helpers/server.js'

export const adminToken = 'torture-admin-token-0123456789abcdef'

/** A start that is not ready within this long failed. */
const readyTimeoutMs = 60_000

export interface StartOutcome {
  /** Spawn to the first 200 of /readyz. */
  readyMs: number
}

/** test/helpers/server.ts's TestServer, with a session log, timed starts and a bounded stop. */
export class ServerProcess {
  readonly #server: TestServer
  /** The current process's output (stdout and stderr), for the fatal scan. */
  output = ''

  constructor(
    readonly dataDir: string,
    readonly env: Record<string, string>,
    readonly logPath: string,
  ) {
    this.#server = new TestServer(dataDir, { PRICING_ADMIN_TOKEN: adminToken, ...env }, (text) => {
      this.output += text
      appendFileSync(logPath, text)
    })
  }

  get url(): string {
    return this.#server.url
  }

  get running(): boolean {
    return this.#server.running
  }

  async start(): Promise<StartOutcome> {
    const startedMs = performance.now()
    this.output = ''
    appendFileSync(this.logPath, `--- start at ${new Date().toISOString()}\n`)
    await this.#server.start(false)
    for (;;) {
      const answer = await fetch(`${this.url}/readyz`).catch(() => null)
      if (answer !== null) await answer.arrayBuffer()
      if (answer?.status === 200) break
      if (!this.running) throw new Error(`the server exited while loading: ${this.output.slice(-2000)}`)
      if (performance.now() - startedMs > readyTimeoutMs)
        throw new Error(`the server was not ready within ${readyTimeoutMs} ms`)
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    return { readyMs: Math.round(performance.now() - startedMs) }
  }

  /** SIGKILL: no shutdown code runs. */
  async kill(): Promise<void> {
    if (!this.running) return
    await this.#server.kill()
    appendFileSync(this.logPath, `--- SIGKILL at ${new Date().toISOString()}\n`)
  }

  /** SIGTERM and wait (a clean stop); a stop that takes over 30 s is ended by SIGKILL and throws. */
  async stop(): Promise<void> {
    if (!this.running) return
    let timer: NodeJS.Timeout | undefined
    const stopped = await Promise.race([
      this.#server.stop().then(() => true),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), 30_000))),
    ])
    clearTimeout(timer)
    if (!stopped) await this.kill()
    appendFileSync(this.logPath, `--- stopped at ${new Date().toISOString()}\n`)
    if (!stopped) throw new Error('the server did not stop within 30 s of SIGTERM')
  }

  /** Lines of the current process's output at pino level fatal (60), or a crash report on stderr. */
  fatalLines(): string[] {
    return this.output
      .split('\n')
      .filter(
        (line) => /"level":60\b/.test(line) || /^(Uncaught|FATAL|Segmentation|Error: |\s+at .*\(node:)/.test(line),
      )
  }

  /** The messages of the current process's error lines (pino level 50), counted. */
  errorMessages(): Map<string, number> {
    const counts = new Map<string, number>()
    for (const line of this.output.split('\n')) {
      if (!/"level":50\b/.test(line)) continue
      const message = /"msg":"([^"]*)"/.exec(line)?.[1] ?? line.slice(0, 120)
      counts.set(message, (counts.get(message) ?? 0) + 1)
    }
    return counts
  }
}
