/**
 * A large synthetic changelog for the changelog-read benchmark, written straight through the
 * storage layer (TenantStore.commit with log-only entries): writing 10 million entries through
 * the API would take far longer than the reads it sets up. The log imitates a busy tenant: price
 * batches from an ERP sync (SKU and pricelist, some deletes), article imports, single edits of
 * articles, VAT mappings, pricelists and settings, with `changed_at` rising over a year. Everything
 * comes from a seed. The full-size log is cached (a copy of the tenant's LMDB file) under
 * bench/.cache and reused while its generator version, entry count and seed match.
 * Non-goal: entities behind the entries (the log is read, not replayed).
 * @module
 */
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import path from 'node:path'
import { logSchemaVersion, type EntryContent } from '../storage/log-entry.js'
import { TenantStore } from '../storage/tenant-store.js'
import { pricelists, seededRandom, skuCode } from './workload.js'

/** Bump when the entries this module writes change: a cached log of another version is rebuilt. */
export const generatorVersion = 2
/** Entries per commit: large, so the per-transaction cost (one fsync) vanishes. */
export const commitEntries = 50_000
const skuCount = 100_000
const spanMs = 365 * 86_400_000
const actors = ['erp-sync', 'pim-import', 'anna.berg@example.com', 'price-robot', 'client:integration']
const settingKeys = ['ingest.skip.dedup', 'strict.article.validation', 'change.events.enabled', 'rounding.default']

export interface LogGeneration {
  readonly entryCount: number
  readonly generatorVersion: number
  readonly seed: number
  /** Time to write the log (the cached run's time when it came from the cache). */
  readonly generationMs: number
  readonly entriesPerSecond: number
  /** Bytes on disk of the tenant's LMDB files. */
  readonly diskBytes: number
  readonly fromCache: boolean
  /** Time to copy the cached log into the run's data directory (0 when generated in place). */
  readonly copyMs: number
  /** Entries by entity type. */
  readonly typeCounts: Record<string, number>
}

type Kind = EntryContent['entityType']

/** A run of entries one client action produces: one type, one actor, one instant. */
interface Block {
  readonly type: Kind
  readonly count: number
}

/**
 * Block mix: about 90% of entries are prices (batches of 500-2,500), about 6% articles (imports of
 * 100-1,000 and single edits), about 1% VAT mappings, the rest single pricelist and setting edits.
 */
function nextBlock(random: () => number): Block {
  const draw = random()
  const between = (low: number, high: number) => low + Math.floor(random() * (high - low + 1))
  if (draw < 0.55) return { type: 'price', count: between(500, 2_500) }
  if (draw < 0.65) return { type: 'article', count: between(100, 1_000) }
  if (draw < 0.8) return { type: 'article', count: 1 }
  if (draw < 0.83) return { type: 'article_taxclass', count: between(100, 500) }
  if (draw < 0.86) return { type: 'pricelist', count: between(1, 3) }
  if (draw < 0.87) return { type: 'settings', count: 1 }
  return { type: 'price', count: 1 }
}

/** Content hashes as a client's data would give them: 32 lowercase hex digits, drawn per entry. */
class HashSource {
  readonly #bytes = Buffer.allocUnsafe(16 * 4_096)
  readonly #words = new Uint32Array(this.#bytes.buffer, this.#bytes.byteOffset, this.#bytes.length / 4)
  #next = 4_096

  constructor(readonly random: () => number) {}

  take(): string {
    if (this.#next === 4_096) {
      for (let index = 0; index < this.#words.length; index++) this.#words[index] = this.random() * 4_294_967_296
      this.#next = 0
    }
    const start = 16 * this.#next++
    return this.#bytes.toString('hex', start, start + 16)
  }
}

/** The entries of the whole log, block by block, in commit-sized slices. */
class EntrySource {
  readonly #random: () => number
  readonly #hashes: HashSource
  readonly #skus = Array.from({ length: skuCount }, (_, index) => skuCode(index))
  readonly #stepMs: number
  #at: number
  readonly typeCounts: Record<string, number> = {}

  constructor(seed: number, entryCount: number, endMs: number) {
    this.#random = seededRandom(seed)
    this.#hashes = new HashSource(seededRandom(seed + 1))
    this.#at = endMs - spanMs
    // Blocks average about 880 entries: spread them evenly over the year.
    this.#stepMs = Math.max(1, Math.floor((spanMs / entryCount) * 880))
  }

