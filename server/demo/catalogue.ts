/**
 * The demo tenant's sample catalogue: a small coffee roaster that sells beans, tea and brewing gear
 * to consumers in Sweden (SEK, prices incl. VAT) and to cafés in the EU (EUR, excl. VAT), with a
 * four-week campaign on brewing gear. Written as API bodies, so that it reads like the requests a
 * user would send; ./seed.ts writes it through the same planners as those requests.
 * The README's quick start and test/scenarios/quick-start.test.ts quote some of these values.
 * @module
 */
import type { Metadata } from '../../engine/catalog.js'
import type { PriceContentInput } from '../../tenant/writes/prices.js'

/** The demo tenant's slug. */
export const demoSlug = 'demo'

/** A price body as `PUT /price/{sku}/{pricelist}` takes it: an amount, or an amount with breaks. */
export type DemoPrice = number | PriceContentInput

export interface DemoArticle {
  readonly sku: string
  readonly name: string
  readonly type: 'coffee' | 'tea' | 'food' | 'equipment' | 'merchandise'
  /** The VAT class in every tax area. */
  readonly vatClass: 'standard' | 'reduced'
  readonly metadata: Metadata
  /** Pricelist code to price; every article has a price on every base pricelist. */
  readonly prices: Readonly<Record<'retail-se' | 'wholesale-eu', DemoPrice>>
}

export const demoCurrencies: readonly { code: string; vat_precision: number }[] = [
  { code: 'SEK', vat_precision: 2 },
  { code: 'EUR', vat_precision: 2 },
]

export const demoVatClasses: readonly { code: string; name: string; description: string }[] = [
  { code: 'standard', name: 'Standard rate', description: 'Equipment and merchandise' },
  { code: 'reduced', name: 'Reduced rate', description: 'Food: coffee, tea, chocolate' },
]

/** Tax areas with their VAT rate (percent) per VAT class. */
export const demoTaxAreas: readonly {
  code: string
  name: string
  rates: Readonly<Record<'standard' | 'reduced', string>>
}[] = [
  { code: 'SE', name: 'Sweden', rates: { standard: '25', reduced: '12' } },
  { code: 'DE', name: 'Germany', rates: { standard: '19', reduced: '7' } },
]

/** Base pricelists (no parent), as `PUT /pricelist/{code}` bodies. */
export const demoPricelists: readonly {
  code: string
  currency_code: string
  vat_mode: 'GROSS' | 'NET'
  name: string
  description: string
  metadata: Metadata
}[] = [
  {
    code: 'retail-se',
    currency_code: 'SEK',
    vat_mode: 'GROSS',
    name: 'Webshop Sweden',
    description: 'Consumer prices in SEK, VAT included',
    metadata: { channel: ['web', 'store'], market: ['SE'] },
  },
  {
    code: 'wholesale-eu',
    currency_code: 'EUR',
    vat_mode: 'NET',
    name: 'Wholesale EU',
    description: 'Prices for cafés and resellers in EUR, VAT excluded; volume discounts on beans',
    metadata: { channel: ['b2b'], market: ['SE', 'DE'] },
  },
]

/** The campaign: a child of retail-se for `campaignDays` from the first start, 15% off brewing gear. */
export const demoCampaign: {
  code: string
  parent_code: string
  currency_code: string
  name: string
  description: string
  metadata: Metadata
  price_rules: { code: string; description: string; filter: string; expression: string }[]
  campaignDays: number
} = {
  code: 'brew-weeks-se',
  parent_code: 'retail-se',
  currency_code: 'SEK',
  name: 'Brew weeks',
  description: '15% off brewing equipment for four weeks; everything else at webshop prices',
  metadata: { channel: ['web'], market: ['SE'] },
  price_rules: [
    {
      code: 'equipment-15',
      description: '15% off equipment',
      filter: 'article.type == "equipment"',
      expression: 'sales * 0.85',
    },
  ],
  campaignDays: 28,
}

/** Wholesale volume discounts on whole beans: 90% of the base from 10 bags, 80% from 50. */
const beanBreaks = [
  { quantity_break: 10, percent_of_base: 90 },
  { quantity_break: 50, percent_of_base: 80 },
]

const coffee = (origin: string, roast: 'espresso' | 'filter'): Metadata => ({ origin: [origin], roast: [roast] })
const gear = (brewing: string): Metadata => ({ brewing: [brewing] })

