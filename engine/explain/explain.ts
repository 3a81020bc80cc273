/**
 * Why a price is what it is: runs the full pipeline (resolveBase + priceItem) for one SKU on each
 * candidate pricelist with a tracer set on the context, picks the winner exactly as the query does
 * (lowest gross, a tie to the code that sorts first: engine/query.ts bestOf, whose fast path answers
 * the full pipeline's amounts), and gives every other candidate one reason. The pipeline is not
 * duplicated here: it reports its steps (./steps.ts) and this module only records them and the
 * inputs they read, whose canonical list is hashed so that a later write never changes the
 * explanation of an earlier instant.
 * @module
 */
import * as crypto from 'node:crypto'
import { assert } from '../assert.js'
import { compositeKey, type Catalog, type EntityValues } from '../catalog.js'
import type { FxResolved } from '../fx.js'
import { priceItem, resolveBase, Status, type AnswerOptions, type PriceContext, type PricedItem } from '../pipeline.js'
import { nextVersionAfter, viewAt, type Version } from '../temporal.js'
import type { PipelineStep, PriceTracer } from './steps.js'

/** SHA-256 in hex; the one-shot `crypto.hash` (Node 20.12+) when there is one. */
const sha256Hex: (text: string) => string =
  typeof crypto.hash === 'function'
    ? (text) => crypto.hash('sha256', text, 'hex')
    : (text) => crypto.createHash('sha256').update(text).digest('hex')

/** Why a candidate pricelist did not give the answer (closed; docs/api.md "Explain"). */
export const candidateReasons = [
  'filter_mismatch',
  'list_not_active',
  'no_price_at_as_of',
  'bundle_unavailable',
  'rule_error',
  'no_fx_rate',
  'no_vat_class',
  'no_vat_rate',
  'lost_to_lower',
  'lost_tie',
] as const
export type CandidateReason = (typeof candidateReasons)[number]

/** The pipeline's statuses (engine/pipeline.ts Status, by value) as candidate reasons. */
export const statusReason: readonly CandidateReason[] = [
  'no_price_at_as_of', // ok never loses by status; kept for the index
  'no_price_at_as_of',
  'bundle_unavailable',
  'rule_error',
  'no_fx_rate',
  'no_vat_class',
  'no_vat_rate',
]

export interface ExplainRequest {
  readonly sku: string
  /** The selected pricelists, sorted as the query sorts them (a tie goes to the first). */
  readonly pricelists: readonly string[]
  /** Live pricelists the query did not select, and why. */
  readonly excluded: readonly { readonly pricelist: string; readonly reason: CandidateReason }[]
  readonly options: AnswerOptions
  /** The rounding profile's code (null: none). */
  readonly roundingCode: string | null
}

/** The VAT step with the starts of the mapping and rate versions it used. */
export interface ExplainedVat {
  readonly mappingStart: number | null
  readonly rateStart: number | null
}

export interface CandidateTrace {
  readonly pricelist: string
  readonly outcome: 'won' | 'lost'
  readonly reason: CandidateReason | null
  readonly amounts: { readonly net: number; readonly vat: number; readonly gross: number } | null
}

export interface Explanation {
  readonly sku: string
  /** The winner's answer, or null when no candidate priced the SKU. */
  readonly item: PricedItem | null
  /** The furthest a candidate got when none answered (the query's `unavailable` reason). */
  readonly status: Status
  readonly selected: readonly string[]
  /** The winner's pipeline, as it ran (empty without a winner). */
  readonly path: readonly string[]
  readonly source: string | null
  readonly steps: readonly PipelineStep[]
  /** For each `vat` step of `steps`, in order. */
  readonly vat: readonly ExplainedVat[]
  readonly candidates: readonly CandidateTrace[]
  /** The canonical list of inputs read (sorted), and "sha256:<hex>" over it. */
  readonly inputs: readonly string[]
  readonly inputsHash: string
}

/**
 * The pricelist versions' input texts of one context (instant), kept across the SKUs of a request:
 * every candidate of every SKU walks the same few pricelists.
 */
const pricelistInputs = new WeakMap<PriceContext, Map<string, string | null>>()

/** A VAT class's rate in force at a context's instant and tax area, as an input and its start (null: none). */
interface RateInput {
  readonly input: string
  readonly start: number
  /** `input` as UTF-8, once asked for (./fast.ts hashes bytes). */
  bytes: Uint8Array | null
}
const rateInputs = new WeakMap<PriceContext, Map<string, RateInput | null>>()

