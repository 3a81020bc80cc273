/**
 * The price query's fast path (engine/query.ts: rows or runs read as cells, breaks selected in
 * place, inheritance followed through unchanged ancestors, NET candidates compared by sales) answers
 * exactly what the full pipeline answers: for random worlds (pricelists in two currencies and both
 * VAT modes, chains of inheritance with and without conversion, rules, a bundle, quantity breaks
 * fixed and percent, fields, deletions, versions at random instants, a SKU without a VAT class and
 * one without any price) and random queries (instant, quantity, currency, rounding, a subset of the
 * pricelists, duplicate and unknown SKUs), `queryPrices` renders the same bytes as `resolveBase` +
 * `priceItem` over every pricelist with the lowest gross kept (ties to the first code).
 * Both the price book (rows) and a replica of it (runs) are compared.
 */
import fc from 'fast-check'
import t from 'tap'
import { Catalog, compositeKey, type CatalogType, type EntityValues, type Pricelist } from '../../engine/catalog.js'
import { planFxRates } from '../../engine/fx.js'
import { PriceContext, priceItem, resolveBase, Status, statusReasons, type AnswerOptions, type PricedItem } from '../../engine/pipeline.js'
import { PriceReplica } from '../../engine/price-replica.js'
import { PriceBook, type PriceVersion, type QuantityBreak } from '../../engine/prices.js'
import { queryPrices, type QueryResult } from '../../engine/query.js'
import { compileProfile } from '../../engine/rounding.js'
import { answerJson } from '../../workers/render.js'

const seed = process.env['PROPERTY_SEED'] === undefined ? Date.now() % 2_147_483_647 : Number(process.env['PROPERTY_SEED'])
const skus = ['S0', 'S1', 'S2', 'S3', 'S4']
/** S4 has no VAT class; S5 has no price anywhere (not in the price book). */
const querySkus = [...skus, 'S5']
const lists = ['P0', 'P1', 'P2', 'P3', 'P4']

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

const worldArbitrary = fc.record({
  lists: fc.tuple(...lists.map(() => listArbitrary)),
  eurRate: fc.option(fc.constantFrom('11.2345', '0.5', '10'), { freq: 4 }),
  vatRate: fc.constantFrom('25', '12.5', '0'),
  bundleOn: fc.option(fc.constantFrom(...lists), { freq: 3 }),
  prices: fc.array(
    fc.record({ sku: fc.constantFrom(...skus), list: fc.constantFrom(...lists), versions: fc.array(versionArbitrary, { minLength: 1, maxLength: 3 }) }),
    { minLength: 5, maxLength: 40 },
  ),
})

const queryArbitrary = fc.record({
  at: fc.integer({ min: 0, max: 110 }),
  quantity: fc.constantFrom(1, 1, 0.5, 2, 10),
  currency: fc.constantFrom('SEK', 'SEK', 'EUR'),
  rounding: fc.boolean(),
  lists: fc.subarray(lists, { minLength: 1 }),
  skus: fc.array(fc.constantFrom(...querySkus), { minLength: 1, maxLength: 12 }),
})

type World = typeof worldArbitrary extends fc.Arbitrary<infer T> ? T : never

function put<K extends CatalogType>(catalog: Catalog, type: K, key: string, value: EntityValues[K]): void {
  const change = catalog.plan(type, key, value, 0, 0, 'test')
  if (change !== null) catalog.apply(change.type, change.key, change.versions)
}

function build(world: World): { catalog: Catalog; book: PriceBook } {
  const catalog = new Catalog()
  put(catalog, 'currency', 'SEK', { is_active: true, vat_precision: 2 })
  put(catalog, 'currency', 'EUR', { is_active: true, vat_precision: 2 })
  if (world.eurRate !== null) for (const change of planFxRates(catalog, 'SEK', [{ from: 0, rate: world.eurRate }], 0, 'test')) catalog.apply(change.type, change.key, change.versions)
  put(catalog, 'tax_area', 'SE', { name: 'SE', is_active: true, valid_from: null, valid_to: null })
  put(catalog, 'vat_class', 'standard', { name: 'standard', description: null })
  put(catalog, 'vat_rate', compositeKey('SE', 'standard'), { rate: world.vatRate })
  for (const sku of skus.slice(0, 4)) put(catalog, 'article_taxclass', compositeKey(sku, 'SE'), { vat_class_code: 'standard' })
  for (const [index, code] of lists.entries()) {
    const spec = world.lists[index]!
    const parent = spec.parent !== null && spec.parent < index ? lists[spec.parent]! : null
    const pricelist: Pricelist = {
      currency_code: spec.currency, vat_mode: parent === null ? (spec.mode ?? 'NET') : spec.mode, name: code, description: null, parent_code: parent,
      start_date: null, end_date: null, metadata: {},
      price_rules: spec.rule === null ? [] : [{ code: null, description: null, expression: spec.rule, filter: null, updated_by: null }],
    }
    put(catalog, 'pricelist', code, pricelist)
  }
  if (world.bundleOn !== null) {
    put(catalog, 'bundle_rule', compositeKey('S3', world.bundleOn), {
      method: 'SUM_OF_PARTS', discount_type: 'PERCENTAGE', discount_value: '10', fixed_price: null, components: [{ sku: 'S0', quantity: 2 }, { sku: 'S1', quantity: 1 }],
    })
  }
  const book = new PriceBook()
  for (const write of world.prices) book.apply(write.list, write.sku, versionsOf(write.versions))
  return { catalog, book }
}

