/**
 * What a dry run changed, as plain data, so that a price worker can rebuild the same simulated
 * state over its own replica and run the costly read there (POST /price/simulate): the write layer
 * plans the proposed writes on the main thread, in slices (tenant/ is above workers/, and planning
 * is bounded by the number of writes), and the read (a query or a diff page) then goes to a worker
 * like every other large read. Both sides use this module, so the state a worker rebuilds is the
 * one the main thread planned: the catalogue keys the fork wrote and the price pairs the overlay wrote, each
 * with its whole version list (nothing is planned again).
 * @module
 */
import type { Catalog, CatalogType } from '../catalog.js'
import type { PriceReplica } from '../price-replica.js'
import type { PriceBook, PriceVersion } from '../prices.js'
import type { Version } from '../temporal.js'
import { PriceOverlay } from './price-overlay.js'

export interface SimulationDelta {
  /** The keys the dry run's catalogue fork wrote: [type, key, whole version list]. */
  readonly catalog: readonly [CatalogType, string, Version<unknown>[]][]
  /** The pairs its price overlay wrote: [pricelist, SKU, whole version list]. */
  readonly prices: readonly [string, string, PriceVersion[]][]
}

/** A dry run's state: a fork of a catalogue and an overlay of a price book (or of a replica). */
export interface SimulationState {
  readonly catalog: Catalog
  readonly prices: PriceOverlay
}

/** What the dry run's fork and overlay wrote. */
export function simulationDelta(state: SimulationState): SimulationDelta {
  return { catalog: state.catalog.forkChanges(), prices: state.prices.delta() }
}

/**
 * The same simulated state over a worker's replica (or over the tenant's own book, when no worker
 * takes the read): a fork and an overlay with the delta replayed.
 */
export function replayDelta(
  catalog: Catalog,
  prices: PriceBook | PriceReplica,
  delta: SimulationDelta,
): SimulationState {
  const fork = catalog.fork()
  for (const [type, key, versions] of delta.catalog) fork.apply(type, key, versions)
  const overlay = new PriceOverlay(prices)
  for (const [pricelist, sku, versions] of delta.prices) overlay.install(pricelist, sku, versions)
  return { catalog: fork, prices: overlay }
}