function rateInputOf(context: PriceContext, vatClass: string): RateInput | null {
  let known = rateInputs.get(context)
  if (known === undefined) {
    known = new Map()
    rateInputs.set(context, known)
  }
  let found = known.get(vatClass)
  if (found === undefined) {
    const { catalog, taxArea, at } = context
    const rate = catalog.view('vat_rate', compositeKey(taxArea, vatClass), at)
    found =
      rate === null
        ? null
        : {
            input: `vat_rate|${taxArea}|${vatClass}|${rate.version.from}|${rate.version.hash}`,
            start: rate.version.from,
            bytes: null,
          }
    known.set(vatClass, found)
  }
  return found
}

/**
 * What the candidates of one SKU share: the list of inputs, the SKU's VAT versions and article input
 * (looked up once), and the context's pricelist inputs.
 */
export interface Shared {
  readonly inputs: InputList
  vat: ExplainedVat | null
  article: string | null
  readonly pricelists: Map<string, string | null>
}

function pricelistInputsOf(context: PriceContext): Map<string, string | null> {
  let known = pricelistInputs.get(context)
  if (known === undefined) {
    known = new Map()
    pricelistInputs.set(context, known)
  }
  return known
}

/** Records one candidate's steps, and every candidate's inputs into the shared list. */
class Recorder implements PriceTracer {
  muted = 0
  readonly path: string[] = []
  readonly steps: PipelineStep[] = []
  readonly vat: ExplainedVat[] = []
  readonly inputs: InputList
  readonly #pricelists: Map<string, string | null>

  constructor(
    readonly context: PriceContext,
    readonly sku: string,
    readonly shared: Shared,
  ) {
    this.inputs = shared.inputs
    this.#pricelists = shared.pricelists
  }

  walk(code: string): void {
    if (this.muted === 0) this.path.push(code)
    const input = pricelistInput(this.context, this.#pricelists, code)
    if (input !== null) this.inputs.add(input)
  }

  step(step: PipelineStep): void {
    this.#input(step)
    if (this.muted !== 0) return
    this.steps.push(step)
    if (step.step === 'vat') this.vat.push(this.#vatInput(step.vatClass))
  }

  #input(step: PipelineStep): void {
    const inputs = this.inputs
    switch (step.step) {
      case 'version':
        inputs.add(`price|${step.pricelist}|${step.sku}|${step.start}`)
        return
      case 'bundle': {
        const view = this.context.catalog.view(
          'bundle_rule',
          compositeKey(step.sku, step.rulePricelist),
          this.context.at,
        )
        if (view !== null)
          inputs.add(`bundle|${step.sku}|${step.rulePricelist}|${view.version.from}|${view.version.hash}`)
        return
      }
      case 'conversion':
        if (step.fx !== null) this.#fxInput(step.fx)
        if (step.vatRateText !== null) this.#vatInput(null)
        return
      case 'rule':
        inputs.add((this.shared.article ??= this.#articleInput()))
        return
      case 'fx':
        this.#fxInput(step.fx)
        return
      default:
        return
    }
  }

  #articleInput(): string {
    const view = this.context.catalog.view('article', this.sku, this.context.at)
    return `article|${this.sku}|${view === null ? 'none' : `${view.version.from}|${view.version.hash}`}`
  }

  #fxInput(fx: FxResolved): void {
    this.inputs.add(fxInput(fx))
  }

  /** The SKU's VAT mapping and its class's rate in force, as inputs; their starts (once per SKU). */
  #vatInput(classCode: string | null): ExplainedVat {
    return vatInputs(this.context, this.sku, this.shared, classCode)
  }
}

/** An FX rate as an input, written once per resolved rate (a context resolves each pair once). */
const fxInputs = new WeakMap<FxResolved, string>()

export function fxInput(fx: FxResolved): string {
  let input = fxInputs.get(fx)
  if (input === undefined) {
    input = `fx|${fx.base}|${fx.quote}|${fx.asOf}|${fx.numerator}/${fx.denominator}`
    fxInputs.set(fx, input)
  }
  return input
}

/** A pricelist's version in force as an input (null: none), kept per context in `known`. */
export function pricelistInput(context: PriceContext, known: Map<string, string | null>, code: string): string | null {
  let input = known.get(code)
  if (input === undefined) {
    const view = context.catalog.view('pricelist', code, context.at)
    input = view === null ? null : `pricelist|${code}|${view.version.from}|${view.version.hash}`
    known.set(code, input)
  }
  return input
}

