/**
 * The only code that touches uWebSockets.js request and response objects (the native binary is
 * loaded by ./uws/load.ts). It copies what a handler needs from the stack-allocated
 * request before anything asynchronous, reads bodies into a buffer bounded by the body limit,
 * and writes every response inside `cork` (an answer given before the uWS callback returns is
 * already corked by uWS, so it is written directly), each with the request's `x-request-id`.
 * uWS's HTTP parser is lenient about message framing; what it passes through is refused here
 * (`framingFault`), and answers go out in request order on a connection (`holdReads`).
 * docs/security.md, "HTTP framing", lists what only the parser can fix.
 * @module
 */
import type * as Uws from 'uWebSockets.js'
import { reasonPhrases } from './error-status.js'
import { requestIdOf } from './request-id.js'

export interface Incoming {
  readonly method: string
  readonly path: string
  readonly query: string
  readonly host: string
  readonly authorization: string
  readonly contentType: string
  readonly ifNoneMatch: string
  /**
   * The Accept header, read outside the tenant API only (`/t/...` answers JSON whatever it says):
   * a browser that asks for text/html gets errors and unknown pages as pages.
   */
  readonly accept?: string
  /** The Cookie and Origin headers ('' when absent): console sessions and their cross-site check. */
  readonly cookie: string
  readonly origin: string
  /** The `X-Min-Sequence` header ('' when absent): the changelog sequence a cluster reader has seen (tenant/placement.ts). */
  readonly minSequence?: string
  /** The client's address, read only where limits count per address (token requests, admin, sign-in mail). */
  readonly remoteAddress?: string
  /** The `X-Pricing-Forwarded` header ('' when absent): the node that forwarded this request (http/forward.ts). */
  readonly forwarded?: string
  readonly body: Buffer | null
  /** `performance.now()` when the request arrived (ms). */
  readonly startedAt: number
  /** The sane incoming `X-Request-Id`, or a new id (./request-id.ts); echoed on the answer. */
  readonly requestId: string
  /** The tenant's slug once the dispatcher has found the tenant (null before, and for root routes). */
  tenantSlug: string | null
}

export interface Outgoing {
  status: number
  /** Read-only here: a handler's constant header object may be sent as is. */
  headers?: Readonly<Record<string, string>>
  /** Written after `headers` (the rate-limit headers), so neither object needs copying. */
  extraHeaders?: Readonly<Record<string, string>>
  body?: string | Buffer
  /** Called once the body is written, or dropped (the request was aborted): it borrows memory until then. */
  release?: () => void
}

export type Dispatch = (incoming: Incoming) => Outgoing | Promise<Outgoing>

const statusLines = new Map<number, string>()
function statusLine(status: number): string {
  let line = statusLines.get(status)
  if (line === undefined) {
    line = `${status} ${reasonPhrases[status] ?? (status === 200 ? 'OK' : status === 201 ? 'Created' : status === 202 ? 'Accepted' : status === 204 ? 'No Content' : status === 304 ? 'Not Modified' : 'Status')}`
    statusLines.set(status, line)
  }
  return line
}

const bodyMethods = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

/**
 * A body over the limit is still read and discarded, up to this multiple of the limit, before the
 * 413 goes out: a client still uploading then reads the answer instead of a reset connection
 * (EPIPE in Node's fetch and http). Uploads beyond it are cut off at once.
 */
const drainFactor = 4

/**
 * A body's buffer starts at its declared length up to this, and takes the declared length once
 * more arrives (doubling without one): a client that declares 8 MiB and sends little holds 64 KiB.
 */
const bodyBufferInitialMax = 64 * 1024

export interface HttpOptions {
  readonly bodyBytesMax: number
  /**
   * Milliseconds a body has to arrive in full once the headers are read; past it the connection is
   * closed. uWS's own time-out (about 30 s) ends connections that send no complete request, but
   * not an upload that keeps sending (test/security/resource-abuse.test.ts).
   */
  readonly bodyTimeoutMs: number
  readonly onTooLarge: (incoming: Incoming) => Outgoing
  readonly onError: (error: unknown, incoming: Incoming) => Outgoing
  /** The 400 for a request whose framing RFC 9112 says to refuse; `message` says what is wrong. */
  readonly onMalformed: (incoming: Incoming, message: string) => Outgoing
  /**
   * Whether a request with a body changes nothing (a price query): it runs as soon as its body is
   * read (`runReadOnly`), without waiting for uWS to parse what follows it; answers false when unsure.
   */
  readonly readOnly: (incoming: Incoming) => boolean
}

