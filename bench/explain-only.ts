/**
 * `npm run bench:explain`: what `explain: true` costs on a 100-SKU price query, beside the plain
 * query. An explained SKU prices every candidate pricelist, traces the winner and renders a trace,
 * so the bound to hold is a ratio: at most 3x the plain query's server CPU per request. Starts the
 * compiled server on a fresh data directory, writes the bench workload (bench/generate.ts: its
 * pricelists with inheritance, breaks and several versions) at a small size, then sends, one
 * scenario after the other, the same random 100-SKU bodies (a few requests in flight) as
 *  - `plain`: the query as storefronts send it (the answer cache may serve repeated SKUs),
 *  - `plain-as-of`: the same with an `as_of` (never cached: computed every time, as explain is),
 *  - `explain`: with `explain: true`,
 * and prints the server's CPU time (all threads, from /proc) per request and the ratios.
 * Flags: --skus N (5,000), --requests N (400 per scenario), --rounds N (3: the median is kept),
 * --in-flight N (4), --server DIR (another compiled tree's server, for a before figure), --cpu-prof DIR
 * (the server's threads write V8 CPU profiles there when it stops: where the CPU per request goes).
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
import { currencyCode, defaultShape, distinctSkus, seededRandom, taxAreaCode } from './workload.js'

const buildRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const argv = process.argv.slice(2)
const flag = (name: string): string | undefined => flagValue(argv, name)
const shape = { ...defaultShape, skuCount: Number(flag('skus') ?? 5_000) }
const requestCount = Number(flag('requests') ?? 400)
const roundCount = Number(flag('rounds') ?? 3)
const inFlight = Number(flag('in-flight') ?? 4)
const serverRoot = path.resolve(flag('server') ?? buildRoot)
const profileDir = flag('cpu-prof')
const clockTicks = clockTicksPerSecond()
const env = { PRICING_BACKUP_INTERVAL_S: '0', PRICING_RETENTION_INTERVAL_S: '0' }

type Scenario = 'plain' | 'plain-as-of' | 'explain'
const scenarios: readonly Scenario[] = ['plain', 'plain-as-of', 'explain']

function bodiesOf(scenario: Scenario, skuSets: readonly string[][], asOf: string): unknown[] {
  return skuSets.map((skus) => ({
    currency_code: currencyCode,
    pricelist_filter: {},
    skus,
    tax_area: taxAreaCode,
    ...(scenario === 'plain-as-of' ? { as_of: asOf } : {}),
    ...(scenario === 'explain' ? { explain: true } : {}),
  }))
}

/** Sends the bodies with `inFlight` requests at a time; answers the server's CPU microseconds per request. */
async function measure(server: PricingServer, client: TenantClient, bodies: readonly unknown[]): Promise<number> {
  let next = 0
  const before = cpuTicks(server.pid)
  const lane = async () => {
    while (next < bodies.length) {
      const body = bodies[next++]
      const answer = await client.call('POST', '/price/query', body)
      if (answer.status !== 200) throw new Error(`query: ${answer.status} ${answer.text.slice(0, 300)}`)
    }
  }
  await Promise.all(Array.from({ length: inFlight }, lane))
  return (((cpuTicks(server.pid) - before) / clockTicks) * 1e6) / bodies.length
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((left, right) => left - right)
  return sorted[Math.floor(sorted.length / 2)]!
}

const workDir = mkdtempSync(path.join(os.tmpdir(), 'pricing-explain-bench-'))
const server = new PricingServer({
  entry: path.join(serverRoot, 'server', 'start.js'),
  dataDir: path.join(workDir, 'data'),
  adminToken: randomBytes(16).toString('hex'),
  env,
})
try {
  await server.start({}, profileDir === undefined ? [] : ['--cpu-prof', '--cpu-prof-dir', path.resolve(profileDir)])
  await server.waitReady()
  const client = await provisionTenant(server, 'explain')
  console.error(`generating ${shape.skuCount} SKUs`)
  await generate(client, shape, () => cpuTicks(server.pid) / clockTicks)
  const random = seededRandom(shape.seed + 7)
  const skuSets = Array.from({ length: requestCount }, () => distinctSkus(random, shape.skuCount, 100))
  const asOf = new Date().toISOString()
  const figures = new Map<Scenario, number[]>(scenarios.map((scenario) => [scenario, []]))
  // A warm-up pass of each, then rounds that alternate the scenarios (neighbours load them alike).
  for (const scenario of scenarios) await measure(server, client, bodiesOf(scenario, skuSets.slice(0, 50), asOf))
  for (let round = 0; round < roundCount; round++) {
    for (const scenario of scenarios)
      figures.get(scenario)!.push(await measure(server, client, bodiesOf(scenario, skuSets, asOf)))
  }
  const plain = median(figures.get('plain')!)
  const uncached = median(figures.get('plain-as-of')!)
  const explained = median(figures.get('explain')!)
  console.log(
    JSON.stringify(
      {
        skus: shape.skuCount,
        requests: requestCount,
        rounds: roundCount,
        cpuMicrosPerRequest: { plain, plainAsOf: uncached, explain: explained },
        ratio: { explainToPlain: explained / plain, explainToPlainAsOf: explained / uncached },
      },
      null,
      2,
    ),
  )
} finally {
  await server.stop()
  rmSync(workDir, { recursive: true, force: true })
}
