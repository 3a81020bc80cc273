/**
 * History retention keeps what a running reduction's prior price reads (engine/retention.ts with
 * `priorPriceMs`): for random price histories (rises, falls, equal prices, deletions) on a list and
 * on a parent a child inherits from, the prior price at now is the same after a pass removed every
 * version it may, with the shortest history window, as before; and without the rule a pass would
 * have changed some (the property has something to catch).
 */
import fc from 'fast-check'
import t from 'tap'
import type { Catalog } from '../../engine/catalog.js'
import type { AnswerOptions } from '../../engine/pipeline.js'
import { PriceBook, type PriceVersion } from '../../engine/prices.js'
import { priorPrice } from '../../engine/prior-price/prior-price.js'
import { versionsToRemove, type RetentionPolicy } from '../../engine/retention.js'
import { retailChildCatalog } from '../helpers/price-world.js'

const day = 86_400_000
const now = 1_000 * day
const omnibusDays = 30

/** Versions: a start (days before now, distinct) and a price (null: deleted). */
const history = fc
  .uniqueArray(
    fc.record({
      daysAgo: fc.integer({ min: 0, max: 400 }),
      price: fc.option(fc.integer({ min: 1, max: 5 }), { freq: 8 }),
    }),
    { selector: (entry) => entry.daysAgo, minLength: 1, maxLength: 14 },
  )
  .map((entries) => entries.sort((left, right) => right.daysAgo - left.daysAgo))

function versionsOf(entries: readonly { daysAgo: number; price: number | null }[]): PriceVersion[] {
  return entries.map((entry) => ({
    from: now - entry.daysAgo * day,
    content: entry.price === null ? null : { sales: entry.price * 100_000, fields: null, breaks: null },
    writtenAt: 0,
    writtenBy: 'test',
  }))
}

/** The versions a pass keeps of one pair under `policy`. */
function retained(versions: PriceVersion[], policy: RetentionPolicy, withPrior: boolean): PriceVersion[] {
  const remove = versionsToRemove(
    versions.length,
    (index) => versions[index]!.from,
    now,
    policy,
    withPrior ? (index) => versions[index]!.content?.sales ?? Number.NaN : null,
  )
  return versions.slice(remove)
}

const options: AnswerOptions = { currency: 'SEK', rounding: null, quantity: 1 }

function priorOf(catalog: Catalog, versions: PriceVersion[], pricelist: string) {
  const book = new PriceBook()
  book.apply('RETAIL', 'A', versions)
  return priorPrice(catalog, book, { sku: 'A', pricelist, taxArea: 'SE', options, at: now, days: omnibusDays })
}

t.test('a pass keeps what the prior price at now reads, on the list and on a child', async (t) => {
  const catalog = retailChildCatalog()
  const policy: RetentionPolicy = { maxVersions: 1, historyMs: 1, priorPriceMs: omnibusDays * day }
  let changedWithout = 0
  let reductions = 0
  fc.assert(
    fc.property(history, (entries) => {
      const versions = versionsOf(entries)
      for (const pricelist of ['RETAIL', 'CHILD']) {
        const before = priorOf(catalog, versions, pricelist)
        if (before !== null) reductions++
        const after = priorOf(catalog, retained(versions, policy, true), pricelist)
        if (JSON.stringify(after) !== JSON.stringify(before)) return false
        const without = priorOf(catalog, retained(versions, policy, false), pricelist)
        if (JSON.stringify(without) !== JSON.stringify(before)) changedWithout++
      }
      return true
    }),
    { seed: 30, numRuns: 2_000 },
  )
  t.ok(reductions > 200, `reductions in force in ${reductions} of 4,000 cases`)
  t.ok(changedWithout > 50, `without the rule, a pass changes ${changedWithout} prior prices`)
})
