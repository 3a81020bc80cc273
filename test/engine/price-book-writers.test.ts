/**
 * Who wrote each price version is kept in 2 bytes per version while a tenant has at most 65,535
 * distinct writers, and in 4 from the 65,536th on: every writer reads back exactly across that
 * step, through a compaction, for versions written before and after it.
 */
import t from 'tap'
import { PriceBook, type PriceVersion } from '../../engine/prices.js'

const version = (from: number, sales: number, writer: string): PriceVersion => ({
  from,
  content: { sales, fields: null, breaks: null },
  writtenAt: from + 1,
  writtenBy: writer,
})

t.test('writers read back exactly past 65,535 distinct ones and through a compaction', async (t) => {
  const book = new PriceBook()
  const writers = 70_000
  for (let index = 0; index < writers; index++) book.apply('P', `S${index}`, [version(1_000, index, `writer-${index}`)])
  // A second version on some pairs: their runs are replaced (garbage for the compaction below).
  for (let index = 0; index < writers; index += 997)
    book.apply('P', `S${index}`, [version(1_000, index, `writer-${index}`), version(2_000, index + 1, 'late')])
  book.compactToFit()
  let wrong = 0
  for (let index = 0; index < writers; index++) {
    const versions = book.versions('P', `S${index}`)
    if (versions[0]!.writtenBy !== `writer-${index}` || versions[0]!.writtenAt !== 1_001) wrong++
    if (index % 997 === 0 && versions[1]?.writtenBy !== 'late') wrong++
  }
  t.equal(wrong, 0, `all ${writers} writers read back (ids past 65,535 included)`)
  t.equal(book.versions('P', 'S65535')[0]!.writtenBy, 'writer-65535', 'the 65,536th writer')
  t.equal(book.versions('P', 'S69999')[0]!.writtenBy, 'writer-69999')
})
