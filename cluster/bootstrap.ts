/**
 * A new replica starts from a backup (issue 10): before a node loads its tenants, each tenant of a
 * region it serves that it holds no copy of is fetched from the region's home as an LMDB backup
 * copy (http/routes/cluster.ts), written where the tenant's store lives, and opened as usual;
 * the replica then follows the tenant's log in Redis from the copy's sequence
 * (cluster/replication.ts). Without a copy (no home yet, or the home cannot be reached) the
 * replica follows the log from its start, which Redis keeps for about a million commits.
 *
 * A copy the node holds already is checked against the log first: when the log no longer goes on
 * from its sequence (the node was away longer than Redis keeps the log), or the copy holds commits
 * the log never had (this node was a home that died with commits Redis never got), the copy is
 * moved aside (`<slug>.gap-<ms>`, `.ahead-<ms>` or `.diverged-<ms>` beside it, never deleted) and
 * fetched anew.
 * @module
 */
import { existsSync } from 'node:fs'
import { mkdir, rename, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import type { Redis } from 'ioredis'
import type { Logger } from 'pino'
import type { SystemStore } from '../storage/system-store.js'
import { TenantStore } from '../storage/tenant-store.js'
import type { NodeInfo } from './placement.js'
import { publishedRange, streamKey } from './replication.js'

const snapshotTimeoutMs = 120_000

/**
 * Whether the copy in `directory` can follow the tenant's log: `fits`, `gap` (the log goes on
 * past its sequence, or a commit straddles it), `ahead` (the copy holds sequences beyond the
 * log's end) or `diverged` (the log's commit ending at the copy's sequence has another checksum:
 * another home wrote those sequences).
 */
export async function copyAgainstLog(
  redis: Redis,
  slug: string,
  directory: string,
): Promise<'fits' | 'gap' | 'ahead' | 'diverged'> {
  const store = new TenantStore(directory)
  const { sequence, checksum } = store
  await store.close()
  // The log's commit that ends at the copy's sequence, if Redis still has it, must be the copy's.
  const same = await redis.xrangeBuffer(
    streamKey(slug),
    `${sequence}-0`,
    `${sequence}-18446744073709551615`,
    'COUNT',
    1,
  )
  const ending = same.length === 0 ? null : publishedRange(same[0]![1])
  if (ending !== null && ending.checksum !== checksum) return 'diverged'
  const next = await redis.xrangeBuffer(streamKey(slug), `${sequence + 1}-0`, '+', 'COUNT', 1)
  if (next.length > 0) {
    const range = publishedRange(next[0]![1])
    return range !== null && range.first === sequence + 1 ? 'fits' : 'gap'
  }
  const last = await redis.xrevrangeBuffer(streamKey(slug), '+', '-', 'COUNT', 1)
  const range = last.length === 0 ? null : publishedRange(last[0]![1])
  return range !== null && range.last < sequence ? 'ahead' : 'fits'
}

export async function bootstrapReplicas(options: {
  readonly redis: Redis
  readonly system: SystemStore
  readonly dataDir: string
  readonly nodeId: string
  readonly regions: readonly string[]
  readonly secret: string | null
  readonly logger: Logger
  /** The clock (names a copy moved aside). */
  readonly now: () => number
}): Promise<void> {
  const { redis, system, dataDir, nodeId, regions, secret, logger, now } = options
  if (secret === null) return
  for (const record of system.listTenants()) {
    const directory = path.join(dataDir, 'tenants', record.slug)
    if (!regions.includes(record.region)) continue
    try {
      const homeId = await redis.get(`pricing:lease:home:${record.region}`)
      if (homeId === null || homeId === nodeId) continue
      if (existsSync(path.join(directory, 'data.mdb'))) {
        const verdict = await copyAgainstLog(redis, record.slug, directory)
        if (verdict === 'fits') continue
        const aside = `${directory}.${verdict}-${now()}`
        await rename(directory, aside)
        logger.warn(
          { tenant: record.slug, aside, verdict },
          "cluster: this node's copy of the tenant does not fit the home's log; moved aside, a new copy follows",
        )
      }
      const text = await redis.get(`pricing:node:${homeId}`)
      if (text === null) continue
      const home = JSON.parse(text) as NodeInfo
      const response = await fetch(`${home.url}/cluster/tenants/${encodeURIComponent(record.slug)}/snapshot`, {
        headers: { authorization: `Bearer ${secret}` },
        signal: AbortSignal.timeout(snapshotTimeoutMs),
      })
      if (response.status !== 200) throw new Error(`the home answered ${response.status}`)
      const bytes = Buffer.from(await response.arrayBuffer())
      // Written aside and renamed: a copy cut short never looks like a store.
      const partial = `${directory}.partial`
      await rm(partial, { recursive: true, force: true })
      await mkdir(partial, { recursive: true })
      await writeFile(path.join(partial, 'data.mdb'), bytes)
      await rm(directory, { recursive: true, force: true })
      await rename(partial, directory)
      logger.info(
        { tenant: record.slug, home: homeId, bytes: bytes.length },
        "cluster: replica starts from the home's backup copy",
      )
    } catch (error) {
      logger.warn(
        { err: error, tenant: record.slug },
        'cluster: no backup copy from the home; the replica follows the log from its start',
      )
    }
  }
}
