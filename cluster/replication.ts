/**
 * Read replicas (issue 10): the home node of a tenant's region publishes each durable commit to a
 * Redis stream, `pricing:log:<slug>`, before the writer is answered; every other node of the region
 * applies the stream in order to its own copy (LMDB and memory) and serves reads from it.
 *
 * Why Redis Streams rather than reading the home node's log over HTTP: the stream outlives the
 * home (a standby that takes over has everything acknowledged, even with the home dead), one XADD
 * per commit costs the writer one round trip, a replica reads many tenants' streams with one
 * blocking XREAD, and no node has to know which others follow it.
 *
 * - A message is one commit: the planned changes exactly as the home applied them (catalog
 *   changes, extra entries, price changes), its first and last sequence and the last entry's
 *   checksum. Stream ids are `<last sequence>-<n>`, so a replica at sequence S reads on from
 *   `S-0`... and Redis keeps at most about a million commits per tenant.
 * - A replica applies the same changes in the same order and gets the same entries: same
 *   sequences, same checksum chain. It compares the last checksum; a gap or a mismatch stops the
 *   replica (reads then go to the home) and is logged.
 * - Commits are published in sequence order, each after every earlier one: TenantRuntime.commit
 *   hands over each commit as it is queued, and LMDB's durability promises may settle out of that
 *   order (a bench run found a later batch's XADD first, which made the earlier one's fail).
 * - Redis away (or an XADD that failed): the home queues its commits in memory, answers its
 *   writers (it keeps writing, with local limits) and publishes the queue in order when Redis
 *   returns, retrying every second meanwhile.
 * @module
 */
import type { Redis } from 'ioredis'
import { Packr } from 'msgpackr'
import type { Logger } from 'pino'
import type { Change } from '../engine/catalog.js'
import type { EntryContent } from '../storage/log-entry.js'
import type { PriceChange } from '../storage/tenant-store.js'
import type { CommittedBatch, ReplicationSink, TenantRegistry, TenantRuntime } from '../tenant/runtime.js'
import type { ReplicaView } from './placement.js'

const streamLengthMax = 1_000_000
const blockMs = 500
/** How often a home retries publishing queued commits while Redis answers. */
const flushRetryMs = 1_000
const packr = new Packr({ useRecords: false, moreTypes: false })

interface Published {
  readonly first: number
  readonly last: number
  readonly checksum: string
  /** Epoch ms when the home published it. */
  readonly at: number
  readonly changes: readonly Change[]
  readonly extra: readonly EntryContent[]
  readonly prices: readonly PriceChange[]
  /** Meta values the home stored with the batch (absent in messages of earlier builds). */
  readonly meta?: Readonly<Record<string, unknown>>
}

interface ReplicaState {
  /** Sequence the last message read for this tenant ended at (the home's head as far as known). */
  head: number
  /** The stream id read up to. */
  lastId: string
  /** Stopped by a gap or a mismatch: reads go to the home. */
  broken: string | null
  /** Publish-to-apply time of the last message applied, ms. */
  lagMs: number
  /** Read the stream up to its end at least once since following began. */
  caughtUp: boolean
}

export function streamKey(slug: string): string {
  return `pricing:log:${slug}`
}

/** The sequences a stream message covers (its fields as XRANGE answers them), or null if it is not a commit. */
export function publishedRange(fields: readonly Buffer[]): { first: number; last: number; checksum: string } | null {
  const bytes = fields[1]
  if (bytes === undefined) return null
  const message = packr.unpack(bytes) as Published
  return { first: message.first, last: message.last, checksum: message.checksum }
}

export class Replication implements ReplicationSink {
  /** Home side: batches not yet in Redis (Redis away), per tenant, in order. */
  readonly #queued = new Map<string, Buffer[]>()
  /** Home side: per tenant, the last commit's publication (the next one waits for it). */
  readonly #publishing = new Map<string, Promise<void>>()
  #flushing = false
  #flushTimer: NodeJS.Timeout | null = null
  /** Replica side: tenants followed here. */
  readonly #replicas = new Map<string, ReplicaState>()
  #reader: Redis | null = null
  #stopped = false
  #loop: Promise<void> | null = null
  #wake: (() => void) | null = null
  /** Applied commits as [applied at (epoch ms), publish-to-apply ms], the last minute's. */
  readonly #lagSamples: [number, number][] = []

  constructor(
    readonly redis: Redis,
    readonly tenants: TenantRegistry,
    readonly logger: Logger,
    readonly now: () => number,
  ) {}