  /** Up to `count` entries, ending on a block boundary unless `count` cuts the last block. */
  fill(count: number): EntryContent[] {
    const entries: EntryContent[] = []
    while (entries.length < count) {
      const block = nextBlock(this.#random)
      const size = Math.min(block.count, count - entries.length)
      this.#at += 1 + Math.floor(this.#random() * 2 * this.#stepMs)
      const actor = actors[Math.floor(this.#random() * actors.length)]!
      this.typeCounts[block.type] = (this.typeCounts[block.type] ?? 0) + size
      for (let index = 0; index < size; index++) entries.push(this.#entry(block.type, actor))
    }
    return entries
  }

  #entry(type: Kind, actor: string): EntryContent {
    const draw = this.#random()
    const sku = this.#skus[Math.floor(this.#random() * skuCount)]!
    switch (type) {
      case 'price': {
        // 2% deletes (empty hash), 20% new pairs, the rest new prices of known pairs.
        const pricelist = pricelists[Math.floor(this.#random() * pricelists.length)]!.code
        if (draw < 0.02) return this.#content(type, 'deleted', sku, pricelist, actor, '')
        return this.#content(type, draw < 0.22 ? 'created' : 'updated', sku, pricelist, actor, this.#hashes.take())
      }
      case 'article':
        return this.#content(type, draw < 0.3 ? 'created' : 'updated', sku, null, actor, this.#hashes.take())
      case 'article_taxclass':
        return this.#content(type, 'created', sku, 'SE', actor, this.#hashes.take())
      case 'pricelist':
        return this.#content(
          type,
          'updated',
          pricelists[Math.floor(draw * pricelists.length)]!.code,
          null,
          actor,
          this.#hashes.take(),
        )
      default:
        return this.#content(
          type,
          'updated',
          settingKeys[Math.floor(draw * settingKeys.length)]!,
          null,
          actor,
          this.#hashes.take(),
        )
    }
  }

  /** One object shape for every entry (a spread would give each its own, slower, shape). */
  #content(
    entityType: Kind,
    changeType: EntryContent['changeType'],
    entityCode: string,
    compositeKey: string | null,
    changedBy: string,
    contentHash: string,
  ): EntryContent {
    return { entityType, changeType, entityCode, compositeKey, changedAt: this.#at, changedBy, contentHash }
  }
}

/**
 * Appends `entryCount` synthetic entries to the tenant store at `storePath` (the server must not
 * have it open). Commits of `commitEntries` entries; the next commit's entries are built while
 * LMDB's write thread writes the previous one.
 */
export async function writeSyntheticLog(
  storePath: string,
  entryCount: number,
  seed: number,
  progress: (written: number) => void,
): Promise<{ elapsedMs: number; typeCounts: Record<string, number> }> {
  const started = performance.now()
  const source = new EntrySource(seed, entryCount, Date.now() - 86_400_000)
  const store = new TenantStore(storePath)
  try {
    let written = 0
    let previous: Promise<unknown> = Promise.resolve()
    while (written < entryCount) {
      const entries = source.fill(Math.min(commitEntries, entryCount - written))
      const committed = store.commit([], entries, [])
      await previous
      previous = committed
      written += entries.length
      if (written % 1_000_000 < commitEntries) progress(written)
    }
    await previous
  } finally {
    await store.close()
  }
  return { elapsedMs: performance.now() - started, typeCounts: source.typeCounts }
}

/** Bytes on disk (allocated blocks) of the files in a directory. */
export function diskBytes(directory: string): number {
  let total = 0
  for (const name of readdirSync(directory)) total += statSync(path.join(directory, name)).blocks * 512
  return total
}

interface CacheManifest {
  readonly generatorVersion: number
  readonly logSchemaVersion: number
  readonly entryCount: number
  readonly seed: number
  readonly generationMs: number
  readonly typeCounts: Record<string, number>
  readonly createdAt: string
}

/** LMDB's data file; the lock file is recreated on open. */
const dataFile = 'data.mdb'

function readManifest(cacheDir: string): CacheManifest | null {
  const manifestPath = path.join(cacheDir, 'manifest.json')
  if (!existsSync(manifestPath) || !existsSync(path.join(cacheDir, dataFile))) return null
  try {
    return JSON.parse(readFileSync(manifestPath, 'utf8')) as CacheManifest
  } catch {
    return null
  }
}

/**
 * Fills the (freshly provisioned, closed) tenant store at `storePath` with the synthetic log:
 * copied from `cacheDir` when it holds a log of this generator, entry count and seed, else
 * written and then cached there (`cacheDir` null: written, never cached).
 */
export async function prepareLog(
  storePath: string,
  entryCount: number,
  seed: number,
  cacheDir: string | null,
  progress: (message: string) => void,
): Promise<LogGeneration> {
  const manifest = cacheDir === null ? null : readManifest(cacheDir)
  const matches =
    manifest !== null &&
    manifest.generatorVersion === generatorVersion &&
    manifest.logSchemaVersion === logSchemaVersion &&
    manifest.entryCount === entryCount &&
    manifest.seed === seed
  if (cacheDir !== null && matches) {
    progress(`copying the cached ${entryCount.toLocaleString('en-US')}-entry log from ${cacheDir}`)
    const started = performance.now()
    rmSync(storePath, { recursive: true, force: true })
    mkdirSync(storePath, { recursive: true })
    copyFileSync(path.join(cacheDir, dataFile), path.join(storePath, dataFile))
    const copyMs = performance.now() - started
    return result(manifest, storePath, true, copyMs)
  }
  progress(
    `writing ${entryCount.toLocaleString('en-US')} log entries through TenantStore.commit (${commitEntries.toLocaleString('en-US')} per commit)`,
  )
  const written = await writeSyntheticLog(storePath, entryCount, seed, (count) =>
    progress(`  ${count.toLocaleString('en-US')} entries written`),
  )
  const fresh: CacheManifest = {
    generatorVersion,
    logSchemaVersion,
    entryCount,
    seed,
    generationMs: written.elapsedMs,
    typeCounts: written.typeCounts,
    createdAt: new Date().toISOString(),
  }
  if (cacheDir !== null) {
    rmSync(cacheDir, { recursive: true, force: true })
    mkdirSync(cacheDir, { recursive: true })
    copyFileSync(path.join(storePath, dataFile), path.join(cacheDir, dataFile))
    // The manifest last: a cache interrupted while copying has none and is rebuilt.
    writeFileSync(path.join(cacheDir, 'manifest.json'), `${JSON.stringify(fresh, null, 2)}\n`)
  }
  return result(fresh, storePath, false, 0)
}

function result(manifest: CacheManifest, storePath: string, fromCache: boolean, copyMs: number): LogGeneration {
  return {
    entryCount: manifest.entryCount,
    generatorVersion: manifest.generatorVersion,
    seed: manifest.seed,
    generationMs: manifest.generationMs,
    entriesPerSecond: (manifest.entryCount * 1000) / manifest.generationMs,
    diskBytes: diskBytes(storePath),
    fromCache,
    copyMs,
    typeCounts: manifest.typeCounts,
  }
}
