/**
 * `npm run bench:ingest`: the price ingest alone, small and repeatable, to work on its CPU cost
 * without the full bench's hour. Starts the compiled server on a fresh data directory, writes the
 * reference data, articles and pricelists as bench/generate.ts does, then ingests the bench
 * workload's price versions (3 per (SKU, pricelist), same batch size and requests in flight) and
 * prints the server's CPU time (all threads, from /proc) per acknowledged version.
 * `--cpu-prof` runs the server under V8's profiler and prints the functions with the most self time
 * over the price phase, summed over its threads; the profiles are kept in bench/results/profiles/.
 * Flags: --versions N (300,000; a multiple of 30: SKUs = N / 30), --runs R (1; a fresh server
 * each), --server DIR (another compiled tree's server, e.g. the base commit's, for a before
 * figure), --cpu-prof, --top N (15), --node-args "..." (options for the server's node).
 * @module
 */
import { randomBytes } from 'node:crypto'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { formatSelfTimes, selfTimes, type CpuProfile } from './cpu-profile.js'
import { batchItemCount, generate, ingestConcurrency } from './generate.js'
import { clockTicksPerSecond, cpuTicks, threadTicks } from './proc.js'
import { PricingServer, provisionTenant } from './server-process.js'
import { defaultShape, priceVersionCount, pricelists } from './workload.js'
import { flagValue } from './flags.js'

const buildRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const repositoryRoot = path.resolve(buildRoot, '..')
const argv = process.argv.slice(2)
const flag = (name: string): string | undefined => flagValue(argv, name)
const versionCount = Number(flag('versions') ?? 300_000)
const runCount = Number(flag('runs') ?? 1)
const top = Number(flag('top') ?? 15)
const profiling = argv.includes('--cpu-prof')
const serverRoot = path.resolve(flag('server') ?? buildRoot)
/** `--node-args "--trace-gc --max-semi-space-size=64"`: options for the server's node, to try V8 settings. */
const nodeArgs = (flag('node-args') ?? '').split(' ').filter((argument) => argument !== '')
const pairsPerSku = pricelists.length * defaultShape.versionCount
if (!Number.isInteger(versionCount / pairsPerSku) || versionCount <= 0)
  throw new Error(`--versions must be a positive multiple of ${pairsPerSku}`)
// Fewer SKUs rather than fewer versions per pair: every pair still gets its superseded versions.
const shape = { ...defaultShape, skuCount: versionCount / pairsPerSku }
const clockTicks = clockTicksPerSecond()
// As the full bench: no automatic backup or retention pass in the middle of the measurement.
const env = { PRICING_BACKUP_INTERVAL_S: '0', PRICING_RETENTION_INTERVAL_S: '0' }

interface IngestRun {
  readonly cpuMicrosPerVersion: number
  readonly versionsPerSecond: number
  /** CPU per version by thread (main, LMDB's writer, GC helpers, workers...): what a JS profile leaves out. */
  readonly threads: string
  readonly profileSummary: string | null
}

/** Per-version CPU by thread between two readings, largest first. */
function threadShares(before: Map<string, number>, after: Map<string, number>, versions: number): string {
  const rows = [...after].map(
    ([name, ticks]) => [name, (((ticks - (before.get(name) ?? 0)) / clockTicks) * 1e6) / versions] as const,
  )
  return rows
    .filter(([, micros]) => micros > 0)
    .sort((left, right) => right[1] - left[1])
    .map(([name, micros]) => `${name} ${micros.toFixed(2)}`)
    .join(', ')
}

