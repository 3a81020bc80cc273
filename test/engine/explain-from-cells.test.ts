/**
 * The query's explanation prices losing candidates from the fast path's cells and traces only the
 * winner (engine/explain/from-cells.ts); the reference runs the traced full pipeline on every
 * candidate (engine/explain/explain.ts explainPrice). For random worlds (test/helpers/price-world.ts:
 * parents with and without conversion, rules, a bundle, breaks fixed and percent, deletions, FX,
 * both VAT modes, rounding, a SKU without VAT, one without any price), with amounts drawn from a
 * few values half the time so that candidates tie, the two explanations are equal field by field,
 * their inputs and hash included, on the book (the main thread) and on a replica (a worker); and
 * they stay equal through writes and compactions between queries (the version starts the rows keep
 * for the explanation must follow them).
 */
import { isDeepStrictEqual } from 'node:util'
import fc from 'fast-check'
import t from 'tap'
import { explainPrice, type Explanation } from '../../engine/explain/explain.js'
import { explainFromCells, explainPlan } from '../../engine/explain/from-cells.js'
import { PriceContext, type AnswerOptions } from '../../engine/pipeline.js'
import { PriceReplica } from '../../engine/price-replica.js'
import type { PriceReader } from '../../engine/price-replica.js'
import { build, profile, queryArbitrary, worldArbitrary, type World } from '../helpers/price-world.js'

const seed =
  process.env['PROPERTY_SEED'] === undefined ? Date.now() % 2_147_483_647 : Number(process.env['PROPERTY_SEED'])

/** Half the worlds price from three amounts only: equal prices on several lists, so ties. */
const tiedWorld = (world: World, coarse: boolean): World =>
  coarse
    ? {
        ...world,
        prices: world.prices.map((write) => ({
          ...write,
          versions: write.versions.map((version) => ({ ...version, sales: (Math.abs(version.sales) % 3) * 10_000 })),
        })),
      }
    : world

t.test('explanations from the cells equal the full pipeline ones, inputs and hash included', async (t) => {
  const reasons = new Map<string, number>()
  let explained = 0
  let winners = 0
  fc.assert(
    fc.property(
      worldArbitrary,
      fc.boolean(),
      fc.array(queryArbitrary, { minLength: 1, maxLength: 4 }),
      (drawn, coarse, queries) => {
        const world = tiedWorld(drawn, coarse)
        const { catalog, book } = build(world)
        const replica = new PriceReplica(book.sharedColumns(), book.dictionaryDelta(0, 0))
        for (const query of queries) {
          const options: AnswerOptions = {
            currency: query.currency,
            rounding: query.rounding ? profile : null,
            quantity: query.quantity,
          }
          const pricelists = [...query.lists].sort()
          const roundingCode = query.rounding ? 'R' : null
          const excluded = [{ pricelist: 'ZZ', reason: 'filter_mismatch' as const }]
          for (const prices of [book, replica] as PriceReader[]) {
            const reference = new PriceContext(catalog, prices, query.at, 'SE')
            const context = new PriceContext(catalog, prices, query.at, 'SE')
            const plan = explainPlan(context, pricelists, options)
            for (const sku of query.skus) {
              const request = { sku, pricelists, excluded, options, roundingCode }
              const expected: Explanation = explainPrice(reference, request)
              const actual = explainFromCells(context, request, plan)
              if (!isDeepStrictEqual(actual, expected))
                throw new Error(`${sku} at ${query.at}: ${JSON.stringify(actual)} != ${JSON.stringify(expected)}`)
              for (const candidate of actual.candidates)
                reasons.set(candidate.reason ?? 'won', (reasons.get(candidate.reason ?? 'won') ?? 0) + 1)
              if (actual.item !== null) winners++
              explained++
            }
          }
        }
      },
    ),
    { seed, numRuns: 300 },
  )
  t.ok(explained > 1000, `${explained} explanations compared (seed ${seed})`)
  t.ok(winners > 300, `${winners} with a winner`)
  for (const reason of [
    'lost_to_lower',
    'lost_tie',
    'no_price_at_as_of',
    'no_fx_rate',
    'bundle_unavailable',
    'no_vat_class',
  ])
    t.ok((reasons.get(reason) ?? 0) > 10, `candidates lost by ${reason}: ${reasons.get(reason) ?? 0}`)
})

/** A world's writes of one more version list for a (SKU, list), as the price book applies them. */
const writeArbitrary = fc.record({
  sku: fc.constantFrom('S0', 'S1', 'S2'),
  list: fc.constantFrom('P0', 'P1', 'P2', 'P3', 'P4'),
  from: fc.integer({ min: 0, max: 100 }),
  sales: fc.option(fc.integer({ min: 1, max: 1_000_000 }), { freq: 5 }),
})
const stepArbitrary = fc.oneof(
  fc.record({ kind: fc.constant('write' as const), write: writeArbitrary }),
  fc.record({ kind: fc.constant('compact' as const) }),
  fc.record({ kind: fc.constant('explain' as const), query: queryArbitrary }),
)

t.test('the version starts kept beside the rows follow writes and compactions', async (t) => {
  let explained = 0
  fc.assert(
    fc.property(worldArbitrary, fc.array(stepArbitrary, { minLength: 1, maxLength: 20 }), (world, steps) => {
      const { catalog, book } = build(world)
      // A worker's replica lives across writes, as its rows and their starts do.
      const replica = new PriceReplica(book.sharedColumns(), book.dictionaryDelta(0, 0))
      for (const step of steps) {
        if (step.kind === 'write') {
          const { sku, list, from, sales } = step.write
          const content = sales === null ? null : { sales, fields: null, breaks: null }
          const versions = new Map(book.versions(list, sku).map((version) => [version.from, version]))
          versions.set(from, { from, content, writtenAt: 0, writtenBy: 'test' })
          book.apply(
            list,
            sku,
            [...versions.values()].sort((left, right) => left.from - right.from),
          )
          continue
        }
        if (step.kind === 'compact') {
          book.compactToFit()
          continue
        }
        replica.append(book.dictionaryDelta(replica.sizes.pricelists, replica.sizes.fields))
        replica.setColumns(book.sharedColumns())
        const query = step.query
        const options: AnswerOptions = { currency: query.currency, rounding: null, quantity: query.quantity }
        const pricelists = [...query.lists].sort()
        for (const prices of [book, replica] as PriceReader[]) {
          const context = new PriceContext(catalog, prices, query.at, 'SE')
          const plan = explainPlan(context, pricelists, options)
          for (const sku of query.skus) {
            const request = { sku, pricelists, excluded: [], options, roundingCode: null }
            const expected = explainPrice(new PriceContext(catalog, prices, query.at, 'SE'), request)
            const actual = explainFromCells(context, request, plan)
            if (actual.inputsHash !== expected.inputsHash || !isDeepStrictEqual(actual, expected))
              throw new Error(`${sku} at ${query.at}: ${actual.inputs.join(' ')} != ${expected.inputs.join(' ')}`)
            explained++
          }
        }
      }
    }),
    { seed, numRuns: 200 },
  )
  t.ok(explained > 500, `${explained} explanations compared through writes (seed ${seed})`)
})
