/**
 * Piscina worker entry: answers a price query from the tenant's replica once it has applied the
 * caller's sequence. The first task for a tenant (or after a gap) asks for a snapshot.
 * @module
 */
import { assert } from '../engine/assert.js'
import os from 'node:os'
import { threadId, workerData } from 'node:worker_threads'
import { move, transferableSymbol, valueSymbol } from 'piscina'
import { AnswerArena } from './answer-arena.js'
import { answerCacheCounts, executeQuery, setAnswerCacheItemsMax } from './execute.js'
import { searchArticles } from '../engine/article-search.js'
import { diffPrices } from '../engine/diff/diff.js'
import { replayDelta } from '../engine/simulate/delta.js'
import { explainQueryView, explainReadText } from './explain-query.js'
import { readPrice } from '../engine/price-read.js'
import { compileRules, RuleCompileError } from '../engine/rules.js'
import {
  protocolVersion,
  type DiffTaskResult,
  type SimulateTask,
  type SimulateTaskResult,
  type ExplainTask,
  type ExplainTaskResult,
  type PriceTask,
  type PriceWorkerData,
  type QueryTaskResult,
  type ReadTaskResult,
  type RulesTask,
  type RulesTaskResult,
  type SearchTaskResult,
  type WarmTask,
  type WarmTaskResult,
} from './protocol.js'
import { ReplicaSet, type TenantReplica } from './replica.js'

setAnswerCacheItemsMax(
  (workerData as PriceWorkerData).answerCacheItems,
  (workerData as PriceWorkerData).answerCacheMinRepeatShare,
)

/**
 * How much lower than the main thread a price worker runs, in nice steps: 19, the lowest weight
 * (about 1.5% of a nice-0 thread's share when both want the core). Measured with the bench's
 * isolation scenario: at +10 the GETs' p99 beside 1,000-SKU queries was 4x their p99 alone, at +19
 * 2x (the target is 3x); the big queries then run on what the main thread leaves.
 */
const workerNiceIncrement = 19
/**
 * Lowered before the first task that is not a warm-up: the warm-ups run before /readyz answers
 * 200, when there is nothing yet for the workers to stay out of the way of, and at +19 on a busy
 * machine they took several times as long (a thread can always lower its priority, never raise it
 * back without privileges: so only once, and only then).
 */
let lowered = false
function lowerOnce(): void {
  if (lowered) return
  lowered = true
  lowerPriority()
}

/**
 * Price workers run below the main thread's CPU priority (nice +19; on Linux a thread's nice value
 * is its own): when the cores are contended, the main thread, which answers every small request,
 * gets the CPU first, so big queries on the workers do not stall single reads (issue 12). Idle
 * cores still go to the workers. Where the system does not allow it, the worker runs as it is.
 */
function lowerPriority(): void {
  try {
    os.setPriority(0, Math.min(19, os.getPriority(0) + workerNiceIncrement))
  } catch {
    // Not permitted or not supported here: same priority as the main thread.
  }
}

const replicas = new ReplicaSet()
const arena = new AnswerArena(threadId)

/** How long a worker waits for sync messages it has not seen yet (they are normally queued already). */
const catchUpWaitMs = 1000
const waitCell = new Int32Array(new SharedArrayBuffer(4))

type TaskResult =
  | QueryTaskResult
  | ReadTaskResult
  | SearchTaskResult
  | RulesTaskResult
  | WarmTaskResult
  | DiffTaskResult
  | SimulateTaskResult
  | ExplainTaskResult

export default function run(task: PriceTask | RulesTask): TaskResult {
  assert(task.version === protocolVersion, 'a task of another protocol version')
  if (task.kind !== 'warm') lowerOnce()
  if (task.kind === 'rules') return checkRules(task)
  const replica = currentReplica(task)
  if (replica === null) return { kind: 'need_snapshot' }
  if (task.kind === 'read') return { kind: 'read', outcome: readPrice(replica.catalog, replica.prices, task.read) }
  if (task.kind === 'search') return { kind: 'search', outcome: searchArticles(replica.catalog, task.criteria) }
  if (task.kind === 'warm') return warm(replica, task)
  if (task.kind === 'diff') return { kind: 'diff', entries: diffPrices(replica.catalog, replica.prices, task.diff) }
  if (task.kind === 'simulate') return simulate(replica, task)
  if (task.kind === 'explain') return explain(replica, task)
  const { hits, misses } = answerCacheCounts
  const json = executeQuery(replica.catalog, replica.prices, task, task.tenant, replica.sequence, true)
  return answer(json, answerCacheCounts.hits - hits, answerCacheCounts.misses - misses)
}