/**
 * The SKU's VAT mapping and its class's rate in force added to the SKU's inputs, and their starts:
 * looked up at the first VAT step (or conversion through VAT) of any candidate, then kept.
 */
export function vatInputs(context: PriceContext, sku: string, shared: Shared, classCode: string | null): ExplainedVat {
  return (shared.vat ??= vatLookup(context, sku, shared.inputs, classCode))
}

type MappingVersion = Version<EntityValues['article_taxclass']>

/** A SKU's VAT mapping versions in one tax area, and the input text of the version last used. */
interface MappingSlot {
  readonly sku: string
  readonly versions: readonly MappingVersion[] | undefined
  version: MappingVersion | null
  /** The instants between which `version` is in force (from its start to the next version's). */
  start: number
  until: number
  input: string
  /** `input` as UTF-8, once asked for (./fast.ts hashes bytes). */
  bytes: Uint8Array | null
}

/** The slots of one catalogue and tax area, valid while no mapping is written (its revision). */
interface MappingSlots {
  revision: number
  /** By the price book's SKU id, checked against the slot's SKU (an id of another book may name another). */
  readonly byId: (MappingSlot | undefined)[]
  /** SKUs without an id. */
  readonly bySku: Map<string, MappingSlot>
}

/**
 * VAT mapping versions by SKU, kept across requests per catalogue and tax area: the look-up by a
 * composite key built per SKU, and the input text written per SKU, were a twelfth of an
 * explanation's time. By the price book's SKU id (a look-up by the SKU's text in a map of 100,000
 * was a twentieth of it), each slot checked against its SKU's text: a catalogue may be read beside
 * more than one book (a simulation's overlay), whose ids may name other SKUs.
 */
const mappingSlots = new WeakMap<Catalog, Map<string, MappingSlots>>()
const mappingSlotsMax = 262_144

function mappingSlotsOf(catalog: Catalog, taxArea: string): MappingSlots {
  let byArea = mappingSlots.get(catalog)
  if (byArea === undefined) {
    byArea = new Map()
    mappingSlots.set(catalog, byArea)
  }
  const revision = catalog.revision('article_taxclass')
  let slots = byArea.get(taxArea)
  if (slots === undefined) {
    slots = { revision, byId: [], bySku: new Map() }
    byArea.set(taxArea, slots)
  } else if (slots.revision !== revision || slots.bySku.size >= mappingSlotsMax) {
    slots.revision = revision
    slots.byId.length = 0
    slots.bySku.clear()
  }
  return slots
}

/** The SKU's mapping version in force at the context's instant, with its input text (null: none). */
function mappingAt(context: PriceContext, sku: string): MappingSlot | null {
  const { catalog, taxArea, at } = context
  const slots = mappingSlotsOf(catalog, taxArea)
  const skuId = context.skuId(sku)
  let slot = skuId >= 0 ? slots.byId[skuId] : slots.bySku.get(sku)
  if (slot === undefined || slot.sku !== sku) {
    slot = {
      sku,
      versions: catalog.versions('article_taxclass', compositeKey(sku, taxArea)),
      version: null,
      start: 0,
      until: 0,
      input: '',
      bytes: null,
    }
    if (skuId >= 0 && skuId < mappingSlotsMax) {
      // Filled up to the id, so that the array keeps fast elements (a far index would make it a dictionary).
      while (slots.byId.length <= skuId) slots.byId.push(undefined)
      slots.byId[skuId] = slot
    } else slots.bySku.set(sku, slot)
  }
  if (slot.version !== null && at >= slot.start && at < slot.until) return slot
  const view = viewAt(slot.versions, at)
  if (view === null) return null
  if (slot.version !== view.version) {
    slot.version = view.version
    slot.input = `vat_mapping|${sku}|${taxArea}|${view.version.from}|${view.version.hash}`
    slot.bytes = null
  }
  slot.start = view.version.from
  slot.until = nextVersionAfter(slot.versions, at)
  return slot
}

const encoder = new TextEncoder()

/**
 * The input text, as UTF-8, of a SKU's VAT mapping in force at the context's instant, and the
 * mapping's start (null: none), as `vatInputs` adds it, kept beside the text: for explanations that
 * hash their inputs as bytes (./fast.ts). The slot is kept across requests: read it at once.
 */
