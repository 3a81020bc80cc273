/**
 * Restart-to-ready with the full workload (3,000,000 price versions, articles and VAT mappings for
 * every SKU), on its own: `npm run bench:restart`. The data is written once through the API into a
 * kept folder (bench/.cache/restart-3m, about a minute) and reused by later runs, so a change to
 * the start path is measured in seconds. Each round stops the server (SIGTERM, or SIGKILL with
 * `--kill`: a crash, after which no snapshot written at shutdown may be used), starts it and times
 * listening and /readyz 200, then the first ten 1,000-SKU queries (distinct bodies, so no answer
 * cache helps): whether the first pays for something the tenth does not.
 *
 *   node dist/bench/restart-only.js [--rounds 3] [--kill] [--server <build dir>] [--data <dir>]
 *
 * `--server` points to another build's root (e.g. the base commit's, for a "before" figure): the
 * server is started from `<build>/server/start.js` on the same data. Settings are the shipped
 * defaults (only port, data directory, admin token, no FX feed), as the main bench runs them.
 * @module
 */
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { generate } from './generate.js'
import { clockTicksPerSecond, cpuTicks, memory } from './proc.js'
import { PricingServer, provisionTenant, request, TenantClient } from './server-process.js'
import { currencyCode, defaultShape, distinctSkus, priceVersionCount, seededRandom, taxAreaCode } from './workload.js'

const buildRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const tenantSlug = 'restart'
/** SKUs per measured query: far above the worker threshold, so it runs on a worker. */
const querySkus = 1_000
const queriesPerRound = 10

interface Options {
  readonly rounds: number
  readonly kill: boolean
  readonly serverRoot: string
  readonly dataRoot: string
}

/** What a later run needs to reuse the data folder: the admin token and the tenant's key. */
interface Kept {
  readonly adminToken: string
  readonly clientId: string
  readonly clientSecret: string
  readonly versions: number
}

function parseOptions(argv: readonly string[]): Options {
  const value = (name: string): string | undefined => {
    const at = argv.indexOf(name)
    return at >= 0 ? argv[at + 1] : undefined
  }
  return {
    rounds: Number(value('--rounds') ?? 3),
    kill: argv.includes('--kill'),
    serverRoot: path.resolve(value('--server') ?? buildRoot),
    dataRoot: path.resolve(value('--data') ?? path.join(process.cwd(), 'bench', '.cache', 'restart-3m')),
  }
}

function progress(message: string): void {
  process.stderr.write(`[bench:restart ${new Date().toISOString().slice(11, 19)}] ${message}\n`)
}

function serverFor(options: Options, adminToken: string): PricingServer {
  return new PricingServer({
    entry: path.join(options.serverRoot, 'server', 'start.js'),
    dataDir: path.join(options.dataRoot, 'data'),
    adminToken,
  })
}

/** The kept data folder, written through the API the first time. */
async function prepare(options: Options): Promise<Kept> {
  const keptPath = path.join(options.dataRoot, 'kept.json')
  if (existsSync(keptPath)) return JSON.parse(readFileSync(keptPath, 'utf8')) as Kept
  mkdirSync(options.dataRoot, { recursive: true })
  const adminToken = randomBytes(24).toString('hex')
  const server = serverFor(options, adminToken)
  await server.start()
  try {
    await server.waitReady()
    const client = await provisionTenant(server, tenantSlug)
    progress(`writing ${priceVersionCount(defaultShape).toLocaleString('en-US')} price versions through the API (once)`)
    const ticks = clockTicksPerSecond()
    const generated = await generate(client, defaultShape, () => cpuTicks(server.pid) / ticks)
    const kept: Kept = {
      adminToken,
      clientId: client.clientId,
      clientSecret: client.clientSecret,
      versions: generated.ingest.priceVersionCount,
    }
    writeFileSync(keptPath, JSON.stringify(kept))
    progress(`written in ${Math.round(generated.ingest.elapsedMs / 1000)} s`)
    return kept
  } finally {
    await server.stop()
  }
}

