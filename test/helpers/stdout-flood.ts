/**
 * A child process for test/platform/stdout-backpressure.test.ts: the root logger on stdout and the access
 * log at sample 1, then `lineCount` answers recorded as fast as the event loop allows, while the
 * parent does not read stdout. When done it says so on stderr (`recorded N`), waits for the
 * parent's newline on stdin, and closes (flush, then `closed`).
 *
 * It then lets the event loop run out instead of calling process.exit(). process.exit() shuts
 * V8's worker threads down before the heap: a concurrent (Maglev) compile job that is waiting for
 * a main-thread GC at that moment waits forever, and the exit with it (nodejs/node#54918). This
 * child's heap is large (16 MiB queued, 150,000 records made), so such a job is likely at exit; on
 * Node 24 under tap (whose --import hook runs code at exit) 3 of 40 runs hung so, stack in
 * NodePlatform::Shutdown / CollectionBarrier::AwaitCollectionBackground. A natural exit disposes
 * the isolate first, which releases such a job.
 * @module
 */
import { AccessLog } from '../../http/access-log.js'
import type { Incoming } from '../../http/adapter.js'
import { createLogger, streamOf } from '../../platform/log.js'

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
      // Nothing keeps the loop alive once stdin is let go and stdout's queue is written.
      process.stdin.destroy()
      accessLog.flush()
      logger.info('closed')
      logger.flush()
    })
  }
}
burst()
