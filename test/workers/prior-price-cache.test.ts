/**
 * The prior prices a thread keeps (workers/prior-price-cache.ts) after writes: for random pricing
 * worlds (test/helpers/price-world.ts: inheritance, rules, a bundle, breaks, FX) with one list whose
 * rule reads the article, every (SKU, list) prior price is kept, then one random write lands (a
 * price of one SKU, an article, a VAT mapping, a VAT rate, a pricelist), and every prior price asked
 * again must equal the one computed afresh from the history (engine/prior-price/prior-price.ts).
 * What a write did not touch must still be served from the cache: a price write to one SKU keeps
 * the prior prices of SKUs that do not read it, and one that touches a record every SKU reads
 * keeps none. Then a replica (no per-SKU change counts) keeps nothing across a write.
 */
import fc from 'fast-check'
import t from 'tap'
import { Catalog, compositeKey, type CatalogType, type EntityValues } from '../../engine/catalog.js'
import type { AnswerOptions } from '../../engine/pipeline.js'
import { PriceBook, type PriceVersion } from '../../engine/prices.js'
import { priorPrice } from '../../engine/prior-price/prior-price.js'
import {
  cachedPrior,
  priorLookup,
  priorPriceCacheCounts,
  priorPriceJson,
  priorText,
} from '../../workers/prior-price-cache.js'
import { build, lists, querySkus, worldArbitrary, type World } from '../helpers/price-world.js'

const seed =
  process.env['PROPERTY_SEED'] === undefined ? Date.now() % 2_147_483_647 : Number(process.env['PROPERTY_SEED'])

const options: AnswerOptions = { currency: 'SEK', rounding: null, quantity: 1 }
const days = 30
/**
 * The world's instants are 0 to 100 ms: a window of 30 days holds the whole history. A prior price
 * is kept for the last instant asked (its validity), so each run asks at one.
 */
const instantArbitrary = fc.constantFrom(5, 50, 105)

function put<K extends CatalogType>(catalog: Catalog, type: K, key: string, value: EntityValues[K], from = 0): void {
  const change = catalog.plan(type, key, value, from, 0, 'test')
  if (change !== null) catalog.apply(change.type, change.key, change.versions)
}

const writeArbitrary = fc.oneof(
  fc.record({
    kind: fc.constant('price' as const),
    sku: fc.constantFrom(...querySkus),
    list: fc.constantFrom(...lists),
    from: fc.integer({ min: 0, max: 100 }),
    sales: fc.integer({ min: 1, max: 5_000_000 }),
  }),
  fc.record({ kind: fc.constant('article' as const), sku: fc.constantFrom(...querySkus), food: fc.boolean() }),
  fc.record({ kind: fc.constant('mapping' as const), sku: fc.constantFrom(...querySkus) }),
  fc.record({ kind: fc.constant('rate' as const), rate: fc.constantFrom('6', '30') }),
  fc.record({ kind: fc.constant('pricelist' as const), list: fc.constantFrom(...lists) }),
)
type Write = typeof writeArbitrary extends fc.Arbitrary<infer T> ? T : never

/** Five GROSS lists in SEK, none inheriting, without rules. */
const plainLists = lists.map(() => ({
  currency: 'SEK',
  mode: 'GROSS',
  parent: null,
  rule: null,
})) as unknown as World['lists']

/** The world, with a reduced class and a rule on P4 that halves food (it reads the article). */
function world(spec: Parameters<typeof build>[0]): { catalog: Catalog; book: PriceBook } {
  const { catalog, book } = build(spec)
  put(catalog, 'vat_class', 'reduced', { name: 'reduced', description: null })
  put(catalog, 'vat_rate', compositeKey('SE', 'reduced'), { rate: '12' })
  const p4 = catalog.get('pricelist', 'P4', 0)!
  put(catalog, 'pricelist', 'P4', {
    ...p4,
    price_rules: [
      {
        code: 'food',
        description: null,
        expression: 'sales * 0.5',
        filter: 'article.type == "food"',
        updated_by: null,
      },
    ],
  })
  for (const sku of querySkus)
    put(catalog, 'article', sku, { name: sku, type: sku === 'S0' ? 'food' : 'tool', metadata: {} })
  return { catalog, book }
}

