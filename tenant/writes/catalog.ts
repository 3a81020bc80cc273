/**
 * What every catalogue entity's write shares (articles, pricelists, reference data): applying a
 * planned change to memory for the unit of work, and whether it makes a key live, which is what the
 * plan's quotas count.
 * @module
 */
import type { CatalogType, Change } from '../../engine/catalog.js'
import type { Limits } from '../plans.js'
import type { AppliedWrites, TenantRuntime } from '../runtime.js'
import { quotaExceeded, type Refusal } from './core.js'

/** Applies a planned change to memory (later items plan against it) and records it for the runtime to store. */
export function applyChange(tenant: TenantRuntime, change: Change, applied: AppliedWrites): void {
  tenant.catalog.apply(change.type, change.key, change.versions)
  applied.changes.push(change)
}

/** Does this change create a key that is not live in its latest version yet (counts for quotas)? */
export function createsLiveKey(tenant: TenantRuntime, change: Change): boolean {
  return !tenant.catalog.isLiveLatest(change.type, change.key) && change.versions[change.versions.length - 1]!.value !== null
}

/**
 * The refusal when `creating` more live keys of `type` would pass the plan's `limitName` quota
 * (the message names the numbers), else null.
 */
export function catalogQuota(tenant: TenantRuntime, type: CatalogType, limitName: keyof Limits, creating: number): Refusal | null {
  const limit = tenant.limits[limitName]
  if (typeof limit !== 'number' || creating === 0) return null
  const count = tenant.catalog.liveCount(type)
  return count + creating > limit ? quotaExceeded(limitName, limit, count) : null
}
