/**
 * A new replica starts from a backup (issue 10): before a node loads its tenants, each tenant of a
 * region it serves that it holds no copy of is fetched from the region's home as an LMDB backup
 * copy (server/routes/cluster.ts), written where the tenant's store lives, and opened as usual;
 * the replica then follows the tenant's log in Redis from the copy's sequence
 * (cluster/replication.ts). Without a copy (no home yet, or the home cannot be reached) the
 * replica follows the log from its start, which Redis keeps for about a million commits.
 * @module
 */
import { existsSync } from 'node:fs'
import { mkdir, rename, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import type { Redis } from 'ioredis'
import type { Logger } from 'pino'
import type { SystemStore } from '../storage/system-store.js'
import type { NodeInfo } from './placement.js'

const snapshotTimeoutMs = 120_000

export async function bootstrapReplicas(options: {
  readonly redis: Redis
  readonly system: SystemStore
  readonly dataDir: string
  readonly nodeId: string
  readonly regions: readonly string[]
  readonly secret: string | null
  readonly logger: Logger
}): Promise<void> {
  const { redis, system, dataDir, nodeId, regions, secret, logger } = options
  if (secret === null) return
  for (const record of system.listTenants()) {
    const directory = path.join(dataDir, 'tenants', record.slug)
    if (!regions.includes(record.region) || existsSync(path.join(directory, 'data.mdb'))) continue
    try {
      const homeId = await redis.get(`pricing:lease:home:${record.region}`)
      if (homeId === null || homeId === nodeId) continue
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
      logger.info({ tenant: record.slug, home: homeId, bytes: bytes.length }, "cluster: replica starts from the home's backup copy")
    } catch (error) {
      logger.warn({ err: error, tenant: record.slug }, 'cluster: no backup copy from the home; the replica follows the log from its start')
    }
  }
}
