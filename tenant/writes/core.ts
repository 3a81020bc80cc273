/**
 * The write layer's core: every catalogue and price write is a use case that takes
 * (tenant, {nowMs, actor}, items) and answers one outcome per item, a status and not an exception,
 * so that a batch refuses some items and writes the others (TigerBeetle's per-transfer results are
 * the model). `applyBatch` is the one routine that plans, checks the quota, applies to memory and
 * has the runtime store the batch in one unit of work (`TenantRuntime.write`); the entity files
 * beside this one say how to plan each entity. The HTTP edge validates the shape of each item
 * before (a refused shape is handed in as a Refusal) and renders the outcomes after.
 * @module
 */
import type { Catalog } from '../../engine/catalog.js'
import type { PriceBook } from '../../engine/prices.js'
import { parseInstant } from '../../engine/time.js'
import type { QueryPool } from '../../workers/pool.js'
import type { Limits } from '../plans.js'
import type { AppliedWrites } from '../runtime.js'

/**
 * What can become of an item. `applied` and `unchanged` accept it (an identical write stores
 * nothing); the others refuse it and are codes of the one error registry (platform/errors.ts), which
 * the HTTP edge maps to statuses and bodies. Ordered as an item's checks run: its shape and its key
 * (a setting's key must exist before its value can be checked), what the plan allows, its rules and
 * what it refers to, whether it exists, the plan's quota last; the first check that refuses is the
 * answer (one exception: a pricelist's missing parent is a validation_failed found after its currency).
 */
export const writeStatuses = [
  'applied',
  'unchanged',
  'validation_failed',
  'setting_unknown',
  'plan_forbidden',
  'rule_invalid',
  'currency_unknown',
  'currency_inactive',
  'pricelist_cycle',
  'not_found',
  'quota_exceeded',
] as const
export type WriteStatus = (typeof writeStatuses)[number]
export type RefusalStatus = Exclude<WriteStatus, 'applied' | 'unchanged'>

/**
 * What a write plans against and applies to: a tenant's runtime, or a dry run's throwaway copy of
 * it (tenant/simulate/: a forked catalogue, an overlay of the price book, a unit of work that
 * stores nothing). The use cases take this rather than the runtime, so that a dry run runs the
 * same writers and so refuses exactly what a real write refuses.
 */
export interface WriteTarget {
  readonly catalog: Catalog
  readonly prices: Pick<PriceBook, 'versions' | 'apply' | 'livePairCount'>
  readonly limits: Limits
  /** Where a pricelist's rules are compiled before the unit of work (null: here). */
  readonly queryPool: QueryPool | null
  /** The unit of work: `work` applies to memory and records in `applied`; the target stores it (or not). */
  write<T>(work: (applied: AppliedWrites) => T): Promise<T>
}

/** Who writes and when: the request's clock reading and actor (a route's context has both). */
export interface WriteContext {
  readonly nowMs: number
  readonly actor: string
}

const noFields: Readonly<Record<string, unknown>> = Object.freeze({})

/** One refused part of an item: its JSON path and what is wrong with it. */
export interface RefusalDetail {
  readonly path: string
  readonly message: string
}

/** A refused item: its status, the JSON path of the refused part ('' for the whole item) and why. */
export class Refusal {
  readonly status: RefusalStatus
  /** The whole message: a batch's `failed` entry, a single write's error message. */
  readonly message: string
  readonly path: string
  /** The message without the path (a validation error's detail). */
  readonly problem: string
  /** The plan's quota that an item would pass (quota_exceeded), else null. */
  readonly limit: number | null
  /** Fields the error body carries besides the message (plan_forbidden: the setting and feature). */
  readonly fields: Readonly<Record<string, unknown>>
  /**
   * Every refused part with its path (a rounding profile's tiers name each bad amount); by default
   * the one at `path`, none for a refusal of the whole item.
   */
  readonly details: readonly RefusalDetail[]

