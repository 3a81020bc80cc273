/**
 * An explained price query (as answer bytes) or single read (as its trace's text), on whichever
 * thread runs it: a price worker from its replica, or the main thread without workers. Who wrote a
 * price version and when live only in the main thread's price book, so the answer leaves a hole at
 * each version step's `written_at`/`written_by` and lists the versions it needs, in order; the main
 * thread fills them (`fillVersionBytes`, `fillVersions`: a lookup per version step of the winners)
 * and so answers the same bytes whichever thread explained.
 * @module
 */
import { assert } from '../engine/assert.js'
import type { Catalog } from '../engine/catalog.js'
import { explainPrice, type CandidateReason, type CandidateTrace, type Explanation } from '../engine/explain/explain.js'
import { explainFromCells, explainPlan } from '../engine/explain/from-cells.js'
import { PriceContext, statusReasons, type AnswerOptions, type PricedItem } from '../engine/pipeline.js'
import type { PriceReader } from '../engine/price-replica.js'
import { queryPrices } from '../engine/query.js'
import { resolveProfile } from '../engine/rounding.js'
import type { QueryInput } from './execute.js'
import { putAmount } from './answer-bytes.js'
import { candidateHead, instant, traceOpen, traceText, versionHole, type VersionRef } from './explain-render.js'
import { itemJson, jsonString } from './render.js'

/** A live pricelist the query did not select, and why (the main thread matches the filter). */
export interface ExcludedPricelist {
  readonly pricelist: string
  readonly reason: CandidateReason
}

export interface ExplainQueryInput {
  readonly query: QueryInput
  readonly excluded: readonly ExcludedPricelist[]
}

/** The taxed single read with explain: the named pricelist is the one candidate. */
export interface ExplainReadInput {
  readonly at: number
  readonly taxArea: string
  readonly pricelist: string
  readonly sku: string
  /** The answer's currency (the read's item's). */
  readonly currency: string
  readonly rounding: string | null
  readonly quantity: number
}

/** Answer text with a hole (`versionHole`) per entry of `versions`, in order. */
export interface ExplainedText {
  readonly text: string
  readonly versions: VersionRef[]
}

/** The read's trace, and the winner's amounts, which the main thread checks against its answer. */
export interface ExplainedRead extends ExplainedText {
  readonly winner: { readonly net: number; readonly vat: number; readonly gross: number } | null
}

/** When and by whom a price version was written (the main thread's price book), or null. */
export type VersionMeta = (pricelist: string, sku: string, start: number) => { at: number; by: string } | null

function answerOptions(catalog: Catalog, currency: string, rounding: string | null, at: number, quantity: number) {
  const profile = resolveProfile(catalog, rounding ?? undefined, currency, at)
  assert(profile !== 'not_found', 'the route answered 404 for an unknown profile')
  const options: AnswerOptions = { currency, rounding: profile === null ? null : profile.compiled, quantity }
  return { options, roundingCode: profile === null ? null : profile.code }
}