/**
 * The requests of a `serve` still without an answer, for a graceful shutdown (server/main.ts): one
 * answered in the uWS callback is never pending; one waiting for its body or a promise is until it
 * is written or aborted. Once `closing`, every answer carries `Connection: close`, so keep-alive
 * clients leave after the request they are in.
 */
export class HttpTraffic {
  pending = 0
  closing = false
}

interface RequestState {
  aborted: boolean
  readonly traffic: HttpTraffic
  /** Reads on the connection are paused until this request is answered (`holdReads`). */
  paused: boolean
  /** Answer with `Connection: close`: the request had a chunked body (`framingFault`). */
  readonly close: boolean
}

// What one pass over the request's headers found (`readHeaders`): module state, so that reading
// allocates no closure per request. Read right after `req.forEach`, before anything else runs.
let lengthCount = 0
let lengthValue = ''
let lengthsDiffer = false
let codingCount = 0
let codingValue = ''
/** Headers already taken (bits of `headerBits`): like uWS's getHeader, the first of two counts. */
let headersSeen = 0
let hostValue = ''
let authorizationValue = ''
let contentTypeValue = ''
let ifNoneMatchValue = ''
let cookieValue = ''
let originValue = ''
let acceptValue = ''
let minSequenceValue = ''
let forwardedValue = ''
let requestIdValue = ''

const headerBits = {
  host: 1,
  authorization: 2,
  contentType: 4,
  ifNoneMatch: 8,
  cookie: 16,
  origin: 32,
  accept: 64,
  minSequence: 128,
  forwarded: 256,
  requestId: 512,
} as const

/**
 * One visit per header line. uWS hands names lowercased; switching on the length first leaves one
 * or two comparisons per header. The handler needs a dozen headers and the framing check needs
 * every line: one pass does both, where a `getHeader` per header crossed into the native side
 * each time besides (about a microsecond per request).
 */
function visitHeader(name: string, value: string): void {
  switch (name.length) {
    case 4:
      if (name === 'host' && (headersSeen & headerBits.host) === 0) {
        headersSeen |= headerBits.host
        hostValue = value
      }
      return
    case 6:
      if (name === 'cookie') {
        if ((headersSeen & headerBits.cookie) === 0) {
          headersSeen |= headerBits.cookie
          cookieValue = value
        }
      } else if (name === 'origin') {
        if ((headersSeen & headerBits.origin) === 0) {
          headersSeen |= headerBits.origin
          originValue = value
        }
      } else if (name === 'accept' && (headersSeen & headerBits.accept) === 0) {
        headersSeen |= headerBits.accept
        acceptValue = value
      }
      return
    case 12:
      if (name === 'content-type') {
        if ((headersSeen & headerBits.contentType) === 0) {
          headersSeen |= headerBits.contentType
          contentTypeValue = value
        }
      } else if (name === 'x-request-id' && (headersSeen & headerBits.requestId) === 0) {
        headersSeen |= headerBits.requestId
        requestIdValue = value
      }
      return
    case 13:
      if (name === 'authorization') {
        if ((headersSeen & headerBits.authorization) === 0) {
          headersSeen |= headerBits.authorization
          authorizationValue = value
        }
      } else if (name === 'if-none-match' && (headersSeen & headerBits.ifNoneMatch) === 0) {
        headersSeen |= headerBits.ifNoneMatch
        ifNoneMatchValue = value
      }
      return
    case 14:
      if (name === 'content-length') {
        if (lengthCount > 0 && value !== lengthValue) lengthsDiffer = true
        lengthCount++
        lengthValue = value
      } else if (name === 'x-min-sequence' && (headersSeen & headerBits.minSequence) === 0) {
        headersSeen |= headerBits.minSequence
        minSequenceValue = value
      }
      return
    case 17:
      if (name === 'transfer-encoding') {
        codingCount++
        codingValue = value
      }
      return
    case 19:
      if (name === 'x-pricing-forwarded' && (headersSeen & headerBits.forwarded) === 0) {
        headersSeen |= headerBits.forwarded
        forwardedValue = value
      }
      return
  }
}

