/**
 * The access log (`PRICING_ACCESS_LOG=true`, or `PUT /admin/access-log` on a running node): one JSON
 * line per answered request on the root logger's stream (stdout), in the shape of the other records:
 *
 *     {"level":30,"time":"…","service":"pricing-service","request_id":"q3V9bX0c-1k","method":"GET",
 *      "route":"/price/:sku/:pricelist/:tax_area","status":200,"duration_ms":0.412,
 *      "tenant":"acme","bytes":312,"msg":"request"}
 *
 * `route` is the route pattern (the metrics label), never the raw path; `tenant` is null for root
 * routes and unknown tenants; `duration_ms` runs from the request's arrival to its answer being
 * handed to uWS; `bytes` is the body's length. Lines are written whatever the log level.
 *
 * Cost (bench/access-log.ts measures it on one process, switched on and off between windows of
 * load): pino's `logger.info(object)` costs about 5 us a record here, against about 15 us of
 * server CPU for a whole GET. So the line is built by concatenation from parts that are JSON
 * already (route and method strings are encoded once, the time's second once per second), encoded
 * straight into a batch buffer, and the batches are handed to the root logger's stream (stdout,
 * asynchronous, bytes: ./log.ts) when 64 KiB have gathered, at the next tick of a 100 ms interval
 * (which runs while the log is on), when the log is switched, and at close. A crash loses at most
 * the lines of the last 100 ms and what stdout had not written yet. A line costs about 1.5 us of
 * server CPU in the bench (0.5 us in a loop of its own); formatting lines a batch at a time from
 * columns was tried and cost no less.
 * `PRICING_ACCESS_LOG_SAMPLE` below 1 records that fraction of the successful answers (chosen at
 * random); 4xx and 5xx answers are always recorded.
 * @module
 */
import type { Incoming } from './adapter.js'
import { serviceName, type LineStream } from '../platform/log.js'

/** Gathered lines are written once they reach this many bytes (about 250 lines). */
const batchBytesMax = 64 * 1024
/** A batch buffer's size: room for the batch and more than one line (a longer line is written alone). */
const batchBufferBytes = batchBytesMax + 8 * 1024
/** ...or at the next tick of this interval (while the log is on), so a quiet server's lines appear soon. */
const batchIntervalMs = 100
/** The head of every line: pino's level number for info. */
const levelHead = '{"level":30,"time":"'
const serviceHead = `Z","service":${JSON.stringify(serviceName)},"request_id":`
/** Methods whose JSON is kept; any other method is encoded per line (a client may send anything). */
const commonMethods = new Map(
  ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'].map((method) => [method, `"${method}"`]),
)

/** '000' to '999': the milliseconds of a time. */
const thousandths = Array.from({ length: 1000 }, (_, index) => String(index).padStart(3, '0'))

/**
 * A request id as a JSON string. Ids are visible ASCII (./request-id.ts), so only a quote or a
 * backslash needs escaping, and most ids have neither (JSON.stringify costs about 0.2 us).
 */
function jsonString(id: string): string {
  return id.indexOf('"') < 0 && id.indexOf('\\') < 0 ? `"${id}"` : JSON.stringify(id)
}

/** What the access log records: on or off, and the share of successful answers (0..1). */
export interface AccessLogSettings {
  readonly enabled: boolean
  readonly sample: number
}

export class AccessLog {
  readonly #stream: LineStream
  #enabled = false
  #sample = 1
  /**
   * Successful answers to pass over before the next one is recorded, counted down: the gaps of a
   * random 'record with probability `sample`' drawn at once (geometric), so that an answer passed
   * over costs a decrement, not a random number. 0 records every answer.
   */
  #skip = 0
  #timer: NodeJS.Timeout | null = null
  /** Route pattern -> its JSON string (the patterns are the route table's: a bounded set). */
  readonly #routeJson = new Map<string, string>()
  /** The batch being gathered: `#batchBytes` bytes of `#batch` are lines (the stream keeps a written one). */
  #batch = Buffer.allocUnsafe(batchBufferBytes)
  #batchBytes = 0
  /** The millisecond whose ISO text (up to the `Z`) is `#timeText`, and likewise for its second. */
  #timeMs = -1
  #timeText = ''
  #second = -1
  #secondText = ''

