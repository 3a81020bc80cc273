/**
 * An explanation (engine/explain/) as the API shows it, the `trace` of an answered or unavailable
 * item, written as JSON text beside the item it explains (./render.ts), with the same printers:
 * amounts print as the plain answer prints them, instants as the API's date-times. Written field by
 * field rather than built as objects for JSON.stringify, whose generic walk and number printing
 * were most of the trace's cost. Who wrote a price version and when live only in the main thread's
 * price book, so a version step leaves a hole (`versionHole`) for them and names its version in
 * `versions`; the main thread fills the holes (./explain-query.ts `fillVersions`).
 * @module
 */
import type { CandidateTrace, Explanation } from '../engine/explain/explain.js'
import type { BundleStep, ConversionStep, PipelineStep, VersionStep } from '../engine/explain/steps.js'
import type { FxResolved } from '../engine/fx.js'
import type { CompiledTier } from '../engine/rounding.js'
import { formatInstant } from '../engine/time.js'
import { amountJson, jsonNumber, jsonString, quoted } from './render.js'

/** A price version a trace names: pricelist, SKU, start. */
export type VersionRef = [pricelist: string, sku: string, start: number]

/**
 * Where a version step's `"written_at":…,"written_by":…` goes: a NUL, which JSON text never holds
 * raw (strings escape it), so the filler can split on it.
 */
export const versionHole = '\u0000'

export interface TraceOptions {
  readonly roundingCode: string | null
  /** Receives the version of each hole, in the text's order. */
  readonly versions: VersionRef[]
}

/**
 * Instants as the API's text, kept: a trace prints the same few (version starts, publication
 * dates, VAT versions) for every SKU, and Date's toISOString was a sixth of an explanation's time.
 */
const instantTexts = new Map<number, string>()
const instantTextsMax = 4096

export function instant(ms: number): string {
  let text = instantTexts.get(ms)
  if (text === undefined) {
    if (instantTexts.size >= instantTextsMax) instantTexts.clear()
    text = formatInstant(ms)
    instantTexts.set(ms, text)
  }
  return text
}

function amount(scaled: number | null): string {
  return scaled === null ? 'null' : amountJson(scaled)
}

/** A code (pricelist, currency, class, mode, reason: few distinct values) as JSON text. */
function text(value: string | null): string {
  return value === null ? 'null' : quoted(value)
}

function fxFields(fx: FxResolved): string {
  return (
    `"base":${text(fx.base)},"quote":${text(fx.quote)},` +
    `"rate":${jsonNumber(fx.rate)},"published":"${instant(fx.asOf)}"`
  )
}

function tierText(tier: CompiledTier | null): string {
  if (tier === null) return 'null'
  const { from, to, increment, mode, offset } = tier
  return (
    `{"from":${amount(from)},"to":${amount(to)},"increment":${amount(increment)},` +
    `"mode":${text(mode)},"offset":${amount(offset)}}`
  )
}

/**
 * The constant parts of the steps a fast-path winner has (version, FX, rounding, VAT, amounts): a
 * step's text is its open part, then its amounts each after its key, then `}`. An explained query
 * writes them as bytes kept per request (./explain-bytes.ts); `stepText` writes the same text.
 */
export const stepParts = {
  /** Followed by the hole for the writer fields, `,"amount":` and the version's amount. */
  versionOpen: (pricelist: string, start: number) =>
    `{"step":"version","pricelist":${text(pricelist)},"start_date":"${instant(start)}",`,
  versionAmount: ',"amount":',
  /** Followed by the input, `,"output":` and the output. */
  fxOpen: (fx: FxResolved) => `{"step":"fx",${fxFields(fx)},"input":`,
  output: ',"output":',
  roundingOpen: (roundingCode: string | null, tier: CompiledTier | null) =>
    `{"step":"rounding","profile":${text(roundingCode)},"tier":${tierText(tier)},"input":`,
  vat: (vatClass: string, starts: string, rateText: string, mode: string) =>
    `{"step":"vat","vat_class":${text(vatClass)},${starts},"rate":${Number(rateText)},"mode":${text(mode)}}`,
  /** The VAT step's starts (null: none). */
  vatStarts: (mappingStart: number | null | undefined, rateStart: number | null | undefined) =>
    `"mapping_start":${startText(mappingStart)},"rate_start":${startText(rateStart)}`,
  /** Followed by net, `,"vat":`, VAT, `,"gross":`, gross. */
  amountsOpen: '{"step":"amounts","net":',
  vatKey: ',"vat":',
  grossKey: ',"gross":',
} as const

function startText(ms: number | null | undefined): string {
  return ms === null || ms === undefined ? 'null' : `"${instant(ms)}"`
}

function versionText(step: VersionStep, options: TraceOptions): string {
  options.versions.push([step.pricelist, step.sku, step.start])
  return `${stepParts.versionOpen(step.pricelist, step.start)}${versionHole}${stepParts.versionAmount}${amount(step.sales)}}`
}

function bundleText(step: BundleStep): string {
  const parts = step.components.map(
    (part) => `{"sku":${jsonString(part.sku)},"quantity":${part.quantity},"amount":${amount(part.sales)}}`,
  )
  const discount = step.discountValue === null ? 'null' : String(Number(step.discountValue))
  return (
    `{"step":"bundle","pricelist":${text(step.pricelist)},"rule_pricelist":${text(step.rulePricelist)},` +
    `"method":${text(step.method)},"components":[${parts.join(',')}],"discount_type":${text(step.discountType)},` +
    `"discount_value":${discount},"amount":${amount(step.sales)}}`
  )
}