/** Reads every header line once (`visitHeader`); an absent header reads as '', as with getHeader. */
function readHeaders(req: Uws.HttpRequest): void {
  lengthCount = 0
  lengthsDiffer = false
  codingCount = 0
  headersSeen = 0
  hostValue = ''
  authorizationValue = ''
  contentTypeValue = ''
  ifNoneMatchValue = ''
  cookieValue = ''
  originValue = ''
  acceptValue = ''
  minSequenceValue = ''
  forwardedValue = ''
  requestIdValue = ''
  req.forEach(visitHeader)
}

const digitsOnly = /^[0-9]+$/
const chunkedOnly = /^[ \t]*chunked[ \t]*$/i

/**
 * Why RFC 9112 (section 6.3) says to refuse this request's framing, or '' when it is sound; reads
 * what `readHeaders` found. uWS
 * takes the first of two Content-Length headers, reads an empty one as 0, and decodes any
 * Transfer-Encoding that mentions chunked as chunked; a front end that reads the message
 * differently would forward the rest of the body as the next request (request smuggling). Every
 * header line is visible here, so the handler refuses before any of the body is read. Afterwards
 * `codingCount > 0` says the body is chunked.
 */
function framingFault(): string {
  if (lengthCount === 0 && codingCount === 0) return ''
  if (codingCount > 0) {
    if (lengthCount > 0) return 'Transfer-Encoding and Content-Length in one request'
    if (codingCount > 1 || !chunkedOnly.test(codingValue)) {
      return 'Transfer-Encoding must be one header with the single coding chunked'
    }
    return ''
  }
  if (lengthsDiffer) return 'Content-Length headers with different values'
  if (!digitsOnly.test(lengthValue)) return 'Content-Length must be decimal digits'
  return ''
}

/** Registers the catch-all handler that turns uWS callbacks into `Incoming` → `Outgoing`. */
export function serve(app: Uws.TemplatedApp, dispatch: Dispatch, options: HttpOptions): HttpTraffic {
  const traffic = new HttpTraffic()
  const deadlines = new BodyDeadlines(options.bodyTimeoutMs)
  app.any('/*', (res, req) => {
    const method = req.getCaseSensitiveMethod().toUpperCase()
    readHeaders(req)
    const fault = framingFault()
    if (fault !== '') {
      refuse(res, incomingOf(req, method, res), fault, options, traffic)
      return
    }
    // A chunked body is decoded by uWS alone, and its decoder accepts malformed chunk lines
    // (docs/security.md): after one, the connection is closed, so leftover bytes never run. The
    // answer goes out after uWS has parsed what it read (below), whatever the method.
    const chunked = codingCount > 0
    const declared = lengthCount > 0 ? Number(lengthValue) : 0
    if (!chunked && !bodyMethods.has(method)) {
      runWithoutBody(res, incomingOf(req, method, res), dispatch, options, traffic)
      return
    }
    const state = pendingState(res, traffic, chunked)
    const head = incomingOf(req, method, res)
    if (declared > options.bodyBytesMax * drainFactor) {
      send(res, state, head.requestId, options.onTooLarge(head), true)
      return
    }
    readBody(res, state, declared, options.bodyBytesMax, deadlines, (body) => {
      if (body === null) {
        send(res, state, head.requestId, options.onTooLarge(head), true)
        return
      }
      ;(head as { body: Buffer | null }).body = body
      if (!chunked && options.readOnly(head)) {
        runReadOnly(res, state, head, dispatch, options)
        return
      }
      holdReads(res, state)
      // Dispatched once uWS has parsed the rest of what it read with this body: a request
      // pipelined behind it there makes uWS close the connection (see holdReads), and a write
      // must not be done whose answer can no longer be sent.
      setImmediate(() => {
        if (!state.aborted) run(res, state, head, dispatch, options)
      })
    })
  })
  return traffic
}

/**
 * Answers a request whose framing is refused, and closes the connection. Not from inside the uWS
 * callback: there uWS would go on parsing what follows (the rest of the body, as the next request)
 * and forget the close. On the next turn, with reads paused, it has parsed what it read: a request
 * behind this one has made it close the connection already (see holdReads), so nothing after the
 * refused request runs; otherwise the 400 goes out and the connection is closed.
 */
