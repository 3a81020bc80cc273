/**
 * Exactness of the price pipeline: property tests that build a catalogue and a price book from a
 * random scenario, price it with the engine (`resolveBase`, `priceItem`, `queryPrices`), and compare
 * every amount with a plain decimal.js model of the spec written from SPEC.md and API.md, not from
 * the engine: amounts half-up to 4 decimals, FX through EUR, VAT in both modes, rounding tiers on the
 * final sales price, quantity breaks, inheritance with currency and VAT-mode conversion, and the best
 * price across pricelists. No cent (no 10^-4 unit) may differ.
 * A failure prints fast-check's seed and path; PROPERTY_SEED=<seed> replays a run.
 */
import { Decimal } from 'decimal.js'
import fc from 'fast-check'
import t from 'tap'
import {
  Catalog,
  compositeKey,
  type CatalogType,
  type EntityValues,
  type RoundingMode,
  type RoundingTierRule,
  type VatMode,
} from '../../engine/catalog.js'
import { planFxRates } from '../../engine/fx.js'
import { amountAbsMax } from '../../engine/limits.js'
import { parseAmount } from '../../engine/money.js'
import { PriceContext, priceItem, resolveBase, statusReasons, type PricedItem } from '../../engine/pipeline.js'
import { breakKindFixed, breakKindPercent, planPriceWrite, PriceBook, type QuantityBreak } from '../../engine/prices.js'
import { queryPrices } from '../../engine/query.js'
import { compileProfile, roundingModes } from '../../engine/rounding.js'
import { parseInstant } from '../../engine/time.js'

/** fast-check seeds are 32-bit integers; the one printed is the one to replay. */
const seed =
  process.env['PROPERTY_SEED'] === undefined ? Date.now() % 2_147_483_647 : Number(process.env['PROPERTY_SEED'])
const runs = 3000

// ---------------------------------------------------------------------------------------------
// Scenarios: plain data that both the engine world and the model are built from

interface CurrencySpec {
  readonly code: string
  /** vat_precision, 0-4. */
  readonly precision: number
  /** EUR -> code as a canonical decimal ('1' for EUR). */
  readonly eurRate: string
}

interface BreakSpec {
  /** quantity_break as written. */
  readonly quantity: string
  readonly kind: 'fixed' | 'percent'
  /** fixed_price or percent_of_base as written. */
  readonly value: string
}

interface PriceSpec {
  readonly sales: string
  readonly breaks: readonly BreakSpec[]
}

interface PricelistSpec {
  readonly code: string
  readonly currency: string
  /** Null: inherits the parent's mode. */
  readonly mode: VatMode | null
  readonly parent: string | null
  readonly price: PriceSpec | null
}

interface Scenario {
  readonly currencies: readonly CurrencySpec[]
  /** VAT percentage as a canonical decimal. */
  readonly vatRate: string
  readonly pricelists: readonly PricelistSpec[]
  readonly answerCurrency: string
  readonly tiers: readonly RoundingTierRule[] | null
  readonly quantity: number
}

const sku = 'SKU-1'
const taxArea = 'SE'
const vatClass = 'STD'
const at = parseInstant('2030-06-01T12:00:00Z')
const writtenFrom = parseInstant('2030-01-01T00:00:00Z')

// ---------------------------------------------------------------------------------------------
// The engine world, written the way the routes write it (plan, then apply)

function buildWorld(scenario: Scenario): { catalog: Catalog; prices: PriceBook } {
  const catalog = new Catalog()
  const prices = new PriceBook()
  const put = <K extends CatalogType>(type: K, key: string, value: EntityValues[K]): void => {
    const change = catalog.plan(type, key, value, writtenFrom, writtenFrom, 'prop')
    if (change === null) throw new Error(`nothing planned for ${type} ${key}`)
    catalog.apply(change.type, change.key, change.versions)
  }
  for (const currency of scenario.currencies) {
    put('currency', currency.code, { is_active: true, vat_precision: currency.precision })
    if (currency.code === 'EUR') continue
    for (const change of planFxRates(
      catalog,
      currency.code,
      [{ from: writtenFrom, rate: currency.eurRate }],
      writtenFrom,
      'prop',
    )) {
      catalog.apply(change.type, change.key, change.versions)
    }
  }
  put('tax_area', taxArea, { name: null, is_active: true, valid_from: null, valid_to: null })
  put('vat_class', vatClass, { name: null, description: null })
  put('vat_rate', compositeKey(taxArea, vatClass), { rate: scenario.vatRate })
  put('article_taxclass', compositeKey(sku, taxArea), { vat_class_code: vatClass })
  for (const pricelist of scenario.pricelists) {
    put('pricelist', pricelist.code, {
      currency_code: pricelist.currency,
      vat_mode: pricelist.mode,
      name: null,
      description: null,
      parent_code: pricelist.parent,
      start_date: null,
      end_date: null,
      metadata: {},
      price_rules: [],
    })
    if (pricelist.price === null) continue
    const content = { sales: scaled(pricelist.price.sales), fields: null, breaks: engineBreaks(pricelist.price.breaks) }
    const planned = planPriceWrite(
      prices.versions(pricelist.code, sku),
      { from: writtenFrom, content, writtenAt: writtenFrom, writtenBy: 'prop' },
      {
        removeLater: false,
        force: false,
      },
    )
    if (planned === null) throw new Error('a first price write always plans')
    prices.apply(pricelist.code, sku, planned.versions)
  }
  return { catalog, prices }
}

