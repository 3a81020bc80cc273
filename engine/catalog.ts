/**
 * One tenant's catalogue in memory: every versioned entity (articles, pricelists, currencies, tax
 * areas, VAT classes, VAT rates, article-to-VAT-class mappings, settings, price corrections) as sorted version lists
 * per key. `apply` is the only mutator; reads take the instant to answer for.
 * @module
 */
import { assert } from './assert.js'
import { contentHash } from './hash.js'
import { LayeredTable } from './simulate/layered-table.js'
import { indexAt, planWrite, viewAt, type ChangeType, type Version, type View } from './temporal.js'

export const entityTypes = [
  'article',
  'pricelist',
  'price',
  'currency',
  'vat_rate',
  'vat_class',
  'tax_area',
  'fx_rate',
  'rounding_profile',
  'settings',
  'bundle_rule',
  'article_taxclass',
  'price_correction',
  'effective_price',
] as const
export type EntityType = (typeof entityTypes)[number]

export type Metadata = Record<string, string[]>

export interface Article {
  name: string | null
  type: string | null
  metadata: Metadata
}

export interface PriceRule {
  code: string | null
  description: string | null
  expression: string | null
  filter: string | null
  updated_by: string | null
}

export type VatMode = 'NET' | 'GROSS'

export interface Pricelist {
  currency_code: string
  /** Null on a child that inherits its parent's mode. */
  vat_mode: VatMode | null
  name: string | null
  description: string | null
  parent_code: string | null
  /** Activity window, epoch ms; null means unbounded. */
  start_date: number | null
  end_date: number | null
  metadata: Metadata
  price_rules: PriceRule[]
}

export interface Currency {
  is_active: boolean
  vat_precision: number
}

export interface TaxArea {
  name: string | null
  is_active: boolean
  valid_from: number | null
  valid_to: number | null
}

export interface VatClass {
  name: string | null
  description: string | null
}

export interface VatRate {
  /** Percentage as a canonical decimal string (25 means 25%). */
  rate: string
}

export interface ArticleTaxclass {
  vat_class_code: string
}

export interface Setting {
  value: string
}

/** EUR -> quote rate of one publication date, as a canonical decimal string. Key: compositeKey('EUR', quote). */
export interface FxRate {
  rate: string
}

export type RoundingMode = 'HALF_UP' | 'UP' | 'DOWN' | 'HALF_EVEN'

/** Amounts are canonical decimal strings; `to` null means unbounded. */
export interface RoundingTierRule {
  from: string
  to: string | null
  increment: string
  mode: RoundingMode
  offset: string
}

export interface RoundingProfile {
  currency_code: string | null
  default_for_currency: boolean
  default_global: boolean
  tier_rules: RoundingTierRule[]
}

export interface BundleComponent {
  sku: string
  quantity: number
}

/** Key: compositeKey(bundle SKU, pricelist code). Amounts are canonical decimal strings. */
export interface BundleRule {
  method: 'SUM_OF_PARTS' | 'FIXED'
  discount_type: 'PERCENTAGE' | 'ABSOLUTE' | null
  discount_value: string | null
  fixed_price: string | null
  components: BundleComponent[]
}

/** One price version marked as an error: its start, who marked it, when (epoch ms) and why. */
export interface PriceErrorMark {
  start: number
  marked_at: number
  marked_by: string
  reason: string | null
}

/**
 * The corrections of one price, key compositeKey(SKU, pricelist): the versions marked as errors,
 * by start. The EU prior price reads the price's history without them (engine/prior-price/).
 */
export interface PriceCorrection {
  errors: PriceErrorMark[]
}

export interface EntityValues {
  fx_rate: FxRate
  rounding_profile: RoundingProfile
  bundle_rule: BundleRule
  article: Article
  pricelist: Pricelist
  currency: Currency
  tax_area: TaxArea
  vat_class: VatClass
  vat_rate: VatRate
  article_taxclass: ArticleTaxclass
  settings: Setting
  price_correction: PriceCorrection
}
export type CatalogType = keyof EntityValues

