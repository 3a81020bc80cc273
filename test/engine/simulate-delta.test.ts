/**
 * A dry run's read runs on a price worker over a state the worker rebuilds from what the dry run
 * wrote (engine/simulate/delta.ts). For random worlds (test/helpers/price-world.ts), a dry run
 * over one world writes another world's prices through the overlay and a VAT rate and an FX rate
 * through the catalogue fork; the delta, cloned as a worker receives it and replayed over a
 * replica of the first world (its own catalogue, the book's shared columns), must answer every
 * query with the same bytes and every diff with the same entries as the dry run's own state, and
 * leave the replica's catalogue as it was.
 */
import fc from 'fast-check'
import t from 'tap'
import { compositeKey } from '../../engine/catalog.js'
import { diffPrices } from '../../engine/diff/diff.js'
import { planFxRates } from '../../engine/fx.js'
import { PriceReplica } from '../../engine/price-replica.js'
import { replayDelta, simulationDelta } from '../../engine/simulate/delta.js'
import { PriceOverlay } from '../../engine/simulate/price-overlay.js'
import { executeQuery } from '../../workers/execute.js'
import { build, queryArbitrary, worldArbitrary } from '../helpers/price-world.js'

const seed =
  process.env['PROPERTY_SEED'] === undefined ? Date.now() % 2_147_483_647 : Number(process.env['PROPERTY_SEED'])

t.test('a replayed delta answers what the dry run state answers, byte for byte', async (t) => {
  let compared = 0
  let differing = 0
  let replayedPairs = 0
  fc.assert(
    fc.property(
      worldArbitrary,
      worldArbitrary,
      fc.array(queryArbitrary, { minLength: 1, maxLength: 4 }),
      (world, proposed, asked) => {
        const tenant = build(world)
        const fork = tenant.catalog.fork()
        const overlay = new PriceOverlay(tenant.book)
        for (const write of proposed.prices.slice(0, 10))
          overlay.apply(write.list, write.sku, build(proposed).book.versions(write.list, write.sku))
        const rate = fork.plan('vat_rate', compositeKey('SE', 'standard'), { rate: proposed.vatRate }, 50, 0, 'sim')
        if (rate !== null) fork.apply(rate.type, rate.key, rate.versions)
        for (const change of planFxRates(fork, 'SEK', [{ from: 60, rate: '9.5' }], 0, 'sim'))
          fork.apply(change.type, change.key, change.versions)
        const state = { catalog: fork, prices: overlay }
        // As a worker receives it: a structured clone.
        const delta = structuredClone(simulationDelta(state))
        replayedPairs += delta.prices.length
        const worker = build(world)
        const before = JSON.stringify([...worker.catalog.entries()])
        const replica = new PriceReplica(worker.book.sharedColumns(), worker.book.dictionaryDelta(0, 0))
        const replayed = replayDelta(worker.catalog, replica, delta)
        for (const query of asked) {
          const input = {
            at: query.at,
            cacheable: false,
            taxArea: 'SE',
            skus: query.skus,
            pricelists: [...query.lists].sort(),
            currency: query.currency,
            rounding: null,
            sortOrder: null,
            quantity: query.quantity,
          }
          const want = String(executeQuery(state.catalog, state.prices, input))
          const got = String(executeQuery(replayed.catalog, replayed.prices, input))
          if (got !== want) throw new Error(`query at ${query.at}:\n got  ${got}\n want ${want}`)
          const request = {
            from: query.at,
            to: query.at + 40,
            taxArea: 'SE',
            currency: query.currency,
            rounding: null,
            quantity: query.quantity,
            pricelistsFrom: input.pricelists,
            pricelistsTo: input.pricelists,
            skus: [...new Set(query.skus)].sort(),
          }
          const wantDiff = JSON.stringify(diffPrices(state.catalog, state.prices, request))
          const gotDiff = JSON.stringify(diffPrices(replayed.catalog, replayed.prices, request))
          if (gotDiff !== wantDiff) throw new Error(`diff from ${query.at}:\n got  ${gotDiff}\n want ${wantDiff}`)
          compared++
          if (wantDiff !== '[]') differing++
        }
        if (JSON.stringify([...worker.catalog.entries()]) !== before) throw new Error("the replica's catalogue changed")
      },
    ),
    { seed, numRuns: 300 },
  )
  t.ok(compared > 600, `${compared} queries and diffs compared (seed ${seed})`)
  t.ok(differing > compared / 10, `${differing} diffs with changed items among them`)
  t.ok(replayedPairs > 1_000, `${replayedPairs} price pairs replayed`)
})

t.test('an overlay over a replica is only read', async (t) => {
  const { book } = build(fc.sample(worldArbitrary, { seed: 1, numRuns: 1 })[0]!)
  const overlay = new PriceOverlay(new PriceReplica(book.sharedColumns(), book.dictionaryDelta(0, 0)))
  overlay.install('P0', 'NEW-SKU', [
    { from: 0, content: { sales: 10_000, fields: null, breaks: null }, writtenAt: 0, writtenBy: 't' },
  ])
  t.ok(overlay.skuId('NEW-SKU') >= 0, 'a SKU the replica lacks gets an id of the overlay')
  t.not(overlay.skuId('NEW-SKU'), overlay.skuId('S0'), "and not one of the replica's")
  t.throws(() => overlay.versions('P0', 'S0'), 'the write layer cannot plan over a replica')
})
