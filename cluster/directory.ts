/**
 * The shared directory (issue 10): the system tables that every node of a cluster must see alike
 * (tenants, API keys, token-signing keys, people's memberships, sign-in links, sessions, tenant
 * requests), so that a tenant created, a key issued or a person signed in on one node is known on
 * every other. Each node keeps its own copy in its system store (storage/system-store.ts); Redis
 * holds the cluster's copy and the order of changes:
 *
 * - `pricing:system:<table>`: a hash, record key -> the record (MessagePack);
 * - `pricing:system:log`: a stream of changes `{node, table, key, value}` (no `value`: removed),
 *   trimmed to about 100,000 entries.
 *
 * A node publishes each of its own durable writes (the store's observer) with one MULTI (HSET or
 * HDEL, then XADD), and applies the other nodes' changes from the stream in order. The last change
 * of a record wins: the directory's records have one writer each at a time in practice (a tenant's
 * operator, a person's own session), and keys that are created are random or checked unique.
 *
 * While Redis is unreachable a node keeps its writes queued (the latest value per record) and
 * publishes them when Redis returns; it then compares every table with Redis again, records Redis
 * lacks are published, and records that differ are taken from Redis.
 * @module
 */
import type { Redis } from 'ioredis'
import { Packr } from 'msgpackr'
import type { Logger } from 'pino'
import type { SystemStore, SystemTable } from '../storage/system-store.js'

/** The tables shared by the cluster. The FX feed has its own key (cluster/fx.ts); restores are a node's own. */
export const sharedTables: readonly SystemTable[] = [
  'tenants',
  'api_keys',
  'signing_keys',
  'members',
  'sign_in_links',
  'sessions',
  'tenant_requests',
]
const logKey = 'pricing:system:log'
const logLengthMax = 100_000
const blockMs = 1_000
const packr = new Packr({ useRecords: false, moreTypes: false })

/** Told of each record another node changed, once it is in the local store. */
export type DirectoryListener = (table: SystemTable, key: string, value: unknown) => void | Promise<void>

export class SharedDirectory {
  readonly #pending = new Map<string, { table: SystemTable; key: string; value: unknown }>()
  readonly #shared = new Set<SystemTable>(sharedTables)
  #listener: DirectoryListener = () => {}
  #reader: Redis | null = null
  #lastId = '0-0'
  #synced = false
  #stopped = false
  #flushing: Promise<void> | null = null
  #tail: Promise<void> | null = null
  /** Changes of other nodes applied here, and of this node published (counters for /metrics). */
  applied = 0
  published = 0

