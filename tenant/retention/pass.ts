/**
 * A history-retention pass over one tenant (SPEC setting catalogue `retention.*`): every
 * (pricelist, SKU) pair loses the versions engine/retention.ts says go (a pair with versions marked as
 * errors keeps all of them). In bounded steps: each step
 * reads up to `stepSkus` SKU slots of one pricelist, or 20,000 versions, from memory and rewrites the pairs that shrink in
 * one small transaction (no changelog entries: what is in force does not change), then yields, so
 * no write transaction is long and queries never pause for more than a step. At the end the price
 * columns are compacted, giving the removed versions' memory back.
 * @module
 */
import { compositeKey } from '../../engine/catalog.js'
import { retentionPolicyProblem, versionsToRemove, type RetentionPolicy } from '../../engine/retention.js'
import { settingEnabled, settingValue } from '../../engine/settings.js'
import type { PriceVersion } from '../../engine/prices.js'
import type { TenantRuntime } from '../runtime.js'

/** SKU slots one step reads at most. */
export const stepSkusDefault = 2_000
/** Versions one step looks at at most (with the SKU bound: a few milliseconds of main-thread work). */
const stepVersionsMax = 20_000

export interface RetentionResult {
  /** Pairs looked at. */
  readonly pairs: number
  /** Versions they held before the pass. */
  readonly versionsBefore: number
  readonly versionsRemoved: number
  readonly steps: number
  readonly ms: number
  /** Bytes of the tenant's price columns before the pass and after its compaction. */
  readonly priceBytesBefore: number
  readonly priceBytesAfter: number
  /** Why the pass ended early (a restore began, retention was turned off, the server stops), or null. */
  readonly stopped: string | null
}

/** Versions removed since start (exported by platform/metrics.ts). */
export const retentionCounts = { passes: 0, versionsRemoved: 0 }

/** Passes under way, so that two never run on one tenant. */
const running = new WeakSet<TenantRuntime>()

/** The tenant's policy in force at `nowMs`, or why retention does not run. */
export function retentionPolicy(tenant: TenantRuntime, nowMs: number): RetentionPolicy | string {
  if (!tenant.limits.retention) return 'the plan has no history retention'
  if (!settingEnabled(tenant.catalog, 'retention.enabled', nowMs)) return 'retention.enabled is false'
  const policy = {
    maxVersions: Number(settingValue(tenant.catalog, 'retention.max.versions', nowMs)),
    historyMs: Number(settingValue(tenant.catalog, 'retention.history.ms', nowMs)),
    priorPriceMs: Number(settingValue(tenant.catalog, 'omnibus.days', nowMs)) * 86_400_000,
  }
  return retentionPolicyProblem(policy) ?? policy
}

export function retentionRunning(tenant: TenantRuntime): boolean {
  return running.has(tenant)
}

export async function runRetentionPass(
  tenant: TenantRuntime,
  now: () => number,
  options: { stepSkus?: number; stop?: () => boolean } = {},
): Promise<RetentionResult> {
  if (running.has(tenant)) throw new Error(`a retention pass of ${tenant.slug} is running`)
  running.add(tenant)
  try {
    return await pass(tenant, now, options.stepSkus ?? stepSkusDefault, options.stop ?? (() => false))
  } finally {
    running.delete(tenant)
  }
}

async function pass(
  tenant: TenantRuntime,
  now: () => number,
  stepSkus: number,
  stop: () => boolean,
): Promise<RetentionResult> {
  const started = performance.now()
  const prices = tenant.prices
  const priceBytesBefore = prices.byteSize
  let pairs = 0
  let versionsBefore = 0
  let versionsRemoved = 0
  let steps = 0
  let stopped: string | null = null
  const pricelistCount = prices.pricelistCodes.length
  outer: for (let pricelistId = 0; pricelistId < pricelistCount; pricelistId++) {
    for (let skuId = 0; skuId < prices.skuCodes.length; ) {
      // Checked before every step: each can end the pass.
      const nowMs = now()
      const policy = retentionPolicy(tenant, nowMs)
      if (typeof policy === 'string') stopped = policy
      else if (tenant.restoring !== null) stopped = 'a restore began'
      else if (tenant.storage.nearlyFull)
        stopped = 'storage is nearly full' // tenant/storage-guard.ts
      else if (stop()) stopped = 'the server stops'
      if (stopped !== null) break outer
      const runs: { pricelist: string; sku: string; versions: PriceVersion[] }[] = []
      const corrected = tenant.catalog.liveCount('price_correction') > 0
      const end = Math.min(skuId + stepSkus, prices.skuCodes.length)
      let stepVersions = 0
      for (; skuId < end && stepVersions < stepVersionsMax; skuId++) {
        const offset = prices.runOffset(pricelistId, skuId)
        if (offset < 0) continue
        pairs++
        const count = prices.runLength(offset)
        versionsBefore += count
        stepVersions += count
        const remove = versionsToRemove(
          count,
          (index) => prices.fromAt(offset + index),
          nowMs,
          policy as RetentionPolicy,
          (index) => prices.liveSalesAt(offset + index),
        )
        if (remove === 0) continue
        const pricelist = prices.pricelistCodes[pricelistId]!
        const sku = prices.skuCodes[skuId]!
        // A price with versions marked as errors keeps its whole history: the prior price reads it
        // without them (engine/prior-price/corrections.ts), so the rule above, which reads it with
        // them, cannot say what that needs. Such prices are few (people mark them one by one).
        if (corrected && tenant.catalog.isLiveLatest('price_correction', compositeKey(sku, pricelist))) continue
        runs.push({ pricelist, sku, versions: prices.versions(pricelist, sku, remove) })
        versionsRemoved += remove
      }
      steps++
      if (runs.length > 0) await tenant.rewritePrices(runs)
      else await new Promise((resolve) => setImmediate(resolve))
    }
  }
  if (versionsRemoved > 0) {
    // The removed versions are garbage in the columns until a compaction: give the memory back now.
    prices.compactToFit()
    tenant.queryPool?.publish(tenant, [])
    // Freeing a record's overflow pages reads them through the map, far more than the bytes the
    // pass wrote (which alone decide a reopen): give those pages back too.
    tenant.store.mapRelease.soon()
  }
  retentionCounts.passes++
  retentionCounts.versionsRemoved += versionsRemoved
  return {
    pairs,
    versionsBefore,
    versionsRemoved,
    steps,
    ms: performance.now() - started,
    stopped,
    priceBytesBefore,
    priceBytesAfter: prices.byteSize,
  }
}