/** A dry run's read on its replayed state: uncached (the state is the dry run's alone), no arena. */
function simulate(replica: TenantReplica, task: SimulateTask): SimulateTaskResult {
  const state = replayDelta(replica.catalog, replica.prices, task.delta)
  if (task.diff !== null)
    return { kind: 'simulate', json: null, entries: diffPrices(state.catalog, state.prices, task.diff) }
  assert(task.query !== null, 'a simulation reads a query or a diff')
  return { kind: 'simulate', json: executeQuery(state.catalog, state.prices, task.query), entries: null }
}

/**
 * Readiness: the replica is built (by `currentReplica`); a query like the ones to come builds the
 * rest (VAT column, rows, optimised code), uncached so that the answer cache and its counts stay
 * as they were; then the task waits for its siblings, which are on the other workers.
 */
function warm(replica: TenantReplica, task: WarmTask): WarmTaskResult {
  if (task.query !== null) {
    try {
      executeQuery(replica.catalog, replica.prices, task.query)
    } catch {
      // A warm-up query that the data does not answer (no such currency yet): the replica is built.
    }
  }
  // What the decodes and the query left goes now, before the worker counts as ready: idle, it
  // would keep it (workers/idle-collection.ts). Only after a start's last warm-up: one collection.
  if (task.collect) replicas.collection.collectNow()
  Atomics.add(task.barrier, 0, 1)
  Atomics.notify(task.barrier, 0)
  const deadline = Date.now() + task.waitMs
  for (;;) {
    const arrived = Atomics.load(task.barrier, 0)
    if (arrived >= task.parties) return { kind: 'warm', met: true }
    const left = deadline - Date.now()
    if (left <= 0) return { kind: 'warm', met: false }
    Atomics.wait(task.barrier, 0, arrived, left)
  }
}

/**
 * An explained query's bytes go into the worker's answer arena, as a plain answer's do (nothing
 * allocated per answer on either side); when they do not fit, they are moved to the main thread in a
 * buffer of their own. A read's trace is small text.
 */
function explain(replica: TenantReplica, task: ExplainTask): ExplainTaskResult {
  const request = task.explain
  if (request.kind === 'read')
    return { kind: 'explain', explained: explainReadText(replica.catalog, replica.prices, request.read) }
  const view = explainQueryView(replica.catalog, replica.prices, request.query)
  const placement = arena.place(view.bytes)
  if (placement !== null)
    return { kind: 'explain', explained: { placement, holes: view.holes, versions: view.versions } }
  const explained = { ...view, bytes: view.bytes.slice() }
  const result: ExplainTaskResult = { kind: 'explain', explained }
  return move({
    get [transferableSymbol]() {
      return [explained.bytes.buffer]
    },
    get [valueSymbol]() {
      return result
    },
  }) as unknown as ExplainTaskResult
}

function checkRules(task: RulesTask): RulesTaskResult {
  try {
    compileRules(task.rules)
    return { kind: 'rules', refusal: null }
  } catch (error) {
    if (!(error instanceof RuleCompileError)) throw error
    return { kind: 'rules', refusal: { path: error.path, message: error.message } }
  }
}

/** The task's tenant replica once it has applied the task's sequence; null: a snapshot is needed. */
function currentReplica(task: PriceTask): TenantReplica | null {
  replicas.drain()
  let replica = replicas.get(task.tenant)
  if (task.snapshot !== null && (replica === undefined || replica.sequence < task.snapshot.sequence)) {
    replica = replicas.install(task.tenant, task.snapshot) ?? undefined
  }
  if (replica === undefined) return null
  const deadline = Date.now() + catchUpWaitMs
  while (replica.sequence < task.sequence) {
    if (Date.now() > deadline) return null
    Atomics.wait(waitCell, 0, 0, 1)
    replicas.drain()
    const current = replicas.get(task.tenant)
    if (current === undefined) return null
    replica = current
  }
  return replica
}

/**
 * Answer bytes go into the worker's answer arena (./answer-arena.ts); when they do not fit, into a
 * buffer of their own, moved to the main thread (`json` may be a view of the renderer's scratch
 * buffer: it is copied either way before the next query).
 */
function answer(json: string | Buffer, cacheHits: number, cacheMisses: number): QueryTaskResult {
  if (typeof json === 'string') return { kind: 'answer', json, cacheHits, cacheMisses }
  const placement = arena.place(json)
  if (placement !== null) return { kind: 'arena', placement, cacheHits, cacheMisses }
  const bytes = new Uint8Array(json.length)
  bytes.set(json)
  const result: QueryTaskResult = { kind: 'answer', json: bytes, cacheHits, cacheMisses }
  return move({
    get [transferableSymbol]() {
      return [bytes.buffer]
    },
    get [valueSymbol]() {
      return result
    },
  }) as unknown as QueryTaskResult
}
