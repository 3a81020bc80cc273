/**
 * Effective-price changes at a moment (engine/effective-price/changes.ts), for the causes the
 * server tests cannot schedule seconds ahead (an FX publication takes effect at a date's midnight)
 * and for each kind of source: which lists and SKUs a moment's sources name (`momentTargets`), and
 * the changes one list's comparison finds (`changesOn`) with their amounts and cause: a price
 * written or scheduled, a parent's price, a VAT rate, a reclassification, a list's window, an FX
 * publication for a list inheriting across currencies, and none where nothing moved.
 */
import t from 'tap'
import { compositeKey, type Catalog, type EntityValues } from '../../engine/catalog.js'
import { changesOn, momentTargets, type MomentSource } from '../../engine/effective-price/changes.js'
import { PriceBook } from '../../engine/prices.js'
import { pricelistValue, put, retailChildCatalog } from '../helpers/price-world.js'

const day = 86_400_000
const moment = 100 * day

/** A catalogue write of `value` in force from `from` (0: from the start). */
function putFrom<K extends keyof EntityValues>(
  catalog: Catalog,
  type: K,
  key: string,
  value: EntityValues[K],
  from: number,
) {
  const change = catalog.plan(type, key, value, from, 0, 'test', { force: true })
  if (change !== null) catalog.apply(change.type, change.key, change.versions)
}

const content = (price: number) => ({ sales: price * 10_000, fields: null, breaks: null })

/** RETAIL (GROSS, SEK) with CHILD inheriting it; A priced 100 on RETAIL, then 80 from the moment. */
function world(): { catalog: Catalog; book: PriceBook } {
  const catalog = retailChildCatalog()
  const book = new PriceBook()
  book.apply('RETAIL', 'A', [
    { from: 0, content: content(100), writtenAt: 0, writtenBy: 'early' },
    { from: moment, content: content(80), writtenAt: 0, writtenBy: 'planner' },
  ])
  return { catalog, book }
}

const price = (pricelist: string, sku: string): MomentSource => ({ kind: 'price', pricelist, sku })
const entity = (type: Extract<MomentSource, { kind: 'catalog' }>['type'], key: string): MomentSource => ({
  kind: 'catalog',
  type,
  key,
})

t.test('a scheduled price: its list and the list inheriting it, with their causes', async (t) => {
  const { catalog, book } = world()
  const targets = momentTargets(catalog, moment, [price('RETAIL', 'A')])
  t.same(
    [...targets.skus].map(([list, byArea]) => [list, [...byArea].map(([area, skus]) => [area, [...skus]])]),
    [
      ['RETAIL', [['SE', ['A']]]],
      ['CHILD', [['SE', ['A']]]],
    ],
  )
  t.same(targets.lists, [])
  const retail = changesOn(catalog, book, moment, { pricelist: 'RETAIL', taxArea: 'SE', skus: ['A'] })
  t.same(retail, [
    {
      sku: 'A',
      pricelist: 'RETAIL',
      taxArea: 'SE',
      currency: 'SEK',
      before: { net: 800_000, gross: 1_000_000 },
      after: { net: 640_000, gross: 800_000 },
      at: moment,
      cause: 'scheduled_start',
      by: 'planner',
    },
  ])
  const child = changesOn(catalog, book, moment, { pricelist: 'CHILD', taxArea: 'SE', skus: ['A'] })
  t.same([child[0]?.cause, child[0]?.by, child[0]?.after?.gross], ['parent_changed', 'system', 800_000])
  t.same(
    changesOn(catalog, book, moment + 1, { pricelist: 'RETAIL', taxArea: 'SE', skus: ['A'] }),
    [],
    'a millisecond later: none',
  )
})

t.test('a price written to take effect at once is "written"', async (t) => {
  const { catalog, book } = world()
  book.apply('RETAIL', 'A', [
    { from: 0, content: content(100), writtenAt: 0, writtenBy: 'early' },
    { from: moment, content: content(90), writtenAt: moment, writtenBy: 'clerk' },
  ])
  const [change] = changesOn(catalog, book, moment, { pricelist: 'RETAIL', taxArea: 'SE', skus: ['A'] })
  t.same([change?.cause, change?.by, change?.after?.gross], ['written', 'clerk', 900_000])
})