/** Lands the write at instant 20 (a scheduled version within the histories). */
function land(catalog: Catalog, book: PriceBook, write: Write): void {
  if (write.kind === 'price') {
    const kept = book.versions(write.list, write.sku).filter((version) => version.from !== write.from)
    const version: PriceVersion = {
      from: write.from,
      content: { sales: write.sales, fields: null, breaks: null },
      writtenAt: 0,
      writtenBy: 'test',
    }
    book.apply(
      write.list,
      write.sku,
      [...kept, version].sort((left, right) => left.from - right.from),
    )
  } else if (write.kind === 'article') {
    put(catalog, 'article', write.sku, { name: write.sku, type: write.food ? 'food' : 'tool', metadata: {} }, 20)
  } else if (write.kind === 'mapping') {
    put(catalog, 'article_taxclass', compositeKey(write.sku, 'SE'), { vat_class_code: 'reduced' }, 20)
  } else if (write.kind === 'rate') {
    put(catalog, 'vat_rate', compositeKey('SE', 'standard'), { rate: write.rate }, 20)
  } else {
    const value = catalog.get('pricelist', write.list, 0)!
    put(catalog, 'pricelist', write.list, { ...value, name: `${write.list} renamed` }, 20)
  }
}

/** Every (SKU, list) prior price at `at` through the cache: its text, and whether it was kept. */
function askAll(catalog: Catalog, book: PriceBook, at: number): { text: string; kept: boolean; sku: string }[] {
  const answers = []
  const lookup = priorLookup(catalog, book, { taxArea: 'SE', options, at, days, roundingCode: null })
  for (const sku of querySkus)
    for (const list of lists) {
      const hits = priorPriceCacheCounts.hits
      const text = priorText(lookup, cachedPrior(lookup, sku, list))
      answers.push({ text, kept: priorPriceCacheCounts.hits > hits, sku })
    }
  return answers
}

/** The same prior prices computed afresh. */
function fresh(catalog: Catalog, book: PriceBook, at: number): string[] {
  const texts = []
  for (const sku of querySkus)
    for (const pricelist of lists) {
      const prior = priorPrice(catalog, book, { sku, pricelist, taxArea: 'SE', options, at, days })
      texts.push(`,"prior_price":${priorPriceJson(prior)}`)
    }
  return texts
}

t.test('after any write, what is served equals what is computed afresh; the rest stays kept', async (t) => {
  const keptAfter = { price: 0, shared: 0 }
  const asked = { price: 0, shared: 0 }
  fc.assert(
    fc.property(worldArbitrary, writeArbitrary, instantArbitrary, (spec, write, at) => {
      const { catalog, book } = world(spec)
      const before = askAll(catalog, book, at)
      t.same(
        before.map((answer) => answer.text),
        fresh(catalog, book, at),
        'first asked: as computed',
      )
      const again = askAll(catalog, book, at)
      if (!again.every((answer) => answer.kept)) t.fail('asked again before a write: all kept')
      land(catalog, book, write)
      const after = askAll(catalog, book, at)
      t.same(
        after.map((answer) => answer.text),
        fresh(catalog, book, at),
        `after the write (${JSON.stringify(write)}): as computed afresh`,
      )
      if (write.kind === 'price') {
        // SKUs that do not read the written one (the bundle S3 reads S0 and S1).
        const readers = new Set([write.sku, ...(['S0', 'S1'].includes(write.sku) ? ['S3'] : [])])
        const others = after.filter((answer) => !readers.has(answer.sku))
        asked.price += others.length
        keptAfter.price += others.filter((answer) => answer.kept).length
        if (after.some((answer) => answer.sku === write.sku && answer.kept))
          t.fail(`the written SKU's prior prices are computed again (${JSON.stringify(write)})`)
      } else if (write.kind === 'rate' || write.kind === 'pricelist') {
        asked.shared += after.length
        keptAfter.shared += after.filter((answer) => answer.kept).length
      } else if (after.some((answer) => answer.sku === write.sku && answer.kept && write.kind === 'mapping')) {
        t.fail(`a SKU's VAT mapping written: its prior prices are computed again (${JSON.stringify(write)})`)
      }
    }),
    { seed, numRuns: 120 },
  )
  t.ok(asked.price > 0, `price writes: ${asked.price} prior prices of other SKUs asked`)
  t.equal(keptAfter.price, asked.price, `price writes: every other SKU's prior price stayed kept (seed ${seed})`)
  t.equal(keptAfter.shared, 0, `writes every SKU reads (VAT rate, pricelist): none stayed kept (seed ${seed})`)
})