/** The explanation names the winner and the amounts the plain answer gave: they must agree. */
function assertAgrees(explanation: Explanation, item: PricedItem | null, reason: string | null): void {
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

/** `itemJson` with the trace as its last field. */
export function withTrace(json: string, trace: string): string {
  return `${json.slice(0, -1)},"trace":${trace}}`
}

/**
 * Answer bytes (UTF-8) with a hole (one NUL byte: UTF-8 never has one inside a character) at each
 * offset of `holes`, for the entry of `versions` of the same index. A worker moves the bytes to the
 * main thread without a copy, which fills the holes around slices of them (`fillVersionBytes`)
 * instead of decoding, splitting and encoding again a text of about 2 KB per SKU.
 */
export interface ExplainedBytes {
  readonly bytes: Uint8Array
  readonly holes: number[]
  readonly versions: VersionRef[]
}

/** The scratch buffer an explained answer is written into on this thread (grown by doubling). */
let scratch = new Uint8Array(256 * 1024)
const encoder = new TextEncoder()
const decoder = new TextDecoder()

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

/**
 * A candidate's head (explain-render.ts `candidateHead`, which keeps the same few texts per request)
 * as bytes, by that text: the render's cache decides what a head is, this one only encodes it once.
 */
const headBytes = new Map<string, Uint8Array>()
const headBytesMax = 4096

function headOf(candidate: CandidateTrace): Uint8Array {
  const text = candidateHead(candidate)
  let head = headBytes.get(text)
  if (head === undefined) {
    if (headBytes.size >= headBytesMax) headBytes.clear()
    head = encoder.encode(text)
    headBytes.set(text, head)
  }
  return head
}
const netOpen = encoder.encode('{"net":')
const vatOpen = encoder.encode(',"vat":')
const grossOpen = encoder.encode(',"gross":')
const nullClose = encoder.encode('null}')

/** `bytes` at `at` of `target` (room reserved): a loop for the few bytes of a key, a copy for more. */
function putBytes(target: Uint8Array, at: number, bytes: Uint8Array): number {
  const length = bytes.length
  if (length > 16) target.set(bytes, at)
  else for (let index = 0; index < length; index++) target[at + index] = bytes[index]!
  return at + length
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
    at = putBytes(target, at, head)
    const amounts = candidate.amounts
    if (amounts === null) {
      at = putBytes(target, at, nullClose)
      continue
    }
    at = putAmount(target, putBytes(target, at, netOpen), amounts.net)
    at = putAmount(target, putBytes(target, at, vatOpen), amounts.vat)
    at = putAmount(target, putBytes(target, at, grossOpen), amounts.gross)
    target[at] = 0x7d
    target[at + 1] = 0x7d
    at += 2
  }
  return at
}

/** The offsets of the `count` holes written in [from, to), added to `holes`. */
function findHoles(holes: number[], from: number, to: number, count: number): void {
  let at = from
  for (let found = 0; found < count; found++) {
    at = scratch.indexOf(0, at)
    assert(at >= 0 && at < to, 'a version step left its hole')
    holes.push(at++)
  }
}

/** The price query with `explain: true`: the plain answer's items, each with its trace, as bytes. */
export function explainQueryBytes(catalog: Catalog, prices: PriceReader, request: ExplainQueryInput): ExplainedBytes {
  const input = request.query
  const context = new PriceContext(catalog, prices, input.at, input.taxArea)
  const { options, roundingCode } = answerOptions(catalog, input.currency, input.rounding, input.at, input.quantity)
  const result = queryPrices(context, {
    skus: input.skus,
    pricelists: input.pricelists,
    options,
    sortOrder: input.sortOrder,
  })
  const versions: VersionRef[] = []
  const holes: number[] = []
  const render = { roundingCode, versions }
  const { excluded } = request
  // Losing candidates come from the query's fast path; the winner's pipeline is traced (engine/explain/from-cells.ts).
  const plan = explainPlan(context, input.pricelists, options)
  const explain = (sku: string) =>
    explainFromCells(context, { sku, pricelists: input.pricelists, excluded, options, roundingCode }, plan)
  // Each item is written as soon as it is explained: no text of the whole answer is ever built;
  // its trace's text up to the candidates (the holes are there), then the candidates as bytes.
  const putItem = (at: number, separator: boolean, open: string, explanation: Explanation, before: number) => {
    const start = separator ? put(at, ',') : at
    const end = put(start, open)
    findHoles(holes, start, end, versions.length - before)
    const candidatesEnd = putCandidates(end, explanation.candidates)
    return put(candidatesEnd, `],"inputs_hash":"${explanation.inputsHash}"}}`)
  }
  let at = put(0, '{"items":[')
  for (let index = 0; index < result.items.length; index++) {
    const item = result.items[index]!
    const explanation = explain(item.sku)
    assertAgrees(explanation, item, null)
    const before = versions.length
    const open = `${itemJson(item, item.pricelist).slice(0, -1)},"trace":${traceOpen(explanation, render)}`
    at = putItem(at, index > 0, open, explanation, before)
  }
  at = put(at, '],"unavailable":[')
  for (let index = 0; index < result.unavailable.length; index++) {
    const entry = result.unavailable[index]!
    const explanation = explain(entry.sku)
    assertAgrees(explanation, null, entry.reason)
    const before = versions.length
    const trace = traceOpen(explanation, render)
    const open = `{"sku":${jsonString(entry.sku)},"reason":${jsonString(entry.reason)},"trace":${trace}`
    at = putItem(at, index > 0, open, explanation, before)
  }
  at = put(at, ']}')
  return { bytes: scratch.slice(0, at), holes, versions }
}

