/**
 * The EU prior price (engine/prior-price/prior-price.ts) on hand-computed cases: the reduction's
 * start found by walking back over the effective price's history (own, inherited, rules, VAT,
 * reclassification, FX, windows), and the lowest price over the `days` before it. Days are whole
 * days from an epoch of 0; amounts are written as decimals and compared in scaled units. GROSS
 * lists at 25% VAT: a gross of 100 is a net of 80.
 */
import t from 'tap'
import { Catalog, compositeKey, type EntityValues, type Pricelist } from '../../engine/catalog.js'
import { planFxRates } from '../../engine/fx.js'
import type { AnswerOptions } from '../../engine/pipeline.js'
import { PriceBook, type PriceVersion } from '../../engine/prices.js'
import { priorPrice } from '../../engine/prior-price/prior-price.js'
import { pricelistValue } from '../helpers/price-world.js'

const day = 86_400_000
const unit = 10_000

/** One scheduled catalogue write: in force from `from`. */
function put<K extends keyof EntityValues>(
  catalog: Catalog,
  type: K,
  key: string,
  value: EntityValues[K] | null,
  from = 0,
) {
  const change = catalog.plan(type, key, value, from, 0, 'test')
  if (change !== null) catalog.apply(change.type, change.key, change.versions)
}

function list(overrides: Partial<Pricelist>): Pricelist {
  return pricelistValue({ vat_mode: 'GROSS', ...overrides })
}

/** A world's history. Prices: per list, [day, amount | null (deleted)] in order. */
interface Spec {
  prices?: Record<string, [number, number | null][]>
  /** Pricelist versions beyond the base ones: [list, day, overrides]. */
  lists?: [string, number, Partial<Pricelist>][]
  /** The standard rate's versions: [day, rate]. */
  standard?: [number, string][]
  /** The SKU's class by day (default: standard from day 0). */
  classes?: [number, string][]
  /** EUR -> SEK publications: [day, rate]. */
  fx?: [number, string][]
}

function world(spec: Spec): { catalog: Catalog; book: PriceBook } {
  const catalog = new Catalog()
  put(catalog, 'currency', 'SEK', { is_active: true, vat_precision: 2 })
  put(catalog, 'currency', 'EUR', { is_active: true, vat_precision: 2 })
  put(catalog, 'tax_area', 'SE', { name: 'SE', is_active: true, valid_from: null, valid_to: null })
  put(catalog, 'vat_class', 'standard', { name: null, description: null })
  put(catalog, 'vat_class', 'reduced', { name: null, description: null })
  for (const [from, rate] of spec.standard ?? [[0, '25']])
    put(catalog, 'vat_rate', compositeKey('SE', 'standard'), { rate }, from * day)
  put(catalog, 'vat_rate', compositeKey('SE', 'reduced'), { rate: '12' })
  for (const [from, vatClass] of spec.classes ?? [[0, 'standard']])
    put(catalog, 'article_taxclass', compositeKey('A', 'SE'), { vat_class_code: vatClass }, from * day)
  if (spec.fx !== undefined) {
    const entries = spec.fx.map(([from, rate]) => ({ from: from * day, rate }))
    for (const change of planFxRates(catalog, 'SEK', entries, 0, 'test'))
      catalog.apply(change.type, change.key, change.versions)
  }
  put(catalog, 'pricelist', 'RETAIL', list({}))
  put(catalog, 'pricelist', 'OUTLET', list({}))
  put(catalog, 'pricelist', 'NETLIST', list({ vat_mode: 'NET' }))
  put(catalog, 'pricelist', 'EURO', list({ currency_code: 'EUR' }))
  put(catalog, 'pricelist', 'CHILD', list({ vat_mode: null, parent_code: 'RETAIL' }))
  put(catalog, 'pricelist', 'GRAND', list({ vat_mode: null, parent_code: 'CHILD' }))
  for (const [code, from, overrides] of spec.lists ?? [])
    put(catalog, 'pricelist', code, list({ ...catalog.get('pricelist', code, from * day)!, ...overrides }), from * day)
  const book = new PriceBook()
  for (const [code, versions] of Object.entries(spec.prices ?? {}))
    book.apply(
      code,
      'A',
      versions.map(
        ([from, amount]): PriceVersion => ({
          from: from * day,
          content: amount === null ? null : { sales: Math.round(amount * unit), fields: null, breaks: null },
          writtenAt: 0,
          writtenBy: 'test',
        }),
      ),
    )
  return { catalog, book }
}

interface Expected {
  gross: number
  net: number
  /** The day the lowest price applied from, and the day the reduction started. */
  since: number
  start: number
}

