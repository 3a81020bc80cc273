/**
 * The price pipeline and the price query against the real server: inheritance over three levels,
 * FX and VAT-mode conversion of inherited prices, CEL rules, quantity breaks through FX and VAT,
 * VAT formulas and precision, rounding profiles, best price across pricelists, the answer shape,
 * unavailable reasons, sorting, homogeneity settings, bad requests and the query's rate-limit cost.
 * Every expected amount is worked out by hand in the comment next to it.
 */
import t from 'tap'
import {
  expectStatus,
  mapSkus,
  putArticle,
  putPrice,
  putPricelist,
  putSetting,
  query,
  setupReference,
} from '../../helpers/price-fixtures.js'
import { answerCacheCounts } from '../../helpers/metrics.js'
import type { TenantClient } from '../../helpers/server.js'
import { suiteServer } from '../../helpers/suite.js'

const {
  server,
  tenants: { acme },
} = await suiteServer({
  tenants: {
    acme: {
      reference: true,
      pricelists: {
        BASE: { currency_code: 'EUR', vat_mode: 'NET' },
        MID: { currency_code: 'EUR', parent_code: 'BASE' },
        LEAF: { currency_code: 'EUR', parent_code: 'MID' },
        'SEK-G': { currency_code: 'SEK', vat_mode: 'GROSS', parent_code: 'BASE' },
        'EUR-G': { currency_code: 'EUR', vat_mode: 'GROSS' },
        'JPY-N': { currency_code: 'JPY', vat_mode: 'NET' },
        'JPY-G': { currency_code: 'JPY', vat_mode: 'GROSS' },
      },
    },
  },
})

type Item = Record<string, any>

/** Runs a query that must succeed and answers its body. */
async function run(
  client: TenantClient,
  body: Record<string, unknown>,
): Promise<{ items: Item[]; unavailable: { sku: string; reason: string }[] }> {
  const answer = await client.call('POST', '/price/query', body)
  if (answer.status !== 200) throw new Error(`query: ${answer.status} ${answer.text}`)
  return answer.body
}

/** [net, vat, gross] of the single item a query answers. */
async function amounts(client: TenantClient, body: Record<string, unknown>): Promise<number[]> {
  const { items, unavailable } = await run(client, body)
  if (items.length !== 1) throw new Error(`expected one item, got ${JSON.stringify({ items, unavailable })}`)
  return [items[0]!.net, items[0]!.vat, items[0]!.gross]
}

t.test('inheritance goes through three levels and the nearest own price wins', async (t) => {
  await putPrice(acme, 'I-1', 'BASE', { price: 100 })
  await mapSkus(acme, 'standard', ['I-1'])
  const leaf = await run(acme, query(['I-1'], ['LEAF']))
  t.same(
    [
      leaf.items[0]!.pricelist,
      leaf.items[0]!.net,
      leaf.items[0]!.gross,
      leaf.items[0]!.inherited,
      leaf.items[0]!.vat_mode,
    ],
    ['LEAF', 100, 125, true, 'NET'],
  )
  t.equal((await acme.get('/price/I-1/LEAF')).body.source_pricelist, 'BASE')
  await putPrice(acme, 'I-1', 'MID', { price: 80 })
  t.same(await amounts(acme, query(['I-1'], ['LEAF'])), [80, 20, 100], 'the middle level now gives the price')
  t.equal((await acme.get('/price/I-1/LEAF')).body.source_pricelist, 'MID')
  const own = await run(acme, query(['I-1'], ['MID']))
  t.equal(own.items[0]!.inherited, false)
  await expectStatus(acme.call('DELETE', '/price/I-1/MID'), 202, 'delete')
  t.same(await amounts(acme, query(['I-1'], ['LEAF'])), [100, 25, 125], 'after the delete the top level applies again')
})

t.test(
  'a child in another currency and VAT mode converts the parent price with FX as of the read and the VAT rate of the area',
  async (t) => {
    await putPrice(acme, 'X', 'BASE', { price: 9.99 })
    await mapSkus(acme, 'standard', ['X'])
    // 9.99 EUR x 11.4321 = 114.206679 -> 114.2067 SEK net; SE 25%: VAT 28.551675 -> 28.55, gross 142.7567.
    // Answered on the GROSS child: vat = round(142.7567 x 25 / 125 = 28.55134) = 28.55, net 114.2067.
    const sweden = await run(acme, query(['X'], ['SEK-G'], { currency_code: 'SEK' }))
    t.same(sweden.items[0], {
      sku: 'X',
      pricelist: 'SEK-G',
      currency_code: 'SEK',
      vat_mode: 'GROSS',
      net: 114.2067,
      vat: 28.55,
      gross: 142.7567,
      vat_rate: 25,
      vat_class: 'standard',
      inherited: true,
      quantity_breaks: [],
      fx: null,
    })
    // DE 19%: 114.2067 x 0.19 = 21.699273 -> 21.70, gross 135.9067; back out: 135.9067 x 19 / 119 = 21.6992 -> 21.70.
    t.same(
      await amounts(acme, query(['X'], ['SEK-G'], { currency_code: 'SEK', tax_area: 'DE' })),
      [114.2067, 21.7, 135.9067],
    )
    // From 2998-01-01 the rate is 12: 119.88 SEK net, VAT 29.97, gross 149.85.
    t.same(
      await amounts(acme, query(['X'], ['SEK-G'], { currency_code: 'SEK', as_of: '2998-06-01T00:00:00Z' })),
      [119.88, 29.97, 149.85],
    )
    // The raw read shows the converted gross definition in the default tax area (SE).
    const raw = await acme.get('/price/X/SEK-G')
    t.same(
      [raw.body.price.sales, raw.body.currency_code, raw.body.vat_mode, raw.body.inherited, raw.body.source_pricelist],
      [142.7567, 'SEK', 'GROSS', true, 'BASE'],
    )
    // Asked in EUR, the child's SEK gross goes back through FX: 142.7567 / 11.4321 = 12.48735... -> 12.4874;
    // vat = round(12.4874 / 5 = 2.49748) = 2.50, net 9.9874.
    // Fields convert by FX only: cost 5 EUR x 11.4321 = 57.1605 SEK (no VAT added: a cost is not a sales price).
    await putPrice(acme, 'XF', 'BASE', { price: { sales: 1, fields: { cost: 5 } } })
    await mapSkus(acme, 'standard', ['XF'])
    t.same((await acme.get('/price/XF/SEK-G')).body.price.fields, { cost: 57.1605 })
    const euro = await run(acme, query(['X'], ['SEK-G']))
    t.same([euro.items[0]!.net, euro.items[0]!.vat, euro.items[0]!.gross], [9.9874, 2.5, 12.4874])
    t.same(
      [euro.items[0]!.fx.base, euro.items[0]!.fx.quote, euro.items[0]!.fx.as_of],
      ['SEK', 'EUR', '2024-01-02T00:00:00Z'],
    )
  },
)

