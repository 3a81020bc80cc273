/**
 * The server under torture: the real compiled server started as its own child process on one data
 * directory for the whole session, so a SIGKILL is a real one (no shutdown code runs). Every start
 * is timed from the spawn to the first 200 of /readyz. Stdout and stderr of every process go to one
 * log file of the session (kept for diagnosis) and are scanned for fatal lines.
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { appendFileSync } from 'node:fs'
import { entryPath } from '../helpers/server.js'

export const adminToken = 'torture-admin-token'

/** A start that is not ready within this long failed. */
const readyTimeoutMs = 60_000

export interface StartOutcome {
  /** Spawn to the first 200 of /readyz. */
  readyMs: number
}

export class ServerProcess {
  url = ''
  #child: ChildProcess | null = null
  #exited: Promise<void> = Promise.resolve()
  #firstUrl = ''
  /** The current process's output (stdout and stderr), for the fatal scan. */
  output = ''

  constructor(
    readonly dataDir: string,
    readonly env: Record<string, string>,
    readonly logPath: string,
  ) {}

  get running(): boolean {
    const child = this.#child
    return child !== null && child.exitCode === null && child.signalCode === null
  }

  async start(): Promise<StartOutcome> {
    const startedMs = performance.now()
    this.output = ''
    const child = spawn(process.execPath, [entryPath, 'start'], {
      env: {
        ...process.env,
        PRICING_PORT: '0',
        PRICING_HOST: '127.0.0.1',
        PRICING_DATA_DIR: this.dataDir,
        PRICING_ADMIN_TOKEN: adminToken,
        PRICING_DEMO: 'false',
        PRICING_LOG_LEVEL: 'info',
        PRICING_FX_FEED_URL: '',
        PRICING_TOKEN_FAILURES_BURST: '100000',
        ...(this.#firstUrl === '' ? {} : { PRICING_PUBLIC_URL: this.#firstUrl }),
        ...this.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    this.#child = child
    this.#exited = new Promise((resolve) => child.once('exit', () => resolve()))
    const record = (chunk: Buffer): void => {
      const text = chunk.toString()
      this.output += text
      appendFileSync(this.logPath, text)
    }
    child.stderr!.on('data', record)
    appendFileSync(this.logPath, `--- start pid ${child.pid} at ${new Date().toISOString()}\n`)
    const port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the server did not listen within ${readyTimeoutMs} ms`)), readyTimeoutMs)
      let listening = false
      child.stdout!.on('data', (chunk: Buffer) => {
        record(chunk)
        if (listening) return
        const match = /"port":(\d+),"url":"[^"]*","dataDir":"[^"]*","msg":"listening"/.exec(this.output)
        if (match === null) return
        listening = true
        clearTimeout(timer)
        resolve(Number(match[1]))
      })
      child.once('exit', (code, signal) => {
        clearTimeout(timer)
        reject(new Error(`the server exited (${code ?? signal}) before listening: ${this.output.slice(-2000)}`))
      })
    })
    this.url = `http://127.0.0.1:${port}`
    if (this.#firstUrl === '') this.#firstUrl = this.url
    for (;;) {
      const answer = await fetch(`${this.url}/readyz`).catch(() => null)
      if (answer !== null) await answer.arrayBuffer()
      if (answer?.status === 200) break
      if (!this.running) throw new Error(`the server exited while loading: ${this.output.slice(-2000)}`)
      if (performance.now() - startedMs > readyTimeoutMs) throw new Error(`the server was not ready within ${readyTimeoutMs} ms`)
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    return { readyMs: Math.round(performance.now() - startedMs) }
  }

  /** SIGKILL: no shutdown code runs. */
  async kill(): Promise<void> {
    if (this.#child === null) return
    this.#child.kill('SIGKILL')
    await this.#exited
    appendFileSync(this.logPath, `--- SIGKILL at ${new Date().toISOString()}\n`)
    this.#child = null
  }

  /** SIGTERM and wait (a clean stop); a stop that takes over 30 s is ended by SIGKILL and throws. */
  async stop(): Promise<void> {
    const child = this.#child
    if (child === null) return
    child.kill('SIGTERM')
    let timer: NodeJS.Timeout | undefined
    const stopped = await Promise.race([
      this.#exited.then(() => true),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), 30_000))),
    ])
    clearTimeout(timer)
    if (!stopped) await this.kill()
    appendFileSync(this.logPath, `--- stopped at ${new Date().toISOString()}\n`)
    this.#child = null
    if (!stopped) throw new Error('the server did not stop within 30 s of SIGTERM')
  }

  /** Lines of the current process's output at pino level fatal (60), or a crash report on stderr. */
  fatalLines(): string[] {
    return this.output.split('\n').filter((line) => /"level":60\b/.test(line) || /^(Uncaught|FATAL|Segmentation|Error: |\s+at .*\(node:)/.test(line))
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
