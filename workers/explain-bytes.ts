/**
 * An explained price query's answer written as UTF-8 bytes into one scratch buffer per thread, item
 * by item as each is explained: no text of the whole answer is ever built. A trace's text up to its
 * candidates is written as text (explain-render.ts `traceOpen`: the holes for the version writers
 * are there), the candidates as bytes (heads encoded once per request, amounts digit by digit).
 *
 * A SKU whose every candidate takes the query's fast path is explained without an object per
 * candidate (engine/explain/fast.ts: outcomes in typed arrays, inputs hashed as bytes, the winner's
 * steps from its cell); the others through engine/explain/from-cells.ts. Both give the bytes that
 * the full pipeline's explanation renders to (test/workers/explain-query.test.ts).
 * @module
 */
import { assert } from '../engine/assert.js'
import {
  attempt,
  sharedOf,
  type CandidateTrace,
  type Explanation,
  type ExplainRequest,
} from '../engine/explain/explain.js'
import { FastExplanation, fastPlan, type WinnerFacts } from '../engine/explain/fast.js'
import { explainFromCells, explainPlan, type ExplainPlan } from '../engine/explain/from-cells.js'
import { Status, statusReasons, type PriceContext, type PricedItem } from '../engine/pipeline.js'
import type { QueryResult } from '../engine/query.js'
import type { FxResolved } from '../engine/fx.js'
import type { CompiledTier } from '../engine/rounding.js'
import { Fragments, itemBytesView, putAmount, putFragment } from './answer-bytes.js'
import {
  candidateHead,
  inheritanceText,
  stepParts,
  traceOpen,
  traceStart,
  type TraceHead,
  type TraceOptions,
} from './explain-render.js'
import { itemJson, jsonString } from './render.js'

/** This thread's explained SKUs by the path that explained them (tests read it). */
export const explainPaths = { fast: 0, cells: 0 }

/** The scratch buffer an explained answer is written into on this thread (grown by doubling). */
let scratch = new Uint8Array(256 * 1024)
const encoder = new TextEncoder()

/** Room for `count` bytes after `at` in the scratch buffer. */
function reserve(at: number, count: number): void {
  if (at + count <= scratch.length) return
  let length = scratch.length * 2
  while (at + count > length) length *= 2
  const grown = new Uint8Array(length)
  grown.set(scratch.subarray(0, at))
  scratch = grown
}

/** `text` written at `at` (room for its UTF-8 reserved first); answers the position after it. */
function put(at: number, text: string): number {
  reserve(at, text.length * 3)
  return at + encoder.encodeInto(text, scratch.subarray(at)).written
}

/** ASCII `text` (an inputs hash) written at `at` character by character; answers the position after it. */
function putAscii(at: number, text: string): number {
  reserve(at, text.length)
  for (let index = 0; index < text.length; index++) scratch[at + index] = text.charCodeAt(index)
  return at + text.length
}

const hashOpen = encoder.encode('],"inputs_hash":"')
const hashClose = encoder.encode('"}}')

/**
 * Texts as bytes, encoded once (answer-bytes.ts `Fragments`): a candidate's head (explain-render.ts
 * `candidateHead`, which keeps the same few texts per request), a VAT step.
 */
const texts = new Fragments((text) => text)

function headOf(candidate: CandidateTrace): Uint8Array {
  return texts.get(candidateHead(candidate))
}
const netOpen = encoder.encode('{"net":')
const vatOpen = encoder.encode(',"vat":')
const grossOpen = encoder.encode(',"gross":')
const nullClose = encoder.encode('null}')

/** A candidate's amounts after its head: `{"net":…,"vat":…,"gross":…}}` (room for 256 bytes reserved). */
function putAmounts(target: Uint8Array, at: number, net: number, vat: number, gross: number): number {
  at = putAmount(target, putFragment(target, at, netOpen), net)
  at = putAmount(target, putFragment(target, at, vatOpen), vat)
  at = putAmount(target, putFragment(target, at, grossOpen), gross)
  target[at] = 0x7d
  target[at + 1] = 0x7d
  return at + 2
}

/**
 * The candidates of a trace, the bytes of explain-render.ts `candidateText` joined by commas: a
 * tenth of the answer's text per candidate, written without a string (amounts digit by digit).
 */
