/**
 * `npm run bench:simulate-turns`: how long a simulation (POST /price/simulate) holds the main
 * thread at a stretch. The point 4 wants the main thread free while the price tools run;
 * a simulation's writes are planned there, with the write layer's own writers, so what matters is
 * its longest turn of the event loop, which every other request on the thread waits behind. In
 * process (no HTTP, no other threads): a tenant on a temporary LMDB directory with the resource-abuse
 * suite's shape (EUR, SE at 25%, the NET list RETAIL, --skus priced SKUs), then --runs requests,
 * each parsed as the edge parses a body (http/json-body.ts), checked against the route's schema and
 * handed to the route's handler, with --writes proposed prices and a query of 100 SKUs. A ticker
 * on the same thread (one setImmediate per turn) measures the gaps between its turns: the longest
 * is the longest stretch the request held the thread, in CPU time (the figure: apart from the
 * machine's other load) and in wall time (which that load lengthens). Prints, over the runs, the
 * median and the largest of each request's longest turn, its turns, its wall time and its CPU time,
 * and the percentiles of all the turns. Run it on the
 * tree before a change with --server-tree DIR (another compiled tree's modules) for a before figure.
 * Flags: --writes N (1,000), --runs N (30), --skus N (300), --server-tree DIR.
 * @module
 */
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { setImmediate as nextTurn } from 'node:timers/promises'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { flagValue } from './flags.js'

const argv = process.argv.slice(2)
const numberFlag = (name: string, fallback: number): number => Number(flagValue(argv, name) ?? fallback)
const writeCount = numberFlag('writes', 1_000)
const runCount = numberFlag('runs', 30)
const skuCount = numberFlag('skus', 300)
/** The compiled tree whose modules run: this one, or --server-tree (a build before a change). */
const tree = path.resolve(
  flagValue(argv, 'server-tree') ?? path.join(path.dirname(fileURLToPath(import.meta.url)), '..'),
)
const load = (module: string): Promise<any> => import(pathToFileURL(path.join(tree, module)).href)

const nowMs = Date.now()

const [{ createLogger }, { SystemStore }, { TenantRegistry }, reference, { writePricelists }, { writePrices }] =
  await Promise.all([
    load('platform/log.js'),
    load('storage/system-store.js'),
    load('tenant/runtime.js'),
    load('tenant/writes/reference.js'),
    load('tenant/writes/pricelists.js'),
    load('tenant/writes/prices.js'),
  ])
const [{ priceSimulateRoutes }, { validate }, { readJsonBody }, { jsonDepthMax }] = await Promise.all([
  load('http/routes/price-simulate.js'),
  load('http/validate.js'),
  load('http/json-body.js'),
  load('engine/limits.js'),
])

/** A tenant of the resource-abuse suite's shape, every SKU at 10.00 on RETAIL. */
async function openTenant(dataDir: string) {
  const system = new SystemStore(path.join(dataDir, 'system'))
  const record = {
    slug: 'bench',
    tier: 'standard',
    region: 'eu',
    status: 'active',
    owner_email: null,
    limits: { prices: null, articles: null, pricelists: null },
    created_at: nowMs,
    updated_at: nowMs,
  }
  const registry = new TenantRegistry({ system, dataDir, logger: createLogger('silent'), now: () => Date.now() })
  const tenant = registry.open(record, nowMs)
  await tenant.loadGradually()
  const context = { nowMs: nowMs - 86_400_000, actor: 'bench' }
  const skus = Array.from({ length: skuCount }, (_, index) => `A-${index}`)
  await reference.writeCurrencies(tenant, context, [{ code: 'EUR', is_active: true, vat_precision: 2 }])
  await reference.writeTaxAreas(tenant, context, [{ code: 'SE', name: 'Sweden' }])
  await reference.writeVatClasses(tenant, context, [{ code: 'standard' }])
  await reference.writeVatRates(tenant, context, [{ tax_area_code: 'SE', vat_class_code: 'standard', rate: 25 }])
  await writePricelists(tenant, context, [{ code: 'RETAIL', currency_code: 'EUR', vat_mode: 'NET' }])
  const mappings = skus.map((sku) => ({ sku_code: sku, tax_area_code: 'SE', vat_class_code: 'standard' }))
  await reference.writeMappings(tenant, context, mappings)
  await writePrices(
    tenant,
    context,
    skus.map((sku) => ({ sku, pricelist: 'RETAIL', price: 10 })),
  )
  const close = async (): Promise<void> => {
    await registry.close()
    await system.close()
  }
  return { tenant, skus, close }
}

