/**
 * The price diff's engine (engine/diff): for random pricing worlds (test/helpers/price-world.ts)
 * and two random instants, the diff is exactly the set of SKUs whose answers from two plain
 * `queryPrices` calls differ, on the price book and on a replica, with the change in percent
 * recomputed here in BigInt and causes that are never empty, sorted, and (the world's catalogue
 * does not change over time, only its prices) only price causes. Then hand-built catalogues that
 * change over time name the other causes: a pricelist's rules, a bundle rule, a rounding profile,
 * a VAT rate, a VAT reclassification and an FX publication.
 */
import fc from 'fast-check'
import t from 'tap'
import { Catalog, compositeKey, type CatalogType, type EntityValues, type Pricelist } from '../../engine/catalog.js'
import { diffCauses, diffPrices, fourDecimals, type DiffRequest } from '../../engine/diff/diff.js'
import { planFxRates } from '../../engine/fx.js'
import { PriceContext, type AnswerOptions, type PricedItem } from '../../engine/pipeline.js'
import { PriceReplica } from '../../engine/price-replica.js'
import { PriceBook } from '../../engine/prices.js'
import { queryPrices } from '../../engine/query.js'
import type { PriceReader } from '../../engine/price-replica.js'
import { build, lists, pricelistValue, querySkus, worldArbitrary } from '../helpers/price-world.js'

const seed =
  process.env['PROPERTY_SEED'] === undefined ? Date.now() % 2_147_483_647 : Number(process.env['PROPERTY_SEED'])

type Side = { pricelist: string; net: number; vat: number; gross: number } | { reason: string }

function plainSides(catalog: Catalog, reader: PriceReader, request: DiffRequest, at: number, codes: readonly string[]) {
  const options: AnswerOptions = { currency: request.currency, rounding: null, quantity: request.quantity }
  const result = queryPrices(new PriceContext(catalog, reader, at, request.taxArea), {
    skus: request.skus,
    pricelists: codes,
    options,
    sortOrder: null,
  })
  const sides = new Map<string, Side>()
  for (const item of result.items as PricedItem[])
    sides.set(item.sku, { pricelist: item.pricelist, net: item.net, vat: item.vat, gross: item.gross })
  for (const missing of result.unavailable) sides.set(missing.sku, { reason: missing.reason })
  return sides
}

/** 100 x (to - from) / from in 4 decimals, half-up away from zero, in BigInt. */
function percentText(before: number, after: number): string {
  const numerator = BigInt(after - before) * 1_000_000n
  const denominator = BigInt(before)
  const negative = numerator < 0n !== denominator < 0n
  const magnitude = (numerator < 0n ? -numerator : numerator) * 2n
  const divisor = denominator < 0n ? -denominator : denominator
  const rounded = (magnitude / divisor + 1n) / 2n
  const text = rounded.toString().padStart(5, '0')
  return `${negative && rounded !== 0n ? '-' : ''}${text.slice(0, -4)}.${text.slice(-4)}`
}

t.test('the diff is the set two plain queries answer differently, on the book and on a replica', async (t) => {
  let changed = 0
  fc.assert(
    fc.property(
      worldArbitrary,
      fc.integer({ min: 0, max: 110 }),
      fc.integer({ min: 0, max: 110 }),
      fc.subarray(lists, { minLength: 1 }),
      fc.constantFrom('SEK', 'EUR'),
      (world, first, second, selected, currency) => {
        const { catalog, book } = build(world)
        const replica = new PriceReplica(book.sharedColumns(), book.dictionaryDelta(0, 0))
        const codes = [...selected].sort()
        const request: DiffRequest = {
          from: Math.min(first, second),
          to: Math.max(first, second),
          taxArea: 'SE',
          currency,
          rounding: null,
          quantity: 1,
          pricelistsFrom: codes,
          pricelistsTo: codes,
          skus: [...querySkus].sort(),
        }
        for (const reader of [book, replica]) {
          const before = plainSides(catalog, reader, request, request.from, codes)
          const after = plainSides(catalog, reader, request, request.to, codes)
          const expected = request.skus.filter((sku) => {
            const left = before.get(sku)!
            const right = after.get(sku)!
            if ('reason' in left && 'reason' in right) return false
            return JSON.stringify(left) !== JSON.stringify(right)
          })
          const entries = diffPrices(catalog, reader, request)
          t.same(
            entries.map((entry) => [entry.sku, entry.from, entry.to]),
            expected.map((sku) => [sku, before.get(sku), after.get(sku)]),
          )
          for (const entry of entries) {
            t.ok(entry.causes.length > 0, 'causes are never empty')
            t.same(
              entry.causes,
              [...entry.causes].sort((l, r) => diffCauses.indexOf(l) - diffCauses.indexOf(r)),
            )
            // Only prices change over time in these worlds (the catalogue is written at 0).
            t.same(
              entry.causes.filter(
                (cause) => !['own_version', 'parent_version', 'list_window', 'bundle'].includes(cause),
              ),
              [],
              `causes of ${entry.sku}: ${entry.causes.join(', ')}`,
            )
            const priced = 'gross' in entry.from && 'gross' in entry.to
            const percent =
              priced && 'gross' in entry.from && entry.from.gross !== 0 && 'gross' in entry.to
                ? percentText(entry.from.gross, entry.to.gross)
                : null
            t.equal(entry.changePercent === null ? null : fourDecimals(entry.changePercent), percent)
          }
          changed += entries.length
        }
      },
    ),
    { seed, numRuns: 60 },
  )
  t.ok(changed > 0, `the worlds changed ${changed} items (seed ${seed})`)
})

