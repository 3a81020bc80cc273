/**
 * `npm run bench:diff`: how long POST /price/diff takes over a whole tenant, all pages, on the real
 * server. The diff's target is under 5 s for 100,000 SKUs x 10 pricelists with scheduled prices, a
 * parent change, a VAT change and an FX publication between the two instants; this builds that
 * tenant through the API (bench/diff-workload.ts, shared with bench:diff-beside) and answers in EUR
 * so that every price goes through FX. It times the whole diff page by page (one request at a time,
 * as a client walks the cursor), and the same walk between two instants with no change between
 * them (the common case).
 * Flags: --skus N (100,000), --limit L (2,500: the page size), --currency C (EUR; SEK: no FX),
 * --server DIR (another compiled tree's server, for a before figure).
 * @module
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { buildDiffTenant, describeWalk, walkDiff, type DiffWalkOptions, type Walk } from './diff-workload.js'
import { flagValue } from './flags.js'
import { clockTicksPerSecond, cpuTicks } from './proc.js'
import { PricingServer, provisionTenant, type TenantClient } from './server-process.js'
import { pricelists } from './workload.js'

const buildRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const argv = process.argv.slice(2)
const flag = (name: string): string | undefined => flagValue(argv, name)
const skuCount = Number(flag('skus') ?? 100_000)
const limit = Number(flag('limit') ?? 2_500)
/** EUR: every answer converts from the lists' SEK; SEK: none does. */
const currency = flag('currency') ?? 'EUR'
const serverRoot = path.resolve(flag('server') ?? buildRoot)
const clockTicks = clockTicksPerSecond()

/** Every page of the diff, and the server's CPU time over it (all threads: a busy machine's waits leave it out). */
async function walk(client: TenantClient, from: string, to: string): Promise<{ walk: Walk; serverCpuS: number }> {
  const cpuBefore = cpuTicks(server.pid)
  const options: DiffWalkOptions = { currency, from, to, limit }
  const result = await walkDiff(options, (body) => client.expect(200, 'POST', '/price/diff', body))
  return { walk: result, serverCpuS: (cpuTicks(server.pid) - cpuBefore) / clockTicks }
}

function describe(name: string, result: { walk: Walk; serverCpuS: number }): string {
  return describeWalk(name, result.walk, `, server CPU ${result.serverCpuS.toFixed(2)} s`)
}

const workDir = mkdtempSync(path.join(os.tmpdir(), 'pricing-diff-'))
const server = new PricingServer({
  entry: path.join(serverRoot, 'server', 'start.js'),
  dataDir: path.join(workDir, 'data'),
  adminToken: randomBytes(16).toString('hex'),
  env: { PRICING_BACKUP_INTERVAL_S: '0', PRICING_RETENTION_INTERVAL_S: '0' },
})
try {
  await server.start({})
  await server.waitReady()
  const client = await provisionTenant(server, 'bench')
  const nowMs = Date.now()
  const built = performance.now()
  const { from, to } = await buildDiffTenant(client, { skuCount, nowMs, serverCpuSeconds: () => 0 })
  process.stdout.write(
    `tenant: ${skuCount.toLocaleString('en-US')} SKUs x ${pricelists.length} pricelists, built in ` +
      `${((performance.now() - built) / 1000).toFixed(0)} s; pages of ${limit} SKUs, answers in ${currency}\n`,
  )
  // A first walk warms the workers' code; the second is the figure.
  await walk(client, from, to)
  process.stdout.write(describe('diff across the changes', await walk(client, from, to)))
  const quiet = new Date(Date.now() + 2 * 3_600_000).toISOString()
  process.stdout.write(`load average ${os.loadavg()[0]!.toFixed(1)} on ${os.availableParallelism()} cores\n`)
  process.stdout.write(describe('diff with nothing between', await walk(client, from, quiet)))
} finally {
  await server.stop()
  rmSync(workDir, { recursive: true, force: true })
}