  /**
   * @param stream where whole batches of lines go (the root logger's stream)
   * @param settings on or off at start, and the fraction of successful answers recorded (0..1)
   */
  constructor(stream: LineStream, settings: AccessLogSettings) {
    this.#stream = stream
    this.configure(settings)
  }

  get settings(): AccessLogSettings {
    return { enabled: this.#enabled, sample: this.#sample }
  }

  /** Turns the log on or off, or changes the sample, at once; lines gathered so far are written. */
  configure(settings: AccessLogSettings): void {
    const { enabled, sample } = settings
    if (!(sample >= 0 && sample <= 1)) throw new RangeError(`access log sample must be within 0..1, got ${sample}`)
    this.#enabled = enabled
    this.#sample = sample
    this.#skip = this.#nextSkip()
    this.flush()
    if (enabled && this.#timer === null) {
      this.#timer = setInterval(() => this.flush(), batchIntervalMs)
      this.#timer.unref()
    } else if (!enabled && this.#timer !== null) {
      clearInterval(this.#timer)
      this.#timer = null
    }
  }

  /**
   * Records one answer unless the log is off or the answer is sampled out. `route` is the route
   * pattern; `durationMs` runs from the request's arrival (the caller has measured it for the
   * metrics already).
   */
  record(
    incoming: Incoming,
    route: string,
    status: number,
    durationMs: number,
    body: string | Buffer | undefined,
  ): void {
    if (!this.#enabled) return
    if (status < 400 && this.#sample < 1) {
      if (this.#skip > 0) {
        this.#skip--
        return
      }
      this.#skip = this.#nextSkip()
    }
    const bytes = body === undefined ? 0 : typeof body === 'string' ? Buffer.byteLength(body) : body.length
    // A known tenant's slug matches tenants.ts slugPattern ([a-z0-9-]): nothing to escape.
    const tenant = incoming.tenantSlug === null ? 'null' : `"${incoming.tenantSlug}"`
    const line =
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
    // Three bytes a UTF-16 unit at the most; a longer line than the room left goes after a flush.
    if (this.#batchBytes + line.length * 3 > batchBufferBytes) this.flush()
    if (line.length * 3 > batchBufferBytes) {
      this.#stream.write(Buffer.from(line))
      return
    }
    this.#batchBytes += this.#batch.write(line, this.#batchBytes)
    if (this.#batchBytes >= batchBytesMax) this.flush()
  }

  /** How many successful answers go unrecorded before the next: geometric with `sample` (none at 1, all at 0). */
  #nextSkip(): number {
    const sample = this.#sample
    if (sample >= 1) return 0
    if (sample <= 0) return Number.POSITIVE_INFINITY
    // 1 - random() is in (0, 1]: its logarithm is finite.
    return Math.floor(Math.log(1 - Math.random()) / Math.log(1 - sample))
  }

  /** Writes the gathered lines now (the interval does it otherwise; main.ts calls it at close). */
  flush(): void {
    if (this.#batchBytes === 0) return
    // The stream queues the bytes until libuv has written them: the next batch takes a new buffer.
    const batch = this.#batch.subarray(0, this.#batchBytes)
    this.#batch = Buffer.allocUnsafe(batchBufferBytes)
    this.#batchBytes = 0
    this.#stream.write(batch)
  }

  /** The ISO time of now up to the `Z`: its second formatted once per second (toISOString costs about 0.5 us). */
  #time(): string {
    const nowMs = Date.now()
    if (nowMs !== this.#timeMs) {
      this.#timeMs = nowMs
      const second = Math.floor(nowMs / 1000)
      if (second !== this.#second) {
        this.#second = second
        this.#secondText = new Date(second * 1000).toISOString().slice(0, 20)
      }
      this.#timeText = this.#secondText + thousandths[nowMs - second * 1000]!
    }
    return this.#timeText
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