t.test("an article read by a list's rule: its SKU's prior prices there are computed again", async (t) => {
  const { catalog: built, book } = world({
    lists: plainLists,
    eurRate: null,
    vatRate: '25',
    bundleOn: null,
    prices: [
      { sku: 'S0', list: 'P4', versions: [{ from: 0, kind: 'price', sales: 2_000_000, breaks: [] }] },
      { sku: 'S1', list: 'P4', versions: [{ from: 0, kind: 'price', sales: 1_000_000, breaks: [] }] },
    ],
  })
  // S0 is food on P4 from the start: its price halved by the rule. From 20 it is a tool: 200 again,
  // which is a rise, so no reduction is in force at 50; at 5 none either (the price never fell).
  const ask = (sku: string, at: number) => {
    const lookup = priorLookup(built, book, { taxArea: 'SE', options, at, days, roundingCode: null })
    return priorText(lookup, cachedPrior(lookup, sku, 'P4'))
  }
  t.equal(ask('S0', 50), ',"prior_price":null')
  t.equal(ask('S1', 50), ',"prior_price":null', 'S1: 100 all along')
  put(built, 'article', 'S0', { name: 'S0', type: 'tool', metadata: {} }, 20)
  put(built, 'article', 'S1', { name: 'S1', type: 'food', metadata: {} }, 20)
  const misses = priorPriceCacheCounts.misses
  // S1 became food at 20: 100 -> 50, a reduction from 20 whose prior price is 100 (gross, 25% VAT).
  t.equal(
    ask('S1', 50),
    ',"prior_price":{"net":80,"gross":100,"in_force_at":"1970-01-01T00:00:00Z","reduction_started_at":"1970-01-01T00:00:00.020Z"}',
  )
  t.equal(priorPriceCacheCounts.misses, misses + 1, 'computed again after its article was written')
  t.equal(ask('S0', 50), ',"prior_price":null', 'S0: from 100 up to 200, no reduction')
})

t.test('a reader without per-SKU change counts (a replica) keeps nothing across a write', async (t) => {
  const { catalog, book } = world({
    lists: plainLists,
    eurRate: null,
    vatRate: '25',
    bundleOn: null,
    prices: [{ sku: 'S1', list: 'P0', versions: [{ from: 0, kind: 'price', sales: 1_000_000, breaks: [] }] }],
  })
  // A view of the book without skuChangedAt, as a replica is.
  const reader = new Proxy(book, {
    get: (target, name) => {
      if (name === 'skuChangedAt') return undefined
      const value = Reflect.get(target, name, target)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
  const ask = () =>
    cachedPrior(priorLookup(catalog, reader, { taxArea: 'SE', options, at: 50, days, roundingCode: null }), 'S1', 'P0')
  ask()
  const hits = priorPriceCacheCounts.hits
  ask()
  t.equal(priorPriceCacheCounts.hits, hits + 1, 'kept while nothing is written')
  book.apply('P0', 'S2', [{ from: 0, content: { sales: 5, fields: null, breaks: null }, writtenAt: 0, writtenBy: 't' }])
  const misses = priorPriceCacheCounts.misses
  ask()
  t.equal(priorPriceCacheCounts.misses, misses + 1, 'another SKU written: computed again all the same')
})