function conversionText(step: ConversionStep): string {
  const fx = step.fx === null ? 'null' : `{${fxFields(step.fx)}}`
  const rate = step.vatRateText === null ? 'null' : String(Number(step.vatRateText))
  return (
    `{"step":"conversion","from_pricelist":${text(step.from)},"to_pricelist":${text(step.to)},` +
    `"from_currency":${text(step.fromCurrency)},"to_currency":${text(step.toCurrency)},` +
    `"from_vat_mode":${text(step.fromMode)},"to_vat_mode":${text(step.toMode)},"fx":${fx},"vat_rate":${rate},` +
    `"input":${amount(step.input)},"output":${amount(step.output)}}`
  )
}

function stepText(step: PipelineStep, vat: () => string, options: TraceOptions): string {
  switch (step.step) {
    case 'version':
      return versionText(step, options)
    case 'bundle':
      return bundleText(step)
    case 'conversion':
      return conversionText(step)
    case 'rule':
      return (
        `{"step":"rule","pricelist":${text(step.pricelist)},"index":${step.index},"code":${text(step.code)},` +
        `"filter_matched":${step.filterMatched},"input":${amount(step.input)},"output":${amount(step.output)}}`
      )
    case 'fx':
      return `${stepParts.fxOpen(step.fx)}${amount(step.input)}${stepParts.output}${amount(step.output)}}`
    case 'quantity_break':
      return (
        `{"step":"quantity_break","quantity":${amount(step.quantity)},` +
        `"break_quantity":${amount(step.breakQuantity)},"amount":${amount(step.amount)}}`
      )
    case 'vat':
      return stepParts.vat(step.vatClass, vat(), step.rateText, step.mode)
    case 'rounding':
      return (
        `${stepParts.roundingOpen(options.roundingCode, step.tier)}${amount(step.input)}` +
        `${stepParts.output}${amount(step.output)}}`
      )
    case 'amounts':
      return (
        `${stepParts.amountsOpen}${amount(step.net)}${stepParts.vatKey}${amount(step.vat)}` +
        `${stepParts.grossKey}${amount(step.gross)}}`
      )
  }
}

/**
 * A candidate's text up to its amounts, by pricelist, outcome and reason: the same few for every
 * SKU of a request (a fifth of the trace's writing was these).
 */
const candidateHeads = new Map<string, Map<CandidateTrace['reason'], string>>()
const candidateHeadsMax = 4096

/** A candidate's text up to its amounts (`candidateText`: the same few for every SKU of a request). */
export function candidateHead(candidate: CandidateTrace): string {
  let heads = candidateHeads.get(candidate.pricelist)
  if (heads === undefined) {
    if (candidateHeads.size >= candidateHeadsMax) candidateHeads.clear()
    heads = new Map()
    candidateHeads.set(candidate.pricelist, heads)
  }
  // The reason names the outcome: null is the winner's, any other a loser's.
  let head = heads.get(candidate.reason)
  if (head === undefined) {
    head =
      `{"pricelist":${text(candidate.pricelist)},"outcome":"${candidate.outcome}",` +
      `"reason":${text(candidate.reason)},"amounts":`
    heads.set(candidate.reason, head)
  }
  return head
}

function candidateText(candidate: CandidateTrace): string {
  const head = candidateHead(candidate)
  const amounts = candidate.amounts
  return amounts === null
    ? `${head}null}`
    : `${head}{"net":${amount(amounts.net)},"vat":${amount(amounts.vat)},"gross":${amount(amounts.gross)}}}`
}

/** The `candidates` step of the last request: every SKU of a request has the same selection. */
let lastSelected: readonly string[] | null = null
let lastSelectedText = ''

function candidatesStep(selected: readonly string[]): string {
  if (selected !== lastSelected) {
    lastSelected = selected
    lastSelectedText = `{"step":"candidates","pricelists":[${selected.map(text).join(',')}]}`
  }
  return lastSelectedText
}

/** What a trace shows before its candidates: the selection and the winner's pipeline. */
export type TraceHead = Pick<Explanation, 'selected' | 'item' | 'path' | 'source' | 'steps' | 'vat'>

/** The `trace` of one item, as JSON text. */
export function traceText(explanation: Explanation, options: TraceOptions): string {
  const candidates = explanation.candidates.map(candidateText)
  return `${traceOpen(explanation, options)}${candidates.join(',')}],"inputs_hash":"${explanation.inputsHash}"}`
}

/**
 * The `trace` of one item up to its candidates: `{"steps":[…],"candidates":[`; an explained query's
 * answer writes the candidates after it as bytes (./explain-query.ts), the text the same as `traceText`'s.
 */
export function traceOpen(explanation: TraceHead, options: TraceOptions): string {
  const steps: string[] = [candidatesStep(explanation.selected)]
  if (explanation.item !== null) steps.push(inheritanceText(explanation.path, explanation.source))
  let vatIndex = 0
  const vat = () => {
    const found = explanation.vat[vatIndex++]
    return stepParts.vatStarts(found?.mappingStart, found?.rateStart)
  }
  for (const step of explanation.steps) steps.push(stepText(step, vat, options))
  return `{"steps":[${steps.join(',')}],"candidates":[`
}

/** The trace's text before its steps: `{"steps":[` and the candidates step. */
export function traceStart(selected: readonly string[]): string {
  return `{"steps":[${candidatesStep(selected)}`
}

/** The inheritance step: the pricelists walked, and the one whose version gave the price. */
export function inheritanceText(path: readonly string[], source: string | null): string {
  return `{"step":"inheritance","path":[${path.map(text).join(',')}],"source":${text(source)}}`
}