export const demoArticles: readonly DemoArticle[] = [
  {
    sku: 'ESP-HOUSE-500',
    name: 'House Espresso, whole beans 500 g',
    type: 'coffee',
    vatClass: 'reduced',
    metadata: coffee('Brazil', 'espresso'),
    prices: { 'retail-se': 169, 'wholesale-eu': { price: 9.8, quantity_breaks: beanBreaks } },
  },
  {
    sku: 'ESP-HOUSE-1000',
    name: 'House Espresso, whole beans 1 kg',
    type: 'coffee',
    vatClass: 'reduced',
    metadata: coffee('Brazil', 'espresso'),
    prices: {
      'retail-se': { price: 319, quantity_breaks: [{ quantity_break: 3, fixed_price: 289 }] },
      'wholesale-eu': { price: 18.5, quantity_breaks: beanBreaks },
    },
  },
  {
    sku: 'FIL-ETH-250',
    name: 'Ethiopia Yirgacheffe, filter roast 250 g',
    type: 'coffee',
    vatClass: 'reduced',
    metadata: coffee('Ethiopia', 'filter'),
    prices: { 'retail-se': 129, 'wholesale-eu': { price: 7.9, quantity_breaks: beanBreaks } },
  },
  {
    sku: 'FIL-COL-250',
    name: 'Colombia Huila, filter roast 250 g',
    type: 'coffee',
    vatClass: 'reduced',
    metadata: coffee('Colombia', 'filter'),
    prices: { 'retail-se': 119, 'wholesale-eu': { price: 7.2, quantity_breaks: beanBreaks } },
  },
  {
    sku: 'FIL-KEN-250',
    name: 'Kenya Nyeri, filter roast 250 g',
    type: 'coffee',
    vatClass: 'reduced',
    metadata: coffee('Kenya', 'filter'),
    prices: { 'retail-se': 139, 'wholesale-eu': { price: 8.6, quantity_breaks: beanBreaks } },
  },
  {
    sku: 'DECAF-250',
    name: 'Decaf Colombia, sugarcane process 250 g',
    type: 'coffee',
    vatClass: 'reduced',
    metadata: coffee('Colombia', 'filter'),
    prices: { 'retail-se': 119, 'wholesale-eu': 7.2 },
  },
  {
    sku: 'TEA-EARL-100',
    name: 'Earl Grey, loose leaf 100 g',
    type: 'tea',
    vatClass: 'reduced',
    metadata: { origin: ['India'] },
    prices: { 'retail-se': 79, 'wholesale-eu': 4.2 },
  },
  {
    sku: 'TEA-SENCHA-100',
    name: 'Sencha, loose leaf 100 g',
    type: 'tea',
    vatClass: 'reduced',
    metadata: { origin: ['Japan'] },
    prices: { 'retail-se': 89, 'wholesale-eu': 4.9 },
  },
  {
    sku: 'CHOC-70-80',
    name: 'Dark chocolate 70%, 80 g',
    type: 'food',
    vatClass: 'reduced',
    metadata: { origin: ['Peru'] },
    prices: { 'retail-se': 39, 'wholesale-eu': 2.1 },
  },
  {
    sku: 'DRIPPER-02',
    name: 'Pour-over dripper, ceramic, size 02',
    type: 'equipment',
    vatClass: 'standard',
    metadata: gear('pour-over'),
    prices: { 'retail-se': 249, 'wholesale-eu': 11.5 },
  },
  {
    sku: 'FILTER-02-100',
    name: 'Paper filters, size 02, 100 pcs',
    type: 'equipment',
    vatClass: 'standard',
    metadata: gear('pour-over'),
    prices: {
      'retail-se': { price: 59, quantity_breaks: [{ quantity_break: 3, fixed_price: 49 }] },
      'wholesale-eu': { price: 2.4, quantity_breaks: [{ quantity_break: 20, fixed_price: 2.1 }] },
    },
  },
  {
    sku: 'GRINDER-HAND',
    name: 'Hand grinder, conical steel burrs',
    type: 'equipment',
    vatClass: 'standard',
    metadata: gear('any'),
    prices: { 'retail-se': 899, 'wholesale-eu': 42 },
  },
  {
    sku: 'SCALE-01',
    name: 'Coffee scale with timer, 0.1 g',
    type: 'equipment',
    vatClass: 'standard',
    metadata: gear('any'),
    prices: { 'retail-se': 449, 'wholesale-eu': 21 },
  },
  {
    sku: 'KETTLE-GOOSE',
    name: 'Gooseneck kettle 0.9 l',
    type: 'equipment',
    vatClass: 'standard',
    metadata: gear('pour-over'),
    prices: { 'retail-se': 599, 'wholesale-eu': 28 },
  },
  {
    sku: 'PRESS-1L',
    name: 'French press 1 l',
    type: 'equipment',
    vatClass: 'standard',
    metadata: gear('immersion'),
    prices: { 'retail-se': 349, 'wholesale-eu': 16 },
  },
  {
    sku: 'MUG-350',
    name: 'Stoneware mug 350 ml',
    type: 'merchandise',
    vatClass: 'standard',
    metadata: {},
    prices: { 'retail-se': 149, 'wholesale-eu': 6.5 },
  },
]
