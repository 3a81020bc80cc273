/**
 * Where a price read runs. The main thread answers every small request; rules are the one part of
 * a read whose cost a tenant controls (up to `celEvaluationStepsMax` steps per pricelist and SKU,
 * times inheritance depth and bundle components). So the main thread runs a read, or a query below
 * the worker threshold, within an allowance of rule steps (engine/limits.ts
 * `mainThreadRuleStepsBase` + `mainThreadRuleStepsPerSku` per SKU): past it, the work goes to a
 * price worker, which runs below the main thread's priority (workers/price-task.ts), and the main
 * thread serves other requests meanwhile. Without workers (or with their queue full) the work runs
 * here to the end, as before.
 * @module
 */
import { assert } from '../engine/assert.js'
import { setImmediate as nextTurn } from 'node:timers/promises'
import { mainThreadRuleStepsBase, mainThreadRuleStepsPerSku } from '../engine/limits.js'
import type { PriceContext } from '../engine/pipeline.js'
import { diffPrices, type DiffEntry, type DiffRequest } from '../engine/diff/diff.js'
import { replayDelta, simulationDelta, type SimulationDelta, type SimulationState } from '../engine/simulate/delta.js'
import { readPrice, readPriceIn, type PriceReadInput, type PriceReadOutcome } from '../engine/price-read.js'
import { RuleAllowanceExceeded, withinRuleAllowance } from '../engine/rules.js'
import { QueryPoolBusy, type QueryPool } from '../workers/pool.js'
import { executeQuery, type QueryInput } from '../workers/execute.js'
import {
  explainQueryBytes,
  explainReadText,
  type ExplainedRead,
  type ExplainedAnswer,
  type ExplainQueryInput,
  type ExplainReadInput,
} from '../workers/explain-query.js'
import type { TenantRuntime } from './runtime.js'

export type Engine = 'main' | 'worker'

/** Rule steps the main thread may spend on work of `skus` SKUs. */
export function mainThreadAllowance(skus: number): number {
  return mainThreadRuleStepsBase + mainThreadRuleStepsPerSku * skus
}

export interface Dispatched {
  readonly outcome: PriceReadOutcome
  readonly engine: Engine
}

/**
 * One read: here within the allowance (answered at once: GETs stay synchronous on their hot
 * path), else on a worker (a promise).
 */
export function dispatchRead(tenant: TenantRuntime, input: PriceReadInput): Dispatched | Promise<Dispatched> {
  const pool = tenant.queryPool
  if (pool === null) return { outcome: readPrice(tenant.catalog, tenant.prices, input), engine: 'main' }
  try {
    return {
      outcome: withinRuleAllowance(mainThreadAllowance(1), () => readPrice(tenant.catalog, tenant.prices, input)),
      engine: 'main',
    }
  } catch (error) {
    if (!(error instanceof RuleAllowanceExceeded)) throw error
  }
  return readElsewhere(tenant, input)
}

/** A read that passed the allowance: on a worker, or here without one when their queue is full. */
async function readElsewhere(tenant: TenantRuntime, input: PriceReadInput): Promise<Dispatched> {
  try {
    return { outcome: await tenant.queryPool!.read(tenant, input), engine: 'worker' }
  } catch (error) {
    if (!(error instanceof QueryPoolBusy)) throw error
  }
  return { outcome: readPrice(tenant.catalog, tenant.prices, input), engine: 'main' }
}

/**
 * Reads one after another (a listing's candidates), in order. Runs of them share one allowance on
 * the main thread; the read that passes it goes to a worker, and the next run of reads starts
 * after that answer, on a later turn of the event loop. A listing over costly rules so takes its
 * time on the workers and never holds the main thread for more than one allowance. Reads answered
 * in different turns may see different committed states (a write can land between them), as pages
 * of a listing can.
 */
