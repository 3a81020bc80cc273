/**
 * Removing a key altogether (what a restore does where the backup never held it): the catalogue
 * forgets the key and its live count; the price book's pair reads as absent, its live counts drop,
 * and a compaction afterwards copies exactly the pairs that remain, with their versions intact.
 */
import t from 'tap'
import { Catalog } from '../../engine/catalog.js'
import { PriceBook, type PriceVersion } from '../../engine/prices.js'
import type { Version } from '../../engine/temporal.js'

const version = (from: number, value: unknown): Version<unknown> => ({
  from,
  value,
  hash: value === null ? '' : String(value),
  writtenAt: from,
  writtenBy: 'tester',
})
const price = (from: number, sales: number | null): PriceVersion => ({
  from,
  content: sales === null ? null : { sales, fields: { cost: sales / 2 }, breaks: null },
  writtenAt: from,
  writtenBy: 'tester',
})

t.test('the catalogue forgets a removed key', async (t) => {
  const catalog = new Catalog()
  catalog.apply('article', 'A', [version(1, { name: 'a' })])
  catalog.apply('article', 'B', [version(1, { name: 'b' })])
  catalog.apply('article', 'C', [version(1, { name: 'c' }), version(2, null)])
  t.equal(catalog.liveCount('article'), 2)
  const revision = catalog.revision('article')
  catalog.remove('article', 'A')
  catalog.remove('article', 'C')
  catalog.remove('article', 'absent')
  t.equal(catalog.versions('article', 'A'), undefined, 'A is gone')
  t.equal(catalog.versions('article', 'C'), undefined, 'so is the deleted C')
  t.equal(catalog.liveCount('article'), 1, 'only a live key counted down')
  t.ok(catalog.revision('article') > revision, 'caches of derived facts see the change')
  t.same(catalog.versions('article', 'B'), [version(1, { name: 'b' })], 'B is untouched')
})

t.test('the price book forgets a removed pair, and compacts around it', async (t) => {
  const book = new PriceBook()
  for (let index = 0; index < 100; index++)
    book.apply('P', `S${index}`, [price(1_000, index * 10), price(2_000, index * 10 + 1)])
  book.apply('Q', 'S0', [price(1_000, 5), price(2_000, null)])
  t.equal(book.livePairCount, 100)
  t.equal(book.liveSkuCount('P'), 100)
  const changes = book.changeCount
  for (let index = 0; index < 100; index += 2) book.remove('P', `S${index}`)
  book.remove('Q', 'S0')
  book.remove('P', 'never')
  t.equal(book.livePairCount, 50, 'live pairs counted down (the deleted Q/S0 was not live)')
  t.equal(book.liveSkuCount('P'), 50)
  t.ok(book.changeCount > changes, 'answer caches see the change')
  t.same(book.versions('P', 'S0'), [], 'a removed pair has no versions')
  t.equal(book.livePositionAt(book.pricelistId('P'), book.skuId('S0'), 5_000), -1, 'and nothing in force')
  book.compactToFit()
  let wrong = 0
  for (let index = 1; index < 100; index += 2) {
    const versions = book.versions('P', `S${index}`)
    if (
      versions.length !== 2 ||
      versions[1]!.content!.sales !== index * 10 + 1 ||
      versions[0]!.content!.fields!['cost'] !== index * 5
    )
      wrong++
  }
  t.equal(wrong, 0, 'the 50 remaining pairs read back whole after a compaction')
  book.apply('P', 'S0', [price(3_000, 7)])
  t.same(book.versions('P', 'S0'), [price(3_000, 7)], 'a removed pair can be written again')
  t.equal(book.livePairCount, 51)
})
