/**
 * The explanation of a query's SKU at a bounded cost: the losing candidates are priced the way the
 * plain query prices them (engine/query.ts `fastAmount`: a cell of the SKU's row of prices in force,
 * integer arithmetic) and their inputs are derived from the cell's chain link and version, not
 * recorded by a traced pipeline; only the winner, and the candidates the fast path itself leaves to
 * the full pipeline (rules, conversions, bundles, breaks in another currency, a SKU without VAT),
 * run the traced pipeline. Running it on every candidate cost about 4x the plain query before a
 * step was recorded. The explanation equals the full-pipeline one (./explain.ts `explainPrice`)
 * field by field, its inputs and hash included (test/engine/explain-from-cells.test.ts).
 * @module
 */
import { assert } from '../assert.js'
import { convertAmount } from '../fx.js'
import { scaleQuantity } from '../money.js'
import { outOfRange, Status, vatOfGross, vatOfNet, type AnswerOptions, type PriceContext } from '../pipeline.js'
import { cellNoPrice } from '../current-rows.js'
import { fastAmount, fastFound, selectCandidates, type Candidate } from '../query.js'
import { applyRounding } from '../rounding.js'
import type { VatInfo } from '../vat-column.js'
import {
  attempt,
  conclude,
  fxInput,
  pricelistInput,
  sharedOf,
  vatInputs,
  type Attempt,
  type Explanation,
  type ExplainRequest,
  type Outcome,
  type Shared,
} from './explain.js'

/** What every SKU of one explained query shares: the candidates and their chains' inputs. */
export interface ExplainPlan {
  readonly selected: readonly Candidate[]
  readonly options: AnswerOptions
  /** The answer currency's VAT precision. */
  readonly precision: number
  /** The quantity, scaled like break quantities. */
  readonly quantity: number
  /** Per candidate, per link of its chain: the pricelist's input (null: none). */
  readonly chainInputs: readonly (readonly (string | null)[])[]
  /** Per candidate, per link of its chain: `price|<code>|`, the start of its versions' inputs. */
  readonly versionPrefixes: readonly (readonly string[])[]
}

/** The plan of a query over `pricelists` (sorted as the query sorts them) at the context's instant. */
export function explainPlan(context: PriceContext, pricelists: readonly string[], options: AnswerOptions): ExplainPlan {
  // Before the candidates are selected (which starts the rows of a replica again when writes came).
  context.prices.keepRowStarts?.()
  const selected = selectCandidates(context, pricelists, options.currency)
  const known = sharedOf(context).pricelists
  return {
    selected,
    options,
    precision: context.vatPrecision(options.currency),
    quantity: scaleQuantity(options.quantity),
    chainInputs: selected.map((candidate) => candidate.chainCodes.map((code) => pricelistInput(context, known, code))),
    versionPrefixes: selected.map((candidate) => candidate.chainCodes.map((code) => `price|${code}|`)),
  }
}

/** A candidate the fast path does not price: the traced pipeline answers it. */
const fullPath = -1

/** What one SKU's fast candidates share while they are priced. */
interface SkuFacts {
  readonly sku: string
  readonly skuId: number
  readonly row: number
  readonly vat: VatInfo
  readonly shared: Shared
}

/**
 * A fast candidate's outcome and its inputs (added to the SKU's list), as the full pipeline would
 * record them: the pricelists it walks (its chain up to the link that gave the price, or all of it),
 * the version it read, and, once priced, the FX rate and the SKU's VAT versions.
 */
function fastOutcome(context: PriceContext, plan: ExplainPlan, index: number, facts: SkuFacts): Outcome | -1 {
  const candidate = plan.selected[index]!
  const { sku, skuId, shared } = facts
  const amount = fastAmount(context, candidate, facts.row, skuId, sku, plan.quantity)
  if (amount !== amount) return fullPath
  const inputs = shared.inputs
  const chainInputs = plan.chainInputs[index]!
  const link = amount === cellNoPrice ? chainInputs.length - 1 : fastFound.link
  for (let walked = 0; walked <= link; walked++) {
    const input = chainInputs[walked]!
    if (input !== null) inputs.add(input)
  }
  if (amount === cellNoPrice) return Status.noPrice
  const start = versionStart(context, candidate.chain[link]!, facts.row, skuId)
  inputs.add(`${plan.versionPrefixes[index]![link]!}${sku}|${start}`)
  const fx = candidate.fx
  if (fx === undefined) return Status.noFxRate
  const converted = fx === null ? amount : convertAmount(amount, fx)
  if (outOfRange(converted)) return Status.noFxRate
  if (fx !== null) inputs.add(fxInput(fx))
  vatInputs(context, sku, shared, facts.vat.classCode)
  const rounding = plan.options.rounding
  const sales = rounding === null ? converted : applyRounding(rounding, converted)
  const rate = facts.vat.rate
  if (candidate.net) {
    const vat = vatOfNet(sales, rate, plan.precision)
    return { net: sales, vat, gross: sales + vat }
  }
  const vat = vatOfGross(sales, rate, plan.precision)
  return { net: sales - vat, vat, gross: sales }
}

/** The start of the version in force of a priced cell: kept beside the row's cells, else from the runs. */
export function versionStart(context: PriceContext, pricelistId: number, row: number, skuId: number): number {
  const prices = context.prices
  if (row >= 0 && prices.rowStart !== undefined) {
    const start = prices.rowStart(row, pricelistId)
    if (start === start) return start
  }
  const position = prices.livePositionAt(pricelistId, skuId, context.at)
  assert(position >= 0, 'a priced cell has its version')
  return prices.fromAt(position)
}

/**
 * Explains the best price of one SKU of a query (`request.pricelists` are the plan's): equal to
 * `explainPrice`'s explanation, with the traced pipeline run for the winner and the candidates the
 * fast path leaves to it only.
 */
export function explainFromCells(context: PriceContext, request: ExplainRequest, plan: ExplainPlan): Explanation {
  const selected = plan.selected
  assert(request.pricelists.length === selected.length, 'the request names the plan candidates')
  const sku = request.sku
  const skuId = context.skuId(sku)
  const vat = context.vat(sku, skuId)
  // As bestOf: the fast path needs the SKU's id (its cells) and its VAT (the gross it compares).
  const fastVat = skuId >= 0 && typeof vat !== 'number' ? vat : null
  const shared = sharedOf(context)
  const facts: SkuFacts | null =
    fastVat === null ? null : { sku, skuId, row: context.prices.currentRow(skuId, context.at), vat: fastVat, shared }
  const outcomes: Outcome[] = []
  let attempts: (Attempt | undefined)[] | null = null
  for (let index = 0; index < selected.length; index++) {
    const candidate = selected[index]!
    if (candidate.fast && facts !== null) {
      const outcome = fastOutcome(context, plan, index, facts)
      if (outcome !== fullPath) {
        outcomes.push(outcome)
        continue
      }
    }
    const tried = attempt(context, candidate.code, request, shared)
    ;(attempts ??= [])[index] = tried
    outcomes.push(tried.outcome)
  }
  return conclude(context, request, shared, outcomes, (index) => {
    const known = attempts?.[index]
    if (known !== undefined) return known
    const traced = attempt(context, selected[index]!.code, request, shared)
    const outcome = outcomes[index] as Exclude<Outcome, Status>
    const item = traced.outcome
    assert(
      typeof item !== 'number' && item.net === outcome.net && item.vat === outcome.vat && item.gross === outcome.gross,
      'the fast path and the traced pipeline agree',
    )
    return traced
  })
}