/** Composite keys join their parts with a character no code may contain. */
export const keySeparator = '\u0001'
export function compositeKey(first: string, second: string): string {
  return `${first}${keySeparator}${second}`
}
export function splitKey(key: string): [string, string | null] {
  const at = key.indexOf(keySeparator)
  return at < 0 ? [key, null] : [key.slice(0, at), key.slice(at + 1)]
}

/** A planned change to one key: the new version list plus what the changelog records. */
export interface Change {
  readonly type: CatalogType
  readonly key: string
  readonly versions: Version<unknown>[]
  readonly changeType: ChangeType
  readonly hash: string
  readonly at: number
  readonly by: string
}

export class Catalog {
  readonly #tables = new Map<CatalogType, Map<string, Version<unknown>[]>>()
  readonly #sorted = new Map<CatalogType, string[] | null>()
  /** Keys whose latest version is live (not deleted): what plan quotas count. */
  readonly #liveCounts = new Map<CatalogType, number>()
  /** Writes applied per type: caches of derived facts (engine/vat-column.ts) compare them. */
  readonly #revisions = new Map<CatalogType, number>()
  /** Types whose entries are loaded at their first use (`defer`); null when none. */
  #deferred: Map<CatalogType, () => void> | null = null
  /**
   * A fork's types whose table is still the original's Map (`fork`): layered over before the
   * fork's first write of the type, so the original never changes through a fork. Null: not a fork.
   */
  #shared: Set<CatalogType> | null = null

  constructor() {
    for (const type of [
      'article',
      'pricelist',
      'currency',
      'tax_area',
      'vat_class',
      'vat_rate',
      'article_taxclass',
      'settings',
      'fx_rate',
      'rounding_profile',
      'bundle_rule',
      'price_correction',
    ] as CatalogType[]) {
      this.#tables.set(type, new Map())
      this.#sorted.set(type, null)
      this.#liveCounts.set(type, 0)
      this.#revisions.set(type, 0)
    }
  }