function check(
  name: string,
  spec: Spec,
  asked: { pricelist?: string; at: number; days?: number; currency?: string },
  expected: Expected | null,
): void {
  t.test(name, async (t) => {
    const { catalog, book } = world(spec)
    const options: AnswerOptions = { currency: asked.currency ?? 'SEK', rounding: null, quantity: 1 }
    const found = priorPrice(catalog, book, {
      sku: 'A',
      pricelist: asked.pricelist ?? 'RETAIL',
      taxArea: 'SE',
      options,
      at: asked.at * day,
      days: asked.days ?? 30,
    })
    t.same(
      found === null
        ? null
        : {
            gross: found.gross / unit,
            net: found.net / unit,
            since: found.inForceAt / day,
            start: found.reductionStartedAt / day,
          },
      expected,
    )
  })
}

// The directive's examples and the window's anchor.
check(
  '80 -> 100 -> 90: the prior price is 80',
  {
    prices: {
      RETAIL: [
        [0, 80],
        [10, 100],
        [20, 90],
      ],
    },
  },
  { at: 25 },
  { gross: 80, net: 64, since: 0, start: 20 },
)
check(
  'a reduction 20 days old: the window ends at its start, not at now',
  {
    prices: {
      RETAIL: [
        [0, 100],
        [40, 80],
      ],
    },
  },
  { at: 60 },
  { gross: 100, net: 80, since: 10, start: 40 },
)
check(
  'a progressive reduction: the window stays anchored at the first step',
  {
    prices: {
      RETAIL: [
        [0, 100],
        [40, 90],
        [50, 80],
      ],
    },
  },
  { at: 55 },
  { gross: 100, net: 80, since: 10, start: 40 },
)
check(
  'a reduction long in force is still anchored at its start',
  {
    prices: {
      RETAIL: [
        [0, 100],
        [100, 80],
      ],
    },
  },
  { at: 200 },
  { gross: 100, net: 80, since: 70, start: 100 },
)
check(
  'a price written again unchanged does not move the start',
  {
    prices: {
      RETAIL: [
        [0, 100],
        [40, 90],
        [45, 90],
      ],
    },
  },
  { at: 50 },
  { gross: 100, net: 80, since: 10, start: 40 },
)
check(
  'up, then down below where it was: the start is the fall, the window holds the earlier price',
  {
    prices: {
      RETAIL: [
        [0, 100],
        [30, 120],
        [50, 90],
      ],
    },
  },
  { at: 55 },
  { gross: 100, net: 80, since: 20, start: 50 },
)
check(
  'a low price that ended before the window is not counted',
  {
    prices: {
      RETAIL: [
        [0, 70],
        [10, 100],
        [60, 90],
      ],
    },
  },
  { at: 61 },
  { gross: 100, net: 80, since: 30, start: 60 },
)
check(
  "a low price that ended at the window's first instant is not counted",
  {
    prices: {
      RETAIL: [
        [0, 70],
        [30, 100],
        [60, 90],
      ],
    },
  },
  { at: 61 },
  { gross: 100, net: 80, since: 30, start: 60 },
)
check(
  "a low price still in force at the window's first instant is counted, from there",
  {
    prices: {
      RETAIL: [
        [0, 70],
        [31, 100],
        [60, 90],
      ],
    },
  },
  { at: 61 },
  { gross: 70, net: 56, since: 30, start: 60 },
)
check(
  'a longer window (omnibus.days 60) reaches the older low',
  {
    prices: {
      RETAIL: [
        [0, 70],
        [10, 100],
        [60, 90],
      ],
    },
  },
  { at: 61, days: 60 },
  { gross: 70, net: 56, since: 0, start: 60 },
)
check(
  'the lowest price twice in the window: the later period',
  {
    prices: {
      RETAIL: [
        [0, 90],
        [12, 100],
        [15, 90],
        [20, 100],
        [40, 80],
      ],
    },
  },
  { at: 45 },
  { gross: 90, net: 72, since: 15, start: 40 },
)
check(
  'a rise between two falls ends the walk at the rise',
  {
    prices: {
      RETAIL: [
        [0, 90],
        [5, 100],
        [10, 90],
        [15, 100],
        [40, 80],
      ],
    },
  },
  { at: 45 },
  { gross: 90, net: 72, since: 10, start: 40 },
)

// No reduction in force.
check('one price, never changed: none', { prices: { RETAIL: [[0, 100]] } }, { at: 10 }, null)
check(
  'a rise: none',
  {
    prices: {
      RETAIL: [
        [0, 80],
        [10, 100],
      ],
    },
  },
  { at: 20 },
  null,
)
check(
  'asked before the fall (as_of in the past): none',
  {
    prices: {
      RETAIL: [
        [0, 80],
        [10, 100],
        [20, 90],
      ],
    },
  },
  { at: 15 },
  null,
)
check('asked before any price: none', { prices: { RETAIL: [[10, 100]] } }, { at: 5 }, null)
check(
  'a price that follows a gap without one: none (nothing was reduced)',
  {
    prices: {
      RETAIL: [
        [0, 100],
        [20, null],
        [30, 80],
      ],
    },
  },
  { at: 35 },
  null,
)
check(
  'a price that appears with a list window: none',
  {
    prices: { OUTLET: [[0, 80]] },
    lists: [['OUTLET', 0, { start_date: 40 * day }]],
  },
  { pricelist: 'OUTLET', at: 50 },
  null,
)

