/**
 * Child processes the bench measures: the pricing server (compiled, started the way operators
 * start it, on a free port with its own data directory) and the bare uWS endpoint. Also a small
 * HTTP client for the admin and tenant APIs. Non-goal: a general test harness (test/helpers is
 * that, and bench code stays independent of test/).
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process'

export interface Listening {
  readonly child: ChildProcess
  readonly port: number
  /** Lines the child has written to stdout so far (log records: the access log's cost bench counts them). */
  readonly stdoutLineCount: () => number
  /** The child's last warnings and errors (log records of level 40 and up), for a failure's message. */
  readonly problems: () => string[]
}

/** pino's levels warn, error and fatal, as they appear in a record. */
const warningLevels = ['"level":40', '"level":50', '"level":60'].map((level) => Buffer.from(level))

/**
 * Spawns `node <entry> ...args` and resolves once a stdout line matches `pattern` (its first group
 * is the port). Stdout keeps being drained so that the child never blocks on a full pipe.
 */
export function spawnListening(
  entry: string,
  args: readonly string[],
  env: Record<string, string>,
  pattern: RegExp,
  nodeArgs: readonly string[] = [],
): Promise<Listening> {
  const child = spawn(process.execPath, [...nodeArgs, entry, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  let lineCount = 0
  const problems: string[] = []
  child.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4096)))
  return new Promise<Listening>((resolve, reject) => {
    let found = false
    const timer = setTimeout(() => reject(new Error(`${entry} did not start: ${stderr}`)), 60_000)
    child.stdout!.on('data', (chunk: Buffer) => {
      for (let index = chunk.indexOf(10); index >= 0; index = chunk.indexOf(10, index + 1)) lineCount++
      // Records of level 40 and up are kept (the last 20; one cut between two chunks comes in two
      // pieces); the rest is counted and dropped. Searched in the bytes: decoding every chunk slowed
      // this loop enough to count the access log's lines late (bench/access-log.ts).
      if (warningLevels.some((level) => chunk.includes(level))) {
        for (const line of chunk.toString().split('\n')) {
          if (!/"level":[4-6]\d/.test(line)) continue
          problems.push(line.slice(0, 2_000))
          if (problems.length > 20) problems.shift()
        }
      }
      if (found) return
      stdout += chunk.toString()
      const match = pattern.exec(stdout)
      if (match !== null) {
        found = true
        clearTimeout(timer)
        resolve({ child, port: Number(match[1]), stdoutLineCount: () => lineCount, problems: () => [...problems] })
      }
    })
    child.once('exit', (code) => {
      clearTimeout(timer)
      if (!found) reject(new Error(`${entry} exited with ${code}: ${stderr}`))
    })
  })
}

export function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => child.once('exit', () => resolve()))
}

export interface ServerOptions {
  readonly entry: string
  readonly dataDir: string
  readonly adminToken: string
  /** Extra environment (e.g. PRICING_WORKER_THRESHOLD_SKUS for the threshold measurement). */
  readonly env?: Record<string, string>
  /**
   * The shipped defaults but the port, address, data directory and admin token (and `env`): the
   * demo tenant and the log level as `npm start` has them. Otherwise the demo is off and the FX
   * feed empty (measurements of one part).
   */
  readonly shippedDefaults?: boolean
}

/** The pricing server as its own process; `start` may be called again after `stop` (restart). */
export class PricingServer {
  url = ''
  #child: ChildProcess | null = null
  #stdoutLineCount: () => number = () => 0
  #problems: () => string[] = () => []

  constructor(readonly options: ServerOptions) {}

  /** The running process's last warnings and errors, as logged (JSON lines). */
  get problems(): string[] {
    return this.#problems()
  }

  /** Lines the running process has written to stdout. */
  get stdoutLineCount(): number {
    return this.#stdoutLineCount()
  }

  get pid(): number {
    const pid = this.#child?.pid
    if (pid === undefined) throw new Error('server is not running')
    return pid
  }

  /**
   * Starts the process and waits until it listens (not until it is ready); `extraEnv` and
   * `nodeArgs` (e.g. --cpu-prof) for this start only.
   */
  async start(extraEnv: Record<string, string> = {}, nodeArgs: readonly string[] = []): Promise<void> {
    const env = {
      PRICING_PORT: '0',
      PRICING_HOST: '127.0.0.1',
      PRICING_DATA_DIR: this.options.dataDir,
      PRICING_ADMIN_TOKEN: this.options.adminToken,
      ...(this.options.shippedDefaults === true
        ? {}
        : {
            PRICING_DEMO: 'false',
            // The port is only logged at info; the server logs nothing per request at that level.
            PRICING_LOG_LEVEL: 'info',
            // No exchange-rate fetch from the internet: the workload is in one currency.
            PRICING_FX_FEED_URL: '',
          }),
      ...this.options.env,
      ...extraEnv,
    }
    const listening = await spawnListening(
      this.options.entry,
      ['start'],
      env,
      /"port":(\d+)[^\n]*"msg":"listening"/,
      nodeArgs,
    )
    this.#child = listening.child
    this.#stdoutLineCount = listening.stdoutLineCount
    this.#problems = listening.problems
    this.url = `http://127.0.0.1:${listening.port}`
  }