function refuse(
  res: Uws.HttpResponse,
  incoming: Incoming,
  message: string,
  options: HttpOptions,
  traffic: HttpTraffic,
): void {
  const state = pendingState(res, traffic, true)
  holdReads(res, state)
  setImmediate(() => {
    if (state.aborted) return
    send(res, state, incoming.requestId, options.onMalformed(incoming, message), true, incoming.method === 'HEAD')
  })
}

/**
 * Pipelining (RFC 9112 section 9.3.2) behind an answer that is not given at once. uWS allows one
 * request in flight per connection: when it parses another while one is unanswered, it closes the
 * connection (HttpContext.h: "denying async pipelining"), and the handler never sees that request.
 * Pausing the socket's reads until the answer is written keeps later requests in the kernel's
 * buffer, so they are parsed, and answered, one after the other, in order. Requests that arrived
 * in the same read as this one are parsed before the pause can act: uWS closes the connection
 * then, and a request with a body is not dispatched (above), so nothing is done unanswered.
 */
function holdReads(res: Uws.HttpResponse, state: RequestState): void {
  res.pause()
  state.paused = true
}

/** A request that is answered later: counted until `send` writes it or the client goes away. */
function pendingState(res: Uws.HttpResponse, traffic: HttpTraffic, close: boolean): RequestState {
  const state: RequestState = { aborted: false, traffic, paused: false, close }
  traffic.pending++
  res.onAborted(() => {
    if (!state.aborted) traffic.pending--
    state.aborted = true
  })
  return state
}

/**
 * Routes whose limits count per client address: credentials (token requests, the admin token) and
 * sign-in mail. Only these read it: the tenant API's hot path does not pay for the conversion.
 */
function limitedByAddress(path: string): boolean {
  return path.startsWith('/admin/') || path === '/portal/sign-in' || path.endsWith('/oauth2/token')
}

/**
 * What a handler needs from the request, without the body (read later, for methods that have one);
 * the headers are those `readHeaders` has just read.
 */
function incomingOf(req: Uws.HttpRequest, method: string, res: Uws.HttpResponse): Incoming {
  const path = req.getUrl()
  return {
    method,
    path,
    query: req.getQuery() ?? '',
    host: hostValue,
    authorization: authorizationValue,
    contentType: contentTypeValue,
    ifNoneMatch: ifNoneMatchValue,
    accept: path.startsWith('/t/') ? undefined : acceptValue,
    cookie: cookieValue,
    origin: originValue,
    minSequence: minSequenceValue,
    remoteAddress: limitedByAddress(path) ? Buffer.from(res.getRemoteAddressAsText()).toString() : undefined,
    forwarded: forwardedValue,
    body: null,
    startedAt: performance.now(),
    requestId: requestIdOf(requestIdValue),
    tenantSlug: null,
  }
}

/**
 * A request without a body runs inside the uWS callback: a synchronous answer is written at once
 * (uWS corks the callback itself, and the response cannot have been aborted yet); only an
 * asynchronous one needs the abort handler, attached before the callback returns.
 */
function runWithoutBody(
  res: Uws.HttpResponse,
  incoming: Incoming,
  dispatch: Dispatch,
  options: HttpOptions,
  traffic: HttpTraffic,
): void {
  let outgoing: Outgoing | Promise<Outgoing>
  try {
    outgoing = dispatch(incoming)
  } catch (error) {
    outgoing = options.onError(error, incoming)
  }
  const head = incoming.method === 'HEAD'
  if (!(outgoing instanceof Promise)) {
    write(res, incoming.requestId, outgoing, traffic.closing, head)
    return
  }
  const state = pendingState(res, traffic, false)
  holdReads(res, state)
  outgoing.then(
    (value) => send(res, state, incoming.requestId, value, false, head),
    (error: unknown) => send(res, state, incoming.requestId, options.onError(error, incoming), false, head),
  )
}

function run(
  res: Uws.HttpResponse,
  state: RequestState,
  incoming: Incoming,
  dispatch: Dispatch,
  options: HttpOptions,
): void {
  let outgoing: Outgoing | Promise<Outgoing>
  try {
    outgoing = dispatch(incoming)
  } catch (error) {
    send(res, state, incoming.requestId, options.onError(error, incoming), false)
    return
  }
  if (outgoing instanceof Promise) {
    outgoing.then(
      (value) => send(res, state, incoming.requestId, value, false),
      (error: unknown) => send(res, state, incoming.requestId, options.onError(error, incoming), false),
    )
  } else {
    send(res, state, incoming.requestId, outgoing, false)
  }
}

