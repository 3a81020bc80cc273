/**
 * A dry run of proposed writes (POST /price/simulate): the state a tenant would have after them,
 * which nothing outside the dry run ever sees. It runs the write layer's own writers (so a proposed
 * write is refused exactly as the real write would be) against a throwaway copy of the tenant: a
 * fork of its catalogue (engine/catalog.ts `fork`) and an overlay of its price book
 * (engine/simulate/price-overlay.ts). Its unit of work stores nothing: no commit, no changelog
 * entry, no webhook, nothing published to the price workers.
 *
 * The one part of a write that may wait (a pricelist's rules compiled, on a worker) runs first,
 * against the tenant. The copy is taken after it, and the writes are then planned and applied to
 * the copy in slices of about `sliceMs` each, one turn of the event loop per slice, so that other
 * requests are served between them (1,000 writes took the main thread about 8 ms in one turn). The
 * copy reads the live tenant under what it wrote, so a real write landing between two slices would
 * mix two states: before each slice the dry run compares the tenant's marks (the price book's change
 * count, the catalogue's revisions, the plan's limits) with those it started from, and when they
 * moved it starts over on a new copy; after `restartsMax` such starts it plans in one turn. The
 * caller's read of the copy runs in a turn of its own, after a last look at the marks, so the state
 * read is one the tenant had: every write planned against it, no real write half seen.
 * @module
 */
import { setImmediate as nextTurn } from 'node:timers/promises'
import type { Catalog, Change } from '../../engine/catalog.js'
import { planFxRates } from '../../engine/fx.js'
import { PriceOverlay } from '../../engine/simulate/price-overlay.js'
import type { Limits } from '../plans.js'
import type { AppliedWrites, TenantRuntime } from '../runtime.js'
import type { QueryPool } from '../../workers/pool.js'
import {
  applyItems,
  Refusal,
  type EntityWriter,
  type ItemOutcome,
  type WriteContext,
  type WriteTarget,
} from '../writes/core.js'
import { checkPricelistBodies, pricelistWriter, type PricelistInput } from '../writes/pricelists.js'
import { priceWriter, type PriceInput } from '../writes/prices.js'
import { mappingWriter, vatRateWriter, type MappingInput, type VatRateInput } from '../writes/reference.js'

/** One publication date's rates, checked as POST /fx/daily checks them (http/routes/fx.ts). */
export interface FxDay {
  /** The publication date, epoch ms (midnight UTC). */
  readonly from: number
  /** [quote currency, canonical rate], sorted by currency. */
  readonly rates: readonly (readonly [string, string])[]
}

/** The proposed writes, each family in the shape its use case takes (shapes checked by the edge). */
export interface ProposedWrites {
  readonly pricelists: readonly PricelistInput[]
  readonly prices: readonly PriceInput[]
  readonly vatRates: readonly VatRateInput[]
  readonly mappings: readonly MappingInput[]
  readonly fxDays: readonly FxDay[]
}

/**
 * Writes one dry run may propose, in all (each FX rate counts as one): a dry run plans them on the
 * main thread in slices (see the module comment), about as much work as a batch of this many real
 * writes takes to plan.
 */
export const proposedWritesMax = 1_000

/** The families in the order a dry run writes them: a price may name a pricelist written before it. */
export const proposedFamilies = ['pricelists', 'prices', 'vat_rates', 'mappings', 'fx_rates'] as const
export type ProposedFamily = (typeof proposedFamilies)[number]

/** The tenant's state after the proposed writes: what a read of the dry run reads. */
export interface SimulatedState {
  readonly catalog: Catalog
  readonly prices: PriceOverlay
}

/** The first proposed write a real write would refuse: its family, its index there and why. */
export interface DryRunRefusal {
  readonly family: ProposedFamily
  readonly index: number
  readonly refusal: Refusal
}

/** A tenant's throwaway copy: the write layer's target, whose unit of work stores nothing. */
class SimulatedTenant implements WriteTarget {
  readonly catalog: Catalog
  readonly prices: PriceOverlay
  readonly limits: Limits
  readonly queryPool: QueryPool | null

  constructor(tenant: TenantRuntime) {
    this.catalog = tenant.catalog.fork()
    this.prices = new PriceOverlay(tenant.prices)
    this.limits = tenant.limits
    this.queryPool = tenant.queryPool
  }

  /** Applies to the copy only: the changes recorded in `applied` are dropped, never stored. */
  write<T>(work: (applied: AppliedWrites) => T): Promise<T> {
    return Promise.resolve(work({ changes: [], prices: [] }))
  }
}

/** How a dry run spreads its planning over turns of the event loop (see the module comment). */
export interface DryRunPacing {
  /** Planning time per turn, ms, before the dry run lets other work run (0: one check of items a turn). */
  readonly sliceMs: number
  /** Starts over at most this many times when the tenant moved between turns; then one turn plans all. */
  readonly restartsMax: number
}

/** About 1 ms a turn: a GET beside a simulation waits at most that long for it. */
export const dryRunPacing: DryRunPacing = Object.freeze({ sliceMs: 1, restartsMax: 3 })

/** Items planned between two looks at the clock (an item plans in microseconds, a pricelist in tens). */
const itemsPerCheck = 8

/** What moves with every write to a tenant's memory: compared between a dry run's turns. */
class TenantMark {
  readonly #tenant: TenantRuntime
  readonly #priceChanges: number
  readonly #catalogRevisions: number
  readonly #limits: Limits

