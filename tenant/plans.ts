/**
 * The plan table of API.md §8 and the effective limits of a tenant (plan plus operator overrides).
 * Null means unlimited.
 * @module
 */
import type { LimitOverrides, Tier } from '../storage/system-store.js'

export interface Limits {
  readonly articles: number | null
  readonly pricelists: number | null
  readonly prices: number | null
  readonly changelog_capacity: number | null
  readonly query_rate: number | null
  readonly query_burst: number | null
  readonly ingest_rate: number | null
  readonly ingest_burst: number | null
  readonly max_items_per_request: number | null
  readonly webhooks: boolean
  readonly retention: boolean
}

export const plans: Readonly<Record<Tier, Limits>> = {
  starter: {
    articles: 10_000,
    pricelists: 50,
    prices: 100_000,
    changelog_capacity: 1_000_000,
    query_rate: 500,
    query_burst: 2_500,
    ingest_rate: 250,
    ingest_burst: 2_500,
    max_items_per_request: 2_500,
    webhooks: false,
    retention: false,
  },
  standard: {
    articles: 1_000_000,
    pricelists: 1_000,
    prices: 10_000_000,
    changelog_capacity: 10_000_000,
    query_rate: 5_000,
    query_burst: 10_000,
    ingest_rate: 2_500,
    ingest_burst: 10_000,
    max_items_per_request: 2_500,
    webhooks: true,
    retention: true,
  },
  enterprise: {
    articles: null,
    pricelists: null,
    prices: null,
    changelog_capacity: 100_000_000,
    query_rate: 50_000,
    query_burst: 100_000,
    ingest_rate: 25_000,
    ingest_burst: 100_000,
    max_items_per_request: 2_500,
    webhooks: true,
    retention: true,
  },
}

export const tiers = Object.keys(plans) as Tier[]

export function effectiveLimits(tier: Tier, overrides: LimitOverrides): Limits {
  return Object.freeze({ ...plans[tier], ...overrides }) as Limits
}