function put<K extends CatalogType>(catalog: Catalog, type: K, key: string, value: EntityValues[K], from = 0): void {
  const change = catalog.plan(type, key, value, from, 0, 'test')
  if (change !== null) catalog.apply(change.type, change.key, change.versions)
}

function pricelist(fields: Partial<Pricelist> = {}): Pricelist {
  return pricelistValue(fields)
}

/** One SKU per cause, each priced 100.00 SEK net on P, with one change at 50 between 0 and 100. */
function changingWorld(): { catalog: Catalog; book: PriceBook } {
  const catalog = new Catalog()
  put(catalog, 'currency', 'SEK', { is_active: true, vat_precision: 2 })
  put(catalog, 'currency', 'EUR', { is_active: true, vat_precision: 2 })
  put(catalog, 'tax_area', 'SE', { name: 'SE', is_active: true, valid_from: null, valid_to: null })
  for (const code of ['standard', 'reduced']) put(catalog, 'vat_class', code, { name: code, description: null })
  put(catalog, 'vat_rate', compositeKey('SE', 'standard'), { rate: '25' })
  put(catalog, 'vat_rate', compositeKey('SE', 'reduced'), { rate: '12' })
  put(catalog, 'vat_rate', compositeKey('SE', 'reduced'), { rate: '6' }, 50)
  for (const sku of ['R', 'B', 'C1', 'C2', 'V', 'M', 'F'])
    put(catalog, 'article_taxclass', compositeKey(sku, 'SE'), { vat_class_code: sku === 'V' ? 'reduced' : 'standard' })
  put(catalog, 'article_taxclass', compositeKey('M', 'SE'), { vat_class_code: 'reduced' }, 50)
  put(catalog, 'pricelist', 'P', pricelist())
  // Rules on RULED from 50: the same price, 10% off.
  put(catalog, 'pricelist', 'RULED', pricelist())
  const rule = { code: null, description: null, expression: 'sales * 0.9', filter: null, updated_by: null }
  put(catalog, 'pricelist', 'RULED', pricelist({ price_rules: [rule] }), 50)
  put(catalog, 'bundle_rule', compositeKey('B', 'P'), {
    method: 'SUM_OF_PARTS',
    discount_type: 'PERCENTAGE',
    discount_value: '10',
    fixed_price: null,
    components: [{ sku: 'C1', quantity: 1 }],
  })
  put(
    catalog,
    'bundle_rule',
    compositeKey('B', 'P'),
    {
      method: 'SUM_OF_PARTS',
      discount_type: 'PERCENTAGE',
      discount_value: '20',
      fixed_price: null,
      components: [{ sku: 'C1', quantity: 1 }],
    },
    50,
  )
  // EUR -> SEK 10 until 50, then 11: F's SEK price answered in EUR.
  for (const change of planFxRates(catalog, 'SEK', [{ from: 0, rate: '10' }], 0, 'test'))
    catalog.apply(change.type, change.key, change.versions)
  for (const change of planFxRates(catalog, 'SEK', [{ from: 50, rate: '11' }], 0, 'test'))
    catalog.apply(change.type, change.key, change.versions)
  const book = new PriceBook()
  const version = { from: 0, content: { sales: 1_000_000, fields: null, breaks: null }, writtenAt: 0, writtenBy: 't' }
  for (const sku of ['C1', 'V', 'M', 'F']) book.apply('P', sku, [version])
  book.apply('RULED', 'R', [version])
  return { catalog, book }
}

t.test('catalogue changes between the instants name their causes', async (t) => {
  const { catalog, book } = changingWorld()
  const request = (skus: string[], pricelists: string[], currency = 'SEK'): DiffRequest => ({
    from: 10,
    to: 90,
    taxArea: 'SE',
    currency,
    rounding: null,
    quantity: 1,
    pricelistsFrom: pricelists,
    pricelistsTo: pricelists,
    skus,
  })
  const causes = (entries: ReturnType<typeof diffPrices>) =>
    Object.fromEntries(entries.map((entry) => [entry.sku, entry.causes]))
  t.same(causes(diffPrices(catalog, book, request(['R'], ['RULED']))), { R: ['rule'] })
  t.same(causes(diffPrices(catalog, book, request(['B', 'V', 'M'], ['P']))), {
    B: ['bundle'],
    M: ['vat_reclassification'],
    V: ['vat_rate'],
  })
  const fx = diffPrices(catalog, book, request(['F'], ['P'], 'EUR'))
  t.same(causes(fx), { F: ['fx_rate'] })
  // 100 SEK / 10 = 10.00 EUR net, 12.50 gross; / 11 = 9.0909, VAT 2.27, gross 11.3609: -9.1128%.
  t.same(
    [fx[0]!.to, fourDecimals(fx[0]!.changePercent!)],
    [{ pricelist: 'P', net: 90_909, vat: 22_700, gross: 113_609 }, '-9.1128'],
  )
  t.same(diffPrices(catalog, book, { ...request(['R', 'B', 'V', 'M', 'F'], ['P', 'RULED']), to: 10 }), [])
})

t.test('fourDecimals writes exactly four decimals, the sign kept', async (t) => {
  t.same(
    [fourDecimals(0), fourDecimals(200_000), fourDecimals(-15_000), fourDecimals(-1), fourDecimals(123_456_789)],
    ['0.0000', '20.0000', '-1.5000', '-0.0001', '12345.6789'],
  )
})