function putCandidates(at: number, candidates: readonly CandidateTrace[]): number {
  for (let index = 0; index < candidates.length; index++) {
    const candidate = candidates[index]!
    const head = headOf(candidate)
    // An amount prints in at most 64 bytes (answer-bytes.ts putAmount, or its text for the huge).
    reserve(at, head.length + 256)
    const target = scratch
    if (index > 0) target[at++] = 0x2c
    at = putFragment(target, at, head)
    const amounts = candidate.amounts
    at =
      amounts === null
        ? putFragment(target, at, nullClose)
        : putAmounts(target, at, amounts.net, amounts.vat, amounts.gross)
  }
  return at
}

/** The constant parts of the steps as bytes, by what makes them, encoded once (bounded). */
const versionOpens = new Map<string, Map<number, Uint8Array>>()
const fxOpens = new WeakMap<FxResolved, Uint8Array>()
const roundingOpens = new Map<string | null, Map<CompiledTier | null, Uint8Array>>()
const partsMax = 4096

/** The constant parts of a fast winner's steps as bytes (explain-render.ts `stepParts`), for one request. */
class StepBytes {
  readonly comma = encoder.encode(',')
  readonly candidatesOpen = encoder.encode('],"candidates":[')
  readonly versionAmount = encoder.encode(stepParts.versionAmount)
  readonly output = encoder.encode(stepParts.output)
  readonly amountsOpen = encoder.encode(stepParts.amountsOpen)
  readonly vatKey = encoder.encode(stepParts.vatKey)
  readonly grossKey = encoder.encode(stepParts.grossKey)
  readonly traceStart: Uint8Array
  /** By the path's array (engine/explain/fast.ts keeps one per candidate and link). */
  readonly #inheritance = new Map<readonly string[], Uint8Array>()

  constructor(
    selected: readonly string[],
    readonly roundingCode: string | null,
  ) {
    this.traceStart = encoder.encode(`,"trace":${traceStart(selected)}`)
  }

  inheritance(path: readonly string[], source: string): Uint8Array {
    let bytes = this.#inheritance.get(path)
    if (bytes === undefined) {
      bytes = encoder.encode(`,${inheritanceText(path, source)}`)
      this.#inheritance.set(path, bytes)
    }
    return bytes
  }

  versionOpen(pricelist: string, start: number): Uint8Array {
    let byStart = versionOpens.get(pricelist)
    if (byStart === undefined) {
      if (versionOpens.size >= partsMax) versionOpens.clear()
      byStart = new Map()
      versionOpens.set(pricelist, byStart)
    }
    let bytes = byStart.get(start)
    if (bytes === undefined) {
      if (byStart.size >= partsMax) byStart.clear()
      bytes = encoder.encode(stepParts.versionOpen(pricelist, start))
      byStart.set(start, bytes)
    }
    return bytes
  }

  fxOpen(fx: FxResolved): Uint8Array {
    let bytes = fxOpens.get(fx)
    if (bytes === undefined) {
      bytes = encoder.encode(stepParts.fxOpen(fx))
      fxOpens.set(fx, bytes)
    }
    return bytes
  }

  roundingOpen(tier: CompiledTier | null): Uint8Array {
    let byTier = roundingOpens.get(this.roundingCode)
    if (byTier === undefined) {
      if (roundingOpens.size >= partsMax) roundingOpens.clear()
      byTier = new Map()
      roundingOpens.set(this.roundingCode, byTier)
    }
    let bytes = byTier.get(tier)
    if (bytes === undefined) {
      bytes = encoder.encode(stepParts.roundingOpen(this.roundingCode, tier))
      byTier.set(tier, bytes)
    }
    return bytes
  }

  /** The VAT step of the last SKU, and what it was written from: the next SKU's is mostly the same. */
  #lastVat: {
    vatClass: string
    mappingStart: number | null
    rateStart: number | null
    rateText: string
    mode: string
    bytes: Uint8Array
  } | null = null

  vat(vatClass: string, mappingStart: number | null, rateStart: number | null, rateText: string, mode: string) {
    const last = this.#lastVat
    if (
      last !== null &&
      last.vatClass === vatClass &&
      last.mappingStart === mappingStart &&
      last.rateStart === rateStart &&
      last.rateText === rateText &&
      last.mode === mode
    )
      return last.bytes
    const bytes = texts.get(stepParts.vat(vatClass, stepParts.vatStarts(mappingStart, rateStart), rateText, mode))
    this.#lastVat = { vatClass, mappingStart, rateStart, rateText, mode, bytes }
    return bytes
  }
}