  /** Polls /readyz until it answers 200. */
  async waitReady(timeoutMs = 120_000): Promise<void> {
    const deadline = Date.now() + timeoutMs
    while (Date.now() < deadline) {
      const answer = await fetch(`${this.url}/readyz`, { signal: AbortSignal.timeout(5_000) }).catch(() => null)
      if (answer !== null) await answer.arrayBuffer()
      if (answer?.status === 200) return
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    throw new Error('server never became ready')
  }

  /** Hard kill (SIGKILL), as a crash: no shutdown code runs. */
  async kill(): Promise<void> {
    const child = this.#child
    if (child === null) return
    child.kill('SIGKILL')
    await exited(child)
    this.#child = null
  }

  /** Graceful stop (SIGTERM) and wait for the exit. */
  async stop(): Promise<void> {
    const child = this.#child
    if (child === null) return
    child.kill('SIGTERM')
    await exited(child)
    this.#child = null
  }
}

export interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly text: string
}

export async function request(
  url: string,
  method: string,
  options: { body?: unknown; token?: string } = {},
): Promise<Answer> {
  const headers: Record<string, string> = {}
  if (options.token !== undefined) headers['authorization'] = `Bearer ${options.token}`
  let body: string | undefined
  if (options.body !== undefined) {
    body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body)
    headers['content-type'] = 'application/json'
  }
  const response = await fetch(url, { method, headers, body })
  return { status: response.status, headers: response.headers, text: await response.text() }
}

/** An admin API call that must succeed: its JSON answer. */
export async function adminCall(server: PricingServer, method: string, urlPath: string, body?: unknown): Promise<any> {
  const answer = await request(`${server.url}${urlPath}`, method, {
    body: body ?? (method === 'GET' ? undefined : {}),
    token: server.options.adminToken,
  })
  if (answer.status < 200 || answer.status > 299)
    throw new Error(`${method} ${urlPath}: ${answer.status} ${answer.text.slice(0, 500)}`)
  return JSON.parse(answer.text) as unknown
}

/** A tenant's API with a client-credentials token, refreshed on demand and after a 401. */
export class TenantClient {
  token = ''

  constructor(
    readonly server: PricingServer,
    readonly slug: string,
    readonly clientId: string,
    readonly clientSecret: string,
  ) {}

  get baseUrl(): string {
    return `${this.server.url}/t/${this.slug}`
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
    const text = await response.text()
    if (response.status !== 200) throw new Error(`token request failed: ${response.status} ${text}`)
    this.token = (JSON.parse(text) as { access_token: string }).access_token
    return this.token
  }

  async call(method: string, path: string, body?: unknown): Promise<Answer> {
    let answer = await request(`${this.baseUrl}${path}`, method, { body, token: this.token })
    if (answer.status === 401) {
      await this.refreshToken()
      answer = await request(`${this.baseUrl}${path}`, method, { body, token: this.token })
    }
    return answer
  }

  /** A call that must answer `status`; anything else stops the bench with the answer's text. */
  async expect(status: number, method: string, path: string, body?: unknown): Promise<Answer> {
    const answer = await this.call(method, path, body)
    if (answer.status !== status)
      throw new Error(`${method} ${path}: expected ${status}, got ${answer.status} ${answer.text.slice(0, 500)}`)
    return answer
  }
}

/** Limits that would throttle the bench: every rate, burst and quota unlimited. */
const unlimited = {
  query_rate: null,
  query_burst: null,
  ingest_rate: null,
  ingest_burst: null,
  prices: null,
  articles: null,
  pricelists: null,
}

/** Creates an enterprise tenant without limits and a key through the operator API; fetches a token. */
export async function provisionTenant(server: PricingServer, slug: string): Promise<TenantClient> {
  const token = server.options.adminToken
  const created = await request(`${server.url}/admin/tenants`, 'POST', {
    token,
    body: { slug, tier: 'enterprise', region: 'local', limits: unlimited },
  })
  if (created.status !== 201) throw new Error(`tenant create failed: ${created.status} ${created.text}`)
  const key = await request(`${server.url}/admin/tenants/${slug}/keys`, 'POST', { token, body: { name: 'bench' } })
  if (key.status !== 201) throw new Error(`key create failed: ${key.status} ${key.text}`)
  const { client_id: clientId, client_secret: clientSecret } = JSON.parse(key.text) as {
    client_id: string
    client_secret: string
  }
  const client = new TenantClient(server, slug, clientId, clientSecret)
  await client.refreshToken()
  return client
}

/**
 * A cache's counts so far: the answer cache's (`pricing_query_answer_cache_items_total`, SKUs) or
 * the prior prices' (`pricing_prior_price_cache_total`).
 */
export async function answerCacheCounts(
  url: string,
  metric = 'pricing_query_answer_cache_items_total',
): Promise<{ hits: number; misses: number }> {
  const text = (await request(`${url}/metrics`, 'GET')).text
  const value = (result: string): number =>
    Number(new RegExp(`^${metric}\\{result="${result}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? Number.NaN)
  return { hits: value('hit'), misses: value('miss') }
}