/** `explainQueryBytes` as text (the holes are NUL characters): the form the single read's trace has. */
export function explainQueryText(catalog: Catalog, prices: PriceReader, request: ExplainQueryInput): ExplainedText {
  const { bytes, versions } = explainQueryBytes(catalog, prices, request)
  return { text: decoder.decode(bytes), versions }
}

/** The single read's trace (the read itself is answered as without explain). */
export function explainReadText(catalog: Catalog, prices: PriceReader, read: ExplainReadInput): ExplainedRead {
  const context = new PriceContext(catalog, prices, read.at, read.taxArea)
  const { options, roundingCode } = answerOptions(catalog, read.currency, read.rounding, read.at, read.quantity)
  const explanation = explainPrice(context, {
    sku: read.sku,
    pricelists: [read.pricelist],
    excluded: [],
    options,
    roundingCode,
  })
  const versions: VersionRef[] = []
  const text = traceText(explanation, { roundingCode, versions })
  const item = explanation.item
  return { text, versions, winner: item === null ? null : { net: item.net, vat: item.vat, gross: item.gross } }
}

/** The text with each version's writer and instant in its hole (a NUL, which JSON text never holds raw). */
export function fillVersions(explained: ExplainedText, meta: VersionMeta): string {
  const { text, versions } = explained
  if (versions.length === 0) return text
  const pieces = text.split(versionHole)
  assert(pieces.length === versions.length + 1, 'one hole per version step')
  let filled = pieces[0]!
  for (let index = 0; index < versions.length; index++) {
    const [pricelist, sku, start] = versions[index]!
    filled += versionFields(meta(pricelist, sku, start))
    filled += pieces[index + 1]!
  }
  return filled
}

/** A version's writer and instant as the fields that fill its hole. */
function versionFields(found: { at: number; by: string } | null): string {
  return found === null
    ? '"written_at":null,"written_by":null'
    : `"written_at":"${instant(found.at)}","written_by":${jsonString(found.by)}`
}

/** The bytes of `fillVersions` on the same answer as text: the slices between holes, and each hole filled. */
export function fillVersionBytes(explained: ExplainedBytes, meta: VersionMeta): Buffer {
  const { bytes, holes, versions } = explained
  assert(holes.length === versions.length, 'one hole per version step')
  if (holes.length === 0) return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length)
  const fields: string[] = new Array<string>(holes.length)
  let length = bytes.length - holes.length
  for (let index = 0; index < holes.length; index++) {
    const [pricelist, sku, start] = versions[index]!
    const text = versionFields(meta(pricelist, sku, start))
    fields[index] = text
    length += Buffer.byteLength(text)
  }
  const answer = Buffer.allocUnsafe(length)
  let from = 0
  let at = 0
  for (let index = 0; index < holes.length; index++) {
    const hole = holes[index]!
    answer.set(bytes.subarray(from, hole), at)
    at += hole - from
    at += answer.write(fields[index]!, at)
    from = hole + 1
  }
  answer.set(bytes.subarray(from), at)
  return answer
}
