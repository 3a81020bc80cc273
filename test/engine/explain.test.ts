/**
 * The explanation (engine/explain/) against the plain query, for random worlds (test/helpers/
 * price-world.ts: inheritance with and without conversion, rules, a bundle, breaks, deletions, FX,
 * both VAT modes, rounding): each answered SKU's explanation names the winner the query answered,
 * with its amounts, and each unavailable SKU's gives the query's reason. Then a small evaluator
 * written here with decimal.js replays only the trace's steps (the version or bundle amount, each
 * conversion, rule, FX, break, rounding and VAT step) and must reach the trace's final amounts and
 * the plain answer's: the trace says enough to recompute the price without the engine.
 */
import { Decimal } from 'decimal.js'
import fc from 'fast-check'
import t from 'tap'
import { explainPrice, type Explanation } from '../../engine/explain/explain.js'
import type { PipelineStep } from '../../engine/explain/steps.js'
import { PriceContext, statusReasons, type AnswerOptions, type PricedItem } from '../../engine/pipeline.js'
import { queryPrices } from '../../engine/query.js'
import { build, profile, queryArbitrary, worldArbitrary, type World } from '../helpers/price-world.js'

const seed =
  process.env['PROPERTY_SEED'] === undefined ? Date.now() % 2_147_483_647 : Number(process.env['PROPERTY_SEED'])

const D = Decimal.clone({ precision: 60, rounding: Decimal.ROUND_HALF_UP })
const unit = new D(10_000)

/** Scaled units as a decimal amount. */
function amountOf(scaled: number): Decimal {
  return new D(scaled).div(unit)
}

/** To 4 decimals (scaled units), half away from zero, as the engine rounds. */
function scaled(value: Decimal): number {
  return value.mul(unit).toDecimalPlaces(0, Decimal.ROUND_HALF_UP).toNumber()
}

const modes = { UP: Decimal.ROUND_UP, DOWN: Decimal.ROUND_DOWN, HALF_UP: Decimal.ROUND_HALF_UP, HALF_EVEN: 6 } as const

/** The world's rules are `sales * k` or `sales + k`: evaluated here, not by CEL. */
function ruleOf(world: World, pricelist: string): ((sales: Decimal) => Decimal) | null {
  const rule = world.lists[Number(pricelist.slice(1))]!.rule
  if (rule === null) return null
  const [, operator, operand] = /^sales ([*+]) ([\d.]+)$/.exec(rule)!
  return operator === '*' ? (sales) => sales.mul(operand!) : (sales) => sales.plus(operand!)
}

function vatOf(value: Decimal, rateText: string, mode: 'NET' | 'GROSS', precision: number): Decimal {
  const rate = new D(rateText)
  // Divided last: 12.5 / 112.5 has no finite decimal, 87.525 x 12.5 / 112.5 = 9.725 has.
  return value
    .mul(rate)
    .div(mode === 'NET' ? 100 : rate.plus(100))
    .toDecimalPlaces(precision, Decimal.ROUND_HALF_UP)
}

/** Replays the steps; answers [net, vat, gross] in scaled units, or throws where a step does not follow. */
function replay(world: World, steps: readonly PipelineStep[]): number[] {
  let value: Decimal | null = null
  let result: number[] | null = null
  const expect = (input: number, what: string) => {
    if (value === null || scaled(value) !== input) throw new Error(`${what}: input ${input}, replayed ${value}`)
  }
  for (const step of steps) {
    switch (step.step) {
      case 'version':
        value = amountOf(step.sales)
        break
      case 'bundle': {
        // 10% off the sum of the parts, each part's quantity x amount to 4 decimals.
        let sum = new D(0)
        for (const part of step.components) sum = sum.plus(amountOf(scaled(amountOf(part.sales!).mul(part.quantity))))
        value = sum.minus(amountOf(scaled(sum.mul(step.discountValue!).div(100))))
        break
      }
      case 'conversion': {
        expect(step.input, 'conversion')
        let converted: Decimal = value!
        if (step.fx !== null)
          converted = amountOf(scaled(converted.mul(step.fx.numerator.toString()).div(step.fx.denominator.toString())))
        if (step.vatRateText !== null) {
          const vat = vatOf(converted, step.vatRateText, step.toMode === 'GROSS' ? 'NET' : 'GROSS', 2)
          converted = step.toMode === 'GROSS' ? converted.plus(vat) : converted.minus(vat)
        }
        value = converted
        break
      }
      case 'rule': {
        expect(step.input, 'rule')
        if (step.output === null) break
        value = amountOf(scaled(ruleOf(world, step.pricelist)!(value!)))
        break
      }
      case 'fx':
        expect(step.input, 'fx')
        value = amountOf(scaled(value!.mul(step.fx.numerator.toString()).div(step.fx.denominator.toString())))
        break
      case 'quantity_break':
        // A break's amount comes from the version's breaks (fixed, or a percent of the base).
        if (step.breakQuantity === null && scaled(value!) !== step.amount) throw new Error('the base, unbroken')
        value = amountOf(step.amount)
        break
      case 'rounding': {
        expect(step.input, 'rounding')
        const tier = step.tier
        if (tier === null) break
        const increment = amountOf(tier.increment)
        const rounded = value!.div(increment).toDecimalPlaces(0, modes[tier.mode]).mul(increment)
        value = rounded.plus(amountOf(tier.offset))
        break
      }
      case 'vat': {
        const vat = vatOf(value!, step.rateText, step.mode, step.precision)
        const [net, gross] = step.mode === 'NET' ? [value!, value!.plus(vat)] : [value!.minus(vat), value!]
        result = [scaled(net), scaled(vat), scaled(gross)]
        break
      }
      case 'amounts':
        if (result === null || result.join() !== [step.net, step.vat, step.gross].join())
          throw new Error(`amounts ${[step.net, step.vat, step.gross]}, replayed ${result}`)
    }
  }
  if (result === null) throw new Error('no VAT step')
  return result
}