/**
 * A request with a body that changes nothing, run inside uWS's data callback. An answer given at
 * once is written before uWS parses anything behind the request, so requests pipelined behind it
 * are answered in order with no pause of reads and no wait for the next turn of the loop (the
 * writes' path above costs two epoll_ctl calls and a setImmediate per request). An answer that
 * comes later holds reads; should uWS meanwhile have closed the connection for a request behind it
 * in the same read, the answer is dropped, and nothing was done that needed it.
 */
function runReadOnly(
  res: Uws.HttpResponse,
  state: RequestState,
  incoming: Incoming,
  dispatch: Dispatch,
  options: HttpOptions,
): void {
  let outgoing: Outgoing | Promise<Outgoing>
  try {
    outgoing = dispatch(incoming)
  } catch (error) {
    outgoing = options.onError(error, incoming)
  }
  if (!(outgoing instanceof Promise)) {
    send(res, state, incoming.requestId, outgoing, false)
    return
  }
  holdReads(res, state)
  outgoing.then(
    (value) => send(res, state, incoming.requestId, value, false),
    (error: unknown) => send(res, state, incoming.requestId, options.onError(error, incoming), false),
  )
}

/** A body being read, until it is complete, refused, or past its deadline. */
interface BodyRead {
  readonly res: Uws.HttpResponse
  readonly state: { aborted: boolean }
  /** `performance.now()` past which the connection is closed. */
  readonly deadline: number
  finished: boolean
}

/**
 * The deadlines of the bodies being read, swept by one timer instead of a timer per request (a
 * setTimeout and clearTimeout per body, with their objects, on the query path). The timer runs only
 * while a body is being read, every eighth of the time-out (250 ms at most): a slow upload is cut
 * off at its deadline or up to one sweep after it. Every body has the same time-out, so the reads
 * are in deadline order and a sweep stops at the first one still in time.
 */
class BodyDeadlines {
  readonly #reads = new Set<BodyRead>()
  readonly #sweepMs: number
  #timer: NodeJS.Timeout | null = null

  constructor(readonly timeoutMs: number) {
    this.#sweepMs = Math.max(1, Math.min(250, Math.floor(timeoutMs / 8)))
  }

