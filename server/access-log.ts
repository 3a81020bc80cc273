/**
 * The access log (`PRICING_ACCESS_LOG=true`): one JSON line per answered request on the root
 * logger's stream (stdout), in the shape of the other records:
 *
 *     {"level":30,"time":"…","service":"pricing-service","request_id":"q3V9bX0c-1k","method":"GET",
 *      "route":"/price/:sku/:pricelist/:tax_area","status":200,"duration_ms":0.412,
 *      "tenant":"acme","bytes":312,"msg":"request"}
 *
 * `route` is the route pattern (the metrics label), never the raw path; `tenant` is null for root
 * routes and unknown tenants; `duration_ms` runs from the request's arrival to its answer being
 * handed to uWS; `bytes` is the body's length. Lines are written whatever the log level.
 *
 * Cost (bench/access-log.ts measures it against the same server with the log off): pino's
 * `logger.info(object)` costs about 5 us a record here, and a write per line several more, against
 * about 16 us of server CPU for a whole GET. So the line is built by concatenation from parts that
 * are JSON already (route and method strings are encoded once, the ISO time once per millisecond),
 * and lines are batched: handed to the root logger's stream (stdout, asynchronous, ./log.ts) as one
 * chunk when 16 KiB have gathered or 100 ms after the first line of a batch, whichever comes
 * first, and at close. A crash loses at most the lines of the last 100 ms and what stdout had not
 * written yet. `PRICING_ACCESS_LOG_SAMPLE` below 1 records that fraction of the successful answers
 * (chosen at random); 4xx and 5xx answers are always recorded.
 * @module
 */
import type { Incoming } from './http.js'
import { serviceName, type LineStream } from './log.js'

/** Gathered lines are written once they reach this many characters (about 80 lines). */
const batchCharsMax = 16 * 1024
/** ...or this long after the first line of the batch, so a quiet server's lines still appear soon. */
const batchDelayMs = 100
/** The head of every line: pino's level number for info. */
const levelHead = '{"level":30,"time":"'
const serviceHead = `","service":${JSON.stringify(serviceName)},"request_id":`
/** Methods whose JSON is kept; any other method is encoded per line (a client may send anything). */
const commonMethods = new Map(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'].map((method) => [method, `"${method}"`]))

/**
 * A request id as a JSON string. Ids are visible ASCII (./request-id.ts), so only a quote or a
 * backslash needs escaping, and most ids have neither (JSON.stringify costs about 0.2 us).
 */
function jsonString(id: string): string {
  return id.indexOf('"') < 0 && id.indexOf('\\') < 0 ? `"${id}"` : JSON.stringify(id)
}

export class AccessLog {
  readonly #stream: LineStream
  readonly #sample: number
  /** Route pattern -> its JSON string (the patterns are the route table's: a bounded set). */
  readonly #routeJson = new Map<string, string>()
  #batch = ''
  #timer: NodeJS.Timeout | null = null
  #timeMs = -1
  #timeIso = ''

  /**
   * @param stream where whole batches of lines go (the root logger's stream)
   * @param sample the fraction of successful answers recorded, 0..1
   */
  constructor(stream: LineStream, sample: number) {
    if (!(sample >= 0 && sample <= 1)) throw new RangeError(`access log sample must be within 0..1, got ${sample}`)
    this.#stream = stream
    this.#sample = sample
  }

  /**
   * Records one answer unless it is sampled out. `route` is the route pattern; `durationMs` runs
   * from the request's arrival (the caller has measured it for the metrics already).
   */
  record(incoming: Incoming, route: string, status: number, durationMs: number, body: string | Buffer | undefined): void {
    if (status < 400 && this.#sample < 1 && !(this.#sample > 0 && Math.random() < this.#sample)) return
    const bytes = body === undefined ? 0 : typeof body === 'string' ? Buffer.byteLength(body) : body.length
    // A known tenant's slug matches tenants.ts slugPattern ([a-z0-9-]): nothing to escape.
    const tenant = incoming.tenantSlug === null ? 'null' : `"${incoming.tenantSlug}"`
    this.#batch +=
      levelHead +
      this.#time() +
      serviceHead +
      jsonString(incoming.requestId) +
      ',"method":' +
      (commonMethods.get(incoming.method) ?? JSON.stringify(incoming.method)) +
      ',"route":' +
      this.#route(route) +
      ',"status":' +
      status +
      ',"duration_ms":' +
      Math.round(durationMs * 1000) / 1000 +
      ',"tenant":' +
      tenant +
      ',"bytes":' +
      bytes +
      ',"msg":"request"}\n'
    if (this.#batch.length >= batchCharsMax) this.flush()
    else if (this.#timer === null) {
      this.#timer = setTimeout(() => this.flush(), batchDelayMs)
      this.#timer.unref()
    }
  }

  /** Writes the gathered lines now (the timer does it otherwise; main.ts calls it at close). */
  flush(): void {
    if (this.#timer !== null) {
      clearTimeout(this.#timer)
      this.#timer = null
    }
    if (this.#batch === '') return
    const batch = this.#batch
    this.#batch = ''
    this.#stream.write(batch)
  }

  /** The ISO time of now, formatted once per millisecond (toISOString costs about 0.5 us). */
  #time(): string {
    const nowMs = Date.now()
    if (nowMs !== this.#timeMs) {
      this.#timeMs = nowMs
      this.#timeIso = new Date(nowMs).toISOString()
    }
    return this.#timeIso
  }

  #route(route: string): string {
    let json = this.#routeJson.get(route)
    if (json === undefined) {
      json = JSON.stringify(route)
      this.#routeJson.set(route, json)
    }
    return json
  }
}
