/**
 * Effective-price changes at a moment: which (SKU, pricelist, tax area) answers move when
 * something comes into force, from what to what, and why. A moment's sources are what starts then:
 * a price version (its list and every list inheriting it, the bundles it is a component of), a VAT
 * rate (every SKU mapped to its class in its area), a reclassification, a bundle rule, an article
 * (the rules that read it); those name SKUs, each compared alone. A pricelist's new version or
 * window edge, an FX publication and a rounding profile move whole lists: those are named as lists
 * (`ListMove`), which the caller compares over all SKUs in pages and reports as one summary.
 *
 * The comparison is the price diff (engine/diff/diff.ts) of one list between the millisecond
 * before the moment and the moment, in the list's currency: an event exactly when two single reads
 * of the list (as of then) answer differently, and none when the amount is unchanged. Its causes
 * name the event's cause. Pure: a catalogue, a price book and the moment; no clock, no I/O.
 * @module
 */
import { compareCodes, splitKey, type Catalog, type CatalogType, type Pricelist } from '../catalog.js'
import { diffPrices, type DiffCause, type DiffSide } from '../diff/diff.js'
import { pricelistDepthMax } from '../limits.js'
import { PriceContext } from '../pipeline.js'
import type { PriceReader } from '../price-replica.js'
import type { PriceVersion } from '../prices.js'

/** Why an effective price changed (docs/api.md, "Effective-price events"): a closed set. */
export const effectiveCauses = [
  'written',
  'scheduled_start',
  'list_window',
  'parent_changed',
  'rule_changed',
  'vat_rate_started',
  'reclassified',
  'fx_published',
] as const
export type EffectiveCause = (typeof effectiveCauses)[number]

/** What comes into force at a moment: a price version of a pair, or a catalogue key's version. */
export type MomentSource =
  | { readonly kind: 'price'; readonly pricelist: string; readonly sku: string }
  | { readonly kind: 'catalog'; readonly type: CatalogType; readonly key: string }

/** Scaled amounts, as a single read answers them. */
export interface Amounts {
  readonly net: number
  readonly gross: number
}

export interface EffectiveChange {
  readonly sku: string
  readonly pricelist: string
  readonly taxArea: string
  /** The list's currency at the moment (the amounts' currency). */
  readonly currency: string
  /** The answer the millisecond before the moment; null: no price then. */
  readonly before: Amounts | null
  /** The answer from the moment; null: no price from then. */
  readonly after: Amounts | null
  readonly at: number
  readonly cause: EffectiveCause
  /** Who wrote what came into force: a price version's writer, else `system`. */
  readonly by: string
}

/** A list whose every SKU may move at the moment, and why: compared by the caller, in pages. */
export interface ListMove {
  readonly pricelist: string
  readonly cause: EffectiveCause
}

/** What a moment's sources move: SKUs by list and tax area, and whole lists. */
export interface MomentTargets {
  /** List -> tax area -> SKUs to compare. */
  readonly skus: Map<string, Map<string, Set<string>>>
  readonly lists: ListMove[]
}

/** Which version of each pair a source names: what the price book holds (the main thread's). */
export interface VersionReader extends PriceReader {
  versions(pricelist: string, sku: string): PriceVersion[]
}

/** The lists, tax areas and SKUs whose answers may move at `at`. */
export function momentTargets(catalog: Catalog, at: number, sources: readonly MomentSource[]): MomentTargets {
  const world = new MomentWorld(catalog, at)
  const targets: MomentTargets = { skus: new Map(), lists: [] }
  const listed = new Set<string>()
  const moveList = (pricelist: string, cause: EffectiveCause) => {
    for (const code of world.withDescendants(pricelist)) {
      if (listed.has(code)) continue
      listed.add(code)
      targets.lists.push({ pricelist: code, cause: code === pricelist ? cause : 'parent_changed' })
    }
  }
  const add = (pricelist: string, sku: string, areas: readonly string[]) => {
    for (const code of world.withDescendants(pricelist)) {
      let byArea = targets.skus.get(code)
      if (byArea === undefined) targets.skus.set(code, (byArea = new Map()))
      for (const area of areas) {
        let skus = byArea.get(area)
        if (skus === undefined) byArea.set(area, (skus = new Set()))
        skus.add(sku)
      }
    }
  }
  for (const source of sources) {
    if (source.kind === 'price') {
      add(source.pricelist, source.sku, world.areas)
      for (const [bundle, pricelist] of world.bundlesOf(source.sku)) add(pricelist, bundle, world.areas)
      continue
    }
    const { type, key } = source
    if (type === 'pricelist') moveList(key, listCause(catalog, key, at))
    else if (type === 'vat_rate') {
      const [area, vatClass] = splitKey(key) as [string, string]
      for (const sku of world.skusOfClass(area, vatClass)) for (const list of world.lists) add(list, sku, [area])
    } else if (type === 'article_taxclass') {
      const [sku, area] = splitKey(key) as [string, string]
      for (const list of world.lists) add(list, sku, [area])
    } else if (type === 'bundle_rule') {
      const [bundle, pricelist] = splitKey(key) as [string, string]
      add(pricelist, bundle, world.areas)
    } else if (type === 'article') {
      for (const list of world.lists) if (world.hasRules(list)) add(list, key, world.areas)
    } else if (type === 'fx_rate') {
      const quote = splitKey(key)[1]!
      for (const list of world.lists) if (world.convertsFrom(list, quote)) moveList(list, 'fx_published')
    } else if (type === 'rounding_profile') {
      for (const list of world.lists) if (world.roundedBy(list, key)) moveList(list, 'rule_changed')
    }
  }
  return targets
}