t.test('a NET child of a GROSS parent takes the VAT out with the rate of the requested area', async (t) => {
  await putPricelist(acme, 'G-TOP', { currency_code: 'EUR', vat_mode: 'GROSS' })
  await putPricelist(acme, 'N-KID', { currency_code: 'EUR', vat_mode: 'NET', parent_code: 'G-TOP' })
  await putPrice(acme, 'Y', 'G-TOP', { price: 12.5 })
  await mapSkus(acme, 'standard', ['Y'])
  // SE: 12.5 - round(12.5 x 25/125 = 2.5) = 10 net; VAT 2.50, gross 12.50.
  t.same(await amounts(acme, query(['Y'], ['N-KID'])), [10, 2.5, 12.5])
  // DE: 12.5 - round(12.5 x 19/119 = 1.9958) = 10.50 net; VAT round(1.995) = 2.00, gross 12.50.
  t.same(await amounts(acme, query(['Y'], ['N-KID'], { tax_area: 'DE' })), [10.5, 2, 12.5])
  // A mode conversion needs the article's VAT class in the area.
  await putPrice(acme, 'Y-NOCLASS', 'G-TOP', { price: 12.5 })
  t.same((await run(acme, query(['Y-NOCLASS'], ['N-KID']))).unavailable, [{ sku: 'Y-NOCLASS', reason: 'no_vat_class' }])
})

t.test('VAT follows the NET and GROSS formulas, half-up to the vat_precision of the requested currency', async (t) => {
  await mapSkus(acme, 'standard', ['V-1', 'V-2', 'V-3', 'V-4', 'V-5'])
  await putPrice(acme, 'V-1', 'BASE', { price: 10.22 })
  await putPrice(acme, 'V-2', 'EUR-G', { price: 12.775 })
  await putPrice(acme, 'V-3', 'JPY-N', { price: 1002 })
  await putPrice(acme, 'V-4', 'JPY-N', { price: 1001 })
  await putPrice(acme, 'V-5', 'JPY-G', { price: 1253 })
  // NET: 10.22 x 0.25 = 2.555 -> 2.56 (a tie goes up), gross 12.78.
  t.same(await amounts(acme, query(['V-1'], ['BASE'])), [10.22, 2.56, 12.78])
  // GROSS: 12.775 - 12.775 / 1.25 = 2.555 -> 2.56, net 10.215.
  t.same(await amounts(acme, query(['V-2'], ['EUR-G'])), [10.215, 2.56, 12.775])
  // JPY has vat_precision 0: 1002 x 0.25 = 250.5 -> 251; 1001 x 0.25 = 250.25 -> 250.
  t.same(await amounts(acme, query(['V-3'], ['JPY-N'], { currency_code: 'JPY' })), [1002, 251, 1253])
  t.same(await amounts(acme, query(['V-4'], ['JPY-N'], { currency_code: 'JPY' })), [1001, 250, 1251])
  // GROSS in JPY: 1253 x 25/125 = 250.6 -> 251, net 1002.
  t.same(await amounts(acme, query(['V-5'], ['JPY-G'], { currency_code: 'JPY' })), [1002, 251, 1253])
  // The requested currency's precision applies: 10.22 EUR x 160 = 1635.2 JPY, VAT 408.8 -> 409.
  t.same(await amounts(acme, query(['V-1'], ['BASE'], { currency_code: 'JPY' })), [1635.2, 409, 2044.2])
  // DE reduced 7%: 10.22 x 0.07 = 0.7154 -> 0.72.
  await mapSkus(acme, 'reduced', ['V-6'])
  await putPrice(acme, 'V-6', 'BASE', { price: 10.22 })
  const reduced = await run(acme, query(['V-6'], ['BASE'], { tax_area: 'DE' }))
  t.same(
    [reduced.items[0]!.vat, reduced.items[0]!.gross, reduced.items[0]!.vat_rate, reduced.items[0]!.vat_class],
    [0.72, 10.94, 7, 'reduced'],
  )
})