/** Self time over the price phase, summed over the server's threads (one profile file each). */
function summariseProfiles(profileDir: string, window: { fromEndUs: number; untilEndUs: number }): string {
  const written = readdirSync(profileDir)
    .filter((name) => name.endsWith('.cpuprofile'))
    .sort()
  if (written.length === 0) throw new Error('the server wrote no CPU profile')
  const keptProfiles = path.join(repositoryRoot, 'bench', 'results', 'profiles')
  mkdirSync(keptProfiles, { recursive: true })
  const stamp = new Date().toISOString().replace(/[:.]/g, '-')
  const byFrame = new Map<string, number>()
  let samples = 0
  for (const [index, name] of written.entries()) {
    const profile = JSON.parse(readFileSync(path.join(profileDir, name), 'utf8')) as CpuProfile
    const kept = path.join(keptProfiles, `ingest-${stamp}-thread-${index}.cpuprofile`)
    renameSync(path.join(profileDir, name), kept)
    const thread = selfTimes(profile, serverRoot, window)
    samples += thread.samples
    for (const entry of thread.frames)
      byFrame.set(entry.frame, (byFrame.get(entry.frame) ?? 0) + entry.share * thread.samples)
  }
  const frames = [...byFrame].filter(([frame]) => frame !== '(idle)').sort((left, right) => right[1] - left[1])
  const busy = frames.reduce((sum, [, count]) => sum + count, 0)
  const shares = frames.map(([frame, count]) => ({ frame, share: busy === 0 ? 0 : count / busy }))
  return `top ${top} functions by self time over the price phase, all threads, share of busy samples (${Math.round(busy)} of ${samples}; kept in ${path.relative(repositoryRoot, keptProfiles)}):\n${formatSelfTimes(shares, top)}`
}

async function ingestOnce(workDir: string): Promise<IngestRun> {
  const profileDir = path.join(workDir, 'cpu-profiles')
  const server = new PricingServer({
    entry: path.join(serverRoot, 'server', 'start.js'),
    dataDir: path.join(workDir, 'data'),
    adminToken: randomBytes(16).toString('hex'),
    env,
  })
  await server.start({}, [...nodeArgs, ...(profiling ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [])])
  try {
    await server.waitReady()
    const client = await provisionTenant(server, 'bench')
    // generate() reads the CPU at the price phase's start and end: the last two readings bracket it.
    const readings: Map<string, number>[] = []
    const generated = await generate(client, shape, () => {
      readings.push(threadTicks(server.pid))
      return cpuTicks(server.pid) / clockTicks
    })
    const ingestEnded = performance.now()
    await server.stop()
    const stopped = performance.now()
    const ingest = generated.ingest
    // The child pricelist inherits most of its SKUs, so the workload writes fewer than SKUs x lists x 3.
    const expected = priceVersionCount(shape)
    if (ingest.priceVersionCount !== expected)
      throw new Error(`${ingest.priceVersionCount} versions acknowledged, not ${expected}`)
    // The price phase, counted back from the process's end (where the profiles end).
    const window = {
      fromEndUs: (stopped - ingestEnded + ingest.elapsedMs) * 1000,
      untilEndUs: (stopped - ingestEnded) * 1000,
    }
    return {
      cpuMicrosPerVersion: ingest.serverCpuMicrosPerItem,
      versionsPerSecond: ingest.itemsPerSecond,
      threads: threadShares(readings.at(-2)!, readings.at(-1)!, ingest.priceVersionCount),
      profileSummary: profiling ? summariseProfiles(profileDir, window) : null,
    }
  } finally {
    await server.stop()
  }
}

process.stdout.write(
  `ingest: ${priceVersionCount(shape).toLocaleString('en-US')} price versions (${shape.skuCount.toLocaleString('en-US')} SKUs x ` +
    `${pricelists.length} pricelists x ${shape.versionCount}, less the child list's inherited pairs), batches of ${batchItemCount}, ${ingestConcurrency} in flight, ` +
    `server ${path.relative(process.cwd(), serverRoot) || '.'}${profiling ? ', under --cpu-prof' : ''}\n`,
)
const figures: number[] = []
for (let run = 1; run <= runCount; run++) {
  const workDir = mkdtempSync(path.join(os.tmpdir(), 'pricing-ingest-'))
  try {
    const result = await ingestOnce(workDir)
    figures.push(result.cpuMicrosPerVersion)
    process.stdout.write(
      `run ${run}: ${result.cpuMicrosPerVersion.toFixed(2)} us server CPU/version, ` +
        `${Math.round(result.versionsPerSecond).toLocaleString('en-US')} versions/s\n  by thread (us/version): ${result.threads}\n`,
    )
    if (result.profileSummary !== null) process.stdout.write(result.profileSummary)
  } finally {
    rmSync(workDir, { recursive: true, force: true })
  }
}
if (figures.length > 1) {
  const sorted = [...figures].sort((left, right) => left - right)
  process.stdout.write(
    `median ${sorted[Math.floor(sorted.length / 2)]!.toFixed(2)} us/version, min ${sorted[0]!.toFixed(2)}, max ${sorted[sorted.length - 1]!.toFixed(2)}\n`,
  )
}
