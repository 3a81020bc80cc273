/**
 * An explanation's VAT mapping input is kept per catalogue, tax area and SKU across requests
 * (engine/explain/explain.ts mappingAt): a write of a mapping must show in the next explanation,
 * a scheduled one only from its start, and an earlier instant must keep naming the earlier version.
 */
import t from 'tap'
import { compositeKey, type Catalog, type CatalogType, type EntityValues } from '../../engine/catalog.js'
import { explainPrice } from '../../engine/explain/explain.js'
import { PriceContext } from '../../engine/pipeline.js'
import { build, lists, type World } from '../helpers/price-world.js'

function put<K extends CatalogType>(catalog: Catalog, type: K, key: string, value: EntityValues[K], from: number) {
  const change = catalog.plan(type, key, value, from, 0, 'test')
  if (change !== null) catalog.apply(change.type, change.key, change.versions)
}

const world: World = {
  lists: lists.map(() => ({ currency: 'SEK', mode: 'NET' as const, parent: null, rule: null })) as World['lists'],
  eurRate: null,
  vatRate: '25',
  bundleOn: null,
  prices: ['S0', 'S4'].map((sku) => ({
    sku,
    list: 'P0',
    versions: [{ from: 0, kind: 'price' as const, sales: 10_000, breaks: [] }],
  })),
}

t.test('a mapping written or scheduled after an explanation shows in the next one, from its start', async (t) => {
  const { catalog, book } = build(world)
  const explain = (sku: string, at: number) => {
    const context = new PriceContext(catalog, book, at, 'SE')
    const options = { currency: 'SEK', rounding: null, quantity: 1 }
    const explanation = explainPrice(context, { sku, pricelists: ['P0'], excluded: [], options, roundingCode: null })
    const mapping = explanation.inputs.filter((input) => input.startsWith('vat_mapping|'))
    return { mapping: mapping.map((input) => input.split('|').slice(0, 4).join('|')), explanation }
  }
  t.same(explain('S0', 50).mapping, ['vat_mapping|S0|SE|0'])
  const before = explain('S4', 50)
  t.same([before.mapping, before.explanation.item], [[], null], 'S4 has no mapping: no price')
  put(catalog, 'vat_class', 'reduced', { name: 'reduced', description: null }, 0)
  put(catalog, 'vat_rate', compositeKey('SE', 'reduced'), { rate: '12' }, 0)
  put(catalog, 'article_taxclass', compositeKey('S0', 'SE'), { vat_class_code: 'reduced' }, 100)
  put(catalog, 'article_taxclass', compositeKey('S4', 'SE'), { vat_class_code: 'reduced' }, 0)
  t.same(explain('S0', 50).mapping, ['vat_mapping|S0|SE|0'], 'before the scheduled mapping: the first')
  const later = explain('S0', 100)
  t.same(later.mapping, ['vat_mapping|S0|SE|100'], 'from its start: the scheduled one')
  t.same([later.explanation.vat[0]?.mappingStart, later.explanation.item?.vat], [100, 1_200])
  t.same(explain('S0', 99).mapping, ['vat_mapping|S0|SE|0'], 'an earlier instant again: the first')
  const after = explain('S4', 50)
  t.same([after.mapping, after.explanation.item?.gross], [['vat_mapping|S4|SE|0'], 11_200], 'the written mapping')
})