t.test('VAT precision 4 keeps the exact VAT and a changed precision applies at once', async (t) => {
  const shop = await server.tenant('precision')
  await setupReference(shop)
  await putPricelist(shop, 'PL', { currency_code: 'EUR', vat_mode: 'NET' })
  await putPrice(shop, 'P', 'PL', { price: 10.22 })
  await mapSkus(shop, 'standard', ['P'])
  await expectStatus(shop.call('PUT', '/currency/EUR', { vat_precision: 4 }), 202, 'currency')
  t.same(await amounts(shop, query(['P'], ['PL'])), [10.22, 2.555, 12.775])
  await expectStatus(shop.call('PUT', '/currency/EUR', { vat_precision: 0 }), 202, 'currency')
  t.same(await amounts(shop, query(['P'], ['PL'])), [10.22, 3, 13.22])
})

t.test(
  'CEL rules: the first matching rule sets the price, no match leaves it, a failing rule makes the SKU unavailable',
  async (t) => {
    await putPricelist(acme, 'RULES', {
      currency_code: 'EUR',
      vat_mode: 'NET',
      price_rules: [
        { code: 'food', filter: 'article.type == "food"', expression: 'sales * 0.9' },
        {
          code: 'acme',
          filter: '"brand" in article.metadata && "acme" in article.metadata.brand',
          expression: 'sales - 1',
        },
        { code: 'double', filter: 'article.type == "food" || article.type == "tool"', expression: 'sales * 2' },
        { code: 'cost', filter: 'article.type == "broken"', expression: 'fields.cost * 3' },
      ],
    })
    const skus = ['R-FOOD', 'R-ACME', 'R-TOOL', 'R-PLAIN', 'R-NOART', 'R-BROKEN', 'R-COST']
    await putArticle(acme, 'R-FOOD', { name: 'Bread', type: 'food', metadata: { brand: ['acme'] } })
    await putArticle(acme, 'R-ACME', { name: 'Toy', type: 'toy', metadata: { brand: ['other', 'acme'] } })
    await putArticle(acme, 'R-TOOL', { name: 'Saw', type: 'tool' })
    await putArticle(acme, 'R-PLAIN', { name: 'Toy', type: 'toy', metadata: { brand: ['other'] } })
    await putArticle(acme, 'R-BROKEN', { name: 'X', type: 'broken' })
    await putArticle(acme, 'R-COST', { name: 'Y', type: 'broken' })
    await mapSkus(acme, 'standard', skus)
    for (const sku of skus)
      await putPrice(acme, sku, 'RULES', {
        price: sku === 'R-FOOD' ? 9.99 : sku === 'R-COST' ? { sales: 10, fields: { cost: 4 } } : 10,
      })
    const answer = await run(acme, query(skus, ['RULES']))
    const net = Object.fromEntries(answer.items.map((item) => [item.sku, item.net]))
    t.same(net, {
      'R-FOOD': 8.991, // 9.99 x 0.9 (the food rule comes first, before acme and double)
      'R-ACME': 9, // 10 - 1 (brand acme, not food)
      'R-TOOL': 20, // 10 x 2
      'R-PLAIN': 10, // no rule matches
      'R-NOART': 10, // no article: type null matches nothing
      'R-COST': 12, // cost 4 x 3
    })
    // 8.991 x 0.25 = 2.24775 -> 2.25; gross 11.241.
    t.equal(answer.items.find((item) => item.sku === 'R-FOOD')!.gross, 11.241)
    t.same(answer.unavailable, [{ sku: 'R-BROKEN', reason: 'rule_error' }], 'fields.cost is missing at run time')
    const failed = await acme.get('/price/R-BROKEN/RULES/SE')
    t.equal(failed.status, 404)
    t.equal(failed.body.reason, 'rule_error')
    // The filter sees the article as of the read: a type change moves the SKU to another rule.
    await putArticle(acme, 'R-PLAIN', { name: 'Toy', type: 'food', start_date: '2999-01-01' })
    t.same(await amounts(acme, query(['R-PLAIN'], ['RULES'], { as_of: '2999-06-01T00:00:00Z' })), [9, 2.25, 11.25])
    // A rule that does not compile is refused when the pricelist is written.
    const bad = await acme.call('PUT', '/pricelist/BADRULE', {
      currency_code: 'EUR',
      vat_mode: 'NET',
      price_rules: [{ expression: 'sales *' }],
    })
    t.equal(bad.status, 400)
  },
)

t.test("rules apply after inheritance, and a child's rules apply to the parent's resolved price", async (t) => {
  await putPricelist(acme, 'R-PARENT', {
    currency_code: 'EUR',
    vat_mode: 'NET',
    price_rules: [{ expression: 'sales * 0.5' }],
  })
  await putPricelist(acme, 'R-CHILD', {
    currency_code: 'EUR',
    parent_code: 'R-PARENT',
    price_rules: [{ expression: 'sales + 1' }],
  })
  await putPricelist(acme, 'R-GRAND', { currency_code: 'EUR', parent_code: 'R-CHILD' })
  await putPrice(acme, 'RI', 'R-PARENT', { price: 10 })
  await mapSkus(acme, 'standard', ['RI'])
  // Parent: 10 x 0.5 = 5; child: 5 + 1 = 6; grandchild inherits 6.
  t.same(await amounts(acme, query(['RI'], ['R-PARENT'])), [5, 1.25, 6.25])
  t.same(await amounts(acme, query(['RI'], ['R-CHILD'])), [6, 1.5, 7.5])
  t.same(await amounts(acme, query(['RI'], ['R-GRAND'])), [6, 1.5, 7.5])
  // An own price on the child still goes through the child's rule.
  await putPrice(acme, 'RI', 'R-CHILD', { price: 20 })
  t.same(await amounts(acme, query(['RI'], ['R-GRAND'])), [21, 5.25, 26.25])
})