function scaled(text: string): number {
  const value = parseAmount(text)
  if (value === null) throw new Error(`generator produced an unparsable amount ${text}`)
  return value
}

/** As http/routes/price-writes.ts stores them: parsed, sorted by quantity. */
function engineBreaks(breaks: readonly BreakSpec[]): QuantityBreak[] | null {
  if (breaks.length === 0) return null
  return breaks
    .map(
      (entry): QuantityBreak => ({
        quantity: scaled(entry.quantity),
        kind: entry.kind === 'fixed' ? breakKindFixed : breakKindPercent,
        value: scaled(entry.value),
      }),
    )
    .sort((left, right) => left.quantity - right.quantity)
}

function engineOptions(scenario: Scenario) {
  const rounding =
    scenario.tiers === null
      ? null
      : compileProfile({
          currency_code: null,
          default_for_currency: false,
          default_global: false,
          tier_rules: [...scenario.tiers],
        })
  return { currency: scenario.answerCurrency, rounding, quantity: scenario.quantity }
}

/** The engine's answer for one pricelist: a priced item or the unavailable reason. */
function engineAnswer(scenario: Scenario, code: string): PricedItem | string {
  const { catalog, prices } = buildWorld(scenario)
  const context = new PriceContext(catalog, prices, at, taxArea)
  const resolved = resolveBase(context, code, sku)
  if (typeof resolved === 'number') return statusReasons[resolved]
  const priced = priceItem(context, resolved, sku, engineOptions(scenario))
  return typeof priced === 'number' ? statusReasons[priced] : priced
}

// ---------------------------------------------------------------------------------------------
// The model (decimal.js, precision 50, half-up), from the spec's rules

const Exact = Decimal.clone({ precision: 50, rounding: Decimal.ROUND_HALF_UP })
const limit = new Exact(amountAbsMax)
const modelModes: Record<RoundingMode, Decimal.Rounding> = {
  HALF_UP: Decimal.ROUND_HALF_UP,
  UP: Decimal.ROUND_UP,
  DOWN: Decimal.ROUND_DOWN,
  HALF_EVEN: Decimal.ROUND_HALF_EVEN,
}

/** How often the model took each branch, so that a test can show its cases reached it. */
const reached = { tier: 0, fx: 0, breakSelected: 0, modeConverted: 0 }

interface Amounts {
  readonly net: Decimal
  readonly vat: Decimal
  readonly gross: Decimal
}

interface ModelBreak {
  readonly quantity: Decimal
  readonly percent: boolean
  readonly value: Decimal
}

interface ModelBase {
  readonly sales: Decimal
  readonly breaks: readonly ModelBreak[]
  readonly currency: string
  readonly mode: VatMode
  readonly inherited: boolean
}

interface ModelAnswer extends Amounts {
  readonly breaks: readonly (Amounts & { quantity: Decimal })[]
  readonly currency: string
  readonly mode: VatMode
  readonly inherited: boolean
}

/**
 * One model evaluation. `inRange` turns false when any intermediate amount leaves ±amountAbsMax:
 * the documented bound inside which the engine's integer arithmetic is exact.
 */
class Model {
  inRange = true

  constructor(readonly scenario: Scenario) {}