export function mappingInputBytes(context: PriceContext, sku: string): InputBytes | null {
  const mapping = mappingAt(context, sku)
  if (mapping === null) return null
  mapping.bytes ??= encoder.encode(mapping.input)
  return mapping as InputBytes
}

/** The input text, as UTF-8, of a VAT class's rate in force at the context's instant (null: none). */
export function rateInputBytes(context: PriceContext, classCode: string): InputBytes | null {
  const rate = rateInputOf(context, classCode)
  if (rate === null) return null
  rate.bytes ??= encoder.encode(rate.input)
  return rate as InputBytes
}

/** An input's bytes and the start of the version it names. */
export interface InputBytes {
  readonly bytes: Uint8Array
  readonly start: number
}

function vatLookup(context: PriceContext, sku: string, inputs: InputList, classCode: string | null): ExplainedVat {
  const mapping = mappingAt(context, sku)
  const version = mapping === null ? null : mapping.version!
  const vatClass = classCode ?? version?.value?.vat_class_code ?? null
  // The class's rate is the same for every SKU of the context: looked up and written once.
  const rate = vatClass === null ? null : rateInputOf(context, vatClass)
  if (mapping !== null) inputs.add(mapping.input)
  if (rate !== null) inputs.add(rate.input)
  return { mappingStart: version?.from ?? null, rateStart: rate?.start ?? null }
}

export interface Attempt {
  readonly recorder: Recorder
  readonly source: string | null
  readonly outcome: PricedItem | Status
}

/** One candidate through the full pipeline with a recorder set; the context's tracer is restored after. */
export function attempt(context: PriceContext, code: string, request: ExplainRequest, shared: Shared): Attempt {
  const recorder = new Recorder(context, request.sku, shared)
  const previous = context.tracer
  context.tracer = recorder
  try {
    const resolved = resolveBase(context, code, request.sku)
    if (typeof resolved === 'number') return { recorder, source: null, outcome: resolved }
    const priced = priceItem(context, resolved, request.sku, request.options, code)
    return { recorder, source: resolved.source, outcome: priced }
  } finally {
    context.tracer = previous
  }
}

/**
 * The kinds of input, in the order their texts sort: each text starts with its kind and `|`, and
 * two kinds' texts never interleave ("pricelist|" sorts before "price|": `l` before `|`).
 */
const inputKinds = ['article', 'bundle', 'fx', 'pricelist', 'price', 'rounding', 'vat_mapping', 'vat_rate'] as const

/** The index in `inputKinds` of an input text's kind, from one or two of its characters. */
function kindOf(input: string): number {
  switch (input.charCodeAt(0)) {
    case 0x61: // article
      return 0
    case 0x62: // bundle
      return 1
    case 0x66: // fx
      return 2
    case 0x70: // pricelist, price
      return input.charCodeAt(5) === 0x6c ? 3 : 4
    case 0x72: // rounding
      return 5
    default: // vat_mapping, vat_rate
      assert(input.startsWith('vat_'), 'an input of a known kind')
      return input.charCodeAt(4) === 0x6d ? 6 : 7
  }
}

/**
 * The inputs of one explanation, distinct and in the order of the default sort (UTF-16 code units)
 * as they are added: one list per kind (kinds sort apart: `inputKinds`), each kept sorted by an
 * insertion from its end, since a kind's inputs mostly arrive in order (candidates come sorted by
 * code). A Set and a sort of the ~20 texts of a SKU were a third of an explanation's time.
 */
export class InputList {
  readonly #kinds: (string[] | undefined)[] = new Array<string[] | undefined>(inputKinds.length).fill(undefined)

  add(input: string): void {
    const kind = kindOf(input)
    const items = this.#kinds[kind]
    if (items === undefined) {
      this.#kinds[kind] = [input]
      return
    }
    let index = items.length
    while (index > 0 && input < items[index - 1]!) index--
    if (index > 0 && items[index - 1] === input) return
    if (index === items.length) {
      items.push(input)
      return
    }
    items.push(items[items.length - 1]!)
    for (let moved = items.length - 2; moved > index; moved--) items[moved] = items[moved - 1]!
    items[index] = input
  }