t.test('quantity breaks go through FX and VAT, and quantity selects the applicable break', async (t) => {
  await putPrice(acme, 'BRK', 'BASE', {
    price: 10,
    quantity_breaks: [
      { quantity_break: 10, percent_of_base: 90 },
      { quantity_break: 50, fixed_price: 7.5 },
    ],
  })
  await mapSkus(acme, 'standard', ['BRK'])
  const euro = await run(acme, query(['BRK'], ['BASE']))
  // Base 10 / 2.50 / 12.50; 90% of 10 = 9 / 2.25 / 11.25; fixed 7.5: VAT 1.875 -> 1.88, gross 9.38.
  t.same(euro.items[0]!.quantity_breaks, [
    { quantity_break: 10, net: 9, vat: 2.25, gross: 11.25 },
    { quantity_break: 50, net: 7.5, vat: 1.88, gross: 9.38 },
  ])
  t.same([euro.items[0]!.net, euro.items[0]!.gross], [10, 12.5], 'quantity 1 answers the base')
  // In SEK (11.4321): base 114.321 / 28.58 / 142.901; 9 EUR -> 102.8889 / 25.72 / 128.6089;
  // 7.5 EUR -> 85.74075 -> 85.7408 / 21.44 / 107.1808.
  const sek = await run(acme, query(['BRK'], ['BASE'], { currency_code: 'SEK' }))
  t.same(sek.items[0]!.quantity_breaks, [
    { quantity_break: 10, net: 102.8889, vat: 25.72, gross: 128.6089 },
    { quantity_break: 50, net: 85.7408, vat: 21.44, gross: 107.1808 },
  ])
  t.same(
    await amounts(acme, query(['BRK'], ['BASE'], { currency_code: 'SEK', quantity: 9 })),
    [114.321, 28.58, 142.901],
  )
  t.same(
    await amounts(acme, query(['BRK'], ['BASE'], { currency_code: 'SEK', quantity: 10 })),
    [102.8889, 25.72, 128.6089],
  )
  t.same(
    await amounts(acme, query(['BRK'], ['BASE'], { currency_code: 'SEK', quantity: 49.5 })),
    [102.8889, 25.72, 128.6089],
  )
  t.same(
    await amounts(acme, query(['BRK'], ['BASE'], { currency_code: 'SEK', quantity: 50 })),
    [85.7408, 21.44, 107.1808],
  )
  t.same(
    await amounts(acme, query(['BRK'], ['BASE'], { currency_code: 'SEK', quantity: 1000 })),
    [85.7408, 21.44, 107.1808],
  )
  // Inherited by the GROSS SEK child: the fixed break is converted like the base (FX, then VAT added);
  // the percent break follows the converted base: 90% of 142.901 = 128.6109, VAT 25.72, net 102.8909.
  const child = await run(acme, query(['BRK'], ['SEK-G'], { currency_code: 'SEK' }))
  t.same([child.items[0]!.net, child.items[0]!.vat, child.items[0]!.gross], [114.321, 28.58, 142.901])
  t.same(child.items[0]!.quantity_breaks, [
    { quantity_break: 10, net: 102.8909, vat: 25.72, gross: 128.6109 },
    { quantity_break: 50, net: 85.7408, vat: 21.44, gross: 107.1808 },
  ])
  // A fractional quantity selects a break at exactly that quantity (0.57 x 10^4 is 5699.999... in binary).
  await putPrice(acme, 'BRK-KG', 'BASE', { price: 10, quantity_breaks: [{ quantity_break: 0.57, fixed_price: 9 }] })
  await mapSkus(acme, 'standard', ['BRK-KG'])
  t.same(await amounts(acme, query(['BRK-KG'], ['BASE'], { quantity: 0.57 })), [9, 2.25, 11.25])
  t.same(await amounts(acme, query(['BRK-KG'], ['BASE'], { quantity: 0.5699 })), [10, 2.5, 12.5])
  // The taxed read takes quantity too.
  const taxed = await acme.get('/price/BRK/BASE/SE?quantity=50')
  t.same([taxed.body.net, taxed.body.gross], [7.5, 9.38])
  // percent_of_base follows the base after rules.
  await putPricelist(acme, 'BRK-RULE', {
    currency_code: 'EUR',
    parent_code: 'BASE',
    price_rules: [{ expression: 'sales * 0.5' }],
  })
  const ruled = await run(acme, query(['BRK'], ['BRK-RULE']))
  t.same(
    ruled.items[0]!.quantity_breaks.map((entry: Item) => entry.net),
    [4.5, 7.5],
  )
})

