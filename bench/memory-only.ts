/**
 * `npm run bench:memory`: the main bench's memory phase alone (bench/run.ts), small and repeatable,
 * to find what holds the memory without the full bench's hour. On a fresh data directory: RSS of
 * the empty server after a restart, then the bench workload written through the API, RSS after
 * that live ingest, and RSS after a restart on that data. Each figure is read as bench/run.ts reads
 * it (after a full GC of the main thread) and again 10 s later, then each thread's V8 heap is read
 * as it stands and after a full GC of every thread (bench/thread-heaps.ts): what an idle worker
 * keeps that it would not after a collection. The per-version figures are the bench's.
 *
 *   node dist/bench/memory-only.js [--skus 10000] [--server <build dir>]
 *
 * `--skus`: the workload's SKUs (the full bench: 100,000; its quick run: 10,000), 27.9 price
 * versions each. `--server`: another build's root (the base commit's, for a "before" figure).
 * @module
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { flagValue } from './flags.js'
import { collectGarbage } from './gc.js'
import { generate } from './generate.js'
import { clockTicksPerSecond, cpuTicks, memory } from './proc.js'
import { PricingServer, provisionTenant } from './server-process.js'
import { formatThreadHeaps, threadHeaps } from './thread-heaps.js'
import { defaultShape } from './workload.js'

const buildRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const argv = process.argv.slice(2)
const skuCount = Number(flagValue(argv, 'skus') ?? 10_000)
const serverRoot = path.resolve(flagValue(argv, 'server') ?? buildRoot)
const shape = { ...defaultShape, skuCount }
/** As bench/run.ts: a pause before each reading, for the server to settle. */
const settleMs = 2_000
/** A second reading this much later, without a GC from outside: what the server reaches idle. */
const laterMs = 10_000
const clockTicks = clockTicksPerSecond()

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))
const mib = (bytes: number): string => (bytes / 2 ** 20).toFixed(0)

/**
 * The bench's reading (RSS after a GC of the main thread), RSS again `laterMs` later, then the
 * threads' heaps as they are and after a GC of each, and RSS after that.
 */
async function reading(server: PricingServer, label: string): Promise<{ now: number; later: number }> {
  await sleep(settleMs)
  await collectGarbage(server.pid)
  await sleep(settleMs)
  const rss = memory(server.pid).rssBytes
  // Idle workers collect their garbage 6-9 s after their last replication work (workers/idle-collection.ts).
  await sleep(laterMs)
  const later = memory(server.pid)
  const asTheyAre = await threadHeaps(server.pid, false)
  const collected = await threadHeaps(server.pid, true)
  await sleep(settleMs)
  const rssCollected = memory(server.pid).rssBytes
  process.stdout.write(
    `${label}: RSS ${mib(rss)} MiB after a GC of the main thread, ${mib(later.rssBytes)} MiB ${laterMs / 1000} s later ` +
      `(anon ${mib(later.rssAnonBytes)}), ${mib(rssCollected)} MiB after a GC of every thread\n` +
      `  heaps as they are: ${formatThreadHeaps(asTheyAre)}\n  after a GC of each: ${formatThreadHeaps(collected)}\n`,
  )
  return { now: rss, later: later.rssBytes }
}

async function restart(server: PricingServer): Promise<void> {
  await server.stop()
  await server.start()
  await server.waitReady()
}

const workDir = mkdtempSync(path.join(os.tmpdir(), 'pricing-memory-'))
const server = new PricingServer({
  entry: path.join(serverRoot, 'server', 'start.js'),
  dataDir: path.join(workDir, 'data'),
  adminToken: randomBytes(16).toString('hex'),
  // As bench/run.ts: the shipped defaults but these two (neither is on a measured path).
  env: { PRICING_FX_FEED_URL: '', PRICING_WEBHOOK_ALLOW_PRIVATE: 'true' },
  shippedDefaults: true,
})
try {
  const build = path.relative(process.cwd(), serverRoot) || '.'
  process.stdout.write(`memory: ${skuCount.toLocaleString('en-US')} SKUs, server ${build}\n`)
  await server.start()
  await server.waitReady()
  const client = await provisionTenant(server, 'bench')
  await restart(server)
  const empty = await reading(server, 'empty, after a restart')
  // A fresh process for the ingest, as bench/run.ts: the inspector, once opened, costs CPU.
  await restart(server)
  await client.refreshToken()
  const generated = await generate(client, shape, () => cpuTicks(server.pid) / clockTicks)
  const versions = generated.ingest.priceVersionCount
  const live = await reading(server, `after the live ingest of ${versions.toLocaleString('en-US')} versions`)
  await restart(server)
  const restarted = await reading(server, 'after a restart on that data')
  const perVersion = (at: 'now' | 'later'): string =>
    `after the ingest ${((live[at] - empty[at]) / versions).toFixed(0)} bytes, ` +
    `after the restart ${((restarted[at] - empty[at]) / versions).toFixed(0)} bytes`
  process.stdout.write(
    `RSS growth per price version over the empty server, as the bench reads it: ${perVersion('now')}; ` +
      `${laterMs / 1000} s later: ${perVersion('later')}\n`,
  )
} finally {
  await server.stop()
  rmSync(workDir, { recursive: true, force: true })
}