  constructor(
    readonly redis: Redis,
    readonly system: SystemStore,
    readonly nodeId: string,
    readonly logger: Logger,
  ) {
    system.observer = (table, key, value) => {
      if (!this.#shared.has(table)) return
      this.#pending.delete(`${table}\u0000${key}`)
      this.#pending.set(`${table}\u0000${key}`, { table, key, value })
      void this.flush()
    }
  }

  /** Whether the local copy has been compared with Redis since the last (re)connection. */
  get synced(): boolean {
    return this.#synced
  }

  /** Changes of this node not yet in Redis. */
  get unpublished(): number {
    return this.#pending.size
  }

  listen(listener: DirectoryListener): void {
    this.#listener = listener
  }

  /**
   * Compares every shared table with Redis: records Redis lacks are published, records that differ
   * are taken from Redis (and the listener told). Then follows the stream from where Redis stood.
   * Throws while Redis is unreachable; `start` retries.
   */
  async sync(): Promise<void> {
    const last = await this.redis.xrevrange(logKey, '+', '-', 'COUNT', 1)
    const lastId = last[0]?.[0] ?? '0-0'
    for (const table of sharedTables) {
      const remote = await this.redis.hgetallBuffer(`pricing:system:${table}`)
      const db = this.system.table(table)
      for (const [key, bytes] of Object.entries(remote)) {
        // A write of this node that Redis has not seen yet is newer than Redis's copy.
        if (this.#pending.has(`${table}\u0000${key}`)) continue
        const local = db.get(key)
        if (local !== undefined && Buffer.compare(packr.pack(local), bytes) === 0) continue
        const value = packr.unpack(bytes)
        await this.system.put(db, key, value, false)
        await this.#listener(table, key, value)
      }
      for (const { key, value } of db.getRange({ snapshot: false })) {
        if (remote[key] === undefined && !this.#pending.has(`${table}\u0000${key}`))
          this.#pending.set(`${table}\u0000${key}`, { table, key, value })
      }
    }
    this.#lastId = lastId
    this.#synced = true
    await this.flush()
  }

  /** Syncs (retrying every second until Redis answers), then follows the stream until `stop`. */
  start(firstSyncWaitMs: number): Promise<void> {
    this.#reader = this.redis.duplicate()
    this.#reader.on('error', () => {})
    this.redis.on('close', () => (this.#synced = false))
    this.#tail = this.#follow()
    // Start-up waits for the first sync (bounded): a node that joins adopts the cluster's signing
    // keys and tenants before it serves.
    return new Promise((resolve) => {
      const deadline = setTimeout(resolve, firstSyncWaitMs)
      const check = setInterval(() => {
        if (this.#synced || this.#stopped) {
          clearInterval(check)
          clearTimeout(deadline)
          resolve()
        }
      }, 10)
    })
  }

  async #follow(): Promise<void> {
    while (!this.#stopped) {
      try {
        if (!this.#synced) await this.sync()
        const answer = (await this.#reader!.xreadBuffer(
          'COUNT',
          1_000,
          'BLOCK',
          blockMs,
          'STREAMS',
          logKey,
          this.#lastId,
        )) as [Buffer, [Buffer, Buffer[]][]][] | null
        for (const [, messages] of answer ?? []) {
          for (const [id, fields] of messages) {
            await this.#apply(fields)
            this.#lastId = id.toString()
          }
        }
      } catch (error) {
        if (this.#stopped) return
        this.#synced = false
        this.logger.debug({ err: error }, 'cluster: directory not synced; retrying')
        await new Promise((resolve) => setTimeout(resolve, 1_000))
      }
    }
  }

  async #apply(fields: Buffer[]): Promise<void> {
    const message = new Map<string, Buffer>()
    for (let index = 0; index + 1 < fields.length; index += 2)
      message.set(fields[index]!.toString(), fields[index + 1]!)
    if (message.get('node')?.toString() === this.nodeId) return
    const table = message.get('table')?.toString() as SystemTable | undefined
    const key = message.get('key')?.toString()
    if (table === undefined || key === undefined || !this.#shared.has(table)) return
    const bytes = message.get('value')
    const value = bytes === undefined ? undefined : packr.unpack(bytes)
    const db = this.system.table(table)
    if (value === undefined) await this.system.remove(db, key, false)
    else await this.system.put(db, key, value, false)
    this.applied++
    await this.#listener(table, key, value)
  }

  /** Publishes queued changes in order; what Redis refuses stays queued for the next try. */
  flush(): Promise<void> {
    if (this.#flushing === null && this.#pending.size > 0)
      this.#flushing = this.#publishPending().finally(() => (this.#flushing = null))
    return this.#flushing ?? Promise.resolve()
  }

  async #publishPending(): Promise<void> {
    // One turn first: `flush` has stored this run as the one in progress before any of it runs.
    await Promise.resolve()
    try {
      while (this.#pending.size > 0 && !this.#stopped) {
        const [id, change] = this.#pending.entries().next().value as [
          string,
          { table: SystemTable; key: string; value: unknown },
        ]
        const hash = `pricing:system:${change.table}`
        const multi = this.redis.multi()
        const fields: (string | Buffer)[] = ['node', this.nodeId, 'table', change.table, 'key', change.key]
        if (change.value === undefined) multi.hdel(hash, change.key)
        else {
          const bytes = packr.pack(change.value)
          multi.hset(hash, change.key, bytes)
          fields.push('value', bytes)
        }
        multi.xadd(logKey, 'MAXLEN', '~', logLengthMax, '*', ...fields)
        await multi.exec()
        // A newer write of the same record queued meanwhile stays queued.
        if (this.#pending.get(id) === change) this.#pending.delete(id)
        this.published++
      }
    } catch (error) {
      // Redis unreachable: the queue waits for the next sync.
      this.logger.debug({ err: error, unpublished: this.#pending.size }, 'cluster: directory changes not published yet')
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true
    this.system.observer = null
    this.#reader?.disconnect()
    await this.#tail
  }
}