t.test(
  'a rounding profile applies only when named: by code, or default for the currency, else the global default',
  async (t) => {
    const shop = await server.tenant('rounding')
    await setupReference(shop)
    await putPricelist(shop, 'NET', { currency_code: 'EUR', vat_mode: 'NET' })
    await putPricelist(shop, 'GROSS', { currency_code: 'EUR', vat_mode: 'GROSS' })
    await putPrice(shop, 'N', 'NET', { price: 10.22 })
    await putPrice(shop, 'G', 'GROSS', { price: 12.775 })
    await mapSkus(shop, 'standard', ['N', 'G'])
    const nines = {
      code: 'nines',
      currency_code: 'EUR',
      default_for_currency: true,
      default_global: false,
      tier_rules: [{ from: 0, increment: 1, mode: 'UP', offset: -0.01 }],
    }
    const tenths = {
      code: 'tenths',
      currency_code: null,
      default_for_currency: false,
      default_global: true,
      tier_rules: [{ from: 0, increment: 0.1, mode: 'HALF_UP' }],
    }
    await expectStatus(shop.call('POST', '/rounding-profile', nines), 202, 'profile nines')
    await expectStatus(shop.call('POST', '/rounding-profile', tenths), 202, 'profile tenths')
    t.same(await amounts(shop, query(['N'], ['NET'])), [10.22, 2.56, 12.78], 'no profile named: no rounding')
    // NET: the net amount is rounded: 10.22 -> up to 11 - 0.01 = 10.99; VAT 2.7475 -> 2.75; gross 13.74.
    t.same(await amounts(shop, query(['N'], ['NET'], { rounding_profile: 'nines' })), [10.99, 2.75, 13.74])
    // GROSS: the gross amount is rounded: 12.775 -> 12.99; VAT 12.99 / 5 = 2.598 -> 2.60; net 10.39.
    t.same(await amounts(shop, query(['G'], ['GROSS'], { rounding_profile: 'nines' })), [10.39, 2.6, 12.99])
    t.same(
      await amounts(shop, query(['N'], ['NET'], { rounding_profile: 'default' })),
      [10.99, 2.75, 13.74],
      'default: the EUR profile',
    )
    // In SEK the EUR default does not apply; the global one does: 10.22 x 11.4321 = 116.836062 -> 116.8361 -> 116.8;
    // VAT 29.2, gross 146.
    t.same(
      await amounts(shop, query(['N'], ['NET'], { rounding_profile: 'default', currency_code: 'SEK' })),
      [116.8, 29.2, 146],
    )
    t.same(await amounts(shop, query(['N'], ['NET'], { rounding_profile: 'tenths' })), [10.2, 2.55, 12.75])
    const taxed = await shop.get('/price/G/GROSS/SE?rounding_profile=nines')
    t.same([taxed.body.net, taxed.body.vat, taxed.body.gross], [10.39, 2.6, 12.99])
    const unknown = await shop.call('POST', '/price/query', query(['N'], ['NET'], { rounding_profile: 'nope' }))
    t.equal(unknown.status, 404)
  },
)

t.test(
  'the best price per SKU is the lowest gross among active pricelists; a tie goes to the code that sorts first',
  async (t) => {
    const shop = await server.tenant('best')
    await setupReference(shop)
    await putPricelist(shop, 'Q-B', { currency_code: 'EUR', vat_mode: 'NET', metadata: { channel: ['web'] } })
    await putPricelist(shop, 'Q-A', { currency_code: 'EUR', vat_mode: 'NET', metadata: { channel: ['web', 'shop'] } })
    await putPricelist(shop, 'Q-C', { currency_code: 'EUR', vat_mode: 'GROSS', metadata: { channel: ['shop'] } })
    await putPricelist(shop, 'Q-OLD', {
      currency_code: 'EUR',
      vat_mode: 'NET',
      start_date: '2019-01-01',
      end_date: '2020-01-01',
      metadata: { channel: ['web'] },
    })
    await putPricelist(shop, 'Q-LATER', {
      currency_code: 'EUR',
      vat_mode: 'NET',
      start_date: '2999-01-01',
      metadata: { channel: ['web'] },
    })
    await putPricelist(shop, 'Q-SEK', { currency_code: 'SEK', vat_mode: 'NET', metadata: { channel: ['web'] } })
    const skus = ['M1', 'M2', 'M3', 'M4', 'M5']
    await mapSkus(shop, 'standard', skus)
    const prices: [string, string, number][] = [
      ['M1', 'Q-A', 10],
      ['M1', 'Q-B', 9],
      ['M2', 'Q-B', 10],
      ['M2', 'Q-A', 10],
      ['M3', 'Q-A', 10],
      ['M3', 'Q-C', 12.4],
      ['M4', 'Q-A', 10],
      ['M4', 'Q-OLD', 1],
      ['M4', 'Q-LATER', 2],
      ['M5', 'Q-A', 10],
      ['M5', 'Q-SEK', 100],
    ]
    await expectStatus(
      shop.call(
        'POST',
        '/price/batch',
        prices.map(([sku, pricelist, price]) => ({ sku, pricelist, price })),
      ),
      202,
      'prices',
    )
    const all = ['Q-A', 'Q-B', 'Q-C', 'Q-OLD', 'Q-LATER', 'Q-SEK']
    const answer = await run(shop, query(skus, all))
    t.same(
      answer.items.map((item) => [item.sku, item.pricelist, item.gross]),
      [
        ['M1', 'Q-B', 11.25], // 9 net beats 10 net
        ['M2', 'Q-A', 12.5], // a tie: Q-A sorts before Q-B
        ['M3', 'Q-C', 12.4], // 12.40 gross beats 10 net = 12.50 gross
        ['M4', 'Q-A', 12.5], // Q-OLD ended in 2020 and Q-LATER starts in 2999
        ['M5', 'Q-SEK', 10.9373], // 100 SEK / 11.4321 = 8.747299... -> 8.7473, VAT 2.186825 -> 2.19, gross 10.9373
      ],
    )
    t.same(answer.unavailable, [])
    // As of 2999 the later pricelist is active and cheapest for M4.
    const later = await run(shop, query(['M4'], all, { as_of: '2999-06-01T00:00:00Z' }))
    t.same([later.items[0]!.pricelist, later.items[0]!.net], ['Q-LATER', 2])
    // The filter by metadata and currency selects pricelists too (AND between fields).
    const shopChannel = await run(shop, {
      ...query(['M1', 'M3'], []),
      pricelist_filter: { metadata: { channel: ['shop'] } },
    })
    t.same(
      shopChannel.items.map((item) => item.pricelist),
      ['Q-A', 'Q-C'],
    )
    const sekOnly = await run(shop, {
      ...query(['M5'], []),
      pricelist_filter: { currency_code: 'SEK', metadata: { channel: ['web'] } },
    })
    t.equal(sekOnly.items[0]!.pricelist, 'Q-SEK')
  },
)

