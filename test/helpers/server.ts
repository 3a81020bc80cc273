/**
 * Starts the real server (compiled, as its own process) on a free loopback port with a fresh LMDB
 * data directory, and gives tests a small HTTP client. Tenants are created through the operator API.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

/** The compiled tree this test runs from (dist/, or PRICING_BUILD_DIR): its server is started. */
const buildRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
export const entryPath = path.join(buildRoot, 'server/start.js')
/** At least 32 characters, as the configuration requires of an admin token. */
export const adminToken = 'test-admin-token-0123456789abcdef'

export interface Answer<T = any> {
  status: number
  headers: Headers
  body: T
  text: string
}

export interface StartOptions {
  dataDir?: string
  env?: Record<string, string>
  /** Wait for /readyz before resolving (default true). */
  ready?: boolean
}

export class TestServer {
  url = ''
  port = 0
  stdout = ''
  #child: ChildProcess | null = null
  #exited: Promise<number | null> = Promise.resolve(null)
  /**
   * The first start's address. A restart listens on another free port; it keeps this as its public
   * URL (the token issuer), as a deployment keeps its address, so tokens issued before still verify.
   */
  #firstUrl = ''

  constructor(
    readonly dataDir: string,
    readonly env: Record<string, string>,
    /** Told of everything the process writes, stdout and stderr (test/torture keeps a log of it). */
    readonly onOutput: (text: string) => void = () => {},
  ) {}

  /** Whether the server process is still running (false once it has exited, by itself or stopped). */
  get running(): boolean {
    const child = this.#child
    return child !== null && child.exitCode === null && child.signalCode === null
  }

  /** The running server's process id. */
  get pid(): number {
    const pid = this.#child?.pid
    if (pid === undefined) throw new Error('the server is not running')
    return pid
  }

  async start(ready = true): Promise<void> {
    this.stdout = ''
    const child = spawn(process.execPath, [entryPath, 'start'], {
      env: {
        ...process.env,
        PRICING_PORT: '0',
        PRICING_HOST: '127.0.0.1',
        PRICING_DATA_DIR: this.dataDir,
        PRICING_ADMIN_TOKEN: adminToken,
        PRICING_DEMO: 'false',
        PRICING_LOG_LEVEL: 'info',
        // No automatic exchange-rate fetch from the internet in tests; FX tests serve fixture files.
        PRICING_FX_FEED_URL: '',
        // No automatic backups unless a test asks (test/tenant/backup-scheduler.test.ts).
        PRICING_BACKUP_INTERVAL_S: '0',
        // Tests fail token requests on purpose from one address; test/security/token-endpoint.test.ts
        // checks the limit with its default.
        PRICING_TOKEN_FAILURES_BURST: '100000',
        // Tests sign the same people in again and again; test/accounts/sign-in-limits.test.ts checks the default.
        PRICING_SIGN_IN_MAILS_BURST: '100000',
        ...(this.#firstUrl === '' ? {} : { PRICING_PUBLIC_URL: this.#firstUrl }),
        ...this.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    this.#child = child
    this.#exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)))
    let stderr = ''
    child.stderr!.on('data', (chunk: Buffer) => {
      const text = chunk.toString()
      stderr += text
      this.onOutput(text)
    })
    this.port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`server did not start: ${stderr}`)), 20_000)
      let listening = false
      child.stdout!.on('data', (chunk: Buffer) => {
        const text = chunk.toString()
        this.stdout += text
        this.onOutput(text)
        // Searched only until found: a server that logs every request (the access log) writes a lot.
        if (listening) return
        const match = /"port":(\d+),"url":"[^"]*","dataDir":"[^"]*","msg":"listening"/.exec(this.stdout)
        if (match !== null) {
          listening = true
          clearTimeout(timer)
          resolve(Number(match[1]))
        }
      })
      child.once('exit', (code) => {
        clearTimeout(timer)
        reject(new Error(`server exited with ${code}: ${stderr}`))
      })
    })
    this.url = `http://127.0.0.1:${this.port}`
    if (this.#firstUrl === '') this.#firstUrl = this.url
    if (ready) await this.waitReady()
  }