  /**
   * Home side: publishes a commit once it is durable, after every commit queued before it (stream
   * ids must grow: a later batch's XADD first would make the earlier one's fail); when Redis is
   * away, queues it (and the writer goes on).
   */
  committed(tenant: TenantRuntime, durable: Promise<CommittedBatch>): Promise<void> {
    const previous = this.#publishing.get(tenant.slug)
    const published = (
      previous === undefined ? durable : Promise.all([durable, previous]).then(([batch]) => batch)
    ).then((batch) => this.#publish(tenant, batch))
    // A failed durability promise exits the process (TenantRuntime.commit); the chain goes on meanwhile.
    const settled = published.catch(() => undefined)
    this.#publishing.set(tenant.slug, settled)
    void settled.then(() => {
      if (this.#publishing.get(tenant.slug) === settled) this.#publishing.delete(tenant.slug)
    })
    return published
  }

  async #publish(tenant: TenantRuntime, batch: CommittedBatch): Promise<void> {
    if (batch.entries.length === 0) return
    const first = batch.entries[0]!.sequence
    const last = batch.entries.at(-1)!
    const message: Published = {
      first,
      last: last.sequence,
      checksum: last.checksum,
      at: this.now(),
      changes: batch.changes,
      extra: batch.extra,
      prices: batch.prices,
      ...(batch.meta === undefined ? {} : { meta: batch.meta }),
    }
    const bytes = packr.pack(message)
    const queue = this.#queued.get(tenant.slug)
    if (queue !== undefined) {
      queue.push(bytes)
      return
    }
    try {
      await this.redis.xadd(streamKey(tenant.slug), 'MAXLEN', '~', streamLengthMax, `${last.sequence}-*`, 'b', bytes)
    } catch (error) {
      tenant.log.warn(
        { err: error, sequence: last.sequence },
        'cluster: commit not published (Redis unreachable?); commits are queued for the replicas until it is',
      )
      this.#queued.set(tenant.slug, [bytes])
    }
  }

  /** Home side: commits queued while Redis was away. */
  get queuedCommits(): number {
    let count = 0
    for (const queue of this.#queued.values()) count += queue.length
    return count
  }

  /**
   * Home side: publishes what was queued, in order (called when Redis is reachable again, and every
   * second while anything is queued). A batch whose XADD reached Redis before its answer was lost
   * is in the stream already and is skipped.
   */
  async flushQueued(): Promise<void> {
    if (this.#flushing) return
    this.#flushing = true
    try {
      for (const [slug, queue] of this.#queued) {
        const top = await this.redis.xrevrange(streamKey(slug), '+', '-', 'COUNT', 1)
        let published = top.length === 0 ? 0 : Number(top[0]![0].split('-')[0])
        while (queue.length > 0) {
          const message = packr.unpack(queue[0]!) as Published
          if (message.last > published) {
            await this.redis.xadd(streamKey(slug), 'MAXLEN', '~', streamLengthMax, `${message.last}-*`, 'b', queue[0]!)
            published = message.last
          }
          queue.shift()
        }
        this.#queued.delete(slug)
        this.logger.info({ tenant: slug }, 'cluster: queued commits are published')
      }
    } finally {
      this.#flushing = false
    }
  }

  /** Replica side: follows `tenant`'s stream from its current sequence. */
  follow(tenant: TenantRuntime): void {
    tenant.becomeReplica()
    if (this.#replicas.has(tenant.slug)) return
    this.#replicas.set(tenant.slug, {
      head: tenant.store.sequence,
      lastId: `${tenant.store.sequence}-0`,
      broken: null,
      lagMs: 0,
      caughtUp: false,
    })
    this.#wake?.()
  }

  /**
   * This node became the tenant's home: it reads the stream to its end first (everything the old
   * home acknowledged), then writes. Resolves when the tenant is writable here.
   */
  async promote(tenant: TenantRuntime): Promise<void> {
    const state = this.#replicas.get(tenant.slug)
    if (state !== undefined) {
      for (;;) {
        const messages = await this.redis.xrangeBuffer(streamKey(tenant.slug), `(${state.lastId}`, '+', 'COUNT', 1_000)
        if (messages.length === 0) break
        for (const [id, fields] of messages) await this.#apply(tenant, state, id.toString(), fields)
        if (state.broken !== null) throw new Error(`replica of ${tenant.slug} cannot take over: ${state.broken}`)
      }
      this.#replicas.delete(tenant.slug)
    }
    tenant.becomeHome(this)
  }

  /** This node is no longer the tenant's home: it follows the new home from its own sequence. */
  demote(tenant: TenantRuntime): void {
    this.follow(tenant)
  }

  view(tenant: TenantRuntime): ReplicaView | null {
    const state = this.#replicas.get(tenant.slug)
    if (state === undefined) return null
    const sequence = tenant.store.sequence
    return {
      ready: state.broken === null && state.caughtUp && tenant.loaded,
      sequence,
      lagSequences: Math.max(0, state.head - sequence),
    }
  }

  /** Replica states for /metrics: tenant -> lag in sequences and the last publish-to-apply ms. */
  lags(): { tenant: string; sequences: number; ms: number; broken: boolean }[] {
    return [...this.#replicas].map(([slug, state]) => ({
      tenant: slug,
      sequences: Math.max(0, state.head - (this.tenants.get(slug)?.store.sequence ?? 0)),
      ms: state.lagMs,
      broken: state.broken !== null,
    }))
  }

