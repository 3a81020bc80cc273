/**
 * Storage formats of a tenant: binary price records and log entries read back exactly, a data dir
 * in the older msgpack form (log entries, per-entry log_type keys, `prices` arrays) still opens,
 * loads and reads, and new writes on top of it win. The changelog's per-type runs answer any
 * starting point and limit. Exercised on TenantStore directly (no server), in temporary dirs.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { open } from 'lmdb'
import { Packr } from 'msgpackr'
import t, { type Test } from 'tap'
import { Catalog } from '../../engine/catalog.js'
import { contentHash } from '../../engine/hash.js'
import { PriceBook, priceContentHash, type PriceContent, type PriceVersion } from '../../engine/prices.js'
import {
  decodeEntry,
  decodeStoredEntry,
  encodeBinaryEntries as encodeEntries,
  encodeEntries as encodeArrayEntries,
  isBinaryEntry,
  isRawEntry,
  makeEntry,
  type LogEntry,
} from '../../storage/log-entry.js'
import { environmentOptions } from '../../storage/options.js'
import { ActorTable, decodePriceRecord, encodePriceRecords, measurePriceRecord } from '../../storage/price-record.js'
import { TenantStore, type PriceChange } from '../../storage/tenant-store.js'

function temporaryDir(t: Test): string {
  const directory = mkdtempSync(path.join(tmpdir(), 'pricing-format-'))
  t.teardown(() => rmSync(directory, { recursive: true, force: true }))
  return directory
}

const versionsWithEverything: PriceVersion[] = [
  { from: 1_000, content: { sales: 1_234_500, fields: null, breaks: null }, writtenAt: 900, writtenBy: 'client-a' },
  {
    from: 2_000,
    content: {
      sales: -5,
      fields: { cost: 100_000, 'früh-preis': 99_999_999_999 },
      breaks: [
        { quantity: 100_000, kind: 0, value: 1_000_000 },
        { quantity: 500_000, kind: 1, value: 800_000 },
      ],
    },
    writtenAt: 1_900,
    writtenBy: 'client-ß',
  },
  { from: 3_000, content: null, writtenAt: 2_900, writtenBy: 'client-a' },
  { from: 4_000, content: { sales: 0, fields: {}, breaks: [] }, writtenAt: 3_900, writtenBy: 'client-b' },
]

t.test('a binary price record reads back every version, field, break, deletion and writer exactly', async (t) => {
  const actors = new ActorTable([])
  const [record, single] = encodePriceRecords([versionsWithEverything, versionsWithEverything.slice(0, 1)], actors)
  t.same(decodePriceRecord(record!, actors), versionsWithEverything)
  t.same(decodePriceRecord(single!, actors), versionsWithEverything.slice(0, 1))
  t.same(actors.takeGrowth(), ['client-a', 'client-ß', 'client-b'], 'writers are stored once, in order of first use')
  t.equal(actors.takeGrowth(), null, 'an unchanged table is not stored again')
  const size = { versions: 0, extrasSlots: 0 }
  measurePriceRecord(record!, size)
  // Extras of the second version: the sales and 2 counts + 2 breaks x 3 + 2 fields x 2; the others have none.
  t.same(size, { versions: 4, extrasSlots: 13 })
  const reopened = new ActorTable(['client-a', 'client-ß', 'client-b'])
  t.same(
    decodePriceRecord(record!, reopened),
    versionsWithEverything,
    'a table read back from meta names the same writers',
  )
})

t.test('a binary log entry reads back exactly, whatever its hashes and composite key', async (t) => {
  const first = makeEntry(
    1,
    {
      entityType: 'price',
      changeType: 'created',
      entityCode: 'SKU-1',
      compositeKey: 'NET',
      changedAt: 5,
      changedBy: 'c',
      contentHash: 'a'.repeat(32),
    },
    '',
  )
  const second = makeEntry(
    2,
    {
      entityType: 'article',
      changeType: 'deleted',
      entityCode: 'Å-1',
      compositeKey: null,
      changedAt: 6,
      changedBy: 'ü',
      contentHash: '',
    },
    first.checksum,
  )
  const odd = makeEntry(
    3,
    {
      entityType: 'test',
      changeType: 'updated',
      entityCode: 'x',
      compositeKey: '',
      changedAt: 7,
      changedBy: 'c',
      contentHash: 'NOT-HEX',
    },
    second.checksum,
  )
  const upper = makeEntry(
    4,
    {
      entityType: 'test',
      changeType: 'updated',
      entityCode: 'x',
      compositeKey: null,
      changedAt: 8,
      changedBy: 'c',
      contentHash: 'ABCDEF0123456789ABCDEF0123456789',
    },
    odd.checksum,
  )
  const stored = encodeEntries([first, second, odd, upper])
  t.ok(stored.every(isBinaryEntry))
  t.same(stored.map(decodeEntry), [first, second, odd, upper])
  const lower = makeEntry(4, { ...upper, contentHash: upper.contentHash.toLowerCase() }, odd.checksum)
  // Tag + 16 bytes for lowercase hex; tag + u16 length + 32 bytes for the same digits in upper case.
  t.equal(stored[3]!.length - encodeEntries([lower])[0]!.length, 18, 'only lowercase hex is packed into bytes')
  const arrays = encodeArrayEntries([first, second, odd, upper])
  t.ok(
    arrays.every((bytes) => isRawEntry(bytes) && !isBinaryEntry(bytes)),
    'entries are written as msgpackr arrays',
  )
  t.same(arrays.map(decodeStoredEntry), [first, second, odd, upper], 'a msgpackr entry reads back exactly')
  t.same(
    stored.map(decodeStoredEntry),
    [first, second, odd, upper],
    'and the binary form of earlier builds still reads',
  )
})

t.test('log entries are written as the bytes msgpackr packs their field arrays, whatever their values', async (t) => {
  // The stored bytes are those of msgpackr's pack of the field array (storage/log-entry.ts), at
  // every size boundary of its headers, for text that is not ASCII and for any number: a faster
  // encoder would have to keep them so, and this test is what would hold it to that.
  const packr = new Packr({ useRecords: false, moreTypes: false })
  const texts = [
    '',
    'a',
    'x'.repeat(31),
    'x'.repeat(32),
    'y'.repeat(255),
    'y'.repeat(256),
    'z'.repeat(70_000),
    'Å-1',
    'é'.repeat(10),
    'é'.repeat(16),
    '€'.repeat(11),
    '\u{1F600}'.repeat(8),
    'ü'.repeat(128),
    'lone \ud800 surrogate',
  ]
  const numbers = [
    0,
    1,
    127,
    128,
    255,
    256,
    65_535,
    65_536,
    4_294_967_295,
    4_294_967_296,
    1_732_000_000_123,
    Number.MAX_SAFE_INTEGER,
    -1,
    -200,
    0.5,
  ]
  const entries: LogEntry[] = []
  let previous = ''
  for (let index = 0; index < 60; index++) {
    const text = (offset: number) => texts[(index + offset) % texts.length]!
    const number = (offset: number) => numbers[(index * 7 + offset) % numbers.length]!
    const entry = {
      ...makeEntry(
        index + 1,
        {
          entityType: 'price',
          changeType: (['created', 'updated', 'deleted'] as const)[index % 3]!,
          entityCode: text(0),
          compositeKey: index % 4 === 0 ? null : text(3),
          changedAt: number(0),
          changedBy: text(5),
          contentHash: index % 5 === 0 ? '' : text(9),
        },
        previous,
      ),
      // Sequences past the fast layout too (negative, fractional): such an entry is packed by msgpackr.
      sequence: number(4),
    }
    previous = entry.checksum
    entries.push(entry)
  }
  const expected = entries.map((entry) =>
    packr.pack([
      entry.schemaVersion,
      entry.sequence,
      entry.entityType,
      entry.changeType,
      entry.entityCode,
      entry.compositeKey,
      entry.changedAt,
      entry.changedBy,
      entry.contentHash,
      entry.previousChecksum,
      entry.checksum,
    ]),
  )
  const written = encodeArrayEntries(entries)
  t.equal(written.length, entries.length)
  for (let index = 0; index < entries.length; index++) {
    t.equal(written[index]!.toString('hex'), expected[index]!.toString('hex'), `entry ${index} as msgpackr packs it`)
  }
  t.same(written.map(decodeStoredEntry), expected.map(decodeStoredEntry), "and they read back as msgpackr's do")
  t.same(written.slice(0, 3).map(decodeStoredEntry), entries.slice(0, 3), 'which is what was written')
})

function priceChange(
  sku: string,
  pricelist: string,
  versions: PriceVersion[],
  changeType: PriceChange['changeType'],
): PriceChange {
  return { pricelist, sku, versions, changeType, hash: 'b'.repeat(32), at: 10, by: 'writer' }
}

t.test('changelog runs per type: any start inside a run, any limit, types interleaved across commits', async (t) => {
  const store = new TenantStore(temporaryDir(t))
  t.teardown(() => store.close())
  const version = (sales: number): PriceVersion[] => [
    { from: 1, content: { sales, fields: null, breaks: null }, writtenAt: 1, writtenBy: 'w' },
  ]
  await store.commit(
    [],
    [],
    ['A', 'B', 'C'].map((sku, index) => priceChange(sku, 'PL', version(index + 1), 'created')),
  )
  const article = {
    entityType: 'article' as const,
    changeType: 'created' as const,
    entityCode: 'X',
    compositeKey: null,
    changedAt: 1,
    changedBy: 'w',
    contentHash: '',
  }
  await store.commit([], [article, article])
  await store.commit([], [], [priceChange('D', 'PL', version(4), 'created')])
  const codes = (entries: LogEntry[]) => entries.map((entry) => `${entry.sequence}:${entry.entityCode}`)
  t.same(codes(store.readLog(1, 100, 'price')), ['1:A', '2:B', '3:C', '6:D'])
  t.same(codes(store.readLog(2, 100, 'price')), ['2:B', '3:C', '6:D'], 'from inside a run')
  t.same(codes(store.readLog(2, 2, 'price')), ['2:B', '3:C'], 'a limit inside a run')
  t.same(codes(store.readLog(4, 1, 'price')), ['6:D'], 'from between runs')
  t.same(codes(store.readLog(5, 100, 'article')), ['5:X'])
  t.same(codes(store.readLog(7, 100, 'price')), [], 'past the end')
  t.same(codes(store.readLog(3, 3, null)), ['3:C', '4:X', '5:X'])
})

/** Writes a data dir as the previous release did: msgpack entries, one log_type key each, `prices` arrays. */
async function writeLegacyDir(directory: string): Promise<LogEntry[]> {
  const root = open(environmentOptions(directory, 64 * 1024 * 1024))
  const log = root.openDB<LogEntry, number>({ name: 'log', keyEncoding: 'uint32' })
  const logByType = root.openDB<null, [string, number]>({ name: 'log_type' })
  const prices = root.openDB<unknown[], [string, string]>({ name: 'prices' })
  const meta = root.openDB<unknown, string>({ name: 'meta' })
  const first = makeEntry(
    1,
    {
      entityType: 'price',
      changeType: 'created',
      entityCode: 'SKU-1',
      compositeKey: 'NET',
      changedAt: 10,
      changedBy: 'old',
      contentHash: 'c'.repeat(32),
    },
    '',
  )
  const second = makeEntry(
    2,
    {
      entityType: 'price',
      changeType: 'created',
      entityCode: 'SKU-2',
      compositeKey: 'NET',
      changedAt: 10,
      changedBy: 'old',
      contentHash: 'd'.repeat(32),
    },
    first.checksum,
  )
  await root.transaction(() => {
    for (const entry of [first, second]) {
      log.put(entry.sequence, entry)
      logByType.put([entry.entityType, entry.sequence], null)
    }
    prices.put(['NET', 'SKU-1'], [[1_000, 10_000, 10, 'old', null, null]])
    prices.put(
      ['NET', 'SKU-2'],
      [
        [1_000, 20_000, 10, 'old', { cost: 5 }, [[10_000, 1, 500_000]]],
        [2_000, null, 10, 'old', null, null],
      ],
    )
    meta.put('sequence', 2)
    meta.put('checksum', second.checksum)
  })
  await root.close()
  return [first, second]
}

