/**
 * The fuzzer's driver (issue 13, "Bad input, at scale"): starts the real server (its own process,
 * a real LMDB, a local FX feed), reads the server's OpenAPI document, seeds a world (world.ts) and
 * sends `requests` requests drawn by fast-check from `seed` (requests.ts), one at a time, each
 * byte for byte (wire.ts). Every answer is judged:
 *
 * - no 5xx, no crash (the process must stay up; /readyz answers 200 at the end), no hang (every
 *   request is answered within the time-out, except a body the client cut short on purpose);
 * - an error answer has the spec's body (checks.ts);
 * - a refused request changes nothing: after every 4xx (and every cut-short body) the changelog head
 *   must not have moved. Every `digestEvery`-th request is sent between two digests of the state
 *   (every list of the API, world.ts): after a 4xx both must be equal. And when no request since
 *   the previous digest was an accepted write (all refusals or reads), that digest must equal the
 *   new one too. Accepted writes move the head and the reference digest.
 *
 * Requests are drawn in chunks of 100, each chunk from its own seed (`seed` and the chunk number),
 * so a run is replayed by its seed and request count.
 * @module
 */
import http from 'node:http'
import { readFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import fc from 'fast-check'
import { sharedFixturesDir } from '../helpers/fixtures.js'
import { adminToken, startServer, type TestServer } from '../helpers/server.js'
import { requestBodyBytesMax } from '../../engine/limits.js'
import { consoleRoutes } from '../../http/pages/console/routes.js'
import { operatorRoutes } from '../../http/pages/operator/routes.js'
import { portalPageRoutes } from '../../http/pages/portal/routes.js'
import { errorBodyProblem } from './checks.js'
import { plainText, writeJson, type JValue, type Ref } from './json.js'
import { mutateBytes, mutateTree } from './mutate.js'
import { documentOperations, pageOperations, type Operation } from './operations.js'
import { requestArbitrary, type Auth, type RequestPlan } from './requests.js'
import { decoySlug, mainSlug } from './schema.js'
import { digestDifference, World, type Digest } from './world.js'
import { Wire, type WireAnswer, type WireRequest } from './wire.js'

export interface FuzzOptions {
  readonly seed: number
  readonly requests: number
  /** One request in this many is sent between two digests of the state (default 50). */
  readonly digestEvery?: number
  /** A request without an answer after this long is a hang (default 15 s). */
  readonly timeoutMs?: number
  /** Progress lines (every 5,000 requests), e.g. console.log. */
  readonly log?: (line: string) => void
  /** Every request and its status, as it is answered (for replaying a finding). */
  readonly trace?: (line: string) => void
}

/** One defect: what was sent, what came back. */
export interface Finding {
  readonly index: number
  readonly operation: string
  readonly kind: string
  readonly request: string
  readonly status: number | string
  readonly detail: string
}

/** What the driver counts and keeps examples of. */
export type Defect = 'serverErrors' | 'crashes' | 'hangs' | 'changes' | 'badBodies' | 'resets'

export interface FuzzResult {
  readonly seed: number
  readonly requests: number
  readonly durationMs: number
  /**
   * Defects by kind: 5xx answers, crashes (the process exited), hangs (no answer in time), changes
   * after a refusal, error bodies not in the spec's shape, and connections closed without a whole
   * answer (except for a body the client cut short, or one past four times the body limit, which
   * the server stops reading by design).
   */
  readonly counts: Readonly<Record<Defect, number>>
  /** The first few findings of each kind. */
  readonly findings: Readonly<Record<Defect, readonly Finding[]>>
  readonly statuses: Record<string, number>
  readonly kinds: Record<string, number>
  readonly operations: number
  /** Operations that answered at least once with 2xx/3xx, and with 4xx. */
  readonly operationsAccepted: number
  readonly operationsRefused: number
  /** The operationIds that never accepted a request (none of their valid requests met the data they need). */
  readonly neverAccepted: readonly string[]
  readonly headChecks: number
  readonly digestChecks: number
  readonly readyAtEnd: boolean
}

const chunkSize = 100
const findingsKept = 50

/** The result line of a run (the one CI and the README quote). */
export function resultLine(result: FuzzResult): string {
  const crashes = result.counts.crashes + (result.readyAtEnd || result.counts.crashes > 0 ? 0 : 1)
  return `fuzz: ${result.requests} requests, seed ${result.seed}: ${result.counts.serverErrors} 5xx, ${crashes} crashes, ${result.counts.changes} changes after a refusal`
}

/** The counts behind the result line. */
export function detailLine(result: FuzzResult): string {
  const refused = Object.entries(result.statuses)
    .filter(([status]) => status.startsWith('4'))
    .reduce((sum, [, count]) => sum + count, 0)
  return (
    `${(result.durationMs / 1000).toFixed(1)} s; ${result.counts.hangs} hangs, ${result.counts.badBodies} malformed error bodies, ${result.counts.resets} closed connections; ` +
    `${refused} refusals, ${result.headChecks} changelog-head checks, ${result.digestChecks} digest comparisons; ` +
    `${result.operations} operations, ${result.operationsAccepted} accepted a request, ${result.operationsRefused} refused one`
  )
}

/** Starts a server, fuzzes it, stops it. */
export async function runFuzz(options: FuzzOptions): Promise<FuzzResult> {
  const feed = await startFeed()
  const server = await startServer({
    env: {
      PRICING_FX_FEED_URL: feed.url,
      // No automatic fetch while fuzzing (it would change rates between two digests).
      PRICING_FX_FETCH_DELAY_MS: '3600000',
      PRICING_RETENTION_INTERVAL_S: '0',
      PRICING_WEBHOOK_ALLOW_PRIVATE: 'true',
      PRICING_OPERATOR_EMAILS: 'owner@fuzz.example',
      PRICING_TOKEN_FAILURES_BURST: '1000000',
    },
  })
  let world: World | null = null
  try {
    const document = (await server.request('GET', '/openapi.json')).body
    const pages = pageOperations([...consoleRoutes(), ...operatorRoutes(), ...portalPageRoutes()])
    const operations = [...documentOperations(document), ...pages]
    world = await World.create(server, operations)
    return await new Fuzzer(server, world, operations, options).run()
  } finally {
    world?.close()
    await server.dispose()
    await new Promise<void>((resolve) => feed.server.close(() => resolve()))
  }
}

/** The ECB daily fixture over HTTP, so that POST /fx/fetch works without the internet. */
async function startFeed(): Promise<{ server: http.Server; url: string }> {
  const daily = readFileSync(path.join(sharedFixturesDir, 'ecb/eurofxref-daily.xml'))
  const server = http.createServer((_request, response) =>
    response.writeHead(200, { 'content-type': 'text/xml' }).end(daily),
  )
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/daily.xml` }
}

/** A 32-bit seed of a chunk, from the run's seed and the chunk's number. */
function chunkSeed(seed: number, chunk: number): number {
  return (Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) + Math.imul(chunk + 1, 0xc2b2ae35)) | 0
}

class Fuzzer {
  readonly #wire: Wire
  readonly #found: Record<Defect, Finding[]> = {
    serverErrors: [],
    crashes: [],
    hangs: [],
    changes: [],
    badBodies: [],
    resets: [],
  }
  readonly #counts: Record<Defect, number> = {
    serverErrors: 0,
    crashes: 0,
    hangs: 0,
    changes: 0,
    badBodies: 0,
    resets: 0,
  }
  readonly #statuses: Record<string, number> = {}
  readonly #kinds: Record<string, number> = {}
  readonly #accepted = new Set<string>()
  readonly #refused = new Set<string>()
  #headChecks = 0
  #digestChecks = 0
  /** The digest after the last comparison, and whether every request since was a refusal or a read. */
  #reference: Digest | null = null
  #clean = true

  constructor(
    readonly server: TestServer,
    readonly world: World,
    readonly operations: readonly Operation[],
    readonly options: FuzzOptions,
  ) {
    this.#wire = new Wire('127.0.0.1', server.port, options.timeoutMs ?? 15_000)
  }

  async run(): Promise<FuzzResult> {
    const started = performance.now()
    const digestEvery = this.options.digestEvery ?? 50
    const arbitrary = requestArbitrary(this.operations)
    this.#reference = await this.world.digest()
    let chunk: RequestPlan[] = []
    let sent = 0
    try {
      for (let index = 0; index < this.options.requests && this.server.running; index++) {
        if (index % chunkSize === 0)
          chunk = fc.sample(arbitrary, { seed: chunkSeed(this.options.seed, index / chunkSize), numRuns: chunkSize })
        const plan = chunk[index % chunkSize]!
        try {
          await this.#one(index, plan, index % digestEvery === digestEvery - 1)
        } catch (error) {
          // A check that could not be made because the server is gone is the crash itself.
          if (this.server.running) throw error
        }
        sent = index + 1
        if (!this.server.running && this.#counts.crashes === 0) {
          const op = this.operations[plan.op]!
          this.#keep('crashes', {
            index,
            operation: `${op.method} ${op.template}`,
            kind: plan.kind,
            request: '',
            status: '',
            detail: `the server exited: ${this.server.stdout.slice(-2000)}`,
          })
        }
        if (sent % 5000 === 0)
          this.options.log?.(
            `fuzz: ${sent} requests, ${this.#counts.serverErrors} 5xx, ${this.#counts.changes} changes after a refusal`,
          )
      }
      if (this.server.running) {
        const final = await this.world.digest()
        if (this.#clean)
          this.#compare(
            this.#reference!,
            final,
            sent,
            null,
            'the state at the end differs from the last digest, with only refusals and reads since',
          )
      }
    } finally {
      this.#wire.close()
    }
    const ready = this.server.running && (await this.world.get('/readyz', '')).status === 200
    return this.#result(sent, performance.now() - started, ready)
  }

  /** Sends one request and judges its answer; `bracket`: between two digests. */
  async #one(index: number, plan: RequestPlan, bracket: boolean): Promise<void> {
    const op = this.operations[plan.op]!
    await this.world.refreshTokens()
    if (op.access === 'session' && !this.world.sessionAlive) await this.world.renewSession()
    let before: Digest | null = null
    if (bracket) {
      before = await this.world.digest()
      if (this.#clean)
        this.#compare(
          this.#reference!,
          before,
          index,
          null,
          'the state changed while every request since the last digest was refused or a read',
        )
    }
    const request = this.#materialize(plan, op, index)
    const sentAt = performance.now()
    const answer = await this.#wire.send(request)
    this.options.trace?.(
      `#${index} ${(performance.now() - sentAt).toFixed(1)} ms [${plan.kind}] ${describe(request)} -> ${'status' in answer ? answer.status : answer.failure}`,
    )
    const refused = await this.#judge(index, plan, op, request, answer)
    if (bracket && this.server.running) {
      const after = await this.world.digest()
      if (refused) this.#compare(before!, after, index, { plan, op, request }, 'the state changed after this refusal')
      this.#reference = after
      this.#clean = true
    }
  }

  /** Judges an answer; answers whether the request was refused (state must not have changed). */
  async #judge(
    index: number,
    plan: RequestPlan,
    op: Operation,
    request: WireRequest,
    answer: WireAnswer | { failure: string; message: string },
  ): Promise<boolean> {
    this.#kinds[plan.kind] = (this.#kinds[plan.kind] ?? 0) + 1
    const finding = (status: number | string, detail: string): Finding => ({
      index,
      operation: `${op.method} ${op.template}`,
      kind: plan.kind,
      request: describe(request),
      status,
      detail,
    })
    if (!('status' in answer)) {
      this.#statuses[answer.failure] = (this.#statuses[answer.failure] ?? 0) + 1
      if (!this.server.running) {
        this.#keep('crashes', finding(answer.failure, `the server exited: ${this.server.stdout.slice(-2000)}`))
        return false
      }
      if (request.cutAt !== undefined)
        return this.#checkHead(finding(answer.failure, 'a body cut short changed the changelog'))
      if (answer.failure === 'timeout') this.#keep('hangs', finding('timeout', answer.message))
      // Past four times the body limit the server stops reading at once (http/adapter.ts): expected.
      else if ((request.body?.length ?? 0) <= requestBodyBytesMax * 4)
        this.#keep('resets', finding('reset', answer.message))
      this.#clean = false
      await this.world.advanceHead()
      return false
    }
    const status = answer.status
    this.#statuses[status] = (this.#statuses[status] ?? 0) + 1
    if (status >= 500) {
      this.#keep(
        'serverErrors',
        finding(status, `${answer.body.subarray(0, 300).toString('utf8')}${this.#failureLog(request)}`),
      )
    }
    if (status >= 400 && !op.page && request.method !== 'HEAD') {
      const problem = errorBodyProblem(
        status,
        answer.headers,
        answer.body,
        op.access === 'client' || request.path.includes('/oauth2/token'),
      )
      if (problem !== null)
        this.#keep('badBodies', finding(status, `${problem}: ${answer.body.subarray(0, 300).toString('utf8')}`))
    }
    if (status >= 400 && status < 500) {
      this.#refused.add(op.id)
      return this.#checkHead(finding(status, 'the changelog moved after this refusal'))
    }
    this.#accepted.add(op.id)
    await this.#afterAccepted(plan, op, request, status)
    return false
  }

  /** After a refusal: the changelog head must not have moved (one read). */
  async #checkHead(finding: Finding): Promise<boolean> {
    this.#headChecks++
    const entries = await this.world.entriesSinceHead()
    if (entries.length > 0) {
      this.#keep('changes', { ...finding, detail: `${finding.detail}: ${JSON.stringify(entries).slice(0, 600)}` })
      await this.world.advanceHead()
      this.#clean = false
    }
    return true
  }

  /** After an answer that may have changed state: a restore is waited for, the head moves on. */
  async #afterAccepted(plan: RequestPlan, op: Operation, request: WireRequest, status: number): Promise<void> {
    if (request.method === 'GET' || request.method === 'HEAD') return
    this.#clean = false
    if (op.template.includes('restore') && request.method === 'POST') await this.#restoresDone()
    if (op.template === '/portal/sign-out' && plan.auth === 'right' && status < 400) this.world.sessionAlive = false
    if (op.id === 'rotateSigningKey') await this.world.refreshTokens(true)
    await this.world.advanceHead()
  }

  /** Waits until no restore of the fuzzer's tenant or the decoy runs (writes answer 503 meanwhile, by design). */
  async #restoresDone(): Promise<void> {
    const statuses: [string, string][] = [
      [`/t/${mainSlug}/management/restore/status`, `Bearer ${this.world.credentials.consoleToken}`],
      [`/admin/tenants/${decoySlug}/restore/status`, `Bearer ${adminToken}`],
    ]
    for (const [path, authorization] of statuses) {
      for (let attempt = 0; attempt < 600; attempt++) {
        const answer = await this.world.get(path, authorization)
        if ((answer.json as { status?: string }).status !== 'in_progress') break
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    }
  }

  #compare(
    expected: Digest,
    actual: Digest,
    index: number,
    sent: { plan: RequestPlan; op: Operation; request: WireRequest } | null,
    detail: string,
  ): void {
    this.#digestChecks++
    if (expected.hash === actual.hash) return
    const op = sent?.op
    this.#keep('changes', {
      index,
      operation: op === undefined ? '(window)' : `${op.method} ${op.template}`,
      kind: sent?.plan.kind ?? '',
      request: sent === null ? '' : describe(sent.request),
      status: '',
      detail: `${detail}: ${digestDifference(expected, actual)}`,
    })
  }

  #keep(list: Defect, finding: Finding): void {
    this.#counts[list]++
    if (this.#found[list].length < findingsKept) this.#found[list].push(finding)
  }

  /** The server's log record of a failed request (its stack), found by the request id the fuzzer sent. */
  #failureLog(request: WireRequest): string {
    const id = request.headers['x-request-id']
    const line = this.server.stdout
      .split('\n')
      .find((text) => text.includes(`"request_id":"${id}"`) && text.includes('request failed'))
    return line === undefined ? '' : `\nlog: ${line.slice(0, 1500)}`
  }

  #materialize(plan: RequestPlan, op: Operation, index: number): WireRequest {
    const resolve = (ref: Ref): string => this.world.resolve(ref)
    const headers: Record<string, string> = {
      'x-request-id': `fz-${this.options.seed}-${index}`,
      ...this.#authHeaders(plan.auth, op),
    }
    let body: Buffer | null = null
    let contentType: string | null = null
    const planned = plan.body
    if (planned.type === 'json') {
      body = Buffer.from(writeJson(mutateTree(planned.tree, planned.mutations), resolve), 'utf8')
      if (planned.bytes !== null) body = mutateBytes(body, planned.bytes)
      contentType = op.body?.mediaType ?? 'application/json'
    } else if (planned.type === 'form') {
      const fields: (readonly [string, JValue])[] = [...planned.fields]
      if (planned.csrf !== 'missing')
        fields.push(['_csrf', planned.csrf === 'valid' ? this.world.credentials.csrf : 'not-the-token'])
      body = Buffer.from(
        fields.map(([name, value]) => `${percentEncode(name)}=${percentEncode(plainText(value, resolve))}`).join('&'),
        'utf8',
      )
      if (planned.bytes !== null) body = mutateBytes(body, planned.bytes)
      contentType = 'application/x-www-form-urlencoded'
    } else if (op.body !== null) {
      contentType = op.body.mediaType
    }
    contentType = plan.contentType ?? contentType
    if (contentType !== null) headers['content-type'] = contentType
    const request: WireRequest = { method: plan.method, path: this.#path(plan, op, resolve), headers, body }
    return plan.kind === 'cutTransfer' ? { ...request, cutAt: Math.floor((body?.length ?? 0) / 2) } : request
  }

  #path(plan: RequestPlan, op: Operation, resolve: (ref: Ref) => string): string {
    // `/t/{slug}` is the plan's tenant; any other `{slug}` (the operator's routes, the console's pages) is a parameter.
    let path = op.tenant ? op.template.replace('{slug}', plan.slug) : op.template
    for (const segment of plan.params) {
      const text = plainText(segment.value, resolve)
      path = path.replace(/\{[^}]+\}/, segment.raw ? text : percentEncode(text))
    }
    if (plan.pathStyle === 'trailingSlash') path += '/'
    else if (plan.pathStyle === 'legacyPrefix' && op.tenant)
      path = path.replace(`/t/${plan.slug}/`, `/t/${plan.slug}/api/v1/`)
    else if (plan.pathStyle === 'upperCase')
      path = path.slice(0, path.lastIndexOf('/') + 1) + path.slice(path.lastIndexOf('/') + 1).toUpperCase()
    const query =
      typeof plan.query === 'string'
        ? plan.query
        : plan.query
            .map(([name, value]) => `${percentEncode(name)}=${percentEncode(plainText(value, resolve))}`)
            .join('&')
    return query === '' ? path : `${path}?${query}`
  }

  /** The request's credentials: the operation's own, or the wrong ones the plan names. */
  #authHeaders(auth: Auth, op: Operation): Record<string, string> {
    const credentials = this.world.credentials
    const origin = `http://127.0.0.1:${this.server.port}`
    const session = { cookie: `pricing_session=${credentials.pageSession}`, origin }
    const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` })
    const own = (): Record<string, string> => {
      switch (op.access) {
        case 'tenant':
          return bearer(credentials.mainToken)
        case 'console':
          return bearer(credentials.consoleToken)
        case 'admin':
          return bearer(adminToken)
        case 'session':
          return session
        default:
          return {}
      }
    }
    switch (auth) {
      case 'right':
        return own()
      case 'none':
        return {}
      case 'garbage':
        return { authorization: 'Bearer abc' }
      case 'long':
        return { authorization: `Bearer ${'x'.repeat(3500)}` }
      case 'basic':
        return { authorization: `Basic ${Buffer.from(`${credentials.clientId}:wrong`).toString('base64')}` }
      case 'admin':
        return bearer(adminToken)
      case 'key':
        return bearer(credentials.mainToken)
      case 'console':
        return bearer(credentials.consoleToken)
      case 'decoy':
        return bearer(credentials.decoyToken)
      case 'lowercase':
        return Object.fromEntries(
          Object.entries(own()).map(([name, value]) => [
            name,
            name === 'authorization' ? value.replace('Bearer ', 'bearer ') : value,
          ]),
        )
      case 'jwtShape':
        return { authorization: 'Bearer eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJ0aWQiOiJmdXp6IiwiYXVkIjoiZnV6eiJ9.' }
      case 'cookieNoOrigin':
        return { cookie: session.cookie }
    }
  }

  #result(sent: number, durationMs: number, readyAtEnd: boolean): FuzzResult {
    return {
      seed: this.options.seed,
      requests: sent,
      durationMs,
      counts: this.#counts,
      findings: this.#found,
      statuses: this.#statuses,
      kinds: this.#kinds,
      operations: this.operations.length,
      operationsAccepted: this.#accepted.size,
      operationsRefused: this.#refused.size,
      neverAccepted: this.operations.map((op) => op.id).filter((id) => !this.#accepted.has(id)),
      headChecks: this.#headChecks,
      digestChecks: this.#digestChecks,
      readyAtEnd,
    }
  }
}

/** encodeURIComponent, except that a lone surrogate goes as U+FFFD (as a browser sends it) instead of throwing. */
function percentEncode(text: string): string {
  try {
    return encodeURIComponent(text)
  } catch {
    return encodeURIComponent(Buffer.from(text, 'utf8').toString('utf8'))
  }
}

/** A request in a few hundred characters, for a report. */
export function describe(request: WireRequest): string {
  const body =
    request.body === null
      ? ''
      : ` body ${request.body.length} B ${JSON.stringify(request.body.subarray(0, 240).toString('latin1'))}`
  const type = request.headers['content-type'] === undefined ? '' : ` (${request.headers['content-type'].slice(0, 60)})`
  const cut = request.cutAt === undefined ? '' : ` cut at ${request.cutAt} B`
  return `${request.method} ${request.path.slice(0, 300)}${type}${body}${cut}`
}