t.test('the answer has the documented shape, with fx when the currency is converted', async (t) => {
  await putPrice(acme, 'SHAPE', 'BASE', { price: 10, quantity_breaks: [{ quantity_break: 5, fixed_price: 8 }] })
  await mapSkus(acme, 'standard', ['SHAPE'])
  const answer = await acme.call('POST', '/price/query', query(['SHAPE'], ['BASE'], { currency_code: 'SEK' }))
  t.equal(answer.status, 200)
  t.equal(answer.headers.get('cache-control'), 'no-store')
  // 10 x 11.4321 = 114.321, VAT 28.58025 -> 28.58; 8 x 11.4321 = 91.4568, VAT 22.8642 -> 22.86.
  t.same(answer.body, {
    items: [
      {
        sku: 'SHAPE',
        pricelist: 'BASE',
        currency_code: 'SEK',
        vat_mode: 'NET',
        net: 114.321,
        vat: 28.58,
        gross: 142.901,
        vat_rate: 25,
        vat_class: 'standard',
        inherited: false,
        quantity_breaks: [{ quantity_break: 5, net: 91.4568, vat: 22.86, gross: 114.3168 }],
        fx: { base: 'EUR', quote: 'SEK', rate: 11.4321, as_of: '2024-01-02T00:00:00Z' },
      },
    ],
    unavailable: [],
  })
})

t.test('unavailable SKUs carry their reason, in request order', async (t) => {
  await putPricelist(acme, 'NOK-N', { currency_code: 'NOK', vat_mode: 'NET' })
  await putPricelist(acme, 'FAIL', {
    currency_code: 'EUR',
    vat_mode: 'NET',
    price_rules: [{ filter: 'article.type == "bad"', expression: 'fields.cost * 2' }],
  })
  await putArticle(acme, 'U-RULE', { name: 'Bad', type: 'bad' })
  await putPrice(acme, 'U-NOCLASS', 'BASE', { price: 1 })
  await putPrice(acme, 'U-NORATE', 'BASE', { price: 1 })
  await putPrice(acme, 'U-NOFX', 'NOK-N', { price: 1 })
  await putPrice(acme, 'U-RULE', 'FAIL', { price: 1 })
  await putPrice(acme, 'U-OK', 'BASE', { price: 1 })
  await putPrice(acme, 'U-PART', 'BASE', { price: 1 })
  await expectStatus(
    acme.call('PUT', '/bundle/U-BUNDLE/BASE', {
      method: 'SUM_OF_PARTS',
      components: [
        { sku: 'U-PART', quantity: 1 },
        { sku: 'U-NOPART', quantity: 1 },
      ],
    }),
    202,
    'bundle',
  )
  await mapSkus(acme, 'standard', ['U-NOFX', 'U-RULE', 'U-OK', 'U-BUNDLE', 'U-PART'])
  await mapSkus(acme, 'zero', ['U-NORATE'])
  const skus = ['U-NORATE', 'U-NOPRICE', 'U-OK', 'U-NOCLASS', 'U-NOFX', 'U-RULE', 'U-BUNDLE']
  const answer = await run(acme, query(skus, ['BASE', 'NOK-N', 'FAIL']))
  t.same(
    answer.items.map((item) => item.sku),
    ['U-OK'],
  )
  t.same(answer.unavailable, [
    { sku: 'U-NORATE', reason: 'no_vat_rate' },
    { sku: 'U-NOPRICE', reason: 'no_price' },
    { sku: 'U-NOCLASS', reason: 'no_vat_class' },
    { sku: 'U-NOFX', reason: 'no_fx_rate' },
    { sku: 'U-RULE', reason: 'rule_error' },
    { sku: 'U-BUNDLE', reason: 'bundle_component_missing' },
  ])
  // A SKU priced on one pricelist is available even when another fails it.
  await putPrice(acme, 'U-RULE', 'BASE', { price: 3 })
  const rescued = await run(acme, query(['U-RULE'], ['BASE', 'FAIL']))
  t.same([rescued.items[0]!.pricelist, rescued.items[0]!.net], ['BASE', 3])
})

