/**
 * Messages between the main thread and the price-query workers, shared by both sides.
 *
 * Replication: the main thread broadcasts one `SyncMessage` per tenant commit on a
 * BroadcastChannel (catalogue changes, dictionary growth, new column generations), numbered by a
 * per-tenant sequence. A worker builds a tenant's replica once from a `Snapshot` (broadcast when the
 * tenant is loaded, before /readyz answers 200, or sent with a task after a gap),
 * then applies the numbered messages after it. Prices themselves are never sent: they are in
 * shared memory. At a start from a snapshot file, the file's catalogue goes out first on its own
 * (`PrefetchMessage`), so that the workers build that part while the main thread decodes it.
 * Freshness: a task carries the sequence current when it was dispatched; a worker answers only
 * once its replica has applied that sequence, so it never answers from state older than the
 * caller's writes.
 * @module
 */
import type { ArticleCriteria, ArticleSearchOutcome } from '../engine/article-search.js'
import type { CatalogType } from '../engine/catalog.js'
import type { DiffEntry, DiffRequest } from '../engine/diff/diff.js'
import type { DictionaryDelta, SharedColumns } from '../engine/prices.js'
import type { SimulationDelta } from '../engine/simulate/delta.js'
import type { PriceReadInput, PriceReadOutcome } from '../engine/price-read.js'
import type { Version } from '../engine/temporal.js'
import type { ArenaPlacement } from './answer-arena.js'
import type { QueryInput } from './execute.js'
import type { ExplainedBytes, ExplainedRead, ExplainQueryInput, ExplainReadInput } from './explain-query.js'
import type { VersionRef } from './explain-render.js'

/** Bumped whenever a task or its result changes shape (10: an explained query answers its bytes in the arena). */
export const protocolVersion = 10
export const replicationChannelName = 'pricing-service/replication/v1'

export interface SyncMessage {
  readonly tenant: string
  readonly sequence: number
  readonly changes: readonly [CatalogType, string, Version<unknown>[]][]
  readonly dictionary: DictionaryDelta
  readonly columns: SharedColumns | null
}

/** A full snapshot broadcast to every worker (once per tenant, and again after a gap). */
export interface SnapshotMessage {
  readonly kind: 'snapshot'
  readonly tenant: string
  readonly snapshot: Snapshot
}

/**
 * A snapshot file's catalogue bytes, sent as soon as the file passed its checks, so that the
 * workers build the catalogue part of their replicas while the main thread decodes its own. A
 * worker keeps what it built under `token` and uses it only for a snapshot that names that token
 * (`Snapshot.prepared`); the next snapshot of the tenant drops it either way.
 */
export interface PrefetchMessage {
  readonly kind: 'prefetch'
  readonly tenant: string
  readonly token: number
  readonly catalog: Uint8Array
}

/**
 * Posted by each worker once its replica set listens on the channel: a broadcast before that would
 * not reach it, so the warm-up waits for every worker's (workers/pool.ts `warm`).
 */
export interface OnlineMessage {
  readonly kind: 'online'
}

export interface Snapshot {
  readonly sequence: number
  /**
   * The catalogue's entries, [type, key, versions], as msgpackr bytes (storage/book-snapshot.ts
   * `packCatalog`): packed once and decoded by each worker, faster than a structured clone of
   * 200,000 entries (2.8 s for the bench's articles and VAT mappings), and at a start straight
   * from the snapshot file's bytes.
   */
  readonly catalog: Uint8Array
  /** The token of a `PrefetchMessage` of these same catalogue bytes, or null. */
  readonly prepared: number | null
  readonly dictionary: DictionaryDelta
  readonly columns: SharedColumns
}

/** What every price worker is started with (Piscina's `workerData`). */
export interface PriceWorkerData {
  readonly answerCacheItems: number
  /** The share of repeated queries from which the answer cache serves (workers/execute.ts). */
  readonly answerCacheMinRepeatShare: number
}

/** What every task carries: the tenant, and the replication state its answer must reflect. */
export interface TaskHeader {
  readonly version: number
  readonly tenant: string
  /** The replication sequence the answer must reflect at least. */
  readonly sequence: number
  readonly snapshot: Snapshot | null
}

/** A query for a worker: what the main thread validated and selected (see QueryInput). */
export interface QueryTask extends TaskHeader, QueryInput {
  readonly kind: 'query'
}

/** One price read whose rules passed the main thread's allowance (engine/price-read.ts). */
export interface ReadTask extends TaskHeader {
  readonly kind: 'read'
  readonly read: PriceReadInput
}

/** An article search whose filter passed the main thread's allowance (engine/article-search.ts). */
export interface SearchTask extends TaskHeader {
  readonly kind: 'search'
  readonly criteria: ArticleCriteria
}