  constructor(tenant: TenantRuntime) {
    this.#tenant = tenant
    this.#priceChanges = tenant.prices.changeCount
    this.#catalogRevisions = tenant.catalog.revisionTotal()
    this.#limits = tenant.limits
  }

  get moved(): boolean {
    const tenant = this.#tenant
    return (
      tenant.prices.changeCount !== this.#priceChanges ||
      tenant.catalog.revisionTotal() !== this.#catalogRevisions ||
      tenant.limits !== this.#limits
    )
  }
}

/** One family of proposed writes: its items, and its writer made when its turn comes (it reads settings). */
interface FamilyWrites {
  readonly family: ProposedFamily
  readonly count: number
  /** The family's writer over the copy: plans and applies items [from, to) in order. */
  start(): (from: number, to: number) => ItemOutcome[]
}

function familyWrites<Input, Planned>(
  family: ProposedFamily,
  items: readonly (Input | Refusal)[],
  writer: () => EntityWriter<Input, Planned>,
): FamilyWrites {
  return {
    family,
    count: items.length,
    start: () => {
      const started = writer()
      // Recorded for the unit of work the copy never stores.
      const applied: AppliedWrites = { changes: [], prices: [] }
      return (from, to) => applyItems(items.slice(from, to), started, applied)
    },
  }
}

/** A dry run's outcome: the first refused write, or what `read` answered and how often planning started over. */
export type DryRunOutcome<T> = { refused: DryRunRefusal } | { answer: T; restarts: number }

/**
 * Runs the proposed writes on a copy of the tenant and hands the resulting state to `read` in a
 * turn where the tenant is as the writes were planned on (see the module comment); answers what
 * `read` answers, or the first refused write.
 */
export async function dryRun<T>(
  tenant: TenantRuntime,
  context: WriteContext,
  writes: ProposedWrites,
  read: (state: SimulatedState) => T,
  pacing: DryRunPacing = dryRunPacing,
): Promise<DryRunOutcome<T>> {
  const pricelists = await checkPricelistBodies(tenant, context, writes.pricelists)
  for (let restarts = 0; ; restarts++) {
    const sliceMs = restarts < pacing.restartsMax ? pacing.sliceMs : Number.POSITIVE_INFINITY
    const outcome = await planInSlices(tenant, context, { ...writes, pricelists }, sliceMs, read)
    if (outcome === null) continue
    return 'refused' in outcome ? outcome : { answer: outcome.answer, restarts }
  }
}

/**
 * One attempt: a new copy, the families in order, a turn yielded each `sliceMs` and before the
 * read; null when the tenant moved meanwhile. With `sliceMs` infinite, the copy, the writes and the
 * read share one turn. The first refused write ends it: later writes cannot change an earlier
 * one's outcome, so it is the one a whole batch would have named first.
 */
async function planInSlices<T>(
  tenant: TenantRuntime,
  context: WriteContext,
  writes: Omit<ProposedWrites, 'pricelists'> & { readonly pricelists: readonly (PricelistInput | Refusal)[] },
  sliceMs: number,
  read: (state: SimulatedState) => T,
): Promise<{ refused: DryRunRefusal } | { answer: T } | null> {
  // Planning starts in a turn of its own, after the request's parsing and checks.
  await nextTurn()
  const mark = new TenantMark(tenant)
  const copy = new SimulatedTenant(tenant)
  const families = [
    familyWrites('pricelists', writes.pricelists, () => pricelistWriter(copy, context)),
    familyWrites('prices', writes.prices, () => priceWriter(copy, context)),
    familyWrites('vat_rates', writes.vatRates, () => vatRateWriter(copy, context)),
    familyWrites('mappings', writes.mappings, () => mappingWriter(copy, context)),
    familyWrites('fx_rates', writes.fxDays, () => fxDayWriter(copy, context)),
  ]
  let sliceStart = performance.now()
  for (const { family, count, start } of families) {
    const write = start()
    for (let from = 0; from < count; from += itemsPerCheck) {
      const outcomes = write(from, Math.min(from + itemsPerCheck, count))
      const index = outcomes.findIndex((outcome) => outcome instanceof Refusal)
      if (index >= 0) return { refused: { family, index: from + index, refusal: outcomes[index] as Refusal } }
      if (performance.now() - sliceStart < sliceMs) continue
      await nextTurn()
      if (mark.moved) return null
      sliceStart = performance.now()
    }
  }
  // The read in a turn of its own too (a 100-SKU query on the copy is about a slice's work).
  if (sliceMs !== Number.POSITIVE_INFINITY) {
    await nextTurn()
    if (mark.moved) return null
  }
  return { answer: read({ catalog: copy.catalog, prices: copy.prices }) }
}

/**
 * FX rates as POST /fx/daily writes them (http/routes/fx.ts, its rates checked by the edge): each
 * day's rates planned and applied in turn, so a later day plans against an earlier one. A rate
 * write is never refused once its shape is checked.
 */
function fxDayWriter(copy: SimulatedTenant, context: WriteContext): EntityWriter<FxDay, Change[]> {
  return {
    plan: (day) => {
      const changes: Change[] = []
      for (const [quote, rate] of day.rates) {
        changes.push(...planFxRates(copy.catalog, quote, [{ from: day.from, rate }], context.nowMs, context.actor))
      }
      return changes.length === 0 ? null : changes
    },
    quota: () => null,
    apply: (changes) => {
      for (const change of changes) copy.catalog.apply(change.type, change.key, change.versions)
    },
  }
}