/** Why a list's new version (or window edge) at `at` may move its prices. */
function listCause(catalog: Catalog, code: string, at: number): EffectiveCause {
  const before = catalog.get('pricelist', code, at - 1)
  const after = catalog.get('pricelist', code, at)
  if (before === null || after === null) return 'list_window'
  if (before.parent_code !== after.parent_code) return 'parent_changed'
  if (windowEdge(before, at) || windowEdge(after, at)) return 'list_window'
  return 'rule_changed'
}

function windowEdge(list: Pricelist, at: number): boolean {
  return list.start_date === at || list.end_date === at
}

/** The catalogue as the moment's sources need it: lists, areas, descendants, mappings, bundles. */
class MomentWorld {
  /** Lists live the millisecond before or at the moment. */
  readonly lists: string[] = []
  readonly areas: string[] = []
  readonly #children = new Map<string, Set<string>>()
  #bundles: Map<string, [string, string][]> | null = null

  constructor(
    readonly catalog: Catalog,
    readonly at: number,
  ) {
    for (const code of catalog.keys('pricelist')) {
      const before = catalog.get('pricelist', code, at - 1)
      const after = catalog.get('pricelist', code, at)
      if (before === null && after === null) continue
      this.lists.push(code)
      for (const list of [before, after]) {
        if (list?.parent_code == null) continue
        let children = this.#children.get(list.parent_code)
        if (children === undefined) this.#children.set(list.parent_code, (children = new Set()))
        children.add(code)
      }
    }
    for (const code of catalog.keys('tax_area')) {
      if (catalog.get('tax_area', code, at - 1) !== null || catalog.get('tax_area', code, at) !== null)
        this.areas.push(code)
    }
  }

  /** The list and every list below it, before or at the moment. */
  withDescendants(code: string): string[] {
    const found = [code]
    const seen = new Set(found)
    for (let index = 0; index < found.length; index++) {
      for (const child of this.#children.get(found[index]!) ?? []) {
        if (seen.has(child)) continue
        seen.add(child)
        found.push(child)
      }
    }
    return found
  }

  /** [bundle SKU, pricelist] of every bundle rule with `sku` among its components. */
  bundlesOf(sku: string): readonly [string, string][] {
    if (this.#bundles === null) {
      this.#bundles = new Map()
      for (const key of this.catalog.keys('bundle_rule')) {
        const pair = splitKey(key) as [string, string]
        for (const at of [this.at - 1, this.at]) {
          for (const component of this.catalog.get('bundle_rule', key, at)?.components ?? []) {
            let bundles = this.#bundles.get(component.sku)
            if (bundles === undefined) this.#bundles.set(component.sku, (bundles = []))
            if (!bundles.includes(pair)) bundles.push(pair)
          }
        }
      }
    }
    return this.#bundles.get(sku) ?? []
  }

  /** SKUs mapped to `vatClass` in `area` before or at the moment. */
  skusOfClass(area: string, vatClass: string): string[] {
    const skus: string[] = []
    for (const key of this.catalog.keys('article_taxclass')) {
      const [sku, mappedArea] = splitKey(key)
      if (mappedArea !== area) continue
      const before = this.catalog.get('article_taxclass', key, this.at - 1)
      const after = this.catalog.get('article_taxclass', key, this.at)
      if (before?.vat_class_code === vatClass || after?.vat_class_code === vatClass) skus.push(sku)
    }
    return skus
  }

  hasRules(code: string): boolean {
    return (this.catalog.get('pricelist', code, this.at)?.price_rules.length ?? 0) > 0
  }

