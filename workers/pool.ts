/**
 * Main-thread side of the price-query workers: the Piscina pool (explicit options, bounded queue)
 * and the replication feed that keeps each worker's tenant replicas current.
 * @module
 */
import { assert } from '../engine/assert.js'
import { availableParallelism } from 'node:os'
import { fileURLToPath } from 'node:url'
import { BroadcastChannel, receiveMessageOnPort } from 'node:worker_threads'
import { Piscina } from 'piscina'
import type { ArticleCriteria, ArticleSearchOutcome } from '../engine/article-search.js'
import type { DiffEntry, DiffRequest } from '../engine/diff/diff.js'
import type { Catalog, CatalogType } from '../engine/catalog.js'
import type { PriceReadInput, PriceReadOutcome } from '../engine/price-read.js'
import type { PriceBook } from '../engine/prices.js'
import type { Version } from '../engine/temporal.js'
import { ArenaReader } from './answer-arena.js'
import { answerCacheCounts, type QueryInput } from './execute.js'
import type { ExplainedAnswer, ExplainedRead, ExplainQueryInput, ExplainReadInput } from './explain-query.js'
import {
  protocolVersion,
  replicationChannelName,
  type DiffTaskResult,
  type SimulateTask,
  type SimulateTaskResult,
  type ExplainTask,
  type ExplainTaskResult,
  type OnlineMessage,
  type PrefetchMessage,
  type PriceTask,
  type PriceWorkerData,
  type QueryTaskResult,
  type ReadTaskResult,
  type RulesTask,
  type RulesTaskResult,
  type SearchTaskResult,
  type Snapshot,
  type SnapshotMessage,
  type SyncMessage,
  type TaskHeader,
  type WarmTask,
  type WarmTaskResult,
} from './protocol.js'
import { packCatalog } from '../storage/book-snapshot.js'

/** What the pool needs to know of a tenant. */
export interface ReplicatedTenant {
  readonly slug: string
  readonly catalog: Catalog
  readonly prices: PriceBook
}

interface FeedState {
  sequence: number
  /** The sequence of the last snapshot broadcast (-1: none yet). */
  snapshotSequence: number
  pricelists: number
  fields: number
  generation: number
  /** Tasks of this tenant on the workers now. */
  running: number
  /** Set while a change must not be seen half-applied (a restore's swap): new tasks wait for it. */
  gate: Promise<void> | null
  /** Called when `running` drops to 0 while a gate waits. */
  drained: (() => void) | null
}

/** A worker's answer: its body, and what releases it once written (null: nothing to release). */
export interface PoolAnswer {
  readonly body: string | Buffer
  readonly release: (() => void) | null
}

/** A task without the header the pool adds (version, tenant, sequence, snapshot). */
type TaskBody =
  | ({ readonly kind: 'query' } & QueryInput)
  | { readonly kind: 'read'; readonly read: PriceReadInput }
  | { readonly kind: 'search'; readonly criteria: ArticleCriteria }
  | { readonly kind: 'diff'; readonly diff: DiffRequest }
  | Omit<SimulateTask, keyof TaskHeader>
  | Omit<ExplainTask, keyof TaskHeader>
  | Omit<WarmTask, keyof TaskHeader>

type TaskResult =
  | QueryTaskResult
  | ReadTaskResult
  | SearchTaskResult
  | WarmTaskResult
  | DiffTaskResult
  | SimulateTaskResult
  | ExplainTaskResult

/** How long a warm-up task waits for its siblings on the other workers (they start together). */
const warmWaitMs = 30_000
/** How long `close` waits for threads still starting (they start in well under a second). */
const closeWaitMs = 10_000

/**
 * Replica snapshots broadcast to the workers, by what asked for one: the warm-up after a tenant's
 * load (`warm`), or a task that found no replica (`query`: its caller waited for the build). The
 * metric `pricing_query_worker_snapshots_total`.
 */
export const workerSnapshotCounts = { warm: 0, query: 0 }

export class QueryPoolBusy extends Error {
  override name = 'QueryPoolBusy'
}

export class QueryPool {
  readonly #pool: Piscina
  readonly #channel = new BroadcastChannel(replicationChannelName)
  readonly #feeds = new Map<string, FeedState>()
  readonly #arenas = new ArenaReader()

