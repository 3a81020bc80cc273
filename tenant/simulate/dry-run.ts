/**
 * A dry run of proposed writes (POST /price/simulate): the state a tenant would have after them,
 * which nothing outside the dry run ever sees. It runs the write layer's own writers (so a proposed
 * write is refused exactly as the real write would be) against a throwaway copy of the tenant: a
 * fork of its catalogue (engine/catalog.ts `fork`) and an overlay of its price book
 * (engine/simulate/price-overlay.ts). Its unit of work stores nothing: no commit, no changelog
 * entry, no webhook, nothing published to the price workers.
 *
 * The one part of a write that may wait (a pricelist's rules compiled, on a worker) runs first,
 * against the tenant; the copy is taken after it, and planning, applying and the caller's reads of
 * the copy then run in one turn of the event loop, so no real write lands in between.
 * @module
 */
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
 * main thread in one turn, about as long as a batch of this many real writes takes to plan.
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

/**
 * Runs the proposed writes on a copy of the tenant and hands the resulting state to `read`, in the
 * same turn (see the module comment); answers what `read` answers, or the first refused write.
 */
export async function dryRun<T>(
  tenant: TenantRuntime,
  context: WriteContext,
  writes: ProposedWrites,
  read: (state: SimulatedState) => T,
): Promise<{ refused: DryRunRefusal } | { answer: T }> {
  const pricelists = await checkPricelistBodies(tenant, context, writes.pricelists)
  const copy = new SimulatedTenant(tenant)
  const applied: AppliedWrites = { changes: [], prices: [] }
  const families: [ProposedFamily, () => ItemOutcome[]][] = [
    ['pricelists', () => applyItems(pricelists, pricelistWriter(copy, context), applied)],
    ['prices', () => applyItems(writes.prices, priceWriter(copy, context), applied)],
    ['vat_rates', () => applyItems(writes.vatRates, vatRateWriter(copy, context), applied)],
    ['mappings', () => applyItems(writes.mappings, mappingWriter(copy, context), applied)],
    ['fx_rates', () => applyFxDays(copy, context, writes.fxDays)],
  ]
  for (const [family, write] of families) {
    const outcomes = write()
    const index = outcomes.findIndex((outcome) => outcome instanceof Refusal)
    if (index >= 0) return { refused: { family, index, refusal: outcomes[index] as Refusal } }
  }
  return { answer: read({ catalog: copy.catalog, prices: copy.prices }) }
}

/**
 * FX rates as POST /fx/daily writes them (http/routes/fx.ts, its rates checked by the edge): each
 * day's rates planned and applied in turn, so a later day plans against an earlier one. A rate
 * write is never refused once its shape is checked; an outcome per day.
 */
function applyFxDays(copy: SimulatedTenant, context: WriteContext, days: readonly FxDay[]): ItemOutcome[] {
  const writer: EntityWriter<FxDay, Change[]> = {
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
  return applyItems(days, writer, { changes: [], prices: [] })
}
