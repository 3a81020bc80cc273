/**
 * The query's SKU-major rows (engine/current-rows.ts) answer exactly what the runs answer: random
 * sequences of price writes (versions at random instants, deletions, quantity breaks), compactions
 * of the book and queries at random instants (forward, back in time, and after writes) compare
 * `queryPrices` on the price book (the owner's rows), on a replica kept across the writes as a
 * worker keeps it (its own rows, emptied when the tenant's change count or the columns' generation
 * moves) and on a reader of the runs alone.
 */
import fc from 'fast-check'
import t from 'tap'
import { Catalog, compositeKey, type CatalogType, type EntityValues, type Pricelist } from '../../engine/catalog.js'
import { PriceContext, type AnswerOptions } from '../../engine/pipeline.js'
import { PriceReplica } from '../../engine/price-replica.js'
import { PriceBook, type PriceVersion } from '../../engine/prices.js'
import { queryPrices } from '../../engine/query.js'
import { pricelistValue } from '../helpers/price-world.js'

const seed =
  process.env['PROPERTY_SEED'] === undefined ? Date.now() % 2_147_483_647 : Number(process.env['PROPERTY_SEED'])
const skus = ['S0', 'S1', 'S2', 'S3', 'S4']
const lists = ['P0', 'P1', 'P2', 'P3']

function put<K extends CatalogType>(catalog: Catalog, type: K, key: string, value: EntityValues[K]): void {
  const change = catalog.plan(type, key, value, 0, 0, 'test')
  if (change !== null) catalog.apply(change.type, change.key, change.versions)
}

function world(): Catalog {
  const catalog = new Catalog()
  put(catalog, 'currency', 'SEK', { is_active: true, vat_precision: 2 })
  put(catalog, 'tax_area', 'SE', { name: 'SE', is_active: true, valid_from: null, valid_to: null })
  put(catalog, 'vat_class', 'standard', { name: 'standard', description: null })
  put(catalog, 'vat_rate', compositeKey('SE', 'standard'), { rate: '25' })
  for (const sku of skus) put(catalog, 'article_taxclass', compositeKey(sku, 'SE'), { vat_class_code: 'standard' })
  for (const [index, code] of lists.entries()) {
    const pricelist: Pricelist = pricelistValue({ vat_mode: index % 2 === 0 ? 'NET' : 'GROSS', name: code })
    put(catalog, 'pricelist', code, pricelist)
  }
  return catalog
}

const versionArbitrary = fc.record({
  from: fc.integer({ min: 0, max: 100 }),
  kind: fc.constantFrom('price', 'price', 'price', 'deleted', 'breaks'),
  sales: fc.integer({ min: 1, max: 1_000_000 }),
})
const operationArbitrary = fc.oneof(
  fc.record({
    kind: fc.constant('write' as const),
    sku: fc.constantFrom(...skus),
    list: fc.constantFrom(...lists),
    versions: fc.array(versionArbitrary, { minLength: 1, maxLength: 4 }),
  }),
  fc.record({ kind: fc.constant('query' as const), at: fc.integer({ min: 0, max: 110 }) }),
  fc.record({ kind: fc.constant('compact' as const) }),
)

function versionsOf(specs: { from: number; kind: string; sales: number }[]): PriceVersion[] {
  const byFrom = new Map<number, { from: number; kind: string; sales: number }>()
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
              fields: null,
              breaks:
                spec.kind === 'breaks'
                  ? [{ quantity: spec.sales % 2 === 0 ? 5_000 : 100_000, kind: 1, value: 900_000 }]
                  : null,
            },
      writtenAt: 0,
      writtenBy: 'test',
    }))
}

/** A replica that reads the runs only (rows off, as for a book past the rows' memory bound). */
class RunsOnly extends PriceReplica {
  override currentRow(): number {
    return -1
  }
}

t.test('rows and runs answer the same queries, through writes and at any instant', async (t) => {
  const options: AnswerOptions = { currency: 'SEK', rounding: null, quantity: 1 }
  let queries = 0
  let fromRows = 0
  fc.assert(
    fc.property(fc.array(operationArbitrary, { minLength: 1, maxLength: 40 }), (operations) => {
      const catalog = world()
      const book = new PriceBook()
      // A worker's replica lives across writes: its own rows must not outlive them.
      const replica = new PriceReplica(book.sharedColumns(), book.dictionaryDelta(0, 0))
      for (const operation of operations) {
        if (operation.kind === 'write') {
          book.apply(operation.list, operation.sku, versionsOf(operation.versions))
          continue
        }
        if (operation.kind === 'compact') {
          // Moves every run and extras block (replaced ones are dropped): cells that hold an
          // extras cursor must not outlive it.
          book.compactToFit()
          continue
        }
        // What a worker does before a task: the dictionary growth and the columns' generation.
        replica.append(book.dictionaryDelta(replica.sizes.pricelists, replica.sizes.fields))
        replica.setColumns(book.sharedColumns())
        const runsOnly = new RunsOnly(book.sharedColumns(), book.dictionaryDelta(0, 0))
        const query = { skus, pricelists: lists, options, sortOrder: null }
        const withRows = JSON.stringify(queryPrices(new PriceContext(catalog, book, operation.at, 'SE'), query))
        const withReplicaRows = JSON.stringify(
          queryPrices(new PriceContext(catalog, replica, operation.at, 'SE'), query),
        )
        const withRuns = JSON.stringify(queryPrices(new PriceContext(catalog, runsOnly, operation.at, 'SE'), query))
        if (withRows !== withRuns) throw new Error(`at ${operation.at}: rows ${withRows}\nruns ${withRuns}`)
        if (withReplicaRows !== withRuns)
          throw new Error(`at ${operation.at}: replica rows ${withReplicaRows}\nruns ${withRuns}`)
        queries++
        if (book.skuId('S0') >= 0 && book.currentRow(book.skuId('S0'), operation.at) >= 0) fromRows++
      }
    }),
    { seed, numRuns: 500 },
  )
  t.ok(queries > 800, `${queries} queries compared (seed ${seed})`)
  t.ok(fromRows > 0, 'rows were in use')
})

t.test("a replica's rows do not outlive a compaction of the columns (extras cursors move)", async (t) => {
  const options: AnswerOptions = { currency: 'SEK', rounding: null, quantity: 1 }
  const catalog = world()
  const book = new PriceBook()
  const breaks = (sales: number) => [{ from: 0, kind: 'breaks', sales }]
  // S0's extras block becomes garbage when S0 is written again without breaks; S1's block comes
  // after it, and moves to the front when the book compacts.
  book.apply('P0', 'S0', versionsOf(breaks(10_000)))
  book.apply('P0', 'S1', versionsOf(breaks(20_000)))
  book.apply('P0', 'S0', versionsOf([{ from: 0, kind: 'price', sales: 30_000 }]))
  const replica = new PriceReplica(book.sharedColumns(), book.dictionaryDelta(0, 0))
  const query = { skus: ['S1'], pricelists: ['P0'], options, sortOrder: null }
  const before = queryPrices(new PriceContext(catalog, replica, 5, 'SE'), query)
  t.equal(before.items[0]?.net, 18_000, 'S1 from its row (its 90% break, from quantity 0.5)')
  const generation = book.generation
  book.compactToFit()
  t.not(book.generation, generation, 'the compaction made a new generation')
  replica.setColumns(book.sharedColumns())
  const after = queryPrices(new PriceContext(catalog, replica, 5, 'SE'), query)
  t.equal(after.items[0]?.net, 18_000, 'S1 still answers its own price after its block moved')
})