function agrees(explanation: Explanation, item: PricedItem): boolean {
  const explained = explanation.item
  return (
    explained !== null &&
    explained.pricelist === item.pricelist &&
    explained.net === item.net &&
    explained.vat === item.vat &&
    explained.gross === item.gross
  )
}

t.test('explanations name the plain answer, and their steps alone recompute its amounts', async (t) => {
  let items = 0
  let unavailable = 0
  let replayed = 0
  const kinds = new Set<string>()
  fc.assert(
    fc.property(worldArbitrary, fc.array(queryArbitrary, { minLength: 1, maxLength: 4 }), (world, asked) => {
      const { catalog, book } = build(world)
      for (const query of asked) {
        const options: AnswerOptions = {
          currency: query.currency,
          rounding: query.rounding ? profile : null,
          quantity: query.quantity,
        }
        const pricelists = [...query.lists].sort()
        const context = new PriceContext(catalog, book, query.at, 'SE')
        const plain = queryPrices(context, { skus: query.skus, pricelists, options, sortOrder: null })
        const explain = (sku: string) =>
          explainPrice(context, { sku, pricelists, excluded: [], options, roundingCode: query.rounding ? 'R' : null })
        for (const item of plain.items) {
          const explanation = explain(item.sku)
          if (!agrees(explanation, item)) throw new Error(`${item.sku} at ${query.at}: not the plain answer`)
          const won = explanation.candidates.filter((candidate) => candidate.outcome === 'won')
          if (won.length !== 1 || won[0]!.pricelist !== item.pricelist) throw new Error('exactly one winner')
          const [net, vat, gross] = replay(world, explanation.steps)
          if (net !== item.net || vat !== item.vat || gross !== item.gross)
            throw new Error(`${item.sku}: replayed ${[net, vat, gross]}, answered ${[item.net, item.vat, item.gross]}`)
          for (const step of explanation.steps) kinds.add(step.step)
          items++
          replayed++
        }
        for (const entry of plain.unavailable) {
          const explanation = explain(entry.sku)
          if (explanation.item !== null || statusReasons[explanation.status] !== entry.reason)
            throw new Error(`${entry.sku}: explained ${statusReasons[explanation.status]}, answered ${entry.reason}`)
          if (explanation.candidates.some((candidate) => candidate.outcome === 'won' || candidate.reason === null))
            throw new Error('an unavailable SKU has only losing candidates, each with a reason')
          unavailable++
        }
      }
    }),
    { seed, numRuns: 400 },
  )
  t.ok(items > 300, `${items} answered items explained (seed ${seed})`)
  t.ok(unavailable > 50, `${unavailable} unavailable ones`)
  t.equal(replayed, items, 'every answered item replayed')
  t.same(
    [...kinds].sort(),
    ['amounts', 'bundle', 'conversion', 'fx', 'quantity_break', 'rounding', 'rule', 'vat', 'version'],
    'every kind of step was replayed',
  )
})

t.test('the inputs hash is stable for one instant and moves with what the price read', async (t) => {
  const world: World = {
    lists: [
      { currency: 'EUR', mode: 'NET', parent: null, rule: null },
      { currency: 'SEK', mode: 'GROSS', parent: 0, rule: 'sales * 0.9' },
      { currency: 'EUR', mode: 'NET', parent: null, rule: null },
      { currency: 'EUR', mode: 'NET', parent: null, rule: null },
      { currency: 'EUR', mode: 'NET', parent: null, rule: null },
    ],
    eurRate: '11.2345',
    vatRate: '25',
    bundleOn: null,
    prices: [
      {
        sku: 'S0',
        list: 'P0',
        versions: [
          { from: 0, kind: 'price', sales: 100_000, breaks: [] },
          { from: 50, kind: 'price', sales: 90_000, breaks: [] },
        ],
      },
    ],
  }
  const { catalog, book } = build(world)
  const options: AnswerOptions = { currency: 'SEK', rounding: null, quantity: 1 }
  const at = (instant: number) =>
    explainPrice(new PriceContext(catalog, book, instant, 'SE'), {
      sku: 'S0',
      pricelists: ['P1'],
      excluded: [],
      options,
      roundingCode: null,
    })
  const early = at(10)
  t.equal(at(20).inputsHash, early.inputsHash, 'the same version and rates: the same hash')
  t.not(at(60).inputsHash, early.inputsHash, 'a later version: another hash')
  // 10 EUR x 11.2345 = 112.345 SEK; + 25% VAT: 28.08625 -> 28.09 = 140.435; x 0.9 = 126.3915.
  t.same(
    early.steps.map((step) => [step.step, 'output' in step ? step.output : 'sales' in step ? step.sales : null]),
    [
      ['version', 100_000],
      ['conversion', 1_404_350],
      ['rule', 1_263_915],
      ['vat', null],
      ['amounts', null],
    ],
  )
  t.ok(
    early.inputs.some((input) => input.startsWith('price|P0|S0|0')),
    'the inherited version is an input',
  )
  t.ok(
    early.inputs.some((input) => input.startsWith('fx|EUR|SEK|')),
    'the conversion rate is an input',
  )
})