  #track(value: Decimal): Decimal {
    if (value.abs().gt(limit)) this.inRange = false
    return value
  }

  /** An amount as written: half-up to 4 decimals. */
  amount(text: string): Decimal {
    return this.#track(new Exact(text).toDecimalPlaces(4, Decimal.ROUND_HALF_UP))
  }

  currency(code: string): CurrencySpec {
    const found = this.scenario.currencies.find((currency) => currency.code === code)
    if (found === undefined) throw new Error(`scenario lacks currency ${code}`)
    return found
  }

  /** round4(amount × EUR→to / EUR→from). */
  fx(value: Decimal, from: string, to: string): Decimal {
    if (from === to) return value
    reached.fx++
    const converted = value.times(this.currency(to).eurRate).div(this.currency(from).eurRate)
    return this.#track(converted.toDecimalPlaces(4, Decimal.ROUND_HALF_UP))
  }

  /** NET: vat = round_vp(price × rate / 100). */
  vatOfNet(net: Decimal, precision: number): Decimal {
    return this.#track(net.times(this.scenario.vatRate).div(100).toDecimalPlaces(precision, Decimal.ROUND_HALF_UP))
  }

  /** GROSS: vat = round_vp(gross − gross / (1 + rate / 100)). */
  vatOfGross(gross: Decimal, precision: number): Decimal {
    const factor = new Exact(this.scenario.vatRate).div(100).plus(1)
    return this.#track(gross.minus(gross.div(factor)).toDecimalPlaces(precision, Decimal.ROUND_HALF_UP))
  }

  /** The tier with from <= value < to rounds to a multiple of its increment, then adds its offset. */
  round(value: Decimal): Decimal {
    const tier = this.scenario.tiers?.find((rule) => value.gte(rule.from) && (rule.to === null || value.lt(rule.to)))
    if (tier === undefined) return value
    reached.tier++
    const multiple = value.div(tier.increment).toDecimalPlaces(0, modelModes[tier.mode])
    return this.#track(multiple.times(tier.increment).plus(tier.offset))
  }

  effectiveMode(code: string): VatMode {
    const pricelist = this.pricelist(code)
    if (pricelist.mode !== null) return pricelist.mode
    if (pricelist.parent === null) throw new Error('a top-level pricelist has a mode')
    return this.effectiveMode(pricelist.parent)
  }

  pricelist(code: string): PricelistSpec {
    const found = this.scenario.pricelists.find((pricelist) => pricelist.code === code)
    if (found === undefined) throw new Error(`scenario lacks pricelist ${code}`)
    return found
  }

  /** Own price, else the parent's converted to this pricelist's currency (FX), then mode (VAT). */
  base(code: string): ModelBase | null {
    const pricelist = this.pricelist(code)
    const mode = this.effectiveMode(code)
    if (pricelist.price !== null) {
      const breaks = pricelist.price.breaks
        .map((entry) => ({
          quantity: this.amount(entry.quantity),
          percent: entry.kind === 'percent',
          value: this.amount(entry.value),
        }))
        .sort((left, right) => left.quantity.comparedTo(right.quantity))
      return { sales: this.amount(pricelist.price.sales), breaks, currency: pricelist.currency, mode, inherited: false }
    }
    if (pricelist.parent === null) return null
    const parent = this.base(pricelist.parent)
    if (parent === null) return null
    const precision = this.currency(pricelist.currency).precision
    const convert = (value: Decimal): Decimal => {
      const converted = this.fx(value, parent.currency, pricelist.currency)
      if (parent.mode === mode) return converted
      reached.modeConverted++
      if (mode === 'GROSS') return this.#track(converted.plus(this.vatOfNet(converted, precision)))
      return this.#track(converted.minus(this.vatOfGross(converted, precision)))
    }
    return {
      sales: convert(parent.sales),
      breaks: parent.breaks.map((entry) => (entry.percent ? entry : { ...entry, value: convert(entry.value) })),
      currency: pricelist.currency,
      mode,
      inherited: true,
    }
  }

  /** FX to the answer currency, rounding on the final sales price, VAT from it. */
  final(preVat: Decimal, base: ModelBase): Amounts {
    const sales = this.round(this.fx(preVat, base.currency, this.scenario.answerCurrency))
    const precision = this.currency(this.scenario.answerCurrency).precision
    if (base.mode === 'NET') {
      const vat = this.vatOfNet(sales, precision)
      return { net: sales, vat, gross: this.#track(sales.plus(vat)) }
    }
    const vat = this.vatOfGross(sales, precision)
    return { net: this.#track(sales.minus(vat)), vat, gross: sales }
  }

  answer(code: string): ModelAnswer | null {
    const base = this.base(code)
    if (base === null) return null
    const breaks = base.breaks.map((entry) => {
      const preVat = entry.percent
        ? this.#track(base.sales.times(entry.value).div(100).toDecimalPlaces(4, Decimal.ROUND_HALF_UP))
        : entry.value
      return { quantity: entry.quantity, ...this.final(preVat, base) }
    })
    // quantity_break is the minimum quantity: the largest break not above the requested quantity.
    const requested = new Exact(String(this.scenario.quantity))
    let selected: Amounts = this.final(base.sales, base)
    for (const entry of breaks) {
      if (entry.quantity.gt(requested)) continue
      selected = entry
      reached.breakSelected++
    }
    return { ...selected, breaks, currency: this.scenario.answerCurrency, mode: base.mode, inherited: base.inherited }
  }
}

// ---------------------------------------------------------------------------------------------
// Comparison

function units(value: Decimal): number {
  return value.times(10_000).toNumber()
}

function show(value: number): string {
  return new Exact(value).div(10_000).toFixed()
}

/** Throws a readable message on the first differing amount (fast-check adds the scenario). */
function expectAmounts(label: string, actual: { net: number; vat: number; gross: number }, expected: Amounts): void {
  for (const name of ['net', 'vat', 'gross'] as const) {
    if (actual[name] !== units(expected[name])) {
      throw new Error(`${label} ${name}: engine ${show(actual[name])}, model ${expected[name].toFixed()}`)
    }
  }
}

function expectItem(actual: PricedItem | string, expected: ModelAnswer | null, label = 'answer'): void {
  if (expected === null) {
    if (actual !== 'no_price')
      throw new Error(`${label}: engine ${typeof actual === 'string' ? actual : 'priced'}, model no_price`)
    return
  }
  if (typeof actual === 'string') throw new Error(`${label}: engine unavailable (${actual}), model priced`)
  expectAmounts(label, actual, expected)
  if (
    actual.currency !== expected.currency ||
    actual.vatMode !== expected.mode ||
    actual.inherited !== expected.inherited
  ) {
    throw new Error(
      `${label}: engine ${actual.currency}/${actual.vatMode}/inherited=${actual.inherited}, model ${expected.currency}/${expected.mode}/inherited=${expected.inherited}`,
    )
  }
  if (actual.breaks.length !== expected.breaks.length)
    throw new Error(`${label}: ${actual.breaks.length} breaks, model ${expected.breaks.length}`)
  expected.breaks.forEach((entry, index) => {
    const got = actual.breaks[index]!
    if (got.quantity !== units(entry.quantity))
      throw new Error(
        `${label} break ${index} quantity: engine ${show(got.quantity)}, model ${entry.quantity.toFixed()}`,
      )
    expectAmounts(`${label} break ${index}`, got, entry)
  })
}

/** Checks one pricelist of a scenario; out-of-range scenarios are discarded (fc.pre). */
function checkPricelist(scenario: Scenario, code: string): void {
  const model = new Model(scenario)
  const expected = model.answer(code)
  fc.pre(model.inRange)
  expectItem(engineAnswer(scenario, code), expected, code)
}

function assertProperty<T>(arbitrary: fc.Arbitrary<T>, predicate: (value: T) => void, numRuns = runs): void {
  fc.assert(fc.property(arbitrary, predicate), { seed, numRuns })
}

// ---------------------------------------------------------------------------------------------
// Generators

function decimalText(units: bigint | number, decimals: number): string {
  return new Exact(units.toString()).div(new Exact(10).pow(decimals)).toFixed()
}

/** Prices as a client writes them: cents, 4-6 decimals, x.xxxx5 ties and neighbours, big, negative. */
const priceText: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: -1_000_000, max: 100_000_000 }).map((cents) => decimalText(cents, 2)) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.integer({ min: -10_000_000_000, max: 10_000_000_000 }), fc.integer({ min: 0, max: 6 }))
      .map(([value, decimals]) => decimalText(value, decimals)),
  },
  {
    weight: 2,
    arbitrary: fc
      .integer({ min: -10_000_000_000, max: 10_000_000_000 })
      .map((value) => decimalText(BigInt(value) * 10n + 5n, 5)),
  },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.integer({ min: -1_000_000_000, max: 1_000_000_000 }), fc.constantFrom(49n, 50n, 51n, 499n, 501n))
      .map(([value, tail]) => decimalText(BigInt(value) * (tail > 99n ? 1000n : 100n) + tail, tail > 99n ? 7 : 6)),
  },
  {
    weight: 1,
    arbitrary: fc.bigInt({ min: -10_000_000_000_000n, max: 10_000_000_000_000n }).map((value) => decimalText(value, 4)),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '0',
      '0.0001',
      '-0.0001',
      '0.00005',
      '-0.00005',
      '0.5',
      '1.5',
      '2.1',
      '0.02',
      '999999999.99995',
      '1000000000',
      '-1000000000',
      '19.99',
      '0.125',
    ),
  },
)