  /** Every input, sorted. */
  get items(): string[] {
    const all: string[] = []
    for (const items of this.#kinds) if (items !== undefined) for (const input of items) all.push(input)
    return all
  }
}

/** One candidate's outcome: its amounts, or the status it stopped at. */
export type Outcome = { readonly net: number; readonly vat: number; readonly gross: number } | Status

/** A fresh list of inputs for one SKU, with the context's pricelist inputs. */
export function sharedOf(context: PriceContext): Shared {
  return { inputs: new InputList(), vat: null, article: null, pricelists: pricelistInputsOf(context) }
}

/**
 * The explanation from every candidate's outcome (in the request's order) and the winner's traced
 * attempt (`traced`, asked for the winner's index only): the winner is the lowest gross, a tie to
 * the first; every other candidate gets one reason; the inputs the shared list holds are hashed.
 */
export function conclude(
  context: PriceContext,
  request: ExplainRequest,
  shared: Shared,
  outcomes: readonly Outcome[],
  traced: (index: number) => Attempt,
): Explanation {
  let winner = -1
  let status: Status = Status.noPrice
  for (let index = 0; index < outcomes.length; index++) {
    const outcome = outcomes[index]!
    if (typeof outcome === 'number') {
      if (outcome > status) status = outcome
    } else if (winner < 0 || outcome.gross < (outcomes[winner] as Exclude<Outcome, Status>).gross) {
      winner = index
    }
  }
  const bestGross = winner < 0 ? 0 : (outcomes[winner] as Exclude<Outcome, Status>).gross
  const candidates: CandidateTrace[] = []
  for (let index = 0; index < outcomes.length; index++) {
    const pricelist = request.pricelists[index]!
    const outcome = outcomes[index]!
    if (typeof outcome === 'number') {
      candidates.push({ pricelist, outcome: 'lost', reason: statusReason[outcome]!, amounts: null })
      continue
    }
    const amounts = { net: outcome.net, vat: outcome.vat, gross: outcome.gross }
    if (index === winner) candidates.push({ pricelist, outcome: 'won', reason: null, amounts })
    else
      candidates.push({
        pricelist,
        outcome: 'lost',
        reason: outcome.gross === bestGross ? 'lost_tie' : 'lost_to_lower',
        amounts,
      })
  }
  for (const entry of request.excluded)
    candidates.push({ pricelist: entry.pricelist, outcome: 'lost', reason: entry.reason, amounts: null })
  // The winner's steps; its inputs are already in the list when it ran before, added now when not.
  const chosen = winner < 0 ? null : traced(winner)
  const best = chosen === null ? null : (chosen.outcome as PricedItem)
  const inputs = shared.inputs
  const rounding = request.roundingCode === null ? '' : roundingInput(context, request.roundingCode)
  if (rounding !== '') inputs.add(rounding)
  const sorted = inputs.items
  return {
    sku: request.sku,
    item: best,
    status: best === null ? status : Status.ok,
    selected: request.pricelists,
    path: chosen?.recorder.path ?? [],
    source: chosen?.source ?? null,
    steps: chosen?.recorder.steps ?? [],
    vat: chosen?.recorder.vat ?? [],
    candidates,
    inputs: sorted,
    inputsHash: `sha256:${sha256Hex(sorted.join('\n'))}`,
  }
}

/** The rounding profile's version as an input (once per context and profile; '' when it has none). */
const roundingInputs = new WeakMap<PriceContext, Map<string, string>>()

export function roundingInput(context: PriceContext, code: string): string {
  let known = roundingInputs.get(context)
  if (known === undefined) {
    known = new Map()
    roundingInputs.set(context, known)
  }
  let input = known.get(code)
  if (input === undefined) {
    const view = context.catalog.view('rounding_profile', code, context.at)
    input = view === null ? '' : `rounding|${code}|${view.version.from}|${view.version.hash}`
    known.set(code, input)
  }
  return input
}

/**
 * Explains the best price of one SKU over the request's candidates at the context's instant and tax
 * area, through the full traced pipeline on every candidate: the reference that the query's
 * explanation (./from-cells.ts, which prices losing candidates from the fast path's cells) must
 * equal, and the single read's explanation (one candidate: the winner's pipeline runs anyway).
 */
export function explainPrice(context: PriceContext, request: ExplainRequest): Explanation {
  const shared = sharedOf(context)
  const attempts = request.pricelists.map((code) => attempt(context, code, request, shared))
  const outcomes = attempts.map((entry) => entry.outcome)
  return conclude(context, request, shared, outcomes, (index) => attempts[index]!)
}
