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
import {
  PriceContext,
  priceItem,
  resolveBase,
  Status,
  statusReasons,
  type AnswerOptions,
  type PricedItem,
} from '../../engine/pipeline.js'
import { PriceReplica } from '../../engine/price-replica.js'
import { queryPrices, type QueryResult } from '../../engine/query.js'
import { answerJson } from '../../workers/render.js'
import { build, profile, queryArbitrary, worldArbitrary } from '../helpers/price-world.js'

const seed =
  process.env['PROPERTY_SEED'] === undefined ? Date.now() % 2_147_483_647 : Number(process.env['PROPERTY_SEED'])

/** The full pipeline over every pricelist, lowest gross first, ties to the first code. */
function reference(
  context: PriceContext,
  skusAsked: readonly string[],
  codes: readonly string[],
  options: AnswerOptions,
): QueryResult {
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
        const options: AnswerOptions = {
          currency: query.currency,
          rounding: query.rounding ? profile : null,
          quantity: query.quantity,
        }
        const codes = [...query.lists].sort()
        const expected = reference(new PriceContext(catalog, book, query.at, 'SE'), query.skus, codes, options)
        const want = answerJson(expected.items, expected.unavailable)
        for (const reader of [book, replica]) {
          const got = queryPrices(new PriceContext(catalog, reader, query.at, 'SE'), {
            skus: query.skus,
            pricelists: codes,
            options,
            sortOrder: null,
          })
          const text = answerJson(got.items, got.unavailable)
          if (text !== want)
            throw new Error(
              `${reader === book ? 'rows' : 'runs'} at ${query.at}, quantity ${query.quantity}, ${query.currency}, lists ${codes.join(',')}:\n got  ${text}\n want ${want}`,
            )
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
