/**
 * Effective-price events (docs/api.md, "Effective-price events"): for each tenant with
 * `effective_price.events.enabled`, at each moment something comes into force (a write, a scheduled
 * version, a list's window edge, a VAT rate, a reclassification, an FX publication...), the
 * changelog records an `effective_price` event for each (SKU, pricelist, tax area) whose single
 * read answers differently from then (engine/effective-price/changes.ts), and one summary per list
 * and tax area for a change that moves a whole list. The changelog's webhooks deliver them.
 *
 * The timer: each tenant keeps the moments still to come in a heap (from a scan of its price book
 * and catalogue when events are turned on or the server starts, then from each commit), and a tick
 * every `intervalMs` (200) takes those that have come. The events of the moments taken are
 * committed in one transaction with the last moment done (`effectivePricesUntil` in the tenant's
 * meta table): a server killed across a moment finds it still to do at its next start, and none
 * is recorded twice. After a restore the tenant's moments are scanned again from the restore's end
 * (the restore's own changes get no events: its changelog entries say what it changed). Nothing
 * of this runs on the query path: a query reads what the writes left.
 * @module
 */
import type { Logger } from 'pino'
import { compareCodes, type CatalogType, type Change } from '../../engine/catalog.js'
import {
  changesOn,
  momentTargets,
  pricedSkus,
  type EffectiveChange,
  type MomentSource,
} from '../../engine/effective-price/changes.js'
import { settingEnabled } from '../../engine/settings.js'
import { Periodic } from '../../platform/periodic.js'
import type { EntryContent } from '../../storage/log-entry.js'
import type { PriceChange } from '../../storage/tenant-store.js'
import type { TenantRegistry, TenantRuntime } from '../runtime.js'
import { changeEntry, summaryEntry } from './entries.js'
import { MomentHeap } from './moment-heap.js'

/** The tenant meta key of the last moment whose events are recorded. */
export const effectiveUntilKey = 'effectivePricesUntil'
/** The catalogue types whose versions can move an effective price (engine/effective-price/changes.ts). */
const movingTypes: readonly CatalogType[] = [
  'pricelist',
  'vat_rate',
  'article_taxclass',
  'bundle_rule',
  'article',
  'fx_rate',
  'rounding_profile',
]
/** SKUs a whole list's comparison takes per step before it yields (a few milliseconds). */
const summaryStepSkus = 2_000

/** Events recorded since start (the bench and metrics read them). */
export const effectiveEventCounts = { events: 0, summaries: 0, moments: 0 }

interface TenantState {
  /** The last moment whose events are recorded (or, while events are off, now). */
  until: number
  readonly heap: MomentHeap<MomentSource>
  /** Whether the heap holds every moment after `until` (scanned since events were turned on). */
  scanned: boolean
  restores: number
}

export class EffectivePriceEvents {
  readonly #states = new WeakMap<TenantRuntime, TenantState>()
  readonly #job: Periodic

  constructor(
    readonly tenants: TenantRegistry,
    readonly logger: Logger,
    readonly now: () => number,
    readonly intervalMs = 200,
  ) {
    this.#job = new Periodic(() => this.tick(), intervalMs)
  }

  start(): void {
    this.#job.start(this.intervalMs)
  }

  stop(): Promise<void> {
    return this.#job.stop()
  }

  async tick(): Promise<void> {
    for (const tenant of this.tenants.all()) {
      if (this.#job.stopped) return
      if (!tenant.loaded || tenant.record.status !== 'active' || tenant.role !== 'home') continue
      try {
        await this.#tickTenant(tenant)
      } catch (error) {
        tenant.log.error({ err: error }, 'effective-price events: a tick failed; its moments are done at the next')
      }
    }
  }

  async #tickTenant(tenant: TenantRuntime): Promise<void> {
    const now = this.now()
    const state = this.#stateOf(tenant, now)
    if (tenant.restoring !== null || tenant.storage.nearlyFull) return
    if (state.restores !== tenant.restores) {
      // A restore replaced the data: its moments are scanned again from now.
      state.restores = tenant.restores
      this.#reset(state, now)
    }
    if (!settingEnabled(tenant.catalog, 'effective_price.events.enabled', now)) {
      this.#reset(state, now)
      return
    }
    if (!state.scanned) {
      scan(tenant, state)
      state.scanned = true
    }
    const due = state.heap.takeUntil(now)
    if (due.length === 0) return
    const entries: EntryContent[] = []
    let last = state.until
    for (let start = 0; start < due.length; ) {
      const at = due[start]!.at
      let end = start
      while (end < due.length && due[end]!.at === at) end++
      const sources = due.slice(start, end).map((moment) => moment.value)
      for (const entry of await momentEntries(tenant, at, sources)) entries.push(entry)
      effectiveEventCounts.moments++
      last = at
      start = end
    }
    const meta = { [effectiveUntilKey]: last }
    if (entries.length > 0) await tenant.commit([], entries, [], { meta, events: true })
    else await tenant.store.commit([], [], [], meta)
    state.until = last
  }

  #stateOf(tenant: TenantRuntime, now: number): TenantState {
    let state = this.#states.get(tenant)
    if (state !== undefined) return state
    const stored = tenant.store.metaValue(effectiveUntilKey)
    const enabled = settingEnabled(tenant.catalog, 'effective_price.events.enabled', now)
    // Events on: from the last moment recorded (a server killed across a moment does it now).
    const until = enabled && typeof stored === 'number' ? stored : now
    state = { until, heap: new MomentHeap(), scanned: false, restores: tenant.restores }
    this.#states.set(tenant, state)
    const own = state
    tenant.onCommitted((changes, prices) => {
      if (own.scanned) noteCommitted(own, changes, prices)
    })
    return state
  }

  /** From `now` on, as if the events had just been turned on: the heap is scanned at the next tick. */
  #reset(state: TenantState, now: number): void {
    state.until = now
    state.scanned = false
    state.heap.clear()
  }
}