/** A fast candidate's head by reason: the winner's, then the reasons a fast candidate can lose by. */
const fastReasons = ['won', 'lost_to_lower', 'lost_tie', 'no_price_at_as_of', 'no_fx_rate'] as const
const reasonWon = 0
const reasonLower = 1
const reasonTie = 2
const reasonNoPrice = 3
const reasonNoFx = 4

/** Fast candidates' heads by pricelist, per `fastReasons` (bounded: cleared when full). */
const heads = new Map<string, Uint8Array[]>()
const headsMax = 4096

function fastHeads(pricelist: string): Uint8Array[] {
  let found = heads.get(pricelist)
  if (found === undefined) {
    if (heads.size >= headsMax) heads.clear()
    found = fastReasons.map((reason) =>
      reason === 'won'
        ? headOf({ pricelist, outcome: 'won', reason: null, amounts: null })
        : headOf({ pricelist, outcome: 'lost', reason, amounts: null }),
    )
    heads.set(pricelist, found)
  }
  return found
}

/** What one explained query writes with: its context, plan and settings. */
export interface ExplainWriting {
  readonly context: PriceContext
  readonly result: QueryResult
  readonly request: Omit<ExplainRequest, 'sku'>
  readonly render: TraceOptions
}

/** One explained query's answer being written: `write` it, then take `bytes` and `holes`. */
export class ExplainWriter {
  readonly holes: number[] = []
  readonly #writing: ExplainWriting
  readonly #plan: ExplainPlan
  readonly #fast: FastExplanation | null
  /** Per selected candidate, per `fastReasons`: its head's bytes. */
  readonly #heads: Uint8Array[][]
  /** The constant parts of fast winners' steps. */
  readonly #parts: StepBytes
  /** The excluded pricelists as candidates (each after a comma), or null before the first use. */
  #excluded: Uint8Array | null = null
  #at = 0

