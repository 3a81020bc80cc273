/**
 * The dry run's price book (engine/simulate/price-overlay.ts) answers every lookup as a book that
 * holds the written pairs would: for random worlds (test/helpers/price-world.ts) split at a random
 * write, the first part in a book and the rest written through the overlay (pairs the book holds
 * with other versions, pairs and SKUs and pricelists it has never seen), the price query over the
 * overlay renders the same bytes as over the whole world's book, and the book under the overlay is
 * left as it was.
 */
import fc from 'fast-check'
import t from 'tap'
import { PriceContext, type AnswerOptions } from '../../engine/pipeline.js'
import { PriceBook } from '../../engine/prices.js'
import { queryPrices } from '../../engine/query.js'
import { PriceOverlay } from '../../engine/simulate/price-overlay.js'
import { answerJson } from '../../workers/render.js'
import { build, profile, queryArbitrary, worldArbitrary } from '../helpers/price-world.js'

const seed =
  process.env['PROPERTY_SEED'] === undefined ? Date.now() % 2_147_483_647 : Number(process.env['PROPERTY_SEED'])

/** Every pair's versions, as text: what must not change under an overlay. */
function contents(book: PriceBook): string {
  const pairs: string[] = []
  for (const pricelist of book.pricelistCodes)
    for (const sku of book.skuCodes) pairs.push(JSON.stringify([pricelist, sku, book.versions(pricelist, sku)]))
  return pairs.join('\n')
}

/** A version list that is not the world's: one plain price from the start. */
const stale = [{ from: 0, content: { sales: 777_700, fields: null, breaks: null }, writtenAt: 0, writtenBy: 'stale' }]

t.test('the query over an overlay answers what the whole book answers', async (t) => {
  let queries = 0
  let overlaid = 0
  let answered = 0
  fc.assert(
    fc.property(
      worldArbitrary,
      fc.nat(40),
      fc.array(queryArbitrary, { minLength: 1, maxLength: 4 }),
      (world, split, asked) => {
        const { catalog, book: whole } = build(world)
        const cut = Math.min(split, world.prices.length)
        const book = new PriceBook()
        for (const write of world.prices.slice(0, cut)) {
          // The book holds the first part's pairs with other versions than the world's: the overlay replaces them.
          book.apply(write.list, write.sku, stale)
        }
        const before = contents(book)
        const livePairs = book.livePairCount
        const overlay = new PriceOverlay(book)
        for (const write of world.prices.slice(cut))
          overlay.apply(write.list, write.sku, whole.versions(write.list, write.sku))
        // The pairs only the first part wrote get the world's versions too (the overlay then holds every pair).
        for (const write of world.prices.slice(0, cut))
          overlay.apply(write.list, write.sku, whole.versions(write.list, write.sku))
        if (overlay.livePairCount !== whole.livePairCount)
          throw new Error(`live pairs ${overlay.livePairCount}, want ${whole.livePairCount}`)
        for (const query of asked) {
          const options: AnswerOptions = {
            currency: query.currency,
            rounding: query.rounding ? profile : null,
            quantity: query.quantity,
          }
          const request = { skus: query.skus, pricelists: [...query.lists].sort(), options, sortOrder: null }
          const want = queryPrices(new PriceContext(catalog, whole, query.at, 'SE'), request)
          const got = queryPrices(new PriceContext(catalog, overlay, query.at, 'SE'), request)
          const [wantText, gotText] = [answerJson(want.items, want.unavailable), answerJson(got.items, got.unavailable)]
          if (gotText !== wantText) throw new Error(`at ${query.at}:\n got  ${gotText}\n want ${wantText}`)
          queries++
          answered += want.items.length
        }
        overlaid += overlay.pairCount
        if (contents(book) !== before || book.livePairCount !== livePairs)
          throw new Error('the book under the overlay changed')
      },
    ),
    { seed, numRuns: 400 },
  )
  t.ok(queries > 800, `${queries} queries compared (seed ${seed})`)
  t.ok(answered > queries / 2, `${answered} priced items among them`)
  t.ok(overlaid > 2_000, `${overlaid} pairs overlaid`)
})

t.test('a pair the overlay deletes and a SKU it adds count in its live pairs, not the book', async (t) => {
  const book = new PriceBook()
  const price = (sales: number) => ({ sales, fields: null, breaks: null })
  book.apply('L', 'A', [{ from: 0, content: price(10_000), writtenAt: 0, writtenBy: 'test' }])
  const overlay = new PriceOverlay(book)
  overlay.apply('L', 'A', [
    { from: 0, content: price(10_000), writtenAt: 0, writtenBy: 'test' },
    { from: 5, content: null, writtenAt: 5, writtenBy: 'test' },
  ])
  overlay.apply('NEW', 'B', [{ from: 0, content: price(20_000), writtenAt: 0, writtenBy: 'test' }])
  t.equal(overlay.livePairCount, 1, 'A deleted, B added')
  t.equal(book.livePairCount, 1, 'the book still has A')
  t.equal(overlay.skuId('B'), book.skuCodes.length, 'a new SKU gets the first id past the book')
  t.equal(overlay.pricelistId('NEW'), book.pricelistCodes.length, 'a new pricelist likewise')
  t.equal(book.skuId('B'), -1, 'the book never learns it')
  t.equal(overlay.livePositionAt(overlay.pricelistId('L'), overlay.skuId('A'), 6), -1, 'deleted at 5')
  const position = overlay.livePositionAt(overlay.pricelistId('NEW'), overlay.skuId('B'), 1)
  t.equal(overlay.salesAt(position), 20_000)
  t.equal(overlay.versions('L', 'A').length, 2, 'the overlay reads its own versions')
  t.equal(book.versions('L', 'A').length, 1, 'the book keeps its own')
  t.equal(overlay.currentRow(0, 0), -1, 'rows are off')
})
