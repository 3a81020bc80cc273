/**
 * A child process for test/stdout-backpressure.test.ts: the root logger on stdout and the access
 * log at sample 1, then `lineCount` answers recorded as fast as the event loop allows, while the
 * parent does not read stdout. When done it says so on stderr (`recorded N`), waits for the
 * parent's newline on stdin, and exits through the normal close path (flush, then `closed`).
 * @module
 */
import { AccessLog } from '../../server/access-log.js'
import type { Incoming } from '../../server/http.js'
import { createLogger, streamOf } from '../../server/log.js'

const lineCount = Number(process.argv[2])
const logger = createLogger('info')
const accessLog = new AccessLog(streamOf(logger), { enabled: true, sample: 1 })
const incoming = { method: 'GET', requestId: 'flood', tenantSlug: 'acme' } as Incoming
const body = 'x'.repeat(300)

let recorded = 0
function burst(): void {
  for (let index = 0; index < 1_000 && recorded < lineCount; index++, recorded++) {
    accessLog.record(incoming, '/price/:sku/:pricelist/:tax_area', 200, 0.25, body)
  }
  if (recorded < lineCount) setImmediate(burst)
  else {
    process.stderr.write(`recorded ${recorded}\n`)
    process.stdin.once('data', () => {
      accessLog.flush()
      logger.info('closed')
      logger.flush()
      setTimeout(() => process.exit(0), 2_000)
    })
  }
}
burst()