  constructor(writing: ExplainWriting) {
    this.#writing = writing
    const { context, request } = writing
    this.#plan = explainPlan(context, request.pricelists, request.options)
    this.#parts = new StepBytes(request.pricelists, request.roundingCode)
    const planned = fastPlan(context, this.#plan, request.roundingCode)
    this.#fast = planned === null ? null : new FastExplanation(planned)
    this.#heads = planned === null ? [] : request.pricelists.map(fastHeads)
  }

  /** The whole answer, `{"items":[…],"unavailable":[…]}`: a view of this thread's scratch buffer, valid until the next. */
  write(): Uint8Array {
    const { items, unavailable } = this.#writing.result
    this.#at = put(0, '{"items":[')
    for (let index = 0; index < items.length; index++) this.#item(index > 0, items[index]!.sku, items[index]!, null)
    this.#at = put(this.#at, '],"unavailable":[')
    for (let index = 0; index < unavailable.length; index++) {
      const entry = unavailable[index]!
      this.#item(index > 0, entry.sku, null, entry.reason)
    }
    this.#at = put(this.#at, ']}')
    return scratch.subarray(0, this.#at)
  }

  /** A SKU's item, or its unavailable entry (`item` null, for `reason`), and its trace. */
  #item(separator: boolean, sku: string, item: PricedItem | null, reason: string | null): void {
    if (this.#fast !== null && this.#fast.explain(this.#writing.context, sku)) {
      explainPaths.fast++
      this.#fastItem(separator, sku, item, reason)
      return
    }
    explainPaths.cells++
    const { context, request } = this.#writing
    const explanation = explainFromCells(context, { ...request, sku }, this.#plan)
    assertAgrees(explanation, item, reason)
    this.#open(separator, openText(sku, item, reason), explanation)
    this.#at = this.#close(putCandidates(this.#at, explanation.candidates), explanation.inputsHash)
  }

  /** The item's text and its trace up to the candidates, with the offsets of its holes. */
  #open(separator: boolean, json: string, head: TraceHead): void {
    const render = this.#writing.render
    const before = render.versions.length
    const start = separator ? put(this.#at, ',') : this.#at
    const end = put(start, `${json},"trace":${traceOpen(head, render)}`)
    let at = start
    for (let found = before; found < render.versions.length; found++) {
      at = scratch.indexOf(0, at)
      assert(at >= 0 && at < end, 'a version step left its hole')
      this.holes.push(at++)
    }
    this.#at = end
  }

  #close(at: number, inputsHash: string): number {
    at = putAscii(this.#putPart(at, hashOpen), inputsHash)
    return this.#putPart(at, hashClose)
  }

  /** The item explained by engine/explain/fast.ts (read before the next SKU). */
  #fastItem(separator: boolean, sku: string, item: PricedItem | null, reason: string | null): void {
    const fast = this.#fast!
    const winner = fast.winner
    if (item === null) {
      assert(winner < 0, 'an unavailable SKU has no explained winner')
      assert(statusReasons[fast.unavailable] === reason, 'the explanation gives the unavailable reason')
    } else {
      const code = this.#plan.selected[winner]?.code
      assert(code === item.pricelist && fast.gross[winner] === item.gross, 'the explanation names the plain answer')
      assert(fast.net[winner] === item.net && fast.vat[winner] === item.vat, 'the explanation has the plain amounts')
    }
    const fromCell = winner < 0 ? null : fast.winnerFacts()
    if (winner >= 0 && fromCell === null) {
      // A winning version with extras (breaks, fields): its steps from the traced pipeline, as text.
      const traced = this.#tracedWinner()
      this.#open(separator, openText(sku, item, reason), {
        selected: this.#writing.request.pricelists,
        item,
        ...traced,
      })
    } else {
      this.#fastOpen(separator, sku, item, reason, fromCell)
    }
    this.#at = this.#close(this.#fastCandidates(fast), fast.inputsHash)
  }

  /** The winner's steps from the traced pipeline (its version has extras). */
  #tracedWinner(): Omit<TraceHead, 'selected' | 'item'> {
    const fast = this.#fast!
    const { context, request } = this.#writing
    const code = this.#plan.selected[fast.winner]!.code
    const traced = attempt(context, code, { ...request, sku: fast.sku }, sharedOf(context))
    const priced = traced.outcome
    assert(typeof priced !== 'number' && priced.gross === fast.gross[fast.winner], 'the pipeline agrees')
    const { path, steps, vat } = traced.recorder
    return { path, source: traced.source, steps, vat }
  }

  /**
   * The item and its trace up to the candidates as bytes: the item's (answer-bytes.ts), the steps'
   * constant parts kept per request (`#parts`), amounts digit by digit, the version's hole noted
   * where it is written. The same bytes as `#open` writes from `traceOpen`'s text.
   */
  #fastOpen(
    separator: boolean,
    sku: string,
    item: PricedItem | null,
    reason: string | null,
    winner: Readonly<WinnerFacts> | null,
  ): void {
    let at = this.#at
    if (separator) {
      reserve(at, 1)
      scratch[at++] = 0x2c
    }
    if (item === null) at = put(at, openText(sku, item, reason))
    else {
      // The item without its closing brace: the trace follows (the brace is written over).
      const bytes = itemBytesView(item)
      reserve(at, bytes.length)
      scratch.set(bytes, at)
      at += bytes.length - 1
    }
    at = this.#putPart(at, this.#parts.traceStart)
    if (winner !== null) at = this.#putSteps(at, sku, winner, item!)
    this.#at = this.#putPart(at, this.#parts.candidatesOpen)
  }

  #putPart(at: number, bytes: Uint8Array): number {
    reserve(at, bytes.length + 256)
    return putFragment(scratch, at, bytes)
  }

  /**
   * A fast winner's steps (engine/explain/fast.ts `winnerFacts`), each after a comma: the
   * inheritance, the version (its hole noted), FX and rounding when there are, VAT and amounts.
   */
  #putSteps(start: number, sku: string, winner: Readonly<WinnerFacts>, item: PricedItem): number {
    const parts = this.#parts
    let at = this.#putPart(start, parts.inheritance(winner.path, winner.source))
    at = this.#putPart(this.#putPart(at, parts.comma), parts.versionOpen(winner.source, winner.start))
    this.holes.push(at)
    this.#writing.render.versions.push([winner.source, sku, winner.start])
    scratch[at++] = 0
    at = putAmount(scratch, putFragment(scratch, at, parts.versionAmount), winner.cell)
    scratch[at++] = 0x7d
    if (winner.fx !== null) {
      at = this.#putPart(this.#putPart(at, parts.comma), parts.fxOpen(winner.fx))
      at = putAmount(scratch, at, winner.cell)
      at = putAmount(scratch, putFragment(scratch, at, parts.output), winner.converted)
      scratch[at++] = 0x7d
    }
    if (winner.rounds) {
      at = this.#putPart(this.#putPart(at, parts.comma), parts.roundingOpen(winner.tier))
      at = putAmount(scratch, at, winner.converted)
      at = putAmount(scratch, putFragment(scratch, at, parts.output), winner.rounded)
      scratch[at++] = 0x7d
    }
    at = this.#putPart(at, parts.comma)
    at = this.#putPart(
      at,
      parts.vat(winner.vatClass, winner.mappingStart, winner.rateStart, winner.rateText, winner.mode),
    )
    // `scratch` is read after each #putPart: it may grow the buffer.
    at = this.#putPart(this.#putPart(at, parts.comma), parts.amountsOpen)
    at = putAmount(scratch, at, item.net)
    at = putAmount(scratch, putFragment(scratch, at, parts.vatKey), item.vat)
    at = putAmount(scratch, putFragment(scratch, at, parts.grossKey), item.gross)
    scratch[at++] = 0x7d
    return at
  }

  /** The candidates of a fast explanation, then the excluded pricelists. */
  #fastCandidates(fast: FastExplanation): number {
    let at = this.#at
    const { status, winner } = fast
    const bestGross = winner < 0 ? 0 : fast.gross[winner]!
    for (let index = 0; index < status.length; index++) {
      reserve(at, 512)
      const target = scratch
      if (index > 0) target[at++] = 0x2c
      const heads = this.#heads[index]!
      if (status[index] !== Status.ok) {
        const head = heads[status[index] === Status.noPrice ? reasonNoPrice : reasonNoFx]!
        at = putFragment(target, putFragment(target, at, head), nullClose)
        continue
      }
      const gross = fast.gross[index]!
      at = putFragment(target, at, heads[index === winner ? reasonWon : gross === bestGross ? reasonTie : reasonLower]!)
      at = putAmounts(target, at, fast.net[index]!, fast.vat[index]!, gross)
    }
    const excluded = this.#writing.request.excluded
    if (excluded.length === 0) return at
    if (this.#excluded === null) {
      const texts = excluded.map((entry) => `,${candidateHead({ ...entry, outcome: 'lost', amounts: null })}null}`)
      this.#excluded = encoder.encode(texts.join(''))
    }
    // After no selected candidate, the first excluded one takes no comma.
    const tail = status.length === 0 ? this.#excluded.subarray(1) : this.#excluded
    reserve(at, tail.length)
    scratch.set(tail, at)
    return at + tail.length
  }
}

/** An item's text (`itemJson`) or its unavailable entry's, without the closing brace: the trace follows. */
function openText(sku: string, item: PricedItem | null, reason: string | null): string {
  if (item !== null) return itemJson(item, item.pricelist).slice(0, -1)
  return `{"sku":${jsonString(sku)},"reason":${jsonString(reason!)}`
}

/** The explanation names the winner and the amounts the plain answer gave: they must agree. */
export function assertAgrees(explanation: Explanation, item: PricedItem | null, reason: string | null): void {
  if (item === null) {
    assert(explanation.item === null, 'an unavailable SKU has no explained winner')
    assert(statusReasons[explanation.status] === reason, 'the explanation gives the unavailable reason')
    return
  }
  const explained = explanation.item
  assert(
    explained !== null &&
      explained.pricelist === item.pricelist &&
      explained.net === item.net &&
      explained.vat === item.vat &&
      explained.gross === item.gross,
    'the explanation names the plain answer',
  )
}