  /** Workers that announced they listen on the replication channel (workers/replica.ts). */
  #online = 0
  readonly #onlineWaiters: (() => void)[] = []

  /**
   * @param threads worker threads (0: one per core)
   * @param answerCacheItems each worker's answer-cache bound (workers/execute.ts)
   * @param answerCacheMinRepeatShare the share of repeated queries from which it serves
   * @param taskFile the worker's entry file; null: price-task.js beside this module (the single
   *   executable passes its embedded copy: platform/packaged.ts)
   */
  constructor(
    threads: number,
    answerCacheItems: number,
    answerCacheMinRepeatShare = 0.8,
    taskFile: string | null = null,
  ) {
    const count = threads > 0 ? threads : Math.max(1, availableParallelism())
    // Before the workers start, so that no announcement is missed; the channel alone keeps no process alive.
    this.#channel.onmessage = (event) => this.#announced((event as { data: OnlineMessage | null }).data)
    this.#channel.unref()
    this.#pool = new Piscina({
      filename: taskFile ?? fileURLToPath(new URL('./price-task.js', import.meta.url)),
      workerData: { answerCacheItems, answerCacheMinRepeatShare } satisfies PriceWorkerData,
      // All threads start at once, so each subscribes to the replication channel from the start.
      minThreads: count,
      maxThreads: count,
      // Replicas live in the threads: never let an idle thread go.
      idleTimeout: 2 ** 31 - 1,
      // A bounded queue (each task holds its query's SKU codes): beyond it the caller answers on
      // the main thread instead (QueryPoolBusy). Deep enough that a burst of big queries from many
      // connections waits for the workers rather than landing on the main thread, in front of
      // every small request.
      maxQueue: count * 64,
      concurrentTasksPerWorker: 1,
      // 'async': a worker's event loop runs between tasks, so an idle worker applies sync messages
      // as they arrive (workers/replica.ts). With 'sync' it blocked in Atomics.wait, and the
      // messages of a write burst without queries queued up, each holding a column generation:
      // 850 MB of shared buffers after a 3-million-version ingest.
      atomics: 'async',
    })
  }

  #feed(tenant: ReplicatedTenant): FeedState {
    let feed = this.#feeds.get(tenant.slug)
    if (feed === undefined) {
      const sizes = tenant.prices
      feed = {
        sequence: 0,
        snapshotSequence: -1,
        pricelists: sizes.pricelistCodes.length,
        fields: sizes.fieldNames.length,
        generation: sizes.generation,
        running: 0,
        gate: null,
        drained: null,
      }
      this.#feeds.set(tenant.slug, feed)
    }
    return feed
  }

  /** Broadcasts a tenant's committed changes (catalogue entries, dictionary growth, new columns). */
  publish(tenant: ReplicatedTenant, changes: readonly [CatalogType, string, Version<unknown>[]][]): void {
    const feed = this.#feed(tenant)
    const prices = tenant.prices
    // No worker has a replica before the first snapshot, which will carry all of this: nothing to
    // send (a message would only be held, with the column generation it names, until dropped).
    if (feed.snapshotSequence < 0) {
      feed.pricelists = prices.pricelistCodes.length
      feed.fields = prices.fieldNames.length
      feed.generation = prices.generation
      return
    }
    const dictionary = prices.dictionaryDelta(feed.pricelists, feed.fields)
    const columns = prices.generation !== feed.generation ? prices.sharedColumns() : null
    if (
      changes.length === 0 &&
      columns === null &&
      dictionary.pricelists.length === 0 &&
      dictionary.fields.length === 0
    )
      return
    feed.sequence++
    feed.pricelists = prices.pricelistCodes.length
    feed.fields = prices.fieldNames.length
    feed.generation = prices.generation
    const message: SyncMessage = { tenant: tenant.slug, sequence: feed.sequence, changes, dictionary, columns }
    this.#channel.postMessage(message)
  }

  /** What the main thread reads on the replication channel: the workers' announcements. */
  #announced(message: OnlineMessage | null): void {
    if (message?.kind !== 'online') return
    this.#online++
    for (const resolve of this.#onlineWaiters.splice(0)) resolve()
  }

  /** The last prefetch per tenant (`prefetch`), until its snapshot is broadcast. */
  readonly #prefetched = new Map<string, { readonly token: number; readonly catalog: Uint8Array }>()
  #prefetches = 0

  /**
   * Hands a snapshot file's catalogue bytes to the workers before the main thread decodes them
   * (storage/tenant-store.ts), so that their replicas' catalogues are built meanwhile. Nothing if
   * some worker does not listen yet (it would miss it): the warm-up's snapshot then carries all.
   * Answers whether it was sent.
   */
  prefetch(slug: string, catalog: Uint8Array): boolean {
    // The load runs in one synchronous stretch from the start: announcements may wait unread.
    for (;;) {
      const received = receiveMessageOnPort(this.#channel as never) as { message: OnlineMessage | null } | undefined
      if (received === undefined) break
      this.#announced(received.message)
    }
    if (this.#online < this.threads) return false
    const token = ++this.#prefetches
    this.#prefetched.set(slug, { token, catalog })
    const message: PrefetchMessage = { kind: 'prefetch', tenant: slug, token, catalog }
    this.#channel.postMessage(message)
    return true
  }

  /** `catalog`: the catalogue's packed entries when the caller has them (a start from a snapshot file). */
  #broadcastSnapshot(
    tenant: ReplicatedTenant,
    feed: FeedState,
    catalog: Uint8Array | null = null,
    reason: 'warm' | 'query' = 'query',
  ): void {
    workerSnapshotCounts[reason]++
    const message: SnapshotMessage = {
      kind: 'snapshot',
      tenant: tenant.slug,
      snapshot: this.#snapshot(tenant, catalog),
    }
    this.#channel.postMessage(message)
    feed.snapshotSequence = feed.sequence
  }

  /** A full snapshot at the current sequence. */
  #snapshot(tenant: ReplicatedTenant, catalog: Uint8Array | null = null): Snapshot {
    const feed = this.#feed(tenant)
    // What the workers built from a prefetch serves only for the very bytes it was built from.
    const prefetched = this.#prefetched.get(tenant.slug)
    this.#prefetched.delete(tenant.slug)
    return {
      sequence: feed.sequence,
      prepared:
        prefetched !== undefined && catalog !== null && prefetched.catalog === catalog ? prefetched.token : null,
      catalog: catalog ?? packCatalog(tenant.catalog.entries()),
      dictionary: tenant.prices.dictionaryDelta(0, 0),
      columns: tenant.prices.sharedColumns(),
    }
  }

  /**
   * Runs a query on a worker; the answer reflects every change published before this call.
   * `release`, when not null, must be called once the body is written (or dropped): the body is a
   * view of the worker's answer arena until then (./answer-arena.ts).
   */
  async run(tenant: ReplicatedTenant, input: QueryInput): Promise<PoolAnswer> {
    const result = await this.#task(tenant, { kind: 'query', ...input })
    assert(result.kind === 'answer' || result.kind === 'arena', 'a query task answers a query')
    answerCacheCounts.hits += result.cacheHits
    answerCacheCounts.misses += result.cacheMisses
    if (result.kind === 'arena') {
      const { bytes, release } = this.#arenas.open(result.placement)
      return { body: bytes, release }
    }
    const json = result.json
    // A Buffer arrives as a plain Uint8Array (structured clone); wrap it without copying.
    return {
      body: typeof json === 'string' ? json : Buffer.from(json.buffer, json.byteOffset, json.byteLength),
      release: null,
    }
  }

  /**
   * One price read on a worker (engine/price-read.ts): for a read whose rules passed the main
   * thread's allowance. Reflects every change published before this call, like `run`.
   */
  async read(tenant: ReplicatedTenant, input: PriceReadInput): Promise<PriceReadOutcome> {
    const result = await this.#task(tenant, { kind: 'read', read: input })
    assert(result.kind === 'read', 'a read task answers a read')
    return result.outcome
  }

  /** An article search on a worker, for a filter that passed the main thread's allowance. */
  async search(tenant: ReplicatedTenant, criteria: ArticleCriteria): Promise<ArticleSearchOutcome> {
    const result = await this.#task(tenant, { kind: 'search', criteria })
    assert(result.kind === 'search', 'a search task answers a search')
    return result.outcome
  }

  /** A page of a price diff on a worker (engine/diff/diff.ts); reflects every change published before this call. */
  async diff(tenant: ReplicatedTenant, request: DiffRequest): Promise<DiffEntry[]> {
    const result = await this.#task(tenant, { kind: 'diff', diff: request })
    assert(result.kind === 'diff', 'a diff task answers a diff')
    return result.entries
  }

  /**
   * An explained query on a worker (./explain-query.ts): its bytes with a hole per price version.
   * `release`, when not null, must be called once they are filled: they are a view of the worker's
   * answer arena until then.
   */
  async explainQuery(tenant: ReplicatedTenant, query: ExplainQueryInput): Promise<ExplainedAnswer> {
    const result = await this.#task(tenant, { kind: 'explain', explain: { kind: 'query', query } })
    assert(result.kind === 'explain' && 'holes' in result.explained, 'an explained query answers bytes')
    const explained = result.explained
    if (!('placement' in explained)) return { ...explained, release: null }
    const { bytes, release } = this.#arenas.open(explained.placement)
    return { bytes, holes: explained.holes, versions: explained.versions, release }
  }

  /** An explained single read's trace on a worker, with the winner's amounts. */
  async explainRead(tenant: ReplicatedTenant, read: ExplainReadInput): Promise<ExplainedRead> {
    const result = await this.#task(tenant, { kind: 'explain', explain: { kind: 'read', read } })
    assert(result.kind === 'explain' && 'winner' in result.explained, 'an explained read answers a read')
    return result.explained
  }

  /**
   * A dry run's read (POST /price/simulate) on a worker: `delta` replayed over its replica, then the
   * query (its answer bytes) or the diff page (its entries). Reflects every change published before
   * this call, like `run`.
   */
  async simulate(
    tenant: ReplicatedTenant,
    read: Omit<SimulateTask, keyof TaskHeader | 'kind'>,
  ): Promise<{ json: string | Buffer | null; entries: DiffEntry[] | null }> {
    const result = await this.#task(tenant, { kind: 'simulate', ...read })
    assert(result.kind === 'simulate', 'a simulate task answers a simulation')
    const json = result.json
    // A Buffer arrives as a plain Uint8Array (structured clone); wrap it without copying.
    const body =
      json === null || typeof json === 'string' ? json : Buffer.from(json.buffer, json.byteOffset, json.byteLength)
    return { json: body, entries: result.entries }
  }

  /**
   * Readiness: every worker builds the tenant's replica and runs `query` (null: none) on it, before
   * the tenant counts as ready (tenant/runtime.ts). `catalog` answers the catalogue's packed entries
   * as the load read them from a snapshot file (the same bytes, not packed again), or null when
   * there are none or something was written since the load. Answers how many workers took part and how
   * many reached the end together (fewer: one was late or gone; the tenant serves anyway).
   */
  warm(
    tenant: ReplicatedTenant,
    catalog: () => Uint8Array | null,
    query: QueryInput | null,
  ): Promise<{ workers: number; warmed: number }> {
    // One tenant at a time: two tenants' warm-ups at once could each hold one worker at its barrier,
    // waiting for a sibling queued behind the other's.
    this.#warmsQueued++
    const warmed = this.#warming.then(() => this.#warmNow(tenant, catalog, query)).finally(() => this.#warmsQueued--)
    this.#warming = warmed.catch(() => undefined)
    return warmed
  }

  #warming: Promise<unknown> = Promise.resolve()
  /** Warm-ups queued or running: the last of a start's collects the workers' garbage (WarmTask `collect`). */
  #warmsQueued = 0

  async #warmNow(
    tenant: ReplicatedTenant,
    catalog: () => Uint8Array | null,
    query: QueryInput | null,
  ): Promise<{ workers: number; warmed: number }> {
    const feed = this.#feed(tenant)
    // A small tenant loads before the workers have started: a broadcast now would miss them, and
    // each would then need a snapshot of its own.
    await this.#workersOnline(warmWaitMs)
    if (feed.snapshotSequence < 0) this.#broadcastSnapshot(tenant, feed, catalog(), 'warm')
    const parties = this.threads
    const barrier = new Int32Array(new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT))
    const collect = this.#warmsQueued === 1
    const body = { kind: 'warm', query, barrier, parties, waitMs: warmWaitMs, collect } as const
    const results = await Promise.all(Array.from({ length: parties }, () => this.#task(tenant, body)))
    return { workers: parties, warmed: results.filter((result) => result.kind === 'warm' && result.met).length }
  }

  /** Resolves once every worker listens on the replication channel, or after `timeoutMs`. */
  async #workersOnline(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs
    while (this.#online < this.threads && Date.now() < deadline) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(1, deadline - Date.now()))
        this.#onlineWaiters.push(() => {
          clearTimeout(timer)
          resolve()
        })
      })
    }
  }

  /**
   * Checks a pricelist's rules on a worker (they compile, or the first refusal); QueryPoolBusy when
   * the queue is full.
   */
  async checkRules(rules: RulesTask['rules']): Promise<RulesTaskResult['refusal']> {
    if (this.#pool.queueSize >= this.#pool.options.maxQueue) throw new QueryPoolBusy('query pool queue is full')
    const task: RulesTask = { version: protocolVersion, kind: 'rules', rules }
    return ((await this.#pool.run(task)) as RulesTaskResult).refusal
  }

  /** Queues a task of the tenant (QueryPoolBusy when the queue is full), holding it while a gate is set. */
  async #task(tenant: ReplicatedTenant, body: TaskBody): Promise<TaskResult> {
    const feed = this.#feed(tenant)
    if (this.#pool.queueSize >= this.#pool.options.maxQueue) throw new QueryPoolBusy('query pool queue is full')
    while (feed.gate !== null) await feed.gate
    feed.running++
    try {
      return await this.#run(tenant, feed, body)
    } finally {
      if (--feed.running === 0 && feed.drained !== null) feed.drained()
    }
  }

  /**
   * Runs `change` (synchronous: it mutates the tenant's memory, shared price columns included, and
   * publishes) when none of the tenant's queries is on a worker, holding new ones until it is done:
   * no worker query sees it half-applied. The main thread's own queries run between event turns,
   * so they see all of it or none.
   */
  async exclusive(tenant: ReplicatedTenant, change: () => void): Promise<void> {
    const feed = this.#feed(tenant)
    while (feed.gate !== null) await feed.gate
    let open = (): void => undefined
    feed.gate = new Promise<void>((resolve) => (open = resolve))
    try {
      if (feed.running > 0) await new Promise<void>((resolve) => (feed.drained = resolve))
      feed.drained = null
      change()
    } finally {
      feed.gate = null
      open()
    }
  }

  async #run(tenant: ReplicatedTenant, feed: FeedState, body: TaskBody): Promise<TaskResult> {
    const reason = body.kind === 'warm' ? 'warm' : 'query'
    // Every worker gets the tenant's snapshot once, by broadcast, before its first task: under load,
    // per-task snapshots would be built and cloned for every queued task at once.
    if (feed.snapshotSequence < 0) this.#broadcastSnapshot(tenant, feed, null, reason)
    const task = {
      version: protocolVersion,
      tenant: tenant.slug,
      sequence: feed.sequence,
      snapshot: null,
      ...body,
    } as PriceTask
    let result = (await this.#pool.run(task)) as TaskResult
    if (result.kind === 'need_snapshot') {
      // A worker lost step (a gap): one new broadcast per sequence serves every worker that needs it.
      if (feed.snapshotSequence < feed.sequence) this.#broadcastSnapshot(tenant, feed, null, reason)
      result = (await this.#pool.run({ ...task, sequence: feed.sequence })) as TaskResult
      if (result.kind === 'need_snapshot') {
        // This worker missed the broadcast (it subscribed after it): a snapshot of its own.
        workerSnapshotCounts[reason]++
        const own = { ...task, snapshot: this.#snapshot(tenant), sequence: feed.sequence }
        result = (await this.#pool.run(own)) as TaskResult
      }
    }
    if (result.kind === 'need_snapshot') throw new Error('worker could not build a replica from a snapshot')
    return result
  }

  get threads(): number {
    return this.#pool.threads.length
  }

  /**
   * Ends the threads once each has started, that is announced itself (bounded by `closeWaitMs`): a
   * thread ended while it builds its collector's context (./idle-collection.ts) makes V8 print a
   * failed bootstrap, its 'Failing script:' text on the process's stdout (the log lines), and one
   * ended while it loads its module (./replica.ts) aborts the whole process (SIGABRT).
   */
  async close(): Promise<void> {
    await this.#workersOnline(closeWaitMs)
    this.#channel.close()
    await this.#pool.destroy()
  }
}
