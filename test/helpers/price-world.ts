/**
 * Random pricing worlds for property tests of the price query: a catalogue and a price book with
 * pricelists in two currencies and both VAT modes, chains of inheritance with and without
 * conversion, rules, a bundle, quantity breaks fixed and percent, fields, deletions and versions at
 * random instants; a SKU without a VAT class, one without any price, and one whose code needs
 * escaping in JSON. And random queries over them.
 * @module
 */
import fc from 'fast-check'
import { Catalog, compositeKey, type CatalogType, type EntityValues, type Pricelist } from '../../engine/catalog.js'
import { planFxRates } from '../../engine/fx.js'
import { PriceBook, type PriceVersion, type QuantityBreak } from '../../engine/prices.js'
import { compileProfile } from '../../engine/rounding.js'

/** S5 (escaped in JSON, beyond ASCII) has a VAT class like S0-S3. */
export const skus = ['S0', 'S1', 'S2', 'S3', 'S4', 'S5"\u00e9\u20ac']
/** S4 has no VAT class; S6 has no price anywhere (not in the price book). */
export const querySkus = [...skus, 'S6']
export const lists = ['P0', 'P1', 'P2', 'P3', 'P4']

const listArbitrary = fc.record({
  currency: fc.constantFrom('SEK', 'SEK', 'EUR'),
  mode: fc.constantFrom('NET', 'GROSS', null),
  /** Index of an earlier list to inherit from, or none. */
  parent: fc.option(fc.nat(3), { freq: 2 }),
  rule: fc.constantFrom(null, null, null, 'sales * 0.9', 'sales + 1'),
})

const breakArbitrary = fc.record({
  quantity: fc.constantFrom(5_000, 10_000, 20_000, 100_000),
  kind: fc.constantFrom(0, 1),
  value: fc.integer({ min: 1, max: 2_000_000 }),
})

const versionArbitrary = fc.record({
  from: fc.integer({ min: 0, max: 100 }),
  kind: fc.constantFrom('price', 'price', 'price', 'deleted', 'breaks', 'fields'),
  sales: fc.integer({ min: -50_000, max: 5_000_000 }),
  breaks: fc.array(breakArbitrary, { minLength: 1, maxLength: 3 }),
})

export const worldArbitrary = fc.record({
  lists: fc.tuple(...lists.map(() => listArbitrary)),
  eurRate: fc.option(fc.constantFrom('11.2345', '0.5', '10'), { freq: 4 }),
  vatRate: fc.constantFrom('25', '12.5', '0'),
  bundleOn: fc.option(fc.constantFrom(...lists), { freq: 3 }),
  prices: fc.array(
    fc.record({
      sku: fc.constantFrom(...skus),
      list: fc.constantFrom(...lists),
      versions: fc.array(versionArbitrary, { minLength: 1, maxLength: 3 }),
    }),
    { minLength: 5, maxLength: 40 },
  ),
})

export const queryArbitrary = fc.record({
  at: fc.integer({ min: 0, max: 110 }),
  quantity: fc.constantFrom(1, 1, 0.5, 2, 10),
  currency: fc.constantFrom('SEK', 'SEK', 'EUR'),
  rounding: fc.boolean(),
  lists: fc.subarray(lists, { minLength: 1 }),
  skus: fc.array(fc.constantFrom(...querySkus), { minLength: 1, maxLength: 12 }),
})

export type World = typeof worldArbitrary extends fc.Arbitrary<infer T> ? T : never

/** A pricelist's value: SEK, NET, no parent, window or rules, unless `fields` say otherwise. */
export function pricelistValue(fields: Partial<Pricelist> = {}): Pricelist {
  return {
    currency_code: 'SEK',
    vat_mode: 'NET',
    name: null,
    description: null,
    parent_code: null,
    start_date: null,
    end_date: null,
    metadata: {},
    price_rules: [],
    ...fields,
  }
}

/** One catalogue write, at instant 0 by `test`. */
export function put<K extends CatalogType>(catalog: Catalog, type: K, key: string, value: EntityValues[K]): void {
  const change = catalog.plan(type, key, value, 0, 0, 'test')
  if (change !== null) catalog.apply(change.type, change.key, change.versions)
}

/**
 * The prior-price tests' catalogue: SEK, SE with a 25% standard rate, SKU A mapped to it, RETAIL
 * (GROSS) and CHILD inheriting it.
 */