t.test('an amount that would leave the amount bound (±1e11) is refused, never answered inexactly', async (t) => {
  await mapSkus(acme, 'standard', ['BIG', 'BIG-BUNDLE'])
  await putPrice(acme, 'BIG', 'BASE', { price: '99999999999.9999' })
  t.same(
    await amounts(acme, query(['BIG'], ['BASE'])),
    [99999999999.9999, 25000000000, 124999999999.9999],
    'in range: exact',
  )
  // x 160 JPY per EUR is 1.6e13: beyond the bound.
  t.same((await run(acme, query(['BIG'], ['BASE'], { currency_code: 'JPY' }))).unavailable, [
    { sku: 'BIG', reason: 'no_fx_rate' },
  ])
  await expectStatus(
    acme.call('PUT', '/bundle/BIG-BUNDLE/BASE', { method: 'SUM_OF_PARTS', components: [{ sku: 'BIG', quantity: 2 }] }),
    202,
    'bundle',
  )
  t.same((await run(acme, query(['BIG-BUNDLE'], ['BASE']))).unavailable, [{ sku: 'BIG-BUNDLE', reason: 'rule_error' }])
  const rule = await acme.call('PUT', '/pricelist/BIG-RULE', {
    currency_code: 'EUR',
    parent_code: 'BASE',
    price_rules: [{ expression: 'sales * 10.0' }],
  })
  t.equal(rule.status, 202)
  t.same((await run(acme, query(['BIG'], ['BIG-RULE']))).unavailable, [{ sku: 'BIG', reason: 'rule_error' }])
})

t.test('sort_order orders items by gross, ASC or DESC; without it the request order stays', async (t) => {
  await mapSkus(acme, 'standard', ['O-1', 'O-2', 'O-3'])
  await putPrice(acme, 'O-1', 'BASE', { price: 5 })
  await putPrice(acme, 'O-2', 'BASE', { price: 1 })
  await putPrice(acme, 'O-3', 'BASE', { price: 3 })
  const skus = ['O-1', 'O-2', 'O-3']
  t.same(
    (await run(acme, query(skus, ['BASE']))).items.map((item) => item.sku),
    ['O-1', 'O-2', 'O-3'],
  )
  t.same(
    (await run(acme, query(skus, ['BASE'], { sort_order: 'ASC' }))).items.map((item) => item.sku),
    ['O-2', 'O-3', 'O-1'],
  )
  t.same(
    (await run(acme, query(skus, ['BASE'], { sort_order: 'DESC' }))).items.map((item) => item.sku),
    ['O-1', 'O-3', 'O-2'],
  )
  t.equal((await acme.call('POST', '/price/query', query(skus, ['BASE'], { sort_order: 'UP' }))).status, 400)
})

t.test('homogeneity settings refuse mixed currencies and VAT modes with the exact messages', async (t) => {
  const shop = await server.tenant('homogeneous')
  await setupReference(shop)
  await putPricelist(shop, 'A-SEK', { currency_code: 'SEK', vat_mode: 'NET' })
  await putPricelist(shop, 'B-EUR', { currency_code: 'EUR', vat_mode: 'NET' })
  await putPricelist(shop, 'C-EURG', { currency_code: 'EUR', vat_mode: 'GROSS' })
  await putPricelist(shop, 'D-KID', { currency_code: 'EUR', parent_code: 'C-EURG' })
  await putPrice(shop, 'H', 'B-EUR', { price: 1 })
  await mapSkus(shop, 'standard', ['H'])
  const ask = (pricelists: string[], currency = 'EUR') =>
    shop.call('POST', '/price/query', query(['H'], pricelists, { currency_code: currency }))
  t.equal((await ask(['A-SEK', 'B-EUR', 'C-EURG'])).status, 200, 'off by default')
  await putSetting(shop, 'require.homogeneous.currency', 'true')
  const mixed = await ask(['A-SEK', 'B-EUR'])
  t.equal(mixed.status, 400)
  t.equal(
    mixed.body.message,
    'Heterogeneous currencies found in pricelists: [EUR, SEK]. All pricelists must have the same currency when setting require.homogeneous.currency is enabled.',
  )
  const mismatch = await ask(['B-EUR'], 'SEK')
  t.equal(mismatch.status, 400)
  t.equal(mismatch.body.message, 'Pricelist currency EUR does not match requested currency SEK')
  const both = await ask(['A-SEK', 'B-EUR'], 'JPY')
  t.match(
    both.body.message,
    /^Heterogeneous currencies found in pricelists: \[EUR, SEK\]/,
    'heterogeneity is checked before the mismatch',
  )
  t.equal((await ask(['B-EUR', 'C-EURG'])).status, 200, 'one currency and the same requested one')
  const taxed = await shop.get('/price/H/B-EUR/SE?currency_code=SEK')
  t.equal(taxed.status, 400, 'the taxed read refuses another currency too')
  t.equal(taxed.body.message, 'Pricelist currency EUR does not match requested currency SEK')
  await putSetting(shop, 'require.homogeneous.currency', 'false')
  await putSetting(shop, 'require.homogeneous.vat_mode', 'true')
  const modes = await ask(['B-EUR', 'C-EURG'])
  t.equal(modes.status, 400)
  t.equal(
    modes.body.message,
    'Heterogeneous VAT modes found in pricelists: [GROSS, NET]. All pricelists must have the same VAT mode when setting require.homogeneous.vat_mode is enabled.',
  )
  t.equal((await ask(['B-EUR', 'D-KID'])).status, 400, 'a child counts with the mode it inherits')
  t.equal((await ask(['C-EURG', 'D-KID'])).status, 200)
  t.equal((await ask(['A-SEK', 'B-EUR'])).status, 200, 'currencies may differ again')
})

