/**
 * What every catalogue entity's write shares (articles, pricelists, reference data): applying a
 * planned change to memory for the unit of work, whether it makes a key live (what the plan's
 * quotas count), and the soft delete, which is the same for every entity.
 * @module
 */
import type { CatalogType, Change } from '../../engine/catalog.js'
import type { Limits } from '../plans.js'
import type { AppliedWrites } from '../runtime.js'
import {
  applyBatch,
  quotaExceeded,
  Refusal,
  writeInstant,
  type EntityWriter,
  type ItemOutcome,
  type WriteContext,
  type WriteTarget,
} from './core.js'

/** Applies a planned change to memory (later items plan against it) and records it for the runtime to store. */
export function applyChange(tenant: WriteTarget, change: Change, applied: AppliedWrites): void {
  tenant.catalog.apply(change.type, change.key, change.versions)
  applied.changes.push(change)
}

/** Does this change create a key that is not live in its latest version yet (counts for quotas)? */
export function createsLiveKey(tenant: WriteTarget, change: Change): boolean {
  return (
    !tenant.catalog.isLiveLatest(change.type, change.key) && change.versions[change.versions.length - 1]!.value !== null
  )
}

/**
 * The refusal when `creating` more live keys of `type` would pass the plan's `limitName` quota
 * (the message names the numbers), else null.
 */
export function catalogQuota(
  tenant: WriteTarget,
  type: CatalogType,
  limitName: keyof Limits,
  creating: number,
): Refusal | null {
  const limit = tenant.limits[limitName]
  if (typeof limit !== 'number' || creating === 0) return null
  const count = tenant.catalog.liveCount(type)
  return count + creating > limit ? quotaExceeded(limitName, limit, count) : null
}

/** A writer of an entity without a quota (reference data, deletes): `plan` is all it says. */
export function unlimitedWriter<Input>(
  tenant: WriteTarget,
  plan: (input: Input) => Change | null | Refusal,
): EntityWriter<Input, Change> {
  return { plan, quota: () => null, apply: (change, applied) => applyChange(tenant, change, applied) }
}

/** One soft delete of a catalogue key at `when` (default now; a past `when` means now). */
export interface DeleteInput {
  readonly key: string
  readonly when?: string | undefined
}

/**
 * Soft-deletes keys of `type` at their instant; a key not live then is refused as not_found, named
 * as its entity's routes name it (`what(key)`: "Article A1", "VAT rate SE/standard").
 */
export function deleteKeys(
  tenant: WriteTarget,
  context: WriteContext,
  options: { type: CatalogType; what: (key: string) => string; items: readonly (DeleteInput | Refusal)[] },
): Promise<ItemOutcome[]> {
  const { nowMs, actor } = context
  const { type, what } = options
  return applyBatch(
    tenant,
    options.items,
    unlimitedWriter<DeleteInput>(tenant, ({ key, when }) => {
      const at = writeInstant(when, nowMs)
      if (tenant.catalog.view(type, key, at) === null) {
        return new Refusal({ status: 'not_found', message: `${what(key)} not found` })
      }
      return tenant.catalog.plan(type, key, null, at, nowMs, actor)
    }),
  )
}
