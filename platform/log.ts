/**
 * The pino root logger: JSON lines on stdout, nothing else there. Per-tenant child loggers bind the
 * slug once. Fields that could hold a secret are redacted wherever a record carries them; records
 * about a request carry its `request_id`.
 * @module
 */
import { pino, type DestinationStream, type Logger } from 'pino'

/** The `service` field of every record. */
export const serviceName = 'pricing-service'

/**
 * Record fields that could hold a secret (at the top level or one object down, as in
 * `{ headers: { authorization } }`): pino writes `[redacted]` instead of their values. No code
 * logs such a field today; this keeps a future `{ body }` or `{ config }` from leaking one.
 */
export const redactedPaths: readonly string[] = [
  'authorization',
  '*.authorization',
  'req.headers.authorization',
  'client_secret',
  '*.client_secret',
  'clientSecret',
  '*.clientSecret',
  'secret',
  '*.secret',
  'adminToken',
  '*.adminToken',
  'admin_token',
  '*.admin_token',
  'access_token',
  '*.access_token',
  'password',
  '*.password',
  // Secrets at rest (platform/secrets/): the key settings and a private JWK.
  'secretKey',
  '*.secretKey',
  'secretKeyPrevious',
  '*.secretKeyPrevious',
  'private_jwk',
  '*.private_jwk',
  // URLs that may carry a password (platform/config.ts SECRETS).
  'smtpUrl',
  '*.smtpUrl',
  'redisUrl',
  '*.redisUrl',
]

/** A destination that takes whole JSON lines as bytes (./access-log.ts writes batches of them). */
export interface LineStream {
  write(chunk: Buffer): unknown
}

/**
 * Log lines waiting for stdout beyond this are dropped (and counted): a reader that stops reading
 * costs memory up to this bound, never a stalled server. About 60,000 access-log lines.
 */
export const stdoutPendingBytesMax = 16 * 1024 * 1024
/** A drop is reported this long after it began, once per episode. */
const dropReportDelayMs = 1_000

/**
 * stdout as one asynchronous stream (sonic-boom): records queue in memory and are written by
 * libuv's thread pool, so a slow reader never blocks a request, and everything on stdout goes
 * through this one stream, so lines never interleave. It queues bytes (sonic-boom's buffer mode):
 * the access log hands it batches it has encoded already, and a string queue would measure and
 * encode each batch twice more (Buffer.byteLength per write, then the write's own encoding), which
 * cost about a third of the log's time. pino's records are strings: `write` encodes them once.
 * pino writes what is queued synchronously when the process exits (its exit handler for
 * asynchronous destinations, registered on the sonic-boom); a crash that kills the process
 * outright loses what was queued.
 */
export class StdoutStream implements LineStream {
  readonly boom = pino.destination({ dest: 1, sync: false, maxLength: stdoutPendingBytesMax, contentMode: 'buffer' })

  write(chunk: string | Buffer): boolean {
    // sonic-boom's types know only strings; in buffer mode it takes (and needs) Buffers.
    return this.boom.write((typeof chunk === 'string' ? Buffer.from(chunk) : chunk) as unknown as string)
  }

  flush(callback?: (error?: Error) => void): void {
    this.boom.flush(callback)
  }

  flushSync(): void {
    this.boom.flushSync()
  }
}

/** The root logger: JSON records on stdout, or on `destination` (tests). */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  const stdout = destination === undefined ? new StdoutStream() : null
  const logger = pino(
    {
      level,
      base: { service: serviceName },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: [...redactedPaths], censor: '[redacted]' },
    },
    destination ?? stdout!,
  )
  if (stdout !== null) reportDrops(logger, stdout.boom)
  return logger
}

/**
 * Counts the lines stdout drops and logs their number a second after a drop begins. The report is a
 * line too: while the queue is still full it is dropped as well, and then tried again a second
 * later with the count kept, until one gets through.
 */
function reportDrops(logger: Logger, stdout: StdoutStream['boom']): void {
  let dropped = 0
  let pending = false
  let reporting = false
  let reportLost = false
  const report = (): void => {
    pending = false
    reporting = true
    reportLost = false
    logger.warn({ dropped }, 'stdout is not read fast enough: log lines dropped')
    reporting = false
    if (reportLost) schedule()
    else dropped = 0
  }
  const schedule = (): void => {
    if (pending) return
    pending = true
    setTimeout(report, dropReportDelayMs).unref()
  }
  // sonic-boom emits 'drop' synchronously inside the write that did not fit.
  stdout.on('drop', (data: Buffer) => {
    if (reporting) {
      reportLost = true
      return
    }
    for (let index = data.indexOf(10); index >= 0; index = data.indexOf(10, index + 1)) dropped++
    schedule()
  })
}

/** The stream a logger writes to: other writers of JSON lines share it rather than opening stdout again. */
export function streamOf(logger: Logger): LineStream {
  return (logger as unknown as Record<symbol, LineStream>)[pino.symbols.streamSym]
}