/** The events of one moment: each SKU's change, then each whole list's summary per tax area. */
async function momentEntries(tenant: TenantRuntime, at: number, sources: MomentSource[]): Promise<EntryContent[]> {
  const { catalog, prices } = tenant
  const targets = momentTargets(catalog, at, sources)
  const entries: EntryContent[] = []
  const summarised = new Set(targets.lists.map((move) => move.pricelist))
  for (const [pricelist, byArea] of targets.skus) {
    // A list compared whole below: its SKUs' changes are in its summary.
    if (summarised.has(pricelist)) continue
    for (const [taxArea, skus] of byArea) {
      const sorted = [...skus].sort(compareCodes)
      for (const change of changesOn(catalog, prices, at, { pricelist, taxArea, skus: sorted })) {
        entries.push(changeEntry(change))
        effectiveEventCounts.events++
      }
    }
  }
  if (targets.lists.length === 0) return entries
  const all = pricedSkus(catalog, prices)
  const areas = catalog.keys('tax_area').filter((area) => catalog.get('tax_area', area, at) !== null)
  const perSku = perSkuWanted(tenant)
  for (const move of targets.lists) {
    for (const taxArea of areas) {
      const each: EntryContent[] = []
      let count = 0
      let currency: string | null = null
      for (let start = 0; start < all.length; start += summaryStepSkus) {
        const skus = all.slice(start, start + summaryStepSkus)
        const changes: EffectiveChange[] = changesOn(catalog, prices, at, { ...move, taxArea, skus }, move.cause)
        count += changes.length
        currency ??= changes[0]?.currency ?? null
        if (perSku) for (const change of changes) each.push(changeEntry(change, true))
        await new Promise((resolve) => setImmediate(resolve))
      }
      if (count === 0 || currency === null) continue
      entries.push(summaryEntry({ pricelist: move.pricelist, taxArea, currency, count, at, cause: move.cause }))
      for (const entry of each) entries.push(entry)
      effectiveEventCounts.summaries++
      effectiveEventCounts.events += each.length
    }
  }
  return entries
}

/**
 * Whether an active webhook that may receive effective-price events asks for a whole list's change
 * one SKU at a time (`effective_price_per_sku`): its per-SKU events are then recorded beside the
 * summary (the dispatcher gives each webhook one or the other).
 */
function perSkuWanted(tenant: TenantRuntime): boolean {
  for (const hook of tenant.webhooks?.list() ?? []) {
    const filter = hook.entityTypeFilter
    if (hook.active && hook.effectivePricePerSku === true && (filter === null || filter === 'effective_price'))
      return true
  }
  return false
}

/** Every moment after `state.until` in the tenant's price book and catalogue, into the heap. */
function scan(tenant: TenantRuntime, state: TenantState): void {
  const { prices, catalog } = tenant
  const after = state.until
  for (let pricelistId = 0; pricelistId < prices.pricelistCodes.length; pricelistId++) {
    const pricelist = prices.pricelistCodes[pricelistId]!
    for (let skuId = 0; skuId < prices.skuCodes.length; skuId++) {
      const offset = prices.runOffset(pricelistId, skuId)
      if (offset < 0) continue
      for (let index = prices.runLength(offset) - 1; index >= 0; index--) {
        const from = prices.fromAt(offset + index)
        if (from <= after) break
        state.heap.push(from, { kind: 'price', pricelist, sku: prices.skuCodes[skuId]! })
      }
    }
  }
  for (const type of movingTypes) {
    for (const key of catalog.keys(type)) pushCatalog(state, type, key, catalog.versions(type, key) ?? [])
  }
}

/** The moments a committed batch brings: its price versions' starts, its catalogue versions' (and lists' window edges). */
function noteCommitted(state: TenantState, changes: readonly Change[], prices: readonly PriceChange[]): void {
  for (const change of prices) {
    for (let index = change.versions.length - 1; index >= 0; index--) {
      const from = change.versions[index]!.from
      if (from <= state.until) break
      state.heap.push(from, { kind: 'price', pricelist: change.pricelist, sku: change.sku })
    }
  }
  for (const change of changes) {
    if (!movingTypes.includes(change.type)) continue
    // Only the versions written now can be new (the earlier ones were pushed when written or scanned).
    const written = change.versions.filter((version) => version.writtenAt === change.at)
    pushCatalog(state, change.type, change.key, written)
  }
}

function pushCatalog(
  state: TenantState,
  type: CatalogType,
  key: string,
  versions: readonly { readonly from: number; readonly value: unknown }[],
): void {
  const source: MomentSource = { kind: 'catalog', type, key }
  for (const version of versions) {
    if (version.from > state.until) state.heap.push(version.from, source)
    if (type !== 'pricelist' || version.value === null) continue
    // A list's window opens and closes at instants of its own, after its version's start.
    const { start_date: start, end_date: end } = version.value as { start_date: number | null; end_date: number | null }
    if (start !== null && start > state.until) state.heap.push(start, source)
    if (end !== null && end > state.until) state.heap.push(end, source)
  }
}