// Through what the price inherits and reads.
check(
  "a reduction through the parent's price",
  {
    prices: {
      RETAIL: [
        [0, 100],
        [40, 80],
      ],
    },
  },
  { pricelist: 'CHILD', at: 50 },
  { gross: 100, net: 80, since: 10, start: 40 },
)
check(
  'a reduction through a grandparent, three levels down',
  {
    prices: {
      RETAIL: [
        [0, 100],
        [40, 85],
      ],
    },
  },
  { pricelist: 'GRAND', at: 41 },
  { gross: 100, net: 80, since: 10, start: 40 },
)
check(
  "the child's own price above the inherited one before it: a rise, none",
  {
    prices: {
      RETAIL: [
        [0, 100],
        [40, 80],
      ],
      CHILD: [[45, 90]],
    },
  },
  { pricelist: 'CHILD', at: 50 },
  null,
)
check(
  "the child's own price below the inherited one: a reduction at its start",
  { prices: { RETAIL: [[0, 100]], CHILD: [[40, 90]] } },
  { pricelist: 'CHILD', at: 50 },
  { gross: 100, net: 80, since: 10, start: 40 },
)
check(
  'a new parent with a lower price: a reduction when the list changed',
  {
    prices: { RETAIL: [[0, 100]], OUTLET: [[0, 70]] },
    lists: [['CHILD', 40, { parent_code: 'OUTLET' }]],
  },
  { pricelist: 'CHILD', at: 50 },
  { gross: 100, net: 80, since: 10, start: 40 },
)
check(
  'a rule written on the list (10% off): a reduction at the rule',
  {
    prices: { RETAIL: [[0, 100]] },
    lists: [
      [
        'CHILD',
        40,
        {
          price_rules: [{ code: 'SALE', description: null, expression: 'sales * 0.9', filter: null, updated_by: null }],
        },
      ],
    ],
  },
  { pricelist: 'CHILD', at: 50 },
  { gross: 100, net: 80, since: 10, start: 40 },
)
check(
  'a lower VAT rate on a NET list: the gross falls',
  {
    prices: { NETLIST: [[0, 80]] },
    standard: [
      [0, '25'],
      [40, '12.5'],
    ],
  },
  { pricelist: 'NETLIST', at: 50 },
  { gross: 100, net: 80, since: 10, start: 40 },
)
check(
  'a lower VAT rate on a GROSS list: the gross stays, none',
  {
    prices: { RETAIL: [[0, 100]] },
    standard: [
      [0, '25'],
      [40, '12.5'],
    ],
  },
  { at: 50 },
  null,
)
check(
  'a reclassification to the reduced rate on a NET list',
  {
    prices: { NETLIST: [[0, 80]] },
    classes: [
      [0, 'standard'],
      [40, 'reduced'],
    ],
  },
  { pricelist: 'NETLIST', at: 50 },
  { gross: 100, net: 80, since: 10, start: 40 },
)
check(
  'a NET list: the prior price names its gross and net',
  {
    prices: {
      NETLIST: [
        [0, 100],
        [40, 80],
      ],
    },
  },
  { pricelist: 'NETLIST', at: 50 },
  { gross: 125, net: 100, since: 10, start: 40 },
)
check(
  'an FX publication that lowers the converted price',
  {
    prices: { EURO: [[0, 10]] },
    fx: [
      [0, '11'],
      [40, '10'],
    ],
  },
  { pricelist: 'EURO', at: 50 },
  { gross: 110, net: 88, since: 10, start: 40 },
)
check(
  'an FX publication that raises it: none',
  {
    prices: { EURO: [[0, 10]] },
    fx: [
      [0, '10'],
      [40, '11'],
    ],
  },
  { pricelist: 'EURO', at: 50 },
  null,
)
check(
  'FX publications on a list in the answer currency change nothing: none',
  {
    prices: { RETAIL: [[0, 100]] },
    fx: [
      [0, '11'],
      [20, '10'],
      [40, '12'],
    ],
  },
  { at: 50 },
  null,
)
check(
  'a price cut, then an FX fall: one progressive reduction',
  {
    prices: {
      EURO: [
        [0, 10],
        [30, 9],
      ],
    },
    fx: [
      [0, '11'],
      [45, '10'],
    ],
  },
  { pricelist: 'EURO', at: 50 },
  { gross: 110, net: 88, since: 0, start: 30 },
)
