/**
 * HTTP for the torture harness: the tenant's API with an API key's token, the management API with a
 * console token (a person signed in through the outbox's magic link), and the operator API. Every
 * request has a time-out, so a hung server shows as a failure instead of a hang.
 * @module
 */
import { outboxLink } from '../helpers/console.js'
import type { TestServer } from '../helpers/server.js'
import { adminToken, type ServerProcess } from './server-process.js'

const requestTimeoutMs = 30_000

export interface Answer {
  status: number
  body: any
  text: string
}

export async function request(
  server: ServerProcess,
  method: string,
  urlPath: string,
  options: { body?: unknown; token?: string; headers?: Record<string, string>; timeoutMs?: number } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers }
  if (options.token !== undefined) headers['authorization'] = `Bearer ${options.token}`
  let body: string | undefined
  if (options.body !== undefined) {
    body = JSON.stringify(options.body)
    headers['content-type'] = 'application/json'
  }
  const response = await fetch(`${server.url}${urlPath}`, {
    method,
    headers,
    body,
    redirect: 'manual',
    signal: AbortSignal.timeout(options.timeoutMs ?? requestTimeoutMs),
  })
  const text = await response.text()
  let json: unknown
  try {
    json = text === '' ? undefined : JSON.parse(text)
  } catch {
    json = undefined
  }
  return { status: response.status, body: json, text }
}

export async function expect(answer: Promise<Answer>, status: number, what: string): Promise<Answer> {
  const settled = await answer
  if (settled.status !== status) throw new Error(`${what}: ${settled.status} ${settled.text.slice(0, 500)}`)
  return settled
}

/** One tenant: an API key's token and the owner's console token, both refreshed after each start. */
export class Tenant {
  token = ''
  consoleToken = ''
  #sessionCookie = ''

  constructor(
    readonly server: ServerProcess,
    readonly slug: string,
    readonly clientId: string,
    readonly clientSecret: string,
    readonly ownerEmail: string,
  ) {}

  api(method: string, urlPath: string, body?: unknown, timeoutMs?: number): Promise<Answer> {
    return request(this.server, method, `/t/${this.slug}${urlPath}`, { body, token: this.token, timeoutMs })
  }

  management(method: string, urlPath: string, body?: unknown): Promise<Answer> {
    return request(this.server, method, `/t/${this.slug}/management${urlPath}`, { body, token: this.consoleToken })
  }

  admin(method: string, urlPath: string, body?: unknown, timeoutMs?: number): Promise<Answer> {
    return request(this.server, method, urlPath, { body, token: adminToken, timeoutMs })
  }

  /** New tokens (a token outlives a restart, but not the session's 15 minutes). */
  async refresh(): Promise<void> {
    const form = new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: this.clientId,
      client_secret: this.clientSecret,
    })
    const response = await fetch(`${this.server.url}/oauth2/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form.toString(),
      signal: AbortSignal.timeout(requestTimeoutMs),
    })
    const json = (await response.json()) as { access_token: string }
    if (response.status !== 200) throw new Error(`token: ${response.status} ${JSON.stringify(json)}`)
    this.token = json.access_token
    if (this.#sessionCookie === '') await this.#signIn()
    let answer = await this.#consoleToken()
    if (answer.status === 401) {
      await this.#signIn()
      answer = await this.#consoleToken()
    }
    if (answer.status !== 200) throw new Error(`console token: ${answer.status} ${answer.text}`)
    this.consoleToken = answer.body.access_token
  }

  #consoleToken(): Promise<Answer> {
    return request(this.server, 'POST', '/portal/console-token', {
      headers: { cookie: `pricing_session=${this.#sessionCookie}`, origin: this.server.url },
      body: { tenant: this.slug },
    })
  }

  async #signIn(): Promise<void> {
    await expect(request(this.server, 'POST', '/portal/sign-in', { body: { email: this.ownerEmail } }), 202, 'sign-in')
    // The link names the public URL (the first start's port); this start listens elsewhere.
    const link = new URL(outboxLink({ dataDir: this.server.dataDir } as TestServer, this.ownerEmail))
    const verified = await fetch(`${this.server.url}/portal/verify`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: this.server.url },
      body: new URLSearchParams({ token: link.searchParams.get('token') ?? '' }).toString(),
      redirect: 'manual',
      signal: AbortSignal.timeout(requestTimeoutMs),
    })
    if (verified.status !== 303) throw new Error(`verify: ${verified.status}`)
    const cookie = /pricing_session=([^;]+)/.exec(verified.headers.get('set-cookie') ?? '')
    if (cookie === null) throw new Error('verify set no session cookie')
    this.#sessionCookie = cookie[1]!
  }
}