/** percent_of_base: 0-150 with up to 5 decimals (ties at the 5th), a few over 100 and negative. */
const percentText: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('0', '50', '90', '95', '97.5', '12.5', '33.3333', '66.66665', '100', '110', '-10'),
  fc
    .tuple(fc.integer({ min: 0, max: 15_000_000 }), fc.integer({ min: 0, max: 5 }))
    .map(([value, decimals]) => decimalText(value, decimals)),
)

/** VAT percentages 0-50 with up to 2 decimals. */
const vatRateText: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '0',
    '25',
    '12',
    '6',
    '19',
    '7',
    '20',
    '21',
    '5.5',
    '7.7',
    '8.1',
    '2.5',
    '10',
    '50',
    '0.01',
    '17.5',
    '13.25',
  ),
  fc.integer({ min: 0, max: 5000 }).map((value) => decimalText(value, 2)),
)

/** EUR -> X rates with 2-6 decimals, 0.000001 to 999999.99, plus real-looking ones. */
const fxRateText: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('1', '1.1214', '10.92', '0.8571', '161.59', '7.4604', '16842.5', '1.0001', '0.999999', '3'),
  fc
    .tuple(fc.integer({ min: 1, max: 99_999_999 }), fc.integer({ min: 2, max: 6 }))
    .map(([value, decimals]) => decimalText(value, decimals)),
)