interface Round {
  readonly stopMs: number
  readonly listeningMs: number
  readonly readyMs: number
  /** Server CPU from spawn to ready (every thread), ms. */
  readonly readyCpuMs: number
  readonly rssMiB: number
  /** Wall time of each of the first ten queries, ms. */
  readonly queryMs: readonly number[]
}

async function round(server: PricingServer, kept: Kept, options: Options, index: number): Promise<Round> {
  const stopStarted = performance.now()
  if (options.kill) await server.kill()
  else await server.stop()
  const stopMs = performance.now() - stopStarted
  const started = performance.now()
  await server.start()
  const listeningMs = performance.now() - started
  await server.waitReady()
  const readyMs = performance.now() - started
  const readyCpuMs = (cpuTicks(server.pid) * 1000) / clockTicksPerSecond()
  const client = new TenantClient(server, tenantSlug, kept.clientId, kept.clientSecret)
  await client.refreshToken()
  const random = seededRandom(7_000 + index)
  const queryMs: number[] = []
  for (let query = 0; query < queriesPerRound; query++) {
    const body = {
      currency_code: currencyCode,
      pricelist_filter: {},
      skus: distinctSkus(random, defaultShape.skuCount, querySkus),
      tax_area: taxAreaCode,
    }
    const sent = performance.now()
    const answer = await request(`${client.baseUrl}/price/query`, 'POST', { body, token: client.token })
    queryMs.push(performance.now() - sent)
    if (answer.status !== 200) throw new Error(`query answered ${answer.status}: ${answer.text.slice(0, 300)}`)
  }
  return { stopMs, listeningMs, readyMs, readyCpuMs, rssMiB: memory(server.pid).rssBytes / 2 ** 20, queryMs }
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2))
  const kept = await prepare(options)
  const server = serverFor(options, kept.adminToken)
  progress(`server ${options.serverRoot}, data ${options.dataRoot} (${kept.versions.toLocaleString('en-US')} versions)`)
  await server.start()
  await server.waitReady()
  const rounds: Round[] = []
  try {
    for (let index = 0; index < options.rounds; index++) {
      const measured = await round(server, kept, options, index)
      rounds.push(measured)
      const first = measured.queryMs[0]!
      const tenth = measured.queryMs[queriesPerRound - 1]!
      progress(
        `round ${index + 1}: stop ${Math.round(measured.stopMs)} ms (${options.kill ? 'SIGKILL' : 'SIGTERM'}), ` +
          `listening ${Math.round(measured.listeningMs)} ms, ready ${Math.round(measured.readyMs)} ms ` +
          `(server CPU ${Math.round(measured.readyCpuMs)} ms), RSS ${Math.round(measured.rssMiB)} MiB, ` +
          `first 1,000-SKU query ${first.toFixed(1)} ms, tenth ${tenth.toFixed(1)} ms`,
      )
    }
  } finally {
    await server.stop()
  }
  const median = (values: number[]): number =>
    values.sort((left, right) => left - right)[Math.floor(values.length / 2)]!
  const summary = {
    server: options.serverRoot,
    versions: kept.versions,
    stop: options.kill ? 'SIGKILL' : 'SIGTERM',
    rounds: rounds.length,
    medianReadyMs: Math.round(median(rounds.map((item) => item.readyMs))),
    medianReadyCpuMs: Math.round(median(rounds.map((item) => item.readyCpuMs))),
    medianFirstQueryMs: Number(median(rounds.map((item) => item.queryMs[0]!)).toFixed(1)),
    medianTenthQueryMs: Number(median(rounds.map((item) => item.queryMs[queriesPerRound - 1]!)).toFixed(1)),
  }
  process.stdout.write(`${JSON.stringify(summary)}\n`)
}

await main()