  /**
   * Publish-to-apply time of the commits applied here in the last minute: the median, the 99th
   * percentile and the maximum, ms, and how many (null quantiles when none).
   */
  applyLag(): { count: number; p50Ms: number | null; p99Ms: number | null; maxMs: number | null } {
    const since = this.now() - 60_000
    while (this.#lagSamples.length > 0 && this.#lagSamples[0]![0] < since) this.#lagSamples.shift()
    const sorted = this.#lagSamples.map(([, ms]) => ms).sort((left, right) => left - right)
    if (sorted.length === 0) return { count: 0, p50Ms: null, p99Ms: null, maxMs: null }
    const at = (share: number): number => sorted[Math.min(sorted.length - 1, Math.ceil(share * sorted.length) - 1)]!
    return { count: sorted.length, p50Ms: at(0.5), p99Ms: at(0.99), maxMs: sorted.at(-1)! }
  }

  start(): void {
    this.#flushTimer = setInterval(() => {
      if (this.#queued.size > 0 && this.redis.status === 'ready')
        void this.flushQueued().catch((error: unknown) =>
          this.logger.warn({ err: error }, 'cluster: queued commits not published yet; retrying'),
        )
    }, flushRetryMs)
    this.#flushTimer.unref()
    this.#reader = this.redis.duplicate()
    this.#reader.on('error', () => {})
    this.#loop = this.#run()
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      const followed = [...this.#replicas].filter(([, state]) => state.broken === null)
      if (followed.length === 0) {
        await new Promise<void>((resolve) => {
          this.#wake = resolve
          setTimeout(resolve, blockMs).unref()
        })
        this.#wake = null
        continue
      }
      try {
        const keys = followed.map(([slug]) => streamKey(slug))
        const ids = followed.map(([, state]) => state.lastId)
        const answer = (await this.#reader!.xreadBuffer(
          'COUNT',
          1_000,
          'BLOCK',
          blockMs,
          'STREAMS',
          ...keys,
          ...ids,
        )) as [Buffer, [Buffer, Buffer[]][]][] | null
        const read = new Set<string>()
        for (const [key, messages] of answer ?? []) {
          const slug = key.toString().slice('pricing:log:'.length)
          const tenant = this.tenants.get(slug)
          const state = this.#replicas.get(slug)
          if (tenant === undefined || state === undefined) continue
          read.add(slug)
          for (const [id, fields] of messages) {
            if (state.broken !== null || tenant.role !== 'replica') break
            await this.#apply(tenant, state, id.toString(), fields)
          }
          if (messages.length < 1_000) state.caughtUp = true
        }
        // A tenant whose stream had nothing new is at the home's head as far as Redis knows.
        for (const [slug, state] of followed) if (!read.has(slug)) state.caughtUp = true
      } catch (error) {
        if (this.#stopped) return
        this.logger.debug({ err: error }, 'cluster: replica stream read failed; retrying')
        await new Promise((resolve) => setTimeout(resolve, 500))
      }
    }
  }

  async #apply(tenant: TenantRuntime, state: ReplicaState, id: string, fields: Buffer[]): Promise<void> {
    const bytes = fields[1]
    if (bytes === undefined) return
    const message = packr.unpack(bytes) as Published
    state.lastId = id
    state.head = Math.max(state.head, message.last)
    const sequence = tenant.store.sequence
    if (message.last <= sequence) return
    if (message.first !== sequence + 1) {
      state.broken = `gap: the stream goes on at ${message.first}, this copy is at ${sequence}`
      tenant.log.error(
        { first: message.first, sequence },
        'cluster: replica stopped: its stream has a gap (a new copy from a backup is needed)',
      )
      return
    }
    const checksum = await tenant.applyReplicated(
      message.changes as Change[],
      message.extra,
      message.prices,
      message.meta ?? {},
    )
    if (checksum !== message.checksum) {
      state.broken = `checksum mismatch at ${message.last}`
      tenant.log.error(
        { sequence: message.last },
        'cluster: replica stopped: its log differs from the home (a new copy from a backup is needed)',
      )
      return
    }
    const now = this.now()
    state.lagMs = Math.max(0, now - message.at)
    this.#lagSamples.push([now, state.lagMs])
    if (this.#lagSamples.length > 100_000) this.#lagSamples.splice(0, 50_000)
  }

  async stop(): Promise<void> {
    this.#stopped = true
    if (this.#flushTimer !== null) clearInterval(this.#flushTimer)
    this.#wake?.()
    this.#reader?.disconnect()
    await this.#loop
  }
}