export function retailChildCatalog(): Catalog {
  const catalog = new Catalog()
  put(catalog, 'currency', 'SEK', { is_active: true, vat_precision: 2 })
  put(catalog, 'tax_area', 'SE', { name: 'SE', is_active: true, valid_from: null, valid_to: null })
  put(catalog, 'vat_class', 'standard', { name: null, description: null })
  put(catalog, 'vat_rate', compositeKey('SE', 'standard'), { rate: '25' })
  put(catalog, 'article_taxclass', compositeKey('A', 'SE'), { vat_class_code: 'standard' })
  put(catalog, 'pricelist', 'RETAIL', pricelistValue({ vat_mode: 'GROSS' }))
  put(catalog, 'pricelist', 'CHILD', pricelistValue({ vat_mode: null, parent_code: 'RETAIL' }))
  return catalog
}

export function build(world: World): { catalog: Catalog; book: PriceBook } {
  const catalog = new Catalog()
  put(catalog, 'currency', 'SEK', { is_active: true, vat_precision: 2 })
  put(catalog, 'currency', 'EUR', { is_active: true, vat_precision: 2 })
  if (world.eurRate !== null)
    for (const change of planFxRates(catalog, 'SEK', [{ from: 0, rate: world.eurRate }], 0, 'test'))
      catalog.apply(change.type, change.key, change.versions)
  put(catalog, 'tax_area', 'SE', { name: 'SE', is_active: true, valid_from: null, valid_to: null })
  put(catalog, 'vat_class', 'standard', { name: 'standard', description: null })
  put(catalog, 'vat_rate', compositeKey('SE', 'standard'), { rate: world.vatRate })
  for (const sku of skus)
    if (sku !== 'S4') put(catalog, 'article_taxclass', compositeKey(sku, 'SE'), { vat_class_code: 'standard' })
  for (const [index, code] of lists.entries()) {
    const spec = world.lists[index]!
    const parent = spec.parent !== null && spec.parent < index ? lists[spec.parent]! : null
    const pricelist: Pricelist = {
      currency_code: spec.currency,
      vat_mode: parent === null ? (spec.mode ?? 'NET') : spec.mode,
      name: code,
      description: null,
      parent_code: parent,
      start_date: null,
      end_date: null,
      metadata: {},
      price_rules:
        spec.rule === null
          ? []
          : [{ code: null, description: null, expression: spec.rule, filter: null, updated_by: null }],
    }
    put(catalog, 'pricelist', code, pricelist)
  }
  if (world.bundleOn !== null) {
    put(catalog, 'bundle_rule', compositeKey('S3', world.bundleOn), {
      method: 'SUM_OF_PARTS',
      discount_type: 'PERCENTAGE',
      discount_value: '10',
      fixed_price: null,
      components: [
        { sku: 'S0', quantity: 2 },
        { sku: 'S1', quantity: 1 },
      ],
    })
  }
  const book = new PriceBook()
  for (const write of world.prices) book.apply(write.list, write.sku, versionsOf(write.versions))
  return { catalog, book }
}

function versionsOf(specs: World['prices'][number]['versions']): PriceVersion[] {
  const byFrom = new Map<number, World['prices'][number]['versions'][number]>()
  for (const spec of specs) byFrom.set(spec.from, spec)
  return [...byFrom.values()]
    .sort((left, right) => left.from - right.from)
    .map((spec) => ({
      from: spec.from,
      content:
        spec.kind === 'deleted'
          ? null
          : {
              sales: spec.sales,
              fields: spec.kind === 'fields' ? { cost: 1_234 } : null,
              breaks:
                spec.kind === 'breaks'
                  ? spec.breaks.map(
                      (entry): QuantityBreak => ({
                        quantity: entry.quantity,
                        kind: entry.kind as 0 | 1,
                        value: entry.value,
                      }),
                    )
                  : null,
            },
      writtenAt: 0,
      writtenBy: 'test',
    }))
}

/** Prices from 0 up to the nearest 0.50 (half up). */
export const profileDefinition: EntityValues['rounding_profile'] = {
  currency_code: null,
  default_for_currency: false,
  default_global: false,
  tier_rules: [{ from: '0', to: null, increment: '0.5', mode: 'HALF_UP', offset: '0' }],
}
export const profile = compileProfile(profileDefinition)