t.test('a VAT rate and a reclassification name the SKUs mapped, on every list', async (t) => {
  const { catalog, book } = world()
  putFrom(catalog, 'vat_rate', compositeKey('SE', 'standard'), { rate: '12' }, moment + day)
  const vat = momentTargets(catalog, moment + day, [entity('vat_rate', compositeKey('SE', 'standard'))])
  t.same([...vat.skus.keys()].sort(), ['CHILD', 'RETAIL'])
  const [gross] = changesOn(catalog, book, moment + day, { pricelist: 'RETAIL', taxArea: 'SE', skus: ['A'] })
  t.same(
    [gross?.cause, gross?.before, gross?.after],
    ['vat_rate_started', { net: 640_000, gross: 800_000 }, { net: 714_300, gross: 800_000 }],
    "a GROSS list keeps its gross; the net moves (VAT 8.57 to SEK's 2 decimals: 71.43)",
  )
  put(catalog, 'vat_class', 'zero', { name: null, description: null })
  putFrom(catalog, 'article_taxclass', compositeKey('A', 'SE'), { vat_class_code: 'zero' }, moment + 2 * day)
  const moved = momentTargets(catalog, moment + 2 * day, [entity('article_taxclass', compositeKey('A', 'SE'))])
  t.same([...moved.skus.get('RETAIL')!.keys()], ['SE'], 'in its tax area only')
  const [reclassified] = changesOn(catalog, book, moment + 2 * day, {
    pricelist: 'RETAIL',
    taxArea: 'SE',
    skus: ['A'],
  })
  t.same(
    [reclassified?.cause, reclassified?.after],
    ['reclassified', null],
    'a class without a rate: no price from then',
  )
})

t.test("a list's window and its new version move the whole list", async (t) => {
  const { catalog, book } = world()
  putFrom(catalog, 'pricelist', 'RETAIL', pricelistValue({ vat_mode: 'GROSS', end_date: moment + day }), 0)
  const closing = momentTargets(catalog, moment + day, [entity('pricelist', 'RETAIL')])
  t.same(closing.lists, [
    { pricelist: 'RETAIL', cause: 'list_window' },
    { pricelist: 'CHILD', cause: 'parent_changed' },
  ])
  const [closed] = changesOn(
    catalog,
    book,
    moment + day,
    { pricelist: 'RETAIL', taxArea: 'SE', skus: ['A'] },
    'list_window',
  )
  t.same([closed?.cause, closed?.before?.gross, closed?.after], ['list_window', 800_000, null])
  const rules = pricelistValue({
    vat_mode: 'GROSS',
    end_date: moment + day,
    price_rules: [{ code: null, description: null, expression: 'sales * 0.5', filter: null, updated_by: null }],
  })
  putFrom(catalog, 'pricelist', 'RETAIL', rules, moment + day / 2)
  const ruled = momentTargets(catalog, moment + day / 2, [entity('pricelist', 'RETAIL')])
  t.same(ruled.lists[0], { pricelist: 'RETAIL', cause: 'rule_changed' })
  const [halved] = changesOn(
    catalog,
    book,
    moment + day / 2,
    { pricelist: 'RETAIL', taxArea: 'SE', skus: ['A'] },
    'rule_changed',
  )
  t.same([halved?.before?.gross, halved?.after?.gross], [800_000, 400_000])
})

t.test('an FX publication moves a list that inherits across currencies, and no other', async (t) => {
  const { catalog, book } = world()
  put(catalog, 'currency', 'EUR', { is_active: true, vat_precision: 2 })
  put(catalog, 'pricelist', 'EURO', pricelistValue({ currency_code: 'EUR', vat_mode: 'GROSS', parent_code: 'RETAIL' }))
  putFrom(catalog, 'fx_rate', compositeKey('EUR', 'SEK'), { rate: '10' }, 0)
  putFrom(catalog, 'fx_rate', compositeKey('EUR', 'SEK'), { rate: '8' }, moment + day)
  const targets = momentTargets(catalog, moment + day, [entity('fx_rate', compositeKey('EUR', 'SEK'))])
  t.same(
    targets.lists,
    [{ pricelist: 'EURO', cause: 'fx_published' }],
    'EURO converts RETAIL’s SEK; RETAIL and CHILD do not',
  )
  const [converted] = changesOn(
    catalog,
    book,
    moment + day,
    { pricelist: 'EURO', taxArea: 'SE', skus: ['A'] },
    'fx_published',
  )
  t.same(
    [converted?.currency, converted?.before?.gross, converted?.after?.gross],
    ['EUR', 80_000, 100_000],
    '80 SEK at 10 SEK a euro is 8 EUR; at 8, 10 EUR',
  )
  t.same(
    changesOn(catalog, book, moment + day, { pricelist: 'RETAIL', taxArea: 'SE', skus: ['A'] }),
    [],
    'RETAIL: none',
  )
})
