/**
 * Messages between the main thread and the price-query workers, shared by both sides.
 *
 * Replication: the main thread broadcasts one `SyncMessage` per tenant commit on a
 * BroadcastChannel (catalogue changes, dictionary growth, new column generations), numbered by a
 * per-tenant sequence. A worker builds a tenant's replica once from a `Snapshot` sent with a task,
 * then applies the numbered messages after it. Prices themselves are never sent: they are in
 * shared memory.
 * Freshness: a task carries the sequence current when it was dispatched; a worker answers only
 * once its replica has applied that sequence, so it never answers from state older than the
 * caller's writes.
 * @module
 */
import type { ArticleCriteria, ArticleSearchOutcome } from '../engine/article-search.js'
import type { CatalogType } from '../engine/catalog.js'
import type { DictionaryDelta, SharedColumns } from '../engine/prices.js'
import type { PriceReadInput, PriceReadOutcome } from '../engine/price-read.js'
import type { Version } from '../engine/temporal.js'
import type { ArenaPlacement } from './answer-arena.js'
import type { QueryInput } from './execute.js'

export const protocolVersion = 2
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

export interface Snapshot {
  readonly sequence: number
  readonly entries: readonly [CatalogType, string, Version<unknown>[]][]
  readonly dictionary: DictionaryDelta
  readonly columns: SharedColumns
}

/** What every price worker is started with (Piscina's `workerData`). */
export interface PriceWorkerData {
  readonly answerCacheItems: number
  /** The share of SKUs found from which the answer cache serves (workers/execute.ts). */
  readonly answerCacheMinHitShare: number
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

export type PriceTask = QueryTask | ReadTask | SearchTask

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

export type SearchTaskResult = { readonly kind: 'search'; readonly outcome: ArticleSearchOutcome } | { readonly kind: 'need_snapshot' }

export type ReadTaskResult = { readonly kind: 'read'; readonly outcome: PriceReadOutcome } | { readonly kind: 'need_snapshot' }

export type QueryTaskResult =
  /** `cacheHits` and `cacheMisses`: this task's share of the worker's answer-cache counts (SKUs). */
  | { readonly kind: 'answer'; readonly json: string | Uint8Array; readonly cacheHits: number; readonly cacheMisses: number }
  /** The answer bytes are in the worker's answer arena (./answer-arena.ts). */
  | { readonly kind: 'arena'; readonly placement: ArenaPlacement; readonly cacheHits: number; readonly cacheMisses: number }
  | { readonly kind: 'need_snapshot' }
