/**
 * Worker side of replication: one replica per tenant (a Catalog rebuilt from a snapshot, and a
 * PriceReplica over the shared price columns), kept current by the numbered sync messages of the
 * BroadcastChannel. Messages for a tenant without a replica yet are buffered (bounded), because the
 * snapshot that starts it may be older than some of them.
 * @module
 */
import { BroadcastChannel, receiveMessageOnPort } from 'node:worker_threads'
import { Catalog } from '../engine/catalog.js'
import { PriceReplica } from '../engine/price-replica.js'
import { catalogParts, packEntries, unpackEntries, type CatalogEntries } from '../storage/book-snapshot.js'
import { IdleCollection } from './idle-collection.js'
import {
  replicationChannelName,
  type OnlineMessage,
  type PrefetchMessage,
  type Snapshot,
  type SnapshotMessage,
  type SyncMessage,
} from './protocol.js'

/** What the replication channel carries. */
type ChannelMessage = SyncMessage | SnapshotMessage | OnlineMessage | PrefetchMessage

/**
 * A replica's catalogue as built from packed bytes: every type but the articles decoded, the
 * articles packed until their first read, with the article changes applied since (`pending`, packed
 * in turn: a live ingest of articles does not grow the worker's heap until something reads them).
 */
class ReplicaCatalog {
  readonly catalog = new Catalog()
  pending: Buffer[] = []

  constructor(bytes: Uint8Array) {
    const { articles, others } = catalogParts(bytes)
    this.catalog.load(unpackEntries(others))
    // Decoded at the first read of an article (a pricelist's rules, an article search: the warm-up
    // query runs the rules before the worker counts as ready). A copy of the part alone, so that
    // the rest of the snapshot's bytes can go.
    const packed = articles.slice()
    this.catalog.defer('article', () => {
      this.catalog.load(unpackEntries(packed))
      for (const changes of this.pending) applyChanges(this.catalog, unpackEntries(changes))
      this.pending = []
    })
  }
}

function applyChanges(catalog: Catalog, changes: SyncMessage['changes']): void {
  for (const [type, key, versions] of changes) {
    // No versions: the key was removed (a restore of a backup that never held it).
    if (versions.length === 0) catalog.remove(type, key)
    else catalog.apply(type, key, versions)
  }
}

/** Messages kept per tenant before its snapshot arrives; beyond this a new snapshot is needed. */
const bufferedMessagesMax = 10_000

export class TenantReplica {
  sequence: number
  readonly #built: ReplicaCatalog
  readonly prices: PriceReplica

  /** `prepared`: the catalogue built from a prefetch of these same bytes (`PrefetchMessage`), if any. */
  constructor(snapshot: Snapshot, prepared: ReplicaCatalog | null = null) {
    this.sequence = snapshot.sequence
    this.#built = prepared ?? new ReplicaCatalog(snapshot.catalog)
    this.prices = new PriceReplica(snapshot.columns, snapshot.dictionary)
  }

  get catalog(): Catalog {
    return this.#built.catalog
  }

  apply(message: SyncMessage): void {
    const catalog = this.#built.catalog
    if (!catalog.isDeferred('article')) applyChanges(catalog, message.changes)
    else {
      const articles: CatalogEntries = []
      const others: CatalogEntries = []
      for (const change of message.changes) (change[0] === 'article' ? articles : others).push(change)
      if (articles.length > 0) this.#built.pending.push(packEntries(articles))
      applyChanges(catalog, others)
    }
    this.prices.append(message.dictionary)
    if (message.columns !== null) this.prices.setColumns(message.columns)
    this.sequence = message.sequence
  }
}

export class ReplicaSet {
  readonly #channel = new BroadcastChannel(replicationChannelName)
  readonly #replicas = new Map<string, TenantReplica>()
  readonly #buffered = new Map<string, SyncMessage[] | 'overflow'>()
  /** Catalogues built from a prefetch, by tenant, until that tenant's next snapshot. */
  readonly #prepared = new Map<string, { readonly token: number; readonly built: ReplicaCatalog }>()
  /** Replication leaves garbage (a snapshot's decode, past column generations) that an idle worker would keep. */
  readonly collection = new IdleCollection()
  #closed = false

  constructor() {
    // Between tasks (the pool's 'async' atomics let the event loop run), messages are applied as
    // they arrive rather than held until the next task: a held message holds its column generation.
    this.#channel.onmessage = (event) => this.#handle((event as { data: ChannelMessage }).data)
    // Announced on the next turn of the event loop, once the task module's load has returned (this
    // runs inside it, in Piscina's require of the module): the pool ends no thread before the
    // announcement (QueryPool.close), since an end inside the load aborts the process (Node.js 22:
    // 'Assertion failed' in CreateRequiredModuleFacade, or a FATAL ERROR in v8::Module::IsGraphAsync).
    setImmediate(() => {
      if (this.#closed) return
      const online: OnlineMessage = { kind: 'online' }
      this.#channel.postMessage(online)
    })
  }

  /** Applies every queued sync message (synchronously: they were posted before the task). */
  drain(): void {
    for (;;) {
      const received = receiveMessageOnPort(this.#channel as never) as { message: ChannelMessage } | undefined
      if (received === undefined) return
      this.#handle(received.message)
    }
  }

  #handle(message: ChannelMessage): void {
    if (!('kind' in message)) this.#receive(message)
    // Another worker's announcement is for the main thread.
    else if (message.kind === 'snapshot') this.install(message.tenant, message.snapshot)
    else if (message.kind === 'prefetch') {
      this.collection.noteWork()
      this.#prepared.set(message.tenant, { token: message.token, built: new ReplicaCatalog(message.catalog) })
    }
  }

  #receive(message: SyncMessage): void {
    this.collection.noteWork()
    const replica = this.#replicas.get(message.tenant)
    if (replica !== undefined) {
      if (message.sequence === replica.sequence + 1) replica.apply(message)
      else if (message.sequence > replica.sequence + 1) this.#replicas.delete(message.tenant) // a gap: rebuild
      return
    }
    const buffer = this.#buffered.get(message.tenant) ?? []
    if (buffer === 'overflow') return
    if (buffer.length >= bufferedMessagesMax) this.#buffered.set(message.tenant, 'overflow')
    else {
      buffer.push(message)
      this.#buffered.set(message.tenant, buffer)
    }
  }

  /** Builds a replica from a snapshot plus the buffered messages after it; null if some are missing. */
  install(tenant: string, snapshot: Snapshot): TenantReplica | null {
    const existing = this.#replicas.get(tenant)
    if (existing !== undefined && existing.sequence >= snapshot.sequence) return existing
    this.collection.noteWork()
    const prepared = this.#prepared.get(tenant)
    this.#prepared.delete(tenant)
    const built = prepared !== undefined && prepared.token === snapshot.prepared ? prepared.built : null
    const replica = new TenantReplica(snapshot, built)
    const buffer = this.#buffered.get(tenant)
    this.#buffered.delete(tenant)
    if (buffer === 'overflow') return null
    for (const message of buffer ?? []) {
      if (message.sequence <= replica.sequence) continue
      if (message.sequence !== replica.sequence + 1) return null
      replica.apply(message)
    }
    this.#replicas.set(tenant, replica)
    return replica
  }

  get(tenant: string): TenantReplica | undefined {
    return this.#replicas.get(tenant)
  }

  /** Stops listening (a worker's set lives as long as its thread; tests close theirs). */
  close(): void {
    this.#closed = true
    this.#channel.close()
  }
}