t.test('a data dir in the msgpack form opens, loads and reads, and new writes on top of it win', async (t) => {
  const directory = temporaryDir(t)
  const legacy = await writeLegacyDir(directory)
  let store = new TenantStore(directory)
  const book = new PriceBook()
  await store.loadIntoGradually(new Catalog(), undefined, book)
  t.same(book.versions('NET', 'SKU-1'), [
    { from: 1_000, content: { sales: 10_000, fields: null, breaks: null }, writtenAt: 10, writtenBy: 'old' },
  ])
  t.same(book.versions('NET', 'SKU-2'), [
    {
      from: 1_000,
      content: { sales: 20_000, fields: { cost: 5 }, breaks: [{ quantity: 10_000, kind: 1, value: 500_000 }] },
      writtenAt: 10,
      writtenBy: 'old',
    },
    { from: 2_000, content: null, writtenAt: 10, writtenBy: 'old' },
  ])
  t.same(store.readLog(1, 10, null), legacy, 'legacy entries read back')
  t.same(store.readLog(2, 10, 'price'), [legacy[1]], 'legacy per-entry type keys read back')
  const updated: PriceVersion[] = [
    { from: 1_000, content: { sales: 30_000, fields: null, breaks: null }, writtenAt: 20, writtenBy: 'new' },
  ]
  const [entry] = await store.commit([], [], [priceChange('SKU-1', 'NET', updated, 'updated')])
  t.equal(entry!.previousChecksum, legacy[1]!.checksum, 'the chain continues from the legacy tail')
  await store.close()
  store = new TenantStore(directory)
  t.teardown(() => store.close())
  const reloaded = new PriceBook()
  await store.loadIntoGradually(new Catalog(), undefined, reloaded)
  t.same(reloaded.versions('NET', 'SKU-1'), updated, 'the new record wins over the legacy one')
  t.equal(reloaded.versions('NET', 'SKU-2').length, 2, 'an untouched legacy pair stays')
  t.equal(reloaded.livePairCount, 1, 'SKU-2 ends deleted, SKU-1 is live')
  t.same(
    store.readLog(1, 10, 'price').map((read) => read.sequence),
    [1, 2, 3],
    'legacy and binary entries read in one feed',
  )
})

