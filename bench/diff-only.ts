/**
 * `npm run bench:diff`: how long POST /price/diff takes over a whole tenant, all pages, on the real
 * server. The diff's target is under 5 s for 100,000 SKUs x 10 pricelists with scheduled prices, a
 * parent change, a VAT change and an FX publication between the two instants; this builds that
 * tenant through the API (bench/generate.ts: every pair's last price version is scheduled 30 days
 * ahead, and CHILD-1 inherits NET-1's prices, so its SKUs change through their parent), then adds
 * a VAT rate change and an FX publication in between and answers in EUR so that every price goes
 * through FX. It times the whole diff page by page (one request at a time, as a client walks the
 * cursor), and the same walk between two instants with no change between them (the common case).
 * Flags: --skus N (100,000), --limit L (2,500: the page size), --currency C (EUR; SEK: no FX),
 * --server DIR (another compiled tree's server, for a before figure).
 * @module
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { flagValue } from './flags.js'
import { generate } from './generate.js'
import { clockTicksPerSecond, cpuTicks } from './proc.js'
import { PricingServer, provisionTenant, type TenantClient } from './server-process.js'
import { defaultShape, pricelists, taxAreaCode } from './workload.js'

const buildRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const argv = process.argv.slice(2)
const flag = (name: string): string | undefined => flagValue(argv, name)
const skuCount = Number(flag('skus') ?? 100_000)
const limit = Number(flag('limit') ?? 2_500)
/** EUR: every answer converts from the lists' SEK; SEK: none does. */
const currency = flag('currency') ?? 'EUR'
const serverRoot = path.resolve(flag('server') ?? buildRoot)
const dayMs = 86_400_000
const clockTicks = clockTicksPerSecond()

interface Walk {
  readonly pages: number
  readonly items: number
  readonly elapsedMs: number
  readonly slowestPageMs: number
  /** The server's CPU time over the walk, all threads: a figure a busy machine's waits leave out. */
  readonly serverCpuS: number
  readonly causes: Record<string, number>
}

/** Every page of the diff, one request after the other. */
async function walk(client: TenantClient, from: string, to: string): Promise<Walk> {
  const cpuBefore = cpuTicks(server.pid)
  const body = {
    currency_code: currency,
    tax_area: taxAreaCode,
    pricelist_filter: { pricelists: pricelists.map((pricelist) => pricelist.code) },
    from,
    to,
    limit,
  }
  const causes: Record<string, number> = {}
  let cursor: string | null = null
  let pages = 0
  let items = 0
  let slowestPageMs = 0
  const started = performance.now()
  do {
    const pageStarted = performance.now()
    const answer = await client.expect(200, 'POST', '/price/diff', cursor === null ? body : { ...body, cursor })
    slowestPageMs = Math.max(slowestPageMs, performance.now() - pageStarted)
    const page = JSON.parse(answer.text) as { items: { causes: string[] }[]; next_cursor: string | null }
    for (const item of page.items) for (const cause of item.causes) causes[cause] = (causes[cause] ?? 0) + 1
    items += page.items.length
    cursor = page.next_cursor
    pages++
  } while (cursor !== null)
  const serverCpuS = (cpuTicks(server.pid) - cpuBefore) / clockTicks
  return { pages, items, elapsedMs: performance.now() - started, slowestPageMs, serverCpuS, causes }
}

/** The changes between the two instants besides the scheduled prices: a VAT rate and an FX publication. */
async function scheduleChanges(client: TenantClient, nowMs: number): Promise<void> {
  await client.expect(202, 'PUT', '/currency/EUR', { is_active: true, vat_precision: 2 })
  const day = (offsetDays: number) => new Date(nowMs + offsetDays * dayMs).toISOString().slice(0, 10)
  await client.expect(202, 'POST', '/fx/daily', { date: day(-1), rates: { SEK: '11.4321' } })
  await client.expect(202, 'POST', '/fx/daily', { date: day(10), rates: { SEK: '11.9' } })
  await client.expect(202, 'POST', '/vat/rate', {
    tax_area_code: taxAreaCode,
    vat_class_code: 'reduced',
    rate: 10,
    start_date: new Date(nowMs + 5 * dayMs).toISOString(),
  })
}

function describe(name: string, result: Walk): string {
  const causes = Object.entries(result.causes)
    .map(([cause, count]) => `${cause} ${count.toLocaleString('en-US')}`)
    .join(', ')
  return (
    `${name}: ${result.items.toLocaleString('en-US')} items changed in ${result.pages} pages, ` +
    `${(result.elapsedMs / 1000).toFixed(2)} s (slowest page ${result.slowestPageMs.toFixed(0)} ms), ` +
    `server CPU ${result.serverCpuS.toFixed(2)} s` +
    `${causes === '' ? '' : `\n  causes: ${causes}`}\n`
  )
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
  await generate(client, { ...defaultShape, skuCount }, () => 0)
  await scheduleChanges(client, nowMs)
  process.stdout.write(
    `tenant: ${skuCount.toLocaleString('en-US')} SKUs x ${pricelists.length} pricelists, built in ` +
      `${((performance.now() - built) / 1000).toFixed(0)} s; pages of ${limit} SKUs, answers in ${currency}\n`,
  )
  const from = new Date(Date.now() + 3_600_000).toISOString()
  // Past the scheduled versions (30 days), the VAT change (5) and the FX publication (10).
  const to = new Date(nowMs + 35 * dayMs).toISOString()
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