  /** How many writes of this type have been applied (moves with every `apply`). */
  revision(type: CatalogType): number {
    if (this.#deferred !== null) this.#undefer(type)
    return this.#revisions.get(type)!
  }

  /**
   * Writes applied to all types together: a dry run that plans across turns of the event loop
   * compares it before each turn, to start over when a real write landed meanwhile (tenant/simulate/).
   */
  revisionTotal(): number {
    let total = 0
    for (const revision of this.#revisions.values()) total += revision
    return total
  }

  /**
   * Leaves a type's entries to `load`, called (once) before anything reads or writes that type: a
   * worker's replica keeps its articles packed until a rule or a search needs them
   * (workers/replica.ts). `load` fills the type through `load`/`apply` like any other.
   */
  defer(type: CatalogType, load: () => void): void {
    assert(!this.#deferred?.has(type), 'a type is deferred once at a time')
    ;(this.#deferred ??= new Map()).set(type, load)
  }

  /** Whether a type's entries still wait for their first use (`defer`). */
  isDeferred(type: CatalogType): boolean {
    return this.#deferred?.has(type) ?? false
  }

  #undefer(type: CatalogType): void {
    const load = this.#deferred!.get(type)
    if (load === undefined) return
    this.#deferred!.delete(type)
    if (this.#deferred!.size === 0) this.#deferred = null
    load()
  }

  /**
   * A throwaway copy for a dry run (tenant/simulate/): it shares this catalogue's tables, each until
   * the fork first writes that type, and then layers its own keys over that table
   * (engine/simulate/layered-table.ts): nothing is copied, not even the table's Map. The fork sees
   * this catalogue's later writes to the keys it has not written (and keeps the counts it took): a
   * dry run that sees `revisionTotal` move between its turns starts over on a new fork. A replica's
   * deferred types (a worker's articles) are built first: a fork shares tables, and a deferred one
   * has none yet.
   */
  fork(): Catalog {
    for (const type of [...(this.#deferred?.keys() ?? [])]) this.#undefer(type)
    const fork = new Catalog()
    fork.#shared = new Set()
    for (const [type, table] of this.#tables) {
      fork.#tables.set(type, table)
      fork.#shared.add(type)
      fork.#sorted.set(type, this.#sorted.get(type) ?? null)
      fork.#liveCounts.set(type, this.#liveCounts.get(type)!)
      fork.#revisions.set(type, this.#revisions.get(type)!)
    }
    return fork
  }

  /**
   * What a fork wrote, [type, key, versions] (a fork's own keys; none for a catalogue that is not a
   * fork): replayed with `apply` on a fork of a worker's replica, it gives the same catalogue.
   */
  forkChanges(): [CatalogType, string, Version<unknown>[]][] {
    const changes: [CatalogType, string, Version<unknown>[]][] = []
    if (this.#shared === null) return changes
    for (const [type, table] of this.#tables) {
      if (table instanceof LayeredTable) for (const [key, versions] of table.own()) changes.push([type, key, versions])
    }
    return changes
  }

  /** The table a mutator changes: a fork's own layer over the shared one (see `fork`). */
  #writableTable(type: CatalogType): Map<string, Version<unknown>[]> {
    const table = this.#table(type)
    if (this.#shared === null || !this.#shared.has(type)) return table
    const layered = new LayeredTable(table)
    this.#tables.set(type, layered)
    this.#shared.delete(type)
    return layered
  }

  #table(type: CatalogType): Map<string, Version<unknown>[]> {
    // One field read on the hot path when nothing is deferred (the main thread's catalogue).
    if (this.#deferred !== null) this.#undefer(type)
    const table = this.#tables.get(type)
    assert(table !== undefined, 'unknown catalogue type')
    return table
  }

  versions<K extends CatalogType>(type: K, key: string): Version<EntityValues[K]>[] | undefined {
    return this.#table(type).get(key) as Version<EntityValues[K]>[] | undefined
  }

  /** The record in force at `at` (absent when never written, not yet written or deleted). */
  view<K extends CatalogType>(type: K, key: string, at: number, includeDeleted = false): View<EntityValues[K]> | null {
    return viewAt(this.versions(type, key), at, includeDeleted)
  }

  /** The value in force at `at` (null when absent or deleted); allocates nothing (hot path). */
  get<K extends CatalogType>(type: K, key: string, at: number): EntityValues[K] | null {
    const versions = this.#table(type).get(key) as Version<EntityValues[K]>[] | undefined
    if (versions === undefined) return null
    const index = indexAt(versions, at)
    return index < 0 ? null : versions[index]!.value
  }

  /** Has any version of this key ever been written (deleted or not, past or future)? */
  exists(type: CatalogType, key: string): boolean {
    return this.#table(type).has(key)
  }

  /** All keys of a type, sorted; the array is cached until a new key appears. */
  keys(type: CatalogType): readonly string[] {
    if (this.#deferred !== null) this.#undefer(type)
    let sorted = this.#sorted.get(type) ?? null
    if (sorted === null) {
      sorted = [...this.#table(type).keys()].sort(compareCodes)
      this.#sorted.set(type, sorted)
    }
    return sorted
  }

  /** Views of every key in force at `at`, in key order. */
  *viewsAt<K extends CatalogType>(
    type: K,
    at: number,
    includeDeleted = false,
  ): Generator<[string, View<EntityValues[K]>]> {
    const table = this.#table(type)
    for (const key of this.keys(type)) {
      const view = viewAt(table.get(key) as Version<EntityValues[K]>[], at, includeDeleted)
      if (view !== null) yield [key, view]
    }
  }

  /** Keys whose latest version is live: the count plan quotas limit. O(1). */
  liveCount(type: CatalogType): number {
    if (this.#deferred !== null) this.#undefer(type)
    return this.#liveCounts.get(type) ?? 0
  }

  /** Is the latest version of this key live (written and not deleted, now or scheduled)? */
  isLiveLatest(type: CatalogType, key: string): boolean {
    const versions = this.#table(type).get(key)
    return versions !== undefined && versions[versions.length - 1]!.value !== null
  }

  /**
   * Plans writing `value` (null: delete) for `key` from `from`. Null when nothing would change.
   * Does not mutate: pass the result to `apply` once it is to be stored.
   */
  plan<K extends CatalogType>(
    type: K,
    key: string,
    value: EntityValues[K] | null,
    from: number,
    at: number,
    by: string,
    options: { force?: boolean } = {},
  ): Change | null {
    const hash = value === null ? '' : contentHash(value)
    const version: Version<EntityValues[K]> = { from, value, hash, writtenAt: at, writtenBy: by }
    const planned = planWrite(this.versions(type, key), version, options)
    if (planned === null) return null
    return {
      type,
      key,
      versions: planned.versions as Version<unknown>[],
      changeType: planned.changeType,
      hash,
      at,
      by,
    }
  }

  /** Every stored key with its versions: a replica (worker thread) is built from this once. */
  *entries(): Generator<[CatalogType, string, Version<unknown>[]]> {
    for (const type of [...(this.#deferred?.keys() ?? [])]) this.#undefer(type)
    for (const [type, table] of this.#tables) {
      for (const [key, versions] of table) yield [type, key, versions]
    }
  }

  /**
   * `apply` for many entries at once (a start's load, a replica's snapshot): the per-type counts are
   * updated once per run of one type rather than per entry (a quarter of the catalogue's load time
   * went to them, 200,000 entries).
   */
  load(entries: Iterable<readonly [CatalogType, string, Version<unknown>[]]>): void {
    let type: CatalogType | null = null
    let table: Map<string, Version<unknown>[]> | null = null
    let applied = 0
    let live = 0
    let added = false
    const flush = (): void => {
      if (type === null) return
      this.#revisions.set(type, this.#revisions.get(type)! + applied)
      this.#liveCounts.set(type, this.#liveCounts.get(type)! + live)
      if (added) this.#sorted.set(type, null)
    }
    for (const [entryType, key, versions] of entries) {
      assert(versions.length > 0, 'a stored key has at least one version')
      if (entryType !== type) {
        flush()
        type = entryType
        table = this.#writableTable(type)
        applied = 0
        live = 0
        added = false
      }
      const before = table!.get(key)
      if (before === undefined) added = true
      else if (before[before.length - 1]!.value !== null) live--
      if (versions[versions.length - 1]!.value !== null) live++
      applied++
      table!.set(key, versions)
    }
    flush()
  }

  /** The only mutator: installs a planned (or loaded) version list. */
  apply(type: CatalogType, key: string, versions: Version<unknown>[]): void {
    assert(versions.length > 0, 'a stored key has at least one version')
    const table = this.#writableTable(type)
    const before = table.get(key)
    if (before === undefined) this.#sorted.set(type, null)
    const wasLive = before !== undefined && before[before.length - 1]!.value !== null
    const isLive = versions[versions.length - 1]!.value !== null
    if (wasLive !== isLive) this.#liveCounts.set(type, this.liveCount(type) + (isLive ? 1 : -1))
    this.#revisions.set(type, this.#revisions.get(type)! + 1)
    table.set(key, versions)
  }

  /** Removes a key altogether (a restore of a backup that never held it); nothing for an absent key. */
  remove(type: CatalogType, key: string): void {
    assert(this.#shared === null, 'a fork never removes keys (only a restore does, on the tenant)')
    const table = this.#table(type)
    const before = table.get(key)
    if (before === undefined) return
    if (before[before.length - 1]!.value !== null) this.#liveCounts.set(type, this.liveCount(type) - 1)
    this.#revisions.set(type, this.#revisions.get(type)! + 1)
    this.#sorted.set(type, null)
    table.delete(key)
  }
}

/** Codes sort by UTF-16 code units: stable, locale-free, and what cursors compare with. */
export function compareCodes(left: string, right: string): number {
  return left < right ? -1 : left > right ? 1 : 0
}