  add(res: Uws.HttpResponse, state: { aborted: boolean }): BodyRead {
    const read: BodyRead = { res, state, deadline: performance.now() + this.timeoutMs, finished: false }
    this.#reads.add(read)
    if (this.#timer === null) this.#timer = setInterval(() => this.#sweep(), this.#sweepMs).unref()
    return read
  }

  /** The body is complete, refused or aborted: its deadline no longer counts. */
  end(read: BodyRead): void {
    read.finished = true
    this.#reads.delete(read)
  }

  #sweep(): void {
    const now = performance.now()
    for (const read of this.#reads) {
      if (read.deadline > now) break
      this.#reads.delete(read)
      if (read.finished || read.state.aborted) continue
      read.finished = true
      // Closing calls onAborted: the request stops counting as pending.
      read.res.close()
    }
    if (this.#reads.size === 0 && this.#timer !== null) {
      clearInterval(this.#timer)
      this.#timer = null
    }
  }
}

/**
 * Copies chunks into one buffer; answers null when the body grows past the limit, once the rest of
 * the body has been drained (or the drain bound is passed). A body still incomplete at its deadline
 * (`deadlines`) closes the connection (slow POST): `whenRead` is then never called.
 */
function readBody(
  res: Uws.HttpResponse,
  state: { aborted: boolean },
  declared: number,
  limit: number,
  deadlines: BodyDeadlines,
  whenRead: (body: Buffer | null) => void,
): void {
  let draining = declared > limit
  let buffer = Buffer.allocUnsafe(draining ? 0 : declared > 0 ? Math.min(declared, bodyBufferInitialMax) : 1024)
  let length = 0
  const read = deadlines.add(res, state)
  const done = (body: Buffer | null): void => {
    deadlines.end(read)
    whenRead(body)
  }
  res.onData((chunk, isLast) => {
    if (read.finished || state.aborted) {
      if (state.aborted) deadlines.end(read)
      return
    }
    const bytes = new Uint8Array(chunk)
    if (draining || length + bytes.length > limit) {
      // Past the limit: count what arrives, keep nothing.
      if (!draining) buffer = Buffer.allocUnsafe(0)
      draining = true
      length += bytes.length
      if (isLast || length > limit * drainFactor) done(null)
      return
    }
    if (length + bytes.length > buffer.length) {
      const needed = length + bytes.length
      const doubled = Math.max(buffer.length * 2, needed)
      // Once data comes, straight to the declared length when the body keeps to it (one copy);
      // otherwise doubling; never past the limit.
      const grown = Buffer.allocUnsafe(Math.min(limit, declared >= needed ? declared : doubled))
      buffer.copy(grown, 0, 0, length)
      buffer = grown
    }
    buffer.set(bytes, length)
    length += bytes.length
    if (isLast) done(buffer.subarray(0, length))
  })
}

function send(
  res: Uws.HttpResponse,
  state: RequestState,
  requestId: string,
  outgoing: Outgoing,
  close: boolean,
  head = false,
): void {
  if (state.aborted) {
    outgoing.release?.()
    return
  }
  state.aborted = true
  state.traffic.pending--
  res.cork(() => {
    // Before the answer: once it is written, uWS lets no call on `res` through.
    if (state.paused) res.resume()
    write(res, requestId, outgoing, close || state.close || state.traffic.closing, head)
  })
}

const hasLineBreak = (text: string): boolean => text.indexOf('\n') >= 0 || text.indexOf('\r') >= 0

/**
 * The request's id and the answer's headers. uWS writes `name: value` and a line break per
 * `writeHeader`, and each call into the native side costs about 0.3 us whatever its length (five
 * headers on a price read: 1.5 us, as much as the ETag's hash); so all of them go in one call, the
 * lines joined after the id. A value with a line break in it (none of the service's own; joined, it
 * could end the head early) takes one call per header, exactly as uWS writes it. Names are not
 * checked: each is a constant of the code (forwarded answers keep a fixed list, http/forward.ts).
 */
function writeHeaders(res: Uws.HttpResponse, requestId: string, outgoing: Outgoing): void {
  let block = requestId
  let plain = true
  const headers = outgoing.headers
  if (headers !== undefined) {
    for (const name in headers) {
      const value = headers[name]!
      if (hasLineBreak(value)) plain = false
      block += `\r\n${name}: ${value}`
    }
  }
  const extra = outgoing.extraHeaders
  if (extra !== undefined) {
    for (const name in extra) {
      const value = extra[name]!
      if (hasLineBreak(value)) plain = false
      block += `\r\n${name}: ${value}`
    }
  }
  if (plain) {
    res.writeHeader('x-request-id', block)
    return
  }
  res.writeHeader('x-request-id', requestId)
  if (headers !== undefined) {
    for (const name in headers) res.writeHeader(name, headers[name]!)
  }
  if (extra !== undefined) {
    for (const name in extra) res.writeHeader(name, extra[name]!)
  }
}

/**
 * Writes a whole answer with the request's id; the caller has corked (or is inside the uWS callback).
 * The answer to a HEAD request has the headers of the GET answer, its Content-Length included, and
 * no content (RFC 9110 section 9.3.2): bytes after the head would be read as the next answer.
 */
function write(res: Uws.HttpResponse, requestId: string, outgoing: Outgoing, close: boolean, head = false): void {
  // uWS writes `200 OK` itself when no status was written.
  if (outgoing.status !== 200) res.writeStatus(statusLine(outgoing.status))
  writeHeaders(res, requestId, outgoing)
  if (close) res.writeHeader('connection', 'close')
  try {
    if (outgoing.status === 204 || outgoing.status === 304) {
      // No Content-Length on 204/304 (RFC 9110). An explicit `undefined` length makes uWS write
      // `Content-Length: 2^63`, which leaves keep-alive clients waiting for a body.
      if (close) res.endWithoutBody(0, true)
      else res.endWithoutBody()
    } else if (head) {
      const body = outgoing.body ?? ''
      res.endWithoutBody(typeof body === 'string' ? Buffer.byteLength(body) : body.length, close)
    } else {
      res.end(outgoing.body ?? '', close)
    }
  } finally {
    // uWS has sent the body or copied what it could not send yet.
    outgoing.release?.()
  }
}