  /**
   * Polls /readyz until it answers 200, for at most `timeoutMs`: 30 s, since a restart on a CI
   * machine loaded by other suites (after a kill during a restore, say) took more than 10 s.
   */
  async waitReady(timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs
    let last = 'no answer'
    while (Date.now() < deadline) {
      const answer = await fetch(`${this.url}/readyz`).catch((error: Error) => error)
      if (!(answer instanceof Error) && answer.status === 200) return
      last =
        answer instanceof Error
          ? String((answer.cause as Error | undefined)?.message ?? answer.message)
          : `${answer.status} ${(await answer.text()).slice(0, 300)}`
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    throw new Error(`server never became ready within ${timeoutMs} ms (last /readyz: ${last})`)
  }

  /** Graceful stop (SIGTERM); answers the exit code. */
  async stop(): Promise<number | null> {
    this.#child?.kill('SIGTERM')
    const code = await this.#exited
    this.#child = null
    return code
  }

  /** Waits for the process to exit by itself (after a signal sent with `pid`); answers the exit code. */
  async exited(): Promise<number | null> {
    const code = await this.#exited
    this.#child = null
    return code
  }

  /** Hard kill (SIGKILL): no shutdown code runs. */
  async kill(): Promise<void> {
    this.#child?.kill('SIGKILL')
    await this.#exited
    this.#child = null
  }

  async restart(): Promise<void> {
    await this.stop()
    await this.start()
  }

  /** Stops the server and removes its data directory. */
  async dispose(): Promise<void> {
    await this.stop()
    rmSync(this.dataDir, { recursive: true, force: true })
  }

  async request<T = any>(
    method: string,
    urlPath: string,
    options: {
      body?: unknown
      raw?: string | Buffer
      headers?: Record<string, string>
      token?: string
      redirect?: RequestRedirect
    } = {},
  ): Promise<Answer<T>> {
    const headers: Record<string, string> = { ...options.headers }
    if (options.token !== undefined) headers['authorization'] = `Bearer ${options.token}`
    let body: string | Buffer | undefined = options.raw
    if (options.body !== undefined) {
      body = JSON.stringify(options.body)
      headers['content-type'] ??= 'application/json'
    }
    const response = await fetch(`${this.url}${urlPath}`, {
      method,
      headers,
      body: body as BodyInit | undefined,
      redirect: options.redirect ?? 'follow',
    })
    const text = await response.text()
    let json: unknown = undefined
    try {
      json = text === '' ? undefined : JSON.parse(text)
    } catch {
      json = undefined
    }
    return { status: response.status, headers: response.headers, body: json as T, text }
  }

  admin<T = any>(method: string, urlPath: string, body?: unknown): Promise<Answer<T>> {
    return this.request<T>(method, urlPath, { body, token: adminToken })
  }

  /** Creates a tenant and a key through the operator API and fetches a token. */
  async tenant(slug: string, options: { tier?: string; limits?: Record<string, unknown> } = {}): Promise<TenantClient> {
    const created = await this.admin('POST', '/admin/tenants', {
      slug,
      tier: options.tier ?? 'standard',
      region: 'local',
      limits: options.limits,
    })
    if (created.status !== 201) throw new Error(`tenant create failed: ${created.status} ${created.text}`)
    const key = await this.admin('POST', `/admin/tenants/${slug}/keys`, { name: 'test' })
    if (key.status !== 201) throw new Error(`key create failed: ${key.status} ${key.text}`)
    const client = new TenantClient(this, slug, key.body.client_id, key.body.client_secret)
    await client.refreshToken()
    return client
  }
}

export class TenantClient {
  token = ''
  constructor(
    readonly server: TestServer,
    readonly slug: string,
    readonly clientId: string,
    readonly clientSecret: string,
  ) {}

  get base(): string {
    return `/t/${this.slug}`
  }

  async refreshToken(): Promise<string> {
    const form = new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: this.clientId,
      client_secret: this.clientSecret,
    })
    const response = await fetch(`${this.server.url}/oauth2/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form.toString(),
    })
    const json = (await response.json()) as { access_token: string }
    if (response.status !== 200) throw new Error(`token failed: ${response.status} ${JSON.stringify(json)}`)
    this.token = json.access_token
    return this.token
  }

  /** A request under the tenant's base URL with its token. */
  call<T = any>(method: string, urlPath: string, body?: unknown, headers?: Record<string, string>): Promise<Answer<T>> {
    return this.server.request<T>(method, `${this.base}${urlPath}`, { body, headers, token: this.token })
  }

  get<T = any>(urlPath: string): Promise<Answer<T>> {
    return this.call<T>('GET', urlPath)
  }
}

/** A fresh server on a fresh data directory. Call `dispose()` in teardown. */
export async function startServer(options: StartOptions = {}): Promise<TestServer> {
  const dataDir = options.dataDir ?? mkdtempSync(path.join(tmpdir(), 'pricing-test-'))
  const server = new TestServer(dataDir, options.env ?? {})
  await server.start(options.ready ?? true)
  return server
}

/** Asserts the spec's error body and answers it. */
export function errorShape(answer: Answer): {
  status: number
  error: string
  code: string
  message: string
  timestamp: string
} {
  return answer.body
}