  constructor(options: {
    status: RefusalStatus
    message: string
    path?: string
    problem?: string
    limit?: number | null
    fields?: Readonly<Record<string, unknown>>
    details?: readonly RefusalDetail[]
  }) {
    this.status = options.status
    this.message = options.message
    this.path = options.path ?? ''
    this.problem = options.problem ?? options.message
    this.limit = options.limit ?? null
    this.fields = options.fields ?? noFields
    this.details = options.details ?? (this.path === '' ? [] : [{ path: this.path, message: this.problem }])
  }
}

/** An item whose `path` is refused by validation: the message names the path. */
export function invalid(path: string, problem: string): Refusal {
  return new Refusal({ status: 'validation_failed', message: `${path}: ${problem}`, path, problem })
}

/**
 * An item refused by validation in several parts: the message names the first, as a validation
 * error's does (platform/errors.ts `validationError`).
 */
export function invalidParts(details: readonly RefusalDetail[]): Refusal {
  const first = details[0]!
  const message = `${first.path || 'body'}: ${first.message}`
  return new Refusal({ status: 'validation_failed', message, path: first.path, problem: first.message, details })
}

/** An item that would take a live count of `noun` past the plan's `limit`. */
export function quotaExceeded(noun: string, limit: number, count: number): Refusal {
  return new Refusal({ status: 'quota_exceeded', message: `The plan allows ${limit} ${noun}; ${count} exist`, limit })
}

export type Accepted = { readonly status: 'applied' } | { readonly status: 'unchanged' }
export type ItemOutcome = Accepted | Refusal

/** Shared outcomes: an accepted item costs no allocation (the price ingest answers 1,000 a batch). */
export const appliedOutcome: Accepted = Object.freeze({ status: 'applied' })
export const unchangedOutcome: Accepted = Object.freeze({ status: 'unchanged' })

export function isAccepted(outcome: ItemOutcome): outcome is Accepted {
  return !(outcome instanceof Refusal)
}

/** How to write one entity: `applyBatch` calls these in order for each item. */
export interface EntityWriter<Input, Planned> {
  /**
   * Plans an item against memory as it is now, earlier items of the batch included: the change,
   * null when nothing would change, or why the item is refused.
   */
  plan(input: Input): Planned | null | Refusal
  /** Why applying `change` would pass the plan's quota, or null (checked before memory changes). */
  quota(change: Planned): Refusal | null
  /** Applies the change to memory and records it in `applied` for the runtime to store. */
  apply(change: Planned, applied: AppliedWrites): void
}

/**
 * The one batch routine: each item (or the refusal the edge found in its shape) is planned, checked
 * against the quota and applied to memory in order, and the runtime stores every applied change in
 * one unit of work; answers an outcome per item, in the items' order.
 */
export function applyBatch<Input, Planned>(
  tenant: WriteTarget,
  items: readonly (Input | Refusal)[],
  writer: EntityWriter<Input, Planned>,
): Promise<ItemOutcome[]> {
  return tenant.write((applied) => applyItems(items, writer, applied))
}

/** `applyBatch` inside a unit of work that a caller already holds (the demo seed writes several entities in one). */
export function applyItems<Input, Planned>(
  items: readonly (Input | Refusal)[],
  writer: EntityWriter<Input, Planned>,
  applied: AppliedWrites,
): ItemOutcome[] {
  const outcomes: ItemOutcome[] = []
  for (let index = 0; index < items.length; index++) {
    const item = items[index]!
    outcomes.push(item instanceof Refusal ? item : writeItem(writer, item, applied))
  }
  return outcomes
}

function writeItem<Input, Planned>(
  writer: EntityWriter<Input, Planned>,
  input: Input,
  applied: AppliedWrites,
): ItemOutcome {
  const planned = writer.plan(input)
  if (planned === null) return unchangedOutcome
  if (planned instanceof Refusal) return planned
  const overQuota = writer.quota(planned)
  if (overQuota !== null) return overQuota
  writer.apply(planned, applied)
  return appliedOutcome
}

/** A write's effective instant: a past or absent start means now (history is append-only). */
export function writeInstant(text: string | undefined | null, nowMs: number): number {
  if (text === undefined || text === null) return nowMs
  return Math.max(parseInstant(text), nowMs)
}