const currencyCodes = ['EUR', 'USD', 'SEK', 'JPY', 'CHF'] as const
const currenciesArbitrary: fc.Arbitrary<CurrencySpec[]> = fc
  .tuple(
    fc.array(fc.integer({ min: 0, max: 4 }), { minLength: currencyCodes.length, maxLength: currencyCodes.length }),
    fc.array(fxRateText, { minLength: currencyCodes.length, maxLength: currencyCodes.length }),
  )
  .map(([precisions, rates]) =>
    currencyCodes.map((code, index) => ({
      code,
      precision: precisions[index]!,
      eurRate: code === 'EUR' ? '1' : rates[index]!,
    })),
  )
const currencyCode = fc.constantFrom(...currencyCodes)
const modeArbitrary = fc.constantFrom<VatMode>('NET', 'GROSS')

/** Rounding tier tables: non-overlapping [from, to) in cents, some gaps, maybe catch-all ends. */
const tiersArbitrary: fc.Arbitrary<RoundingTierRule[]> = fc
  .tuple(
    fc.uniqueArray(
      fc.oneof(
        fc.integer({ min: -100_000, max: 1_000_000 }),
        fc.integer({ min: -10_000_000_000, max: 10_000_000_000 }),
      ),
      { minLength: 2, maxLength: 6 },
    ),
    fc.boolean(),
    fc.boolean(),
  )
  .chain(([bounds, openStart, openEnd]) => {
    const sorted = [...bounds].sort((left, right) => left - right).map((cents) => decimalText(cents, 2))
    if (openStart) sorted.unshift(String(-amountAbsMax))
    const count = sorted.length - (openEnd ? 0 : 1)
    const spec = fc.record({
      increment: fc.constantFrom(
        '0.01',
        '0.05',
        '0.1',
        '0.25',
        '0.5',
        '1',
        '5',
        '10',
        '100',
        '0.0001',
        '0.001',
        '0.02',
      ),
      mode: fc.constantFrom(...roundingModes),
      offset: fc.constantFrom('0', '0', '-0.01', '-0.05', '0.01', '-1', '0.5'),
      keep: fc.oneof({ weight: 4, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
    })
    return fc.array(spec, { minLength: count, maxLength: count }).map((specs) => {
      const tiers: RoundingTierRule[] = []
      specs.forEach((entry, index) => {
        if (!entry.keep && !(index === specs.length - 1 && tiers.length === 0)) return
        tiers.push({
          from: sorted[index]!,
          to: sorted[index + 1] ?? null,
          increment: entry.increment,
          mode: entry.mode,
          offset: entry.offset,
        })
      })
      return tiers
    })
  })

/** Quantity breaks: distinct quantities (whole and fractional), fixed or percent values. */
const breaksArbitrary: fc.Arbitrary<BreakSpec[]> = fc
  .uniqueArray(
    fc.oneof(
      fc.integer({ min: 1, max: 100 }).map((quantity) => quantity * 10_000),
      fc.integer({ min: 1, max: 10_000_000 }),
    ),
    { minLength: 1, maxLength: 4 },
  )
  .chain((quantities) =>
    fc.tuple(
      ...quantities.map((quantity) =>
        fc.oneof(
          priceText.map((value): BreakSpec => ({ quantity: decimalText(quantity, 4), kind: 'fixed', value })),
          percentText.map((value): BreakSpec => ({ quantity: decimalText(quantity, 4), kind: 'percent', value })),
        ),
      ),
    ),
  )

interface Common {
  readonly currencies: CurrencySpec[]
  readonly vatRate: string
}
const commonArbitrary: fc.Arbitrary<Common> = fc.record({ currencies: currenciesArbitrary, vatRate: vatRateText })

function single(
  common: Common,
  currency: string,
  mode: VatMode,
  price: PriceSpec,
  rest: Partial<Scenario> = {},
): Scenario {
  return {
    ...common,
    pricelists: [{ code: 'PL', currency, mode, parent: null, price }],
    answerCurrency: currency,
    tiers: null,
    quantity: 1,
    ...rest,
  }
}

// ---------------------------------------------------------------------------------------------
// Properties

t.test('(1) one NET or GROSS pricelist: net, vat and gross equal the model to the last unit', async (t) => {
  let checked = 0
  assertProperty(
    fc.tuple(commonArbitrary, currencyCode, modeArbitrary, priceText),
    ([common, currency, mode, sales]) => {
      checkPricelist(single(common, currency, mode, { sales, breaks: [] }), 'PL')
      checked++
    },
  )
  t.ok(checked >= runs * 0.9, `${checked} scenarios compared (seed ${seed})`)
})

t.test('(1b) VAT ties at every vat_precision round half-up (away from zero) in both modes', async (t) => {
  // At 25%: NET 0.5 -> 0.125, GROSS 0.625 -> 0.625 × 25 / 125 = 0.125, NET 2 -> 0.5, NET 0.0002 -> 0.00005.
  const cases: [VatMode, number, string, string, string, string][] = [
    ['NET', 2, '0.5', '0.5', '0.13', '0.63'],
    ['NET', 2, '-0.5', '-0.5', '-0.13', '-0.63'],
    ['GROSS', 2, '0.625', '0.495', '0.13', '0.625'],
    ['GROSS', 2, '-0.625', '-0.495', '-0.13', '-0.625'],
    ['NET', 0, '2', '2', '1', '3'],
    ['NET', 4, '0.0002', '0.0002', '0.0001', '0.0003'],
    ['GROSS', 3, '0.0125', '0.0095', '0.003', '0.0125'],
  ]
  for (const [mode, precision, sales, net, vat, gross] of cases) {
    const common: Common = {
      currencies: currencyCodes.map((code) => ({ code, precision, eurRate: '1' })),
      vatRate: '25',
    }
    const item = engineAnswer(single(common, 'EUR', mode, { sales, breaks: [] }), 'PL')
    if (typeof item === 'string') {
      t.fail(`${mode} ${sales}: unavailable ${item}`)
      continue
    }
    t.same(
      [show(item.net), show(item.vat), show(item.gross)],
      [net, vat, gross],
      `${mode} ${sales} at vat_precision ${precision}`,
    )
  }
})

t.test('(2) FX: a price answered in another currency is converted through EUR, then taxed, as the model', async (t) => {
  let checked = 0
  assertProperty(
    fc.tuple(commonArbitrary, currencyCode, currencyCode, modeArbitrary, priceText),
    ([common, currency, answer, mode, sales]) => {
      checkPricelist(single(common, currency, mode, { sales, breaks: [] }, { answerCurrency: answer }), 'PL')
      checked++
    },
  )
  t.ok(checked >= runs * 0.8, `${checked} scenarios compared (seed ${seed})`)
  t.ok(reached.fx >= checked / 2, `${reached.fx} conversions`)
})

t.test(
  '(3) a rounding profile rounds the final sales price (gross on GROSS, net on NET) and VAT follows',
  async (t) => {
    let checked = 0
    assertProperty(
      fc.tuple(commonArbitrary, currencyCode, currencyCode, modeArbitrary, priceText, tiersArbitrary),
      ([common, currency, answer, mode, sales, tiers]) => {
        checkPricelist(single(common, currency, mode, { sales, breaks: [] }, { answerCurrency: answer, tiers }), 'PL')
        checked++
      },
    )
    t.ok(checked >= runs * 0.8, `${checked} scenarios compared (seed ${seed})`)
    t.ok(reached.tier >= checked / 3, `${reached.tier} amounts fell in a tier`)
  },
)

t.test('(4) quantity breaks, fixed and percent of base, go through FX, rounding and VAT like the base', async (t) => {
  let checked = 0
  const quantity = fc.oneof(fc.constant(1), fc.integer({ min: 1, max: 1200 }))
  const tiers = fc.option(tiersArbitrary, { freq: 2 })
  assertProperty(
    fc.tuple(commonArbitrary, currencyCode, currencyCode, modeArbitrary, priceText, breaksArbitrary, tiers, quantity),
    ([common, currency, answer, mode, sales, breaks, profile, requested]) => {
      checkPricelist(
        single(
          common,
          currency,
          mode,
          { sales, breaks },
          { answerCurrency: answer, tiers: profile, quantity: requested },
        ),
        'PL',
      )
      checked++
    },
  )
  t.ok(checked >= runs * 0.8, `${checked} scenarios compared (seed ${seed})`)
  t.ok(reached.breakSelected >= checked / 3, `${reached.breakSelected} breaks selected by quantity`)
})

t.test('(4b) a requested quantity equal to a break quantity selects that break', async (t) => {
  // quantity_break is the minimum quantity, so asking for exactly it must get it. The request
  // carries a JSON number (0.57), the stored break the scaled 5700; 0.57 × 10^4 is 5699.999… in doubles.
  const common: Common = {
    currencies: currencyCodes.map((code) => ({ code, precision: 2, eurRate: '1' })),
    vatRate: '25',
  }
  const example = single(
    common,
    'EUR',
    'NET',
    { sales: '10', breaks: [{ quantity: '0.57', kind: 'fixed', value: '8' }] },
    { quantity: 0.57 },
  )
  const item = engineAnswer(example, 'PL')
  t.equal(
    typeof item === 'string' ? item : show(item.net),
    '8',
    'quantity 0.57 with a break at 0.57 answers the break price 8, not the base 10',
  )
  let failure: unknown = null
  try {
    assertProperty(
      fc.tuple(commonArbitrary, modeArbitrary, priceText, breaksArbitrary, fc.nat()),
      ([common, mode, sales, breaks, pick]) => {
        const requested = Number(breaks[pick % breaks.length]!.quantity)
        checkPricelist(single(common, 'EUR', mode, { sales, breaks }, { quantity: requested }), 'PL')
      },
      1000,
    )
  } catch (error) {
    failure = error
  }
  t.equal(
    failure,
    null,
    failure === null ? 'every break quantity selects its break' : String(failure).split('\n').slice(0, 8).join('\n'),
  )
})

/** Chains root <- middle <- leaf (leaf optional); the root always prices, the middle sometimes. */
const chainArbitrary = fc
  .record({
    common: commonArbitrary,
    currencies: fc.tuple(currencyCode, currencyCode, currencyCode),
    rootMode: modeArbitrary,
    middleMode: fc.option(modeArbitrary, { freq: 3 }),
    leafMode: fc.option(modeArbitrary, { freq: 3 }),
    leaf: fc.boolean(),
    root: fc.record({ sales: priceText, breaks: fc.option(breaksArbitrary, { freq: 2 }) }),
    middlePrice: fc.option(priceText, { freq: 4 }),
    answer: currencyCode,
    tiers: fc.option(tiersArbitrary, { freq: 3 }),
    quantity: fc.oneof(fc.constant(1), fc.integer({ min: 1, max: 1200 })),
  })
  .map((spec): Scenario => {
    const pricelists: PricelistSpec[] = [
      {
        code: 'ROOT',
        currency: spec.currencies[0],
        mode: spec.rootMode,
        parent: null,
        price: { sales: spec.root.sales, breaks: spec.root.breaks ?? [] },
      },
      {
        code: 'MIDDLE',
        currency: spec.currencies[1],
        mode: spec.middleMode,
        parent: 'ROOT',
        price: spec.middlePrice === null ? null : { sales: spec.middlePrice, breaks: [] },
      },
    ]
    if (spec.leaf)
      pricelists.push({
        code: 'LEAF',
        currency: spec.currencies[2],
        mode: spec.leafMode,
        parent: 'MIDDLE',
        price: null,
      })
    return { ...spec.common, pricelists, answerCurrency: spec.answer, tiers: spec.tiers, quantity: spec.quantity }
  })

t.test('(5) inheritance converts the parent price to the child currency (FX) and VAT mode, then answers', async (t) => {
  let checked = 0
  const before = reached.modeConverted
  assertProperty(chainArbitrary, (scenario) => {
    checkPricelist(scenario, scenario.pricelists[scenario.pricelists.length - 1]!.code)
    checkPricelist(scenario, 'MIDDLE')
    checked++
  })
  t.ok(checked >= runs * 0.8, `${checked} chains compared (seed ${seed})`)
  t.ok(
    reached.modeConverted - before >= checked * 0.2,
    `${reached.modeConverted - before} inherited amounts crossed a VAT mode`,
  )
})

const listCodes = ['A', 'B', 'C', 'D'] as const
/** Up to four top-level pricelists; a shared price on several makes ties likely. */
const bestArbitrary = fc
  .record({
    common: commonArbitrary,
    shared: priceText,
    lists: fc.tuple(
      ...listCodes.map(() =>
        fc.record({
          currency: currencyCode,
          mode: modeArbitrary,
          price: fc.constantFrom('own', 'shared', 'shared', 'none'),
          own: priceText,
        }),
      ),
    ),
    count: fc.integer({ min: 1, max: listCodes.length }),
    answer: currencyCode,
    tiers: fc.option(tiersArbitrary, { freq: 2 }),
  })
  .map(
    (spec): Scenario => ({
      ...spec.common,
      pricelists: spec.lists.slice(0, spec.count).map(
        (list, index): PricelistSpec => ({
          code: listCodes[index]!,
          currency: list.currency,
          mode: list.mode,
          parent: null,
          price: list.price === 'none' ? null : { sales: list.price === 'own' ? list.own : spec.shared, breaks: [] },
        }),
      ),
      answerCurrency: spec.answer,
      tiers: spec.tiers,
      quantity: 1,
    }),
  )

t.test(
  '(6) the best price is the lowest gross across pricelists; a tie goes to the code that sorts first',
  async (t) => {
    let checked = 0
    let ties = 0
    assertProperty(bestArbitrary, (scenario) => {
      const model = new Model(scenario)
      const codes = scenario.pricelists.map((pricelist) => pricelist.code)
      let best: { code: string; answer: ModelAnswer } | null = null
      for (const code of codes) {
        const answer = model.answer(code)
        if (answer === null) continue
        if (best !== null && answer.gross.eq(best.answer.gross)) ties++
        if (best === null || answer.gross.lt(best.answer.gross)) best = { code, answer }
      }
      fc.pre(model.inRange)
      const { catalog, prices } = buildWorld(scenario)
      const context = new PriceContext(catalog, prices, at, taxArea)
      const result = queryPrices(context, {
        skus: [sku, sku],
        pricelists: codes,
        options: engineOptions(scenario),
        sortOrder: null,
      })
      if (best === null) {
        if (
          result.items.length !== 0 ||
          result.unavailable.length !== 1 ||
          result.unavailable[0]!.reason !== 'no_price'
        ) {
          throw new Error(
            `model: no price anywhere; engine ${JSON.stringify(result.unavailable)} with ${result.items.length} items`,
          )
        }
      } else {
        if (result.items.length !== 1)
          throw new Error(`engine answered ${result.items.length} items for one (repeated) SKU`)
        const item = result.items[0]!
        if (item.pricelist !== best.code)
          throw new Error(
            `best pricelist: engine ${item.pricelist} (gross ${show(item.gross)}), model ${best.code} (gross ${best.answer.gross.toFixed()})`,
          )
        expectItem(item, best.answer, `best ${best.code}`)
      }
      checked++
    })
    t.ok(checked >= runs * 0.8, `${checked} queries compared (seed ${seed})`)
    t.ok(ties > 0, `${ties} ties between pricelists seen`)
  },
)

t.test('amounts that leave ±amountAbsMax through FX are either exact or refused, never silently inexact', async (t) => {
  // 123456789.1234 EUR at 12345.678901 USD per EUR is 1524157876665.96566…: 1.5e16 scaled units,
  // beyond 2^53, where doubles hold only every other unit. Every input is inside its own bound.
  const common: Common = {
    currencies: [
      { code: 'EUR', precision: 2, eurRate: '1' },
      { code: 'USD', precision: 2, eurRate: '12345.678901' },
    ],
    vatRate: '0',
  }
  const scenario = single(common, 'EUR', 'NET', { sales: '123456789.1234', breaks: [] }, { answerCurrency: 'USD' })
  const model = new Model(scenario).answer('PL')!
  const item = engineAnswer(scenario, 'PL')
  if (typeof item === 'string') {
    t.pass(`refused: ${item}`)
    return
  }
  t.equal(
    String(item.net / 10_000),
    model.net.toFixed(),
    `engine answers net ${item.net / 10_000}; exact is ${model.net.toFixed()}`,
  )
})
