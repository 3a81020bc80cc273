/**
 * The bench workload, defined once and shared by the HTTP generator and the engine-only
 * benchmark: codes, reference data, pricelists and every price version, derived from a seed so
 * that a run can be repeated exactly. Each (SKU, pricelist) pair draws from its own seeded stream,
 * so items can be produced in any order (by version phase, in chunks) and still be the same.
 * Non-goal: realism beyond the shape the issue names.
 * @module
 */

export interface WorkloadShape {
  readonly skuCount: number
  /**
   * Price versions per (SKU, pricelist): all but the last written without a start date, one after
   * the other (each supersedes the one before, as after a few price changes), the last scheduled.
   */
  readonly versionCount: number
  /** Share of price items carrying quantity breaks. */
  readonly breakShare: number
  /** Days between the start dates of successive versions. */
  readonly versionSpacingDays: number
  readonly seed: number
}

export const defaultShape: WorkloadShape = {
  skuCount: 100_000,
  versionCount: 3,
  breakShare: 0.1,
  versionSpacingDays: 30,
  seed: 20_240_601,
}

export const currencyCode = 'SEK'
export const taxAreaCode = 'SE'
export const vatClasses = [
  { code: 'standard', rate: 25 },
  { code: 'reduced', rate: 12 },
] as const
/** One SKU in five is on the reduced rate. */
const reducedShare = 0.2

export interface PricelistDefinition {
  readonly code: string
  readonly vatMode: 'NET' | 'GROSS' | null
  readonly parentCode: string | null
}

/**
 * 8 NET pricelists in SEK, one GROSS, one child of the first NET (inherits its VAT mode, and the
 * price of the SKUs it has none of its own for: see `hasOwnPrice`).
 */
export const pricelists: readonly PricelistDefinition[] = [
  ...Array.from({ length: 8 }, (_, index) => ({ code: `NET-${index + 1}`, vatMode: 'NET' as const, parentCode: null })),
  { code: 'GROSS-1', vatMode: 'GROSS', parentCode: null },
  { code: 'CHILD-1', vatMode: null, parentCode: 'NET-1' },
]

export function skuCode(index: number): string {
  return `SKU-${String(index).padStart(7, '0')}`
}

/** `count` different SKU codes drawn from `random`. */
export function distinctSkus(random: () => number, skuCount: number, count: number): string[] {
  const skus = new Set<string>()
  while (skus.size < Math.min(count, skuCount)) skus.add(skuCode(Math.floor(random() * skuCount)))
  return [...skus]
}

/** Share of the SKUs with a price of their own on the child pricelist; the others inherit its parent's. */
export const childOwnShare = 0.3

/** Whether (SKU, pricelist) has prices of its own (every pair but 70% of the child's). */
export function hasOwnPrice(shape: WorkloadShape, skuIndex: number, pricelist: PricelistDefinition): boolean {
  if (pricelist.parentCode === null) return true
  return seededRandom(mix(shape.seed, skuIndex, -2))() < childOwnShare
}

/** The (SKU, pricelist) pairs with prices of their own, SKU-major, as indexes `sku * lists + list`. */
export function pricedPairs(shape: WorkloadShape): Int32Array {
  const pairs = new Int32Array(shape.skuCount * pricelists.length)
  let count = 0
  for (let skuIndex = 0; skuIndex < shape.skuCount; skuIndex++) {
    for (let pricelistIndex = 0; pricelistIndex < pricelists.length; pricelistIndex++) {
      if (hasOwnPrice(shape, skuIndex, pricelists[pricelistIndex]!))
        pairs[count++] = skuIndex * pricelists.length + pricelistIndex
    }
  }
  return pairs.slice(0, count)
}

/** Stored price versions of the whole workload. */
export function priceVersionCount(shape: WorkloadShape): number {
  return pricedPairs(shape).length * shape.versionCount
}

/** mulberry32: a small, fast seeded PRNG; answers floats in [0, 1). */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let value = state
    value = Math.imul(value ^ (value >>> 15), value | 1)
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61)
    return ((value ^ (value >>> 14)) >>> 0) / 4_294_967_296
  }
}

function mix(seed: number, first: number, second: number): number {
  let hash =
    Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(first + 1, 0xc2b2ae35) ^ Math.imul(second + 7, 0x27d4eb2f)
  hash ^= hash >>> 16
  return Math.imul(hash, 0x7feb352d) >>> 0
}

export function vatClassOf(shape: WorkloadShape, skuIndex: number): string {
  return seededRandom(mix(shape.seed, skuIndex, -1))() < reducedShare ? 'reduced' : 'standard'
}

export interface BreakInput {
  readonly quantity_break: number
  readonly percent_of_base?: number
  readonly fixed_price?: number
}

export interface PriceInput {
  /** Decimal amount with at most 2 decimals. */
  readonly sales: number
  readonly breaks: readonly BreakInput[] | null
}

/**
 * The price of one version of (SKU, pricelist). Successive versions differ (+5% each, at least one
 * cent), so none is dropped as unchanged.
 */
export function priceOf(shape: WorkloadShape, skuIndex: number, pricelistIndex: number, version: number): PriceInput {
  const random = seededRandom(mix(shape.seed, skuIndex, pricelistIndex))
  const baseCents = 1_000 + Math.floor(random() * 999_000)
  const withBreaks = random() < shape.breakShare
  const cents = Math.round(baseCents * (1 + 0.05 * version)) + version
  const sales = cents / 100
  if (!withBreaks) return { sales, breaks: null }
  return {
    sales,
    breaks: [
      { quantity_break: 10, percent_of_base: 95 },
      { quantity_break: 100, fixed_price: Math.floor(cents * 0.9) / 100 },
    ],
  }
}

/** Versions of a pair written without a start date (in force from their write, each superseding the last). */
export function writtenNowCount(shape: WorkloadShape): number {
  return Math.max(1, shape.versionCount - 1)
}

/**
 * Start of a version: the ones written now a minute apart up to now (as the API gives them,
 * superseded but the last), the scheduled ones `versionSpacingDays` apart after now.
 */
export function versionStartMs(shape: WorkloadShape, version: number, nowMs: number): number {
  const now = writtenNowCount(shape)
  if (version < now) return nowMs - (now - 1 - version) * 60_000
  return nowMs + (version - now + 1) * shape.versionSpacingDays * 86_400_000
}