/**
 * Readiness (tenant/runtime.ts): builds the tenant's replica, then runs `query` (null: none) on it
 * uncached, so that what a first query would build or compile (its VAT column and rows, optimised
 * code) is there before /readyz answers 200. `parties` tasks are sent at once and each waits at
 * `barrier` until all have arrived (or `waitMs`): a worker runs one task at a time, so they land
 * on `parties` different workers.
 */
export interface WarmTask extends TaskHeader {
  readonly kind: 'warm'
  readonly query: QueryInput | null
  readonly barrier: Int32Array
  readonly parties: number
  readonly waitMs: number
  /**
   * Whether to collect the worker's garbage before arriving at the barrier: set on the last
   * warm-up queued (a start warms its tenants one after another), so that a worker counts as ready
   * without the decode's garbage and grown heap, which an idle worker keeps (workers/idle-collection.ts).
   */
  readonly collect: boolean
}

export type WarmTaskResult = { readonly kind: 'warm'; readonly met: boolean } | { readonly kind: 'need_snapshot' }

/** A page of a price diff between two instants (engine/diff/diff.ts), off the main thread. */
export interface DiffTask extends TaskHeader {
  readonly kind: 'diff'
  readonly diff: DiffRequest
}

export type DiffTaskResult =
  | { readonly kind: 'diff'; readonly entries: DiffEntry[] }
  | { readonly kind: 'need_snapshot' }

/**
 * The read of a dry run (POST /price/simulate) on the state the main thread planned: the worker
 * replays `delta` over a fork of its replica (engine/simulate/delta.ts) and runs the query or the
 * diff page there. Exactly one of `query` and `diff` is set.
 */
export interface SimulateTask extends TaskHeader {
  readonly kind: 'simulate'
  readonly delta: SimulationDelta
  readonly query: QueryInput | null
  readonly diff: DiffRequest | null
}

/** The query's answer bytes (uncached, as the main thread writes them), or the diff page's entries. */
export type SimulateTaskResult =
  | { readonly kind: 'simulate'; readonly json: string | Uint8Array | null; readonly entries: DiffEntry[] | null }
  | { readonly kind: 'need_snapshot' }

/**
 * An explained query or single read (./explain-query.ts), off the main thread: the answer's bytes
 * (moved, not copied) or the read's trace text, with a hole per price version, which the main
 * thread fills with who wrote it and when.
 */
export interface ExplainTask extends TaskHeader {
  readonly kind: 'explain'
  readonly explain:
    | { readonly kind: 'query'; readonly query: ExplainQueryInput }
    | { readonly kind: 'read'; readonly read: ExplainReadInput }
}

export type ExplainTaskResult =
  | { readonly kind: 'explain'; readonly explained: ExplainedBytes | ExplainedRead | ExplainedPlaced }
  | { readonly kind: 'need_snapshot' }

/** An explained query's bytes in the worker's answer arena (./answer-arena.ts), with their holes. */
export interface ExplainedPlaced {
  readonly placement: ArenaPlacement
  readonly holes: number[]
  readonly versions: VersionRef[]
}

export type PriceTask = QueryTask | ReadTask | SearchTask | WarmTask | DiffTask | SimulateTask | ExplainTask

/**
 * A pricelist's rules to check before it is written (no tenant state needed): compiling them is
 * the costly part of a pricelist write, so the main thread leaves it to a worker.
 */
export interface RulesTask {
  readonly version: number
  readonly kind: 'rules'
  readonly rules: readonly { readonly filter: string | null; readonly expression: string | null }[]
}

/** null: the rules compile; else the first refusal, as RuleCompileError names it. */
export interface RulesTaskResult {
  readonly kind: 'rules'
  readonly refusal: { readonly path: string; readonly message: string } | null
}

export type SearchTaskResult =
  | { readonly kind: 'search'; readonly outcome: ArticleSearchOutcome }
  | { readonly kind: 'need_snapshot' }

export type ReadTaskResult =
  | { readonly kind: 'read'; readonly outcome: PriceReadOutcome }
  | { readonly kind: 'need_snapshot' }

export type QueryTaskResult =
  /** `cacheHits` and `cacheMisses`: this task's share of the worker's answer-cache counts (SKUs). */
  | {
      readonly kind: 'answer'
      readonly json: string | Uint8Array
      readonly cacheHits: number
      readonly cacheMisses: number
    }
  /** The answer bytes are in the worker's answer arena (./answer-arena.ts). */
  | {
      readonly kind: 'arena'
      readonly placement: ArenaPlacement
      readonly cacheHits: number
      readonly cacheMisses: number
    }
  | { readonly kind: 'need_snapshot' }