/**
 * The process's CPU time so far, ms. Linux brings the calling thread's share up to date when asked,
 * so a turn's CPU time is exact and, unlike its wall time, not lengthened when the machine's other
 * load preempts the thread; it includes the V8 helper threads' work (parallel scavenges) in it.
 */
function cpuNowMs(): number {
  const used = process.cpuUsage()
  return (used.user + used.system) / 1000
}

interface Run {
  /** Every turn's length while the request ran, ms of wall time. */
  readonly turnsMs: readonly number[]
  readonly longestTurnMs: number
  /** The longest turn in CPU time, ms (see `cpuNowMs`). */
  readonly longestTurnCpuMs: number
  readonly turns: number
  readonly wallMs: number
  readonly cpuMs: number
}

/** One request from its bytes to its reply, beside a ticker that measures the thread's turns. */
async function measure(handle: (bytes: Buffer) => Promise<unknown>, bytes: Buffer): Promise<Run> {
  let ticking = true
  let last = performance.now()
  let lastCpu = cpuNowMs()
  let longestTurnMs = 0
  let longestTurnCpuMs = 0
  let turns = 0
  const turnsMs: number[] = []
  const ticker = (async () => {
    while (ticking) {
      await nextTurn()
      const now = performance.now()
      const cpu = cpuNowMs()
      longestTurnMs = Math.max(longestTurnMs, now - last)
      longestTurnCpuMs = Math.max(longestTurnCpuMs, cpu - lastCpu)
      lastCpu = cpu
      turnsMs.push(now - last)
      last = now
      turns++
    }
  })()
  // The request starts in a turn of its own, as a request the edge has read does.
  await nextTurn()
  const cpu = process.cpuUsage()
  const started = performance.now()
  await handle(bytes)
  const wallMs = performance.now() - started
  const used = process.cpuUsage(cpu)
  ticking = false
  await ticker
  return { turnsMs, longestTurnMs, longestTurnCpuMs, turns, wallMs, cpuMs: (used.user + used.system) / 1000 }
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((left, right) => left - right)
  return sorted[Math.floor(sorted.length / 2)]!
}

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'pricing-bench-simulate-'))
try {
  const { tenant, skus, close } = await openTenant(dataDir)
  const route = priceSimulateRoutes().find((candidate: { path: string }) => candidate.path === '/price/simulate')
  const prices = Array.from({ length: writeCount }, (_, index) => ({
    sku: `W-${index}`,
    pricelist: 'RETAIL',
    price: 5,
  }))
  const query = {
    currency_code: 'EUR',
    tax_area: 'SE',
    skus: skus.slice(0, 100),
    pricelist_filter: { pricelists: ['RETAIL'] },
  }
  const bytes = Buffer.from(JSON.stringify({ writes: { prices }, query }))
  const handle = async (body: Buffer): Promise<unknown> => {
    const value = validate(route.body, readJsonBody(body, jsonDepthMax))
    const reply = await route.handler({ tenant, body: value, nowMs: Date.now(), actor: 'bench', params: {}, query: {} })
    if (reply.status !== 200) throw new Error(`simulate answered ${reply.status}`)
    return reply
  }
  // Warm-up: the JIT, as a server that has served a while.
  for (let index = 0; index < 10; index++) await handle(bytes)
  const runs: Run[] = []
  for (let index = 0; index < runCount; index++) runs.push(await measure(handle, bytes))
  const figure = (pick: (run: Run) => number): string =>
    `median ${median(runs.map(pick)).toFixed(2)}, largest ${Math.max(...runs.map(pick)).toFixed(2)}`
  console.log(`tree ${tree}: ${runCount} simulations of ${writeCount} proposed prices and a 100-SKU query`)
  console.log(`  longest turn per request, ms of CPU: ${figure((run) => run.longestTurnCpuMs)}`)
  console.log(`  longest turn per request, ms of wall time: ${figure((run) => run.longestTurnMs)}`)
  console.log(`  turns per request: ${figure((run) => run.turns)}`)
  const all = runs.flatMap((run) => run.turnsMs).sort((left, right) => left - right)
  const at = (share: number): string => all[Math.min(all.length - 1, Math.floor(all.length * share))]!.toFixed(2)
  console.log(`  every turn of every request, ms: p50 ${at(0.5)}, p90 ${at(0.9)}, p99 ${at(0.99)}`)
  console.log(`  wall time per request, ms: ${figure((run) => run.wallMs)}`)
  console.log(
    `  CPU time per request, ms (all of the process's threads: GC helpers too): ${figure((run) => run.cpuMs)}`,
  )
  console.log(`  load average: ${os.loadavg()[0]!.toFixed(1)}`)
  await close()
} finally {
  rmSync(dataDir, { recursive: true, force: true })
}