t.test(
  'a startup load allocates the price book once, at its size plus the fit headroom, and keeps the data exact',
  async (t) => {
    const directory = temporaryDir(t)
    const store = new TenantStore(directory)
    t.teardown(() => store.close())
    const changes: PriceChange[] = []
    for (let index = 0; index < 3_000; index++) {
      const versions: PriceVersion[] = [
        {
          from: 1_000,
          content: {
            sales: index,
            fields: null,
            breaks: index % 10 === 0 ? [{ quantity: 10_000, kind: 0, value: index }] : null,
          },
          writtenAt: 5,
          writtenBy: `w${index % 3}`,
        },
        {
          from: 2_000,
          content: index % 7 === 0 ? null : { sales: index + 1, fields: null, breaks: null },
          writtenAt: 6,
          writtenBy: 'w0',
        },
      ]
      changes.push(priceChange(`S${index}`, `P${index % 4}`, versions, 'created'))
    }
    await store.commit([], [], changes)
    const book = new PriceBook()
    await store.loadIntoGradually(new Catalog(), 500, book)
    const generation = book.generation
    // 6,000 versions x (8 from + 8 sales + 4 extra + 4 runCount + 8 writtenAt + 2 writtenBy) and
    // 300 x 6 extras slots x 8, each with the headroom of a small book (1,024 versions or slots),
    // and the SKU table.
    const poolBytes = (6_000 + 1_024) * 34 + (300 * 6 + 1_024) * 8
    const skus = book.sharedColumns().skus
    t.equal(skus.slots.length / 8, 8_192, 'the SKU table: the smallest power of two at least twice the SKUs')
    const indexBytes =
      book.byteSize - poolBytes - skus.slots.byteLength - skus.keys.byteLength - skus.offsets.byteLength
    t.ok(
      indexBytes >= 0 && indexBytes <= 4 * 4 * 2 * 3_000,
      `only the per-pricelist indexes may hold more room (${indexBytes} bytes)`,
    )
    book.compactToFit()
    t.equal(book.generation, generation, 'a fitted book is not compacted again')
    for (const change of [changes[0]!, changes[7]!, changes[2_999]!]) {
      t.same(book.versions(change.pricelist, change.sku), change.versions, `${change.sku} reads back`)
    }
    t.equal(book.livePairCount, 3_000 - Math.ceil(3_000 / 7))
  },
)

t.test("a price's content hash is the canonical JSON's hash, as stored entries hold it", async (t) => {
  // Pinned: entries written by earlier builds hold this value for this content.
  t.equal(priceContentHash({ sales: 1, fields: null, breaks: null }), 'e5ad71e367cd8b09701609c8e9fdb07f')
  const contents: PriceContent[] = [
    { sales: -5, fields: {}, breaks: [] },
    { sales: 129_900, fields: { b: 1, a: 2, 'é"x': 3 }, breaks: null },
    {
      sales: 129_900,
      fields: null,
      breaks: [
        { quantity: 10_000, kind: 1, value: 950_000 },
        { quantity: 1_000_000, kind: 0, value: 12 },
      ],
    },
  ]
  for (const content of contents) {
    t.equal(
      priceContentHash(content),
      contentHash({ sales: content.sales, fields: content.fields, breaks: content.breaks }),
      JSON.stringify(content),
    )
  }
  t.not(
    priceContentHash(contents[1]!),
    priceContentHash({ ...contents[1]!, fields: { b: 2, a: 1, 'é"x': 3 } }),
    'values swapped between fields differ',
  )
})
