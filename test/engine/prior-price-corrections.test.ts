/**
 * The prior price without the versions marked as errors (engine/prior-price/corrections.ts): for
 * random price histories (rises, falls, equal prices, deletions) and random marks, the prior price
 * over the corrected view is the one of a book where the marked versions were never written, on
 * the list and on a child that inherits it; the marks change some answers (the property has
 * something to catch); without marks the view is the book itself; a write rebuilds the view.
 */
import fc from 'fast-check'
import t from 'tap'
import { compositeKey, type Catalog, type PriceErrorMark } from '../../engine/catalog.js'
import type { AnswerOptions } from '../../engine/pipeline.js'
import { PriceBook, type PriceVersion } from '../../engine/prices.js'
import { correctedPrices } from '../../engine/prior-price/corrections.js'
import { priorPrice } from '../../engine/prior-price/prior-price.js'
import { retailChildCatalog } from '../helpers/price-world.js'

const day = 86_400_000
const now = 1_000 * day
const options: AnswerOptions = { currency: 'SEK', rounding: null, quantity: 1 }

/** Versions (a start in days before now, distinct; a price, null: deleted) and whether each is marked. */
const history = fc
  .uniqueArray(
    fc.record({
      daysAgo: fc.integer({ min: 0, max: 120 }),
      price: fc.option(fc.integer({ min: 1, max: 5 }), { freq: 8 }),
      marked: fc.boolean(),
    }),
    { selector: (entry) => entry.daysAgo, minLength: 1, maxLength: 10 },
  )
  .map((entries) => entries.sort((left, right) => right.daysAgo - left.daysAgo))

type Entry = { daysAgo: number; price: number | null; marked: boolean }

function versionsOf(entries: readonly Entry[]): PriceVersion[] {
  return entries.map((entry) => ({
    from: now - entry.daysAgo * day,
    content: entry.price === null ? null : { sales: entry.price * 100_000, fields: null, breaks: null },
    writtenAt: 0,
    writtenBy: 'test',
  }))
}

function bookOf(versions: PriceVersion[]): PriceBook {
  const book = new PriceBook()
  if (versions.length > 0) book.apply('RETAIL', 'A', versions)
  // Another pair, never marked: the view answers it from the book.
  book.apply('RETAIL', 'B', [
    { from: 0, content: { sales: 10_000, fields: null, breaks: null }, writtenAt: 0, writtenBy: 't' },
  ])
  return book
}

function marksOf(entries: readonly Entry[]): PriceErrorMark[] {
  return entries
    .filter((entry) => entry.marked)
    .map((entry) => ({ start: now - entry.daysAgo * day, marked_at: 0, marked_by: 'test', reason: null }))
}

/** Sets the marks of A on RETAIL (none: the key removed). */
function putMarks(catalog: Catalog, errors: PriceErrorMark[]): void {
  const key = compositeKey('A', 'RETAIL')
  const change = catalog.plan('price_correction', key, errors.length === 0 ? null : { errors }, 0, 0, 'test')
  if (change === null) return
  if (change.versions.length === 0) catalog.remove(change.type, change.key)
  else catalog.apply(change.type, change.key, change.versions)
}

const ask = (pricelist: string) => ({ sku: 'A', pricelist, taxArea: 'SE', options, at: now, days: 30 })

t.test('marked versions are read as never written, on the list and on a child', async (t) => {
  let changed = 0
  let reductions = 0
  fc.assert(
    fc.property(history, (entries) => {
      const catalog = retailChildCatalog()
      const errors = marksOf(entries)
      putMarks(catalog, errors)
      const book = bookOf(versionsOf(entries))
      const unmarked = bookOf(versionsOf(entries.filter((entry) => !entry.marked)))
      for (const pricelist of ['RETAIL', 'CHILD']) {
        const corrected = priorPrice(catalog, correctedPrices(catalog, book), ask(pricelist))
        const expected = priorPrice(catalog, unmarked, ask(pricelist))
        if (JSON.stringify(corrected) !== JSON.stringify(expected)) return false
        if (expected !== null) reductions++
        if (JSON.stringify(priorPrice(catalog, book, ask(pricelist))) !== JSON.stringify(expected)) changed++
      }
      return true
    }),
    { seed: 302, numRuns: 2_000 },
  )
  t.ok(reductions > 200, `reductions in force in ${reductions} of 4,000 cases`)
  t.ok(changed > 200, `the marks changed ${changed} prior prices`)
})

t.test('without marks the view is the book; a write rebuilds it', async (t) => {
  const catalog = retailChildCatalog()
  const versions = versionsOf([
    { daysAgo: 60, price: 3, marked: false },
    { daysAgo: 20, price: 1, marked: true },
    { daysAgo: 19, price: 3, marked: false },
    { daysAgo: 5, price: 2, marked: false },
  ])
  const book = bookOf(versions)
  t.equal(correctedPrices(catalog, book), book, 'no marks: the book itself')
  putMarks(catalog, [{ start: now - 20 * day, marked_at: 0, marked_by: 'test', reason: null }])
  book.noteChange()
  const view = correctedPrices(catalog, book)
  t.not(view, book, 'a mark: a view')
  t.equal(correctedPrices(catalog, book), view, 'asked again without a write: the same view')
  t.equal(priorPrice(catalog, view, ask('RETAIL'))!.gross, 300_000, 'the marked 1 is left out: 3')
  // A later write of the marked pair: the view is rebuilt from the book as it is now.
  book.apply('RETAIL', 'A', [...versions, { ...versions[3]!, from: now - 2 * day, content: null }])
  book.noteChange()
  const rebuilt = correctedPrices(catalog, book)
  t.not(rebuilt, view, 'rebuilt after the write')
  t.equal(priorPrice(catalog, rebuilt, ask('RETAIL')), null, 'the price deleted 2 days ago: no reduction in force')
})
