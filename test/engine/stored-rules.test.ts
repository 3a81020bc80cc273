/**
 * Rules stored before today's limits (issue 13 refused `matches()` and bounded a rule's size) are
 * compiled again at query time: one that today's limits refuse is not run, and the pricelist's
 * prices answer `rule_error` (no exception escapes to the request); the other pricelists are priced
 * as before.
 */
import t from 'tap'
import { Catalog, compositeKey, type CatalogType, type EntityValues, type Pricelist } from '../../engine/catalog.js'
import { PriceContext } from '../../engine/pipeline.js'
import { PriceBook } from '../../engine/prices.js'
import { queryPrices } from '../../engine/query.js'
import { compileRules, RuleCompileError } from '../../engine/rules.js'

function put<K extends CatalogType>(catalog: Catalog, type: K, key: string, value: EntityValues[K]): void {
  const change = catalog.plan(type, key, value, 0, 0, 'test')
  if (change !== null) catalog.apply(change.type, change.key, change.versions)
}

t.test('a stored rule that today refuses answers rule_error, not an exception', async (t) => {
  const regex = {
    code: 'R',
    description: null,
    filter: "article.sku.matches('^S')",
    expression: 'sales * 2',
    updated_by: null,
  }
  t.throws(() => compileRules([regex]), RuleCompileError, 'today a write with matches() is refused')
  const catalog = new Catalog()
  put(catalog, 'currency', 'SEK', { is_active: true, vat_precision: 2 })
  put(catalog, 'tax_area', 'SE', { name: 'SE', is_active: true, valid_from: null, valid_to: null })
  put(catalog, 'vat_class', 'standard', { name: 'standard', description: null })
  put(catalog, 'vat_rate', compositeKey('SE', 'standard'), { rate: '25' })
  put(catalog, 'article_taxclass', compositeKey('S1', 'SE'), { vat_class_code: 'standard' })
  const pricelist = (rules: Pricelist['price_rules']): Pricelist => ({
    currency_code: 'SEK',
    vat_mode: 'NET',
    name: 'list',
    description: null,
    parent_code: null,
    start_date: null,
    end_date: null,
    metadata: {},
    price_rules: rules,
  })
  // Stored as an older version accepted it: planned straight into the catalog.
  put(catalog, 'pricelist', 'OLD', pricelist([regex]))
  put(
    catalog,
    'pricelist',
    'PLAIN',
    pricelist([{ code: 'D', description: null, filter: null, expression: 'sales * 2', updated_by: null }]),
  )
  const book = new PriceBook()
  const version = [
    { from: 0, content: { sales: 100_000, fields: null, breaks: null }, writtenAt: 0, writtenBy: 'test' },
  ]
  book.apply('OLD', 'S1', version)
  book.apply('PLAIN', 'S1', version)
  const query = (pricelists: string[]) =>
    queryPrices(new PriceContext(catalog, book, 1_000, 'SE'), {
      skus: ['S1'],
      pricelists,
      options: { currency: 'SEK', rounding: null, quantity: 1 },
      sortOrder: null,
    })
  t.same(
    query(['OLD']),
    { items: [], unavailable: [{ sku: 'S1', reason: 'rule_error' }] },
    'the pricelist with the refused rule answers rule_error',
  )
  const both = query(['OLD', 'PLAIN'])
  t.same(
    both.items.map((item) => [item.pricelist, item.net]),
    [['PLAIN', 200_000]],
    'the other pricelist is priced by its rule: 10 x 2 = 20.0000',
  )
})