function versionsOf(specs: World['prices'][number]['versions']): PriceVersion[] {
  const byFrom = new Map<number, World['prices'][number]['versions'][number]>()
  for (const spec of specs) byFrom.set(spec.from, spec)
  return [...byFrom.values()].sort((left, right) => left.from - right.from).map((spec) => ({
    from: spec.from,
    content: spec.kind === 'deleted' ? null : {
      sales: spec.sales,
      fields: spec.kind === 'fields' ? { cost: 1_234 } : null,
      breaks: spec.kind === 'breaks' ? spec.breaks.map((entry): QuantityBreak => ({ quantity: entry.quantity, kind: entry.kind as 0 | 1, value: entry.value })) : null,
    },
    writtenAt: 0,
    writtenBy: 'test',
  }))
}

/** The full pipeline over every pricelist, lowest gross first, ties to the first code. */
function reference(context: PriceContext, skusAsked: readonly string[], codes: readonly string[], options: AnswerOptions): QueryResult {
  const items: PricedItem[] = []
  const unavailable: QueryResult['unavailable'] = []
  for (const sku of new Set(skusAsked)) {
    let status: Status = Status.noPrice
    let best: PricedItem | null = null
    for (const code of codes) {
      const resolved = resolveBase(context, code, sku)
      const priced = typeof resolved === 'number' ? resolved : priceItem(context, resolved, sku, options, code)
      if (typeof priced === 'number') {
        if (priced > status) status = priced
      } else if (best === null || priced.gross < best.gross) {
        best = priced
      }
    }
    if (best === null) unavailable.push({ sku, reason: statusReasons[status] })
    else items.push(best)
  }
  return { items, unavailable }
}

/** Prices from 0 up to the nearest 0.50 (half up). */
const profile = compileProfile({
  currency_code: null, default_for_currency: false, default_global: false,
  tier_rules: [{ from: '0', to: null, increment: '0.5', mode: 'HALF_UP', offset: '0' }],
})

t.test('the fast path answers what the full pipeline answers, on the book and on a replica', async (t) => {
  let queries = 0
  let answered = 0
  let inherited = 0
  let withBreaks = 0
  fc.assert(
    fc.property(worldArbitrary, fc.array(queryArbitrary, { minLength: 1, maxLength: 6 }), (world, asked) => {
      const { catalog, book } = build(world)
      const replica = new PriceReplica(book.sharedColumns(), book.dictionaryDelta(0, 0))
      for (const query of asked) {
        const options: AnswerOptions = { currency: query.currency, rounding: query.rounding ? profile : null, quantity: query.quantity }
        const codes = [...query.lists].sort()
        const expected = reference(new PriceContext(catalog, book, query.at, 'SE'), query.skus, codes, options)
        const want = answerJson(expected.items, expected.unavailable)
        for (const reader of [book, replica]) {
          const got = queryPrices(new PriceContext(catalog, reader, query.at, 'SE'), { skus: query.skus, pricelists: codes, options, sortOrder: null })
          const text = answerJson(got.items, got.unavailable)
          if (text !== want) throw new Error(`${reader === book ? 'rows' : 'runs'} at ${query.at}, quantity ${query.quantity}, ${query.currency}, lists ${codes.join(',')}:\n got  ${text}\n want ${want}`)
        }
        queries++
        answered += expected.items.length
        inherited += expected.items.filter((item) => item.inherited).length
        withBreaks += expected.items.filter((item) => item.breaks.length > 0).length
      }
    }),
    { seed, numRuns: 1_500 },
  )
  t.ok(queries > 3_000, `${queries} queries compared (seed ${seed})`)
  t.ok(answered > queries, `${answered} priced items among them`)
  t.ok(inherited > 100, `${inherited} of them inherited`)
  t.ok(withBreaks > 100, `${withBreaks} of them with quantity breaks`)
})
