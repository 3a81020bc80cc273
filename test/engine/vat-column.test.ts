/**
 * The VAT column (engine/vat-column.ts) answers exactly what a fresh catalogue look-up answers, at
 * any instant: scheduled changes of a mapping and of a rate end a slot, a read in the past does not
 * disturb the current slot, and any write of a mapping or a rate empties the column (for readers
 * that obtain it after the write: a price context obtains it once per request).
 */
import t from 'tap'
import { Catalog, compositeKey, type CatalogType } from '../../engine/catalog.js'
import type { Version } from '../../engine/temporal.js'
import { vatColumn, type VatLookup } from '../../engine/vat-column.js'

function versions(...entries: [number, unknown][]): Version<unknown>[] {
  return entries.map(([from, value]) => ({
    from,
    value,
    hash: JSON.stringify(value),
    writtenAt: from,
    writtenBy: 'test',
  }))
}

function set(catalog: Catalog, type: CatalogType, key: string, ...entries: [number, unknown][]): void {
  catalog.apply(type, key, versions(...entries))
}

const rateOf = (lookup: VatLookup): string =>
  typeof lookup === 'string' ? lookup : `${lookup.classCode} ${lookup.rateText}`

t.test('slots answer as the catalogue does, across scheduled changes, past reads and writes', async (t) => {
  const catalog = new Catalog()
  set(catalog, 'vat_rate', compositeKey('SE', 'standard'), [0, { rate: '25' }], [1_000, { rate: '20' }])
  set(catalog, 'vat_rate', compositeKey('SE', 'reduced'), [0, { rate: '12' }])
  set(
    catalog,
    'article_taxclass',
    compositeKey('A', 'SE'),
    [0, { vat_class_code: 'reduced' }],
    [2_000, { vat_class_code: 'standard' }],
  )
  set(catalog, 'article_taxclass', compositeKey('B', 'SE'), [0, { vat_class_code: 'standard' }])
  set(catalog, 'article_taxclass', compositeKey('C', 'SE'), [0, { vat_class_code: 'zero' }])
  const column = vatColumn(catalog, 'SE')
  t.equal(vatColumn(catalog, 'SE'), column, 'one column per catalogue and area')
  t.not(vatColumn(catalog, 'DE'), column)

  t.equal(rateOf(column.get('A', 0, 500)), 'reduced 12')
  t.equal(rateOf(column.get('A', 0, 600)), 'reduced 12', 'from the slot')
  t.equal(
    rateOf(column.get('A', 0, 2_000)),
    'standard 20',
    'the scheduled mapping ends the slot (and the rate changed at 1,000)',
  )
  t.equal(rateOf(column.get('A', 0, 100)), 'reduced 12', 'a read in the past looks up afresh')
  t.equal(rateOf(column.get('A', 0, 2_500)), 'standard 20', 'and leaves the current slot')
  t.equal(rateOf(column.get('B', 1, 999)), 'standard 25')
  t.equal(rateOf(column.get('B', 1, 1_000)), 'standard 20', "the class's scheduled rate ends the slot")
  t.equal(rateOf(column.get('C', 2, 10)), 'no_vat_rate', 'a class without a rate')
  t.equal(rateOf(column.get('D', 5_000, 10)), 'no_vat_class', 'no mapping (and a SKU id beyond the first slots)')

  set(catalog, 'vat_rate', compositeKey('SE', 'zero'), [0, { rate: '0' }])
  t.equal(rateOf(vatColumn(catalog, 'SE').get('C', 2, 10)), 'zero 0', 'a rate written now shows at once')
  set(catalog, 'article_taxclass', compositeKey('B', 'SE'), [0, { vat_class_code: 'zero' }])
  t.equal(rateOf(vatColumn(catalog, 'SE').get('B', 1, 3_000)), 'zero 0', 'a mapping written now shows at once')
  set(catalog, 'article', 'B', [0, { name: 'B', type: null, metadata: {} }])
  t.equal(rateOf(vatColumn(catalog, 'SE').get('B', 1, 3_000)), 'zero 0', 'other writes leave the column')
})