t.test('a query without SKUs, pricelists or tax area answers 400', async (t) => {
  const cases: [string, Record<string, unknown>][] = [
    ['empty skus', query([], ['BASE'])],
    ['no pricelist selected', query(['X'], ['NOPE'])],
    ['empty pricelists', query(['X'], [])],
    ['only an expired pricelist', query(['X'], ['EXPIRED'])],
    ['empty tax area', query(['X'], ['BASE'], { tax_area: '' })],
    ['missing tax area', { currency_code: 'EUR', skus: ['X'], pricelist_filter: { pricelists: ['BASE'] } }],
    ['missing currency', { tax_area: 'SE', skus: ['X'], pricelist_filter: { pricelists: ['BASE'] } }],
    ['missing filter', { currency_code: 'EUR', tax_area: 'SE', skus: ['X'] }],
    ['unknown field', query(['X'], ['BASE'], { colour: 'red' })],
    ['bad quantity', query(['X'], ['BASE'], { quantity: 0 })],
    ['unknown tax area', query(['X'], ['BASE'], { tax_area: 'XX' })],
  ]
  await putPricelist(acme, 'EXPIRED', {
    currency_code: 'EUR',
    vat_mode: 'NET',
    start_date: '2010-01-01',
    end_date: '2011-01-01',
  })
  for (const [name, body] of cases) {
    const answer = await acme.call('POST', '/price/query', body)
    t.equal(answer.status, 400, name)
    t.equal(answer.body.code, 'validation_failed', name)
  }
})

t.test('a query costs one item per SKU: X-RateLimit-Remaining drops by the number of SKUs', async (t) => {
  const slow = await server.tenant('cost', { limits: { query_rate: 1, query_burst: 1000 } })
  await setupReference(slow)
  await putPricelist(slow, 'PL', { currency_code: 'EUR', vat_mode: 'NET' })
  const skus = Array.from({ length: 40 }, (_, index) => `C-${index}`)
  const first = await slow.call('POST', '/price/query', query(['C-0'], ['PL']))
  const second = await slow.call('POST', '/price/query', query(skus, ['PL']))
  t.equal(second.status, 200)
  t.equal(second.body.unavailable.length, 40)
  const drop = Number(first.headers.get('x-ratelimit-remaining')) - Number(second.headers.get('x-ratelimit-remaining'))
  t.ok(drop >= 39 && drop <= 40, `dropped by ${drop}`)
  const third = await slow.call('POST', '/price/query', query(['C-0', 'C-1', 'C-2'], ['PL', 'PL']))
  const again = Number(second.headers.get('x-ratelimit-remaining')) - Number(third.headers.get('x-ratelimit-remaining'))
  t.ok(again >= 2 && again <= 3, `pricelists do not change the cost (dropped by ${again})`)
})

t.test(
  'the answer cache counts its SKUs in /metrics: computed (miss) then served (hit); as_of queries are computed',
  async (t) => {
    const shop = await server.tenant('cache-counts')
    await setupReference(shop)
    await putPricelist(shop, 'PL', { currency_code: 'EUR', vat_mode: 'NET' })
    const skus = ['K1', 'K2', 'K3', 'K4']
    await mapSkus(shop, 'standard', skus)
    await expectStatus(
      shop.call(
        'POST',
        '/price/batch',
        skus.map((sku, index) => ({ sku, pricelist: 'PL', price: 10 + index })),
      ),
      202,
      'prices',
    )
    const counts = async (): Promise<{ hit: number; miss: number }> => {
      const { hits, misses } = await answerCacheCounts(server)
      return { hit: hits, miss: misses }
    }
    const before = await counts()
    const first = await run(shop, query(skus, ['PL']))
    const afterFirst = await counts()
    t.same([afterFirst.hit - before.hit, afterFirst.miss - before.miss], [0, 4], 'a new query computes every SKU')
    const second = await run(shop, query([...skus, 'K1'], ['PL']))
    const afterSecond = await counts()
    t.same(
      [afterSecond.hit - afterFirst.hit, afterSecond.miss - afterFirst.miss],
      [4, 0],
      'the same SKUs again come from the cache (a repeated SKU is answered once)',
    )
    t.same(second.items, first.items, 'and answer the same')
    await run(shop, query(skus.slice(0, 2), ['PL'], { as_of: new Date().toISOString() }))
    const afterHistoric = await counts()
    t.same(
      [afterHistoric.hit - afterSecond.hit, afterHistoric.miss - afterSecond.miss],
      [0, 2],
      'a query with as_of is computed',
    )
    await expectStatus(shop.call('POST', '/price/batch', [{ sku: 'K1', pricelist: 'PL', price: 99 }]), 202, 'a change')
    await run(shop, query(skus, ['PL']))
    const afterChange = await counts()
    t.same(
      [afterChange.hit - afterHistoric.hit, afterChange.miss - afterHistoric.miss],
      [0, 4],
      "a tenant's change invalidates its cached answers",
    )
  },
)
