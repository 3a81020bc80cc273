/**
 * The shared SKU table (engine/sku-dictionary.ts) answers what a Map of the same codes answers:
 * codes short and long (past the 20 inline characters), Latin-1 and beyond it (Greek, emoji,
 * surrogate pairs), codes that differ only in their last character or only in length, codes never
 * added; through growth of the slots and of the key buffer; and a table of an older generation
 * keeps answering for the codes it had.
 */
import fc from 'fast-check'
import t from 'tap'
import { lookupSku, SkuDictionary, type SkuTable } from '../../engine/sku-dictionary.js'

const seed =
  process.env['PROPERTY_SEED'] === undefined ? Date.now() % 2_147_483_647 : Number(process.env['PROPERTY_SEED'])

const codeArbitrary = fc.oneof(
  fc.stringMatching(/^[A-Z0-9-]{1,12}$/),
  fc.stringMatching(/^[A-Za-z0-9._-]{19,22}$/),
  fc.string({ minLength: 1, maxLength: 64, unit: 'grapheme' }),
  fc.string({ minLength: 1, maxLength: 30, unit: 'binary' }),
  fc.constantFrom('SKU-1', 'SKU-10', 'SKU-1\u00e9', 'SKU-1\u03a9', '\u00ff'.repeat(25), 'x'.repeat(20), 'x'.repeat(21)),
)

t.test('look-ups agree with a Map, through growth, for codes added and not', async (t) => {
  let checked = 0
  fc.assert(
    fc.property(
      fc.uniqueArray(codeArbitrary, { minLength: 600, maxLength: 3_000 }),
      fc.array(codeArbitrary, { maxLength: 200 }),
      fc.integer(),
      (codes, probes, tableSeed) => {
        const dictionary = new SkuDictionary(tableSeed | 0)
        const reference = new Map<string, number>()
        const generations: { table: SkuTable; size: number }[] = []
        for (const code of codes) {
          if (dictionary.lookup(code) !== -1) throw new Error(`${JSON.stringify(code)} found before it was added`)
          const before = dictionary.table
          if (dictionary.add(code)) generations.push({ table: before, size: reference.size })
          else if (dictionary.table !== before) throw new Error('the table changed without growing')
          reference.set(code, reference.size)
        }
        for (const code of [...codes, ...probes]) {
          const expected = reference.get(code) ?? -1
          if (dictionary.lookup(code) !== expected)
            throw new Error(`${JSON.stringify(code)}: ${dictionary.lookup(code)}, expected ${expected}`)
          checked++
        }
        for (const { table, size } of generations) {
          for (const [code, id] of reference) {
            const found = lookupSku(table, code)
            if (id < size ? found !== id : found !== -1 && found !== id)
              throw new Error(`old generation: ${JSON.stringify(code)} answered ${found}, id ${id}`)
          }
        }
        if (dictionary.size !== codes.length) throw new Error(`size ${dictionary.size}, ${codes.length} added`)
      },
    ),
    { seed, numRuns: 60 },
  )
  t.ok(checked > 20_000, `${checked} look-ups compared (seed ${seed})`)
})

t.test('growth keeps the table at most half full and publishes new buffers', async (t) => {
  const dictionary = new SkuDictionary(7)
  const first = dictionary.table
  let growths = 0
  for (let index = 0; index < 100_000; index++) if (dictionary.add(`SKU-${String(index).padStart(7, '0')}`)) growths++
  t.not(dictionary.table, first, 'a new table after growth')
  t.ok(growths >= 7 && growths <= 24, `${growths} growths for 100,000 codes (slots, key text and offsets each double)`)
  t.ok(dictionary.table.slots.length / 8 >= 200_000, 'at least twice as many slots as codes')
  t.equal(dictionary.lookup('SKU-0099999'), 99_999)
  t.equal(dictionary.lookup('SKU-0100000'), -1)
  t.ok(dictionary.table.slots.buffer instanceof SharedArrayBuffer, 'in shared memory')
})