export async function* dispatchReads(
  tenant: TenantRuntime,
  context: PriceContext,
  inputs: Iterable<PriceReadInput>,
): AsyncGenerator<PriceReadOutcome> {
  const pool = tenant.queryPool
  const iterator = inputs[Symbol.iterator]()
  if (pool === null) {
    for (let next = iterator.next(); next.done !== true; next = iterator.next()) yield readPriceIn(context, next.value)
    return
  }
  for (;;) {
    const outcomes: PriceReadOutcome[] = []
    const run: { passed: PriceReadInput | null; done: boolean } = { passed: null, done: false }
    try {
      withinRuleAllowance(mainThreadAllowance(1), () => {
        for (;;) {
          const next = iterator.next()
          if (next.done === true) {
            run.done = true
            return
          }
          run.passed = next.value
          outcomes.push(readPriceIn(context, next.value))
          run.passed = null
        }
      })
    } catch (error) {
      if (!(error instanceof RuleAllowanceExceeded)) throw error
    }
    yield* outcomes
    if (run.done) return
    assert(run.passed !== null, 'a run of reads stopped without passing the allowance')
    const elsewhere = await readElsewhere(tenant, run.passed)
    yield elsewhere.outcome
    // A worker answered on a later turn already; after an answer here, let waiting requests run.
    if (elsewhere.engine === 'main') await nextTurn()
  }
}

export interface QueryAnswer {
  readonly json: string | Buffer
  readonly release: (() => void) | null
  readonly engine: Engine
}

/** A query below the worker threshold: here within its allowance (at once), else on a worker. */
export function dispatchSmallQuery(tenant: TenantRuntime, input: QueryInput): QueryAnswer | Promise<QueryAnswer> {
  const pool = tenant.queryPool
  const here = () => executeQuery(tenant.catalog, tenant.prices, input, tenant.slug, 0)
  if (pool === null) return { json: here(), release: null, engine: 'main' }
  try {
    return { json: withinRuleAllowance(mainThreadAllowance(input.skus.length), here), release: null, engine: 'main' }
  } catch (error) {
    if (!(error instanceof RuleAllowanceExceeded)) throw error
  }
  return dispatchLargeQuery(tenant, input)
}

/** A query at or above the worker threshold (or past its allowance): on a worker, or here when their queue is full. */
export async function dispatchLargeQuery(tenant: TenantRuntime, input: QueryInput): Promise<QueryAnswer> {
  const { value, engine } = await onWorkerOrHere(
    tenant,
    async (pool) => {
      const answer = await pool.run(tenant, input)
      return { json: answer.body, release: answer.release }
    },
    () => ({ json: executeQuery(tenant.catalog, tenant.prices, input, tenant.slug, 0), release: null }),
  )
  return { ...value, engine }
}

/**
 * `onWorker` on a price worker, or `here` on the main thread when there are no workers or their
 * queue is full (QueryPoolBusy): the one fallback of every task the workers take off the main thread.
 */
async function onWorkerOrHere<T>(
  tenant: TenantRuntime,
  onWorker: (pool: QueryPool) => Promise<T>,
  here: () => T,
): Promise<{ value: T; engine: Engine }> {
  const pool = tenant.queryPool
  if (pool !== null) {
    try {
      return { value: await onWorker(pool), engine: 'worker' }
    } catch (error) {
      if (!(error instanceof QueryPoolBusy)) throw error
    }
  }
  return { value: here(), engine: 'main' }
}

/**
 * A page of a price diff: always on a worker (two batch queries and a comparison: the main thread
 * stays free for single reads), or here without workers or when their queue is full.
 */
export async function dispatchDiff(
  tenant: TenantRuntime,
  request: DiffRequest,
): Promise<{ entries: DiffEntry[]; engine: Engine }> {
  const { value, engine } = await onWorkerOrHere(
    tenant,
    (pool) => pool.diff(tenant, request),
    () => diffPrices(tenant.catalog, tenant.prices, request),
  )
  return { entries: value, engine }
}