  /** Whether the list inherits across currencies with `quote` on either side (its prices convert). */
  convertsFrom(code: string, quote: string): boolean {
    const list = this.catalog.get('pricelist', code, this.at)
    if (list === null) return false
    let parent = list.parent_code
    for (let depth = 0; parent !== null && depth < pricelistDepthMax; depth++) {
      const ancestor = this.catalog.get('pricelist', parent, this.at)
      if (ancestor === null) return false
      if (
        ancestor.currency_code !== list.currency_code &&
        (ancestor.currency_code === quote || list.currency_code === quote)
      )
        return true
      parent = ancestor.parent_code
    }
    return false
  }

  /** Whether a rounding profile may round the list's single reads (its currency, or the global default). */
  roundedBy(code: string, profile: string): boolean {
    const list = this.catalog.get('pricelist', code, this.at)
    if (list === null) return false
    for (const at of [this.at - 1, this.at]) {
      const value = this.catalog.get('rounding_profile', profile, at)
      if (value !== null && (value.default_global || value.currency_code === list.currency_code)) return true
    }
    return false
  }
}

/**
 * The answers of `skus` (unique, in code order) on one list in one tax area that differ between the
 * millisecond before `at` and `at`: one change each, in SKU order. `cause` names a whole-list
 * move's cause; without it each change takes the cause its inputs show.
 */
export function changesOn(
  catalog: Catalog,
  prices: VersionReader,
  at: number,
  target: { readonly pricelist: string; readonly taxArea: string; readonly skus: readonly string[] },
  cause: EffectiveCause | null = null,
): EffectiveChange[] {
  const { pricelist, taxArea, skus } = target
  const list = catalog.get('pricelist', pricelist, at) ?? catalog.get('pricelist', pricelist, at - 1)
  if (list === null || catalog.get('tax_area', taxArea, at) === null) return []
  const entries = diffPrices(catalog, prices, {
    from: at - 1,
    to: at,
    taxArea,
    currency: list.currency_code,
    rounding: null,
    quantity: 1,
    pricelistsFrom: selected(catalog, prices, pricelist, taxArea, at - 1),
    pricelistsTo: selected(catalog, prices, pricelist, taxArea, at),
    skus,
  })
  return entries.map((entry) => {
    const own =
      cause === null && entry.causes.includes('own_version') ? ownVersion(prices, pricelist, entry.sku, at) : null
    return {
      sku: entry.sku,
      pricelist,
      taxArea,
      currency: list.currency_code,
      before: amountsOf(entry.from),
      after: amountsOf(entry.to),
      at,
      cause: cause ?? (own !== null ? own.cause : causeOf(entry.causes)),
      by: own?.by ?? 'system',
    }
  })
}

/** The list when it is live and active at `at` (as a single read of it needs), else none. */
function selected(catalog: Catalog, prices: PriceReader, pricelist: string, taxArea: string, at: number): string[] {
  const context = new PriceContext(catalog, prices, at, taxArea)
  const info = context.pricelist(pricelist)
  return info !== null && context.isActive(info) ? [pricelist] : []
}

function amountsOf(side: DiffSide): Amounts | null {
  return 'gross' in side ? { net: side.net, gross: side.gross } : null
}

/** The pair's own version starting at `at`: written to take effect at once, or scheduled before. */
function ownVersion(
  prices: VersionReader,
  pricelist: string,
  sku: string,
  at: number,
): { cause: EffectiveCause; by: string } | null {
  const version = prices.versions(pricelist, sku).find((candidate) => candidate.from === at)
  if (version === undefined) return null
  return { cause: version.writtenAt >= at ? 'written' : 'scheduled_start', by: version.writtenBy }
}

/** The event's cause from the diff's causes, the most specific first. */
function causeOf(causes: readonly DiffCause[]): EffectiveCause {
  if (causes.includes('own_version')) return 'scheduled_start'
  if (causes.includes('parent_version')) return 'parent_changed'
  if (causes.includes('vat_rate')) return 'vat_rate_started'
  if (causes.includes('vat_reclassification')) return 'reclassified'
  if (causes.includes('fx_rate')) return 'fx_published'
  if (causes.includes('list_window')) return 'list_window'
  return 'rule_changed'
}

/** Every SKU a list may answer: those with a price anywhere and every bundle's (as the diff pages them). */
export function pricedSkus(catalog: Catalog, prices: { sortedSkus(): readonly string[] }): readonly string[] {
  const withPrices = prices.sortedSkus()
  const bundleKeys = catalog.keys('bundle_rule')
  if (bundleKeys.length === 0) return withPrices
  const merged = new Set(withPrices)
  for (const key of bundleKeys) merged.add(splitKey(key)[0])
  if (merged.size === withPrices.length) return withPrices
  return [...merged].sort(compareCodes)
}
