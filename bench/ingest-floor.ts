/**
 * `npm run bench:ingest-floor`: the floor under the price ingest's CPU per version, measured part by
 * part without the server, so that `bench:ingest`'s figure can be read against what its fixed parts
 * cost alone on the same machine:
 * - LMDB: the puts one version makes (a log entry under its uint32 sequence, a price record under
 *   [pricelist, SKU]; one log_type key and the meta keys per commit), in commits of 2,500 with 4
 *   in flight, each awaited to `flushed` as storage/tenant-store.ts does, with the service's own
 *   environment options (storage/options.ts). CPU per version for the whole process, by thread.
 *   `--layout log-only` leaves out the price record (one put per version); `--layout log-page`
 *   writes the commit's log entries as one value (what a paged log would cost), with the records.
 * - the per-version steps that do not depend on the request: the two SHA-256 (engine/hash.ts) and
 *   the log entry's encoding (storage/log-entry.ts), on the main thread.
 * Flags: --versions N (279,000), --layout both|log-only|log-page (both).
 * @module
 */
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { open } from 'lmdb'
import { priceContentHash } from '../engine/prices.js'
import { encodeEntries, makeEntry, type LogEntry } from '../storage/log-entry.js'
import { environmentOptions } from '../storage/options.js'
import { flagValue } from './flags.js'
import { clockTicksPerSecond, threadTicks } from './proc.js'

const argv = process.argv.slice(2)
const versionCount = Number(flagValue(argv, 'versions') ?? 279_000)
const layout = flagValue(argv, 'layout') ?? 'both'
if (!['both', 'log-only', 'log-page'].includes(layout)) throw new Error('--layout is both, log-only or log-page')
const batchCount = 2_500
const inFlight = 4
/** Pairs of the workload at 10,000 SKUs (the child list inherits most of its SKUs). */
const pairCount = 92_964
const clockTicks = clockTicksPerSecond()

/** Microseconds of this process's CPU (all threads) per unit of `run`. */
function cpuMicrosPer(units: number, run: () => void): number {
  const started = process.cpuUsage()
  run()
  const used = process.cpuUsage(started)
  return (used.user + used.system) / units
}

async function lmdbFloor(): Promise<{ micros: number; threads: string }> {
  const directory = mkdtempSync(path.join(os.tmpdir(), 'pricing-ingest-floor-'))
  const root = open(environmentOptions(directory, 64 * 1024 * 1024))
  const log = root.openDB<Buffer, number>({ name: 'log', keyEncoding: 'uint32', encoding: 'binary' })
  const records = root.openDB<Buffer, [string, string]>({ name: 'price_runs', encoding: 'binary' })
  const types = root.openDB<number, [string, number]>({ name: 'log_type' })
  const meta = root.openDB<unknown, string>({ name: 'meta' })
  // The sizes the ingest writes: a log entry of about 170 bytes, a 2-version price record of 45 to 80.
  const entry = Buffer.alloc(170, 7)
  const record = Buffer.alloc(66, 3)
  let sequence = 0
  const commit = async (first: number): Promise<void> => {
    const page: Buffer[] = []
    for (let item = first; item < Math.min(first + batchCount, versionCount); item++) {
      sequence++
      if (layout === 'log-page') page.push(entry)
      else log.put(sequence, entry)
      if (layout === 'log-only') continue
      const pair = item % pairCount
      records.put([`PL-${pair % 10}`, `SKU-${String(Math.floor(pair / 10)).padStart(6, '0')}`], record)
    }
    if (page.length > 0) log.put(sequence, Buffer.concat(page))
    types.put(['price', sequence], sequence - batchCount + 1)
    meta.put('sequence', sequence)
    await meta.put('checksum', 'c'.repeat(32))
    await root.flushed
  }
  const before = threadTicks(process.pid)
  const started = process.cpuUsage()
  let next = 0
  const lane = async (): Promise<void> => {
    while (next < versionCount) {
      const first = next
      next += batchCount
      await commit(first)
    }
  }
  await Promise.all(Array.from({ length: inFlight }, lane))
  const used = process.cpuUsage(started)
  const after = threadTicks(process.pid)
  await root.close()
  rmSync(directory, { recursive: true, force: true })
  const threads = [...after]
    .map(([name, ticks]) => [name, (((ticks - (before.get(name) ?? 0)) / clockTicks) * 1e6) / versionCount] as const)
    .filter(([, micros]) => micros > 0)
    .sort((left, right) => right[1] - left[1])
    .map(([name, micros]) => `${name} ${micros.toFixed(2)}`)
    .join(', ')
  return { micros: (used.user + used.system) / versionCount, threads }
}

/** The hashes and the log entry's encoding, over entries shaped as the ingest's. */
function perVersionSteps(): string {
  const count = 100_000
  const contents = Array.from({ length: count }, (_, index) => ({
    sales: 100_000 + index * 37,
    fields: null,
    breaks: null,
  }))
  const contentHash = cpuMicrosPer(count, () => {
    for (const content of contents) priceContentHash(content)
  })
  const entries: LogEntry[] = []
  const chained = cpuMicrosPer(count, () => {
    let previous = ''
    for (let index = 0; index < count; index++) {
      const entry = makeEntry(
        index + 1,
        {
          entityType: 'price',
          changeType: 'updated',
          entityCode: `SKU-${String(index).padStart(6, '0')}`,
          compositeKey: 'PL-RETAIL',
          changedAt: 1_735_000_000_000 + index,
          changedBy: 'bench-client-0001',
          contentHash: '0123456789abcdef0123456789abcdef',
        },
        previous,
      )
      previous = entry.checksum
      entries.push(entry)
    }
  })
  const encoded = cpuMicrosPer(count, () => {
    for (let start = 0; start < count; start += batchCount) encodeEntries(entries.slice(start, start + batchCount))
  })
  return `content hash ${contentHash.toFixed(2)}, log entry with its chained checksum ${chained.toFixed(2)}, its encoding ${encoded.toFixed(2)}`
}

// The steps first, twice: the first pass warms the code up.
perVersionSteps()
const steps = perVersionSteps()
const lmdb = await lmdbFloor()
process.stdout.write(
  `ingest floor, ${versionCount.toLocaleString('en-US')} versions, layout ${layout}\n` +
    `  LMDB alone: ${lmdb.micros.toFixed(2)} us CPU/version (process); by thread: ${lmdb.threads}\n` +
    `  per-version steps (main thread, us/version): ${steps}\n`,
)