/** A dry run's read: exactly one of a query and a diff page, as the main thread checked them. */
export interface SimulatedRead {
  readonly query: QueryInput | null
  readonly diff: DiffRequest | null
}

/** The query's answer bytes, or the diff page's entries, and where they were worked out. */
export interface SimulatedAnswer {
  readonly json: string | Buffer | null
  readonly entries: DiffEntry[] | null
  readonly engine: Engine
}

function simulatedHere(state: SimulationState, read: SimulatedRead): SimulatedAnswer {
  if (read.diff !== null)
    return { json: null, entries: diffPrices(state.catalog, state.prices, read.diff), engine: 'main' }
  assert(read.query !== null, 'a simulation reads a query or a diff')
  return { json: executeQuery(state.catalog, state.prices, read.query), entries: null, engine: 'main' }
}

/**
 * The read of a dry run (POST /price/simulate), called in the dry run's turn with its state. Where
 * the read would run for the real routes, it runs here: a query below the worker threshold on the
 * main thread, at once, on the dry run's state, within the rule steps such a query may spend here;
 * past them, a larger query and every diff page on a worker, which replays what the dry run wrote
 * (engine/simulate/delta.ts) over its replica. With the workers' queue full, the main thread
 * replays the same delta over the tenant as it is then (the dry run's own copy may not outlive its
 * turn: a real write since could reuse an id the copy gave a new SKU), so the answer is the same
 * either way.
 */
export function dispatchSimulation(
  tenant: TenantRuntime,
  state: SimulationState,
  read: SimulatedRead,
): SimulatedAnswer | Promise<SimulatedAnswer> {
  const pool = tenant.queryPool
  if (pool === null) return simulatedHere(state, read)
  if (read.query !== null && read.query.skus.length < tenant.workerThresholdSkus) {
    // Here within the rule-step allowance a plain query of this size has (dispatchSmallQuery): a
    // proposed pricelist's rules must not hold the main thread longer than the real ones may.
    try {
      return withinRuleAllowance(mainThreadAllowance(read.query.skus.length), () => simulatedHere(state, read))
    } catch (error) {
      if (!(error instanceof RuleAllowanceExceeded)) throw error
    }
  }
  return simulateElsewhere(tenant, simulationDelta(state), read)
}

async function simulateElsewhere(
  tenant: TenantRuntime,
  delta: SimulationDelta,
  read: SimulatedRead,
): Promise<SimulatedAnswer> {
  const { value, engine } = await onWorkerOrHere<Omit<SimulatedAnswer, 'engine'>>(
    tenant,
    (pool) => pool.simulate(tenant, { delta, ...read }),
    () => simulatedHere(replayDelta(tenant.catalog, tenant.prices, delta), read),
  )
  return { ...value, engine }
}

/**
 * An explained query: on a worker (every candidate of every SKU priced, each winner traced: the
 * main thread stays free), or here without workers or when their queue is full. Its bytes have a hole
 * per price version, which the caller fills from the main thread's book.
 */
export async function dispatchExplainQuery(
  tenant: TenantRuntime,
  request: ExplainQueryInput,
): Promise<{ explained: ExplainedAnswer; engine: Engine }> {
  const { value, engine } = await onWorkerOrHere<ExplainedAnswer>(
    tenant,
    (pool) => pool.explainQuery(tenant, request),
    () => ({ ...explainQueryBytes(tenant.catalog, tenant.prices, request), release: null }),
  )
  return { explained: value, engine }
}

/** An explained single read's trace, where `dispatchExplainQuery` runs a query's. */
export async function dispatchExplainRead(
  tenant: TenantRuntime,
  read: ExplainReadInput,
): Promise<{ explained: ExplainedRead; engine: Engine }> {
  const { value, engine } = await onWorkerOrHere(
    tenant,
    (pool) => pool.explainRead(tenant, read),
    () => explainReadText(tenant.catalog, tenant.prices, read),
  )
  return { explained: value, engine }
}
