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
import { explainPrice, type CandidateReason } from '../engine/explain/explain.js'
import { PriceContext, type AnswerOptions } from '../engine/pipeline.js'
import type { PriceReader } from '../engine/price-replica.js'
import { queryPrices } from '../engine/query.js'
import { resolveProfile } from '../engine/rounding.js'
import type { QueryInput } from './execute.js'
import { ExplainWriter } from './explain-bytes.js'
import { instant, traceText, versionHole, type VersionRef } from './explain-render.js'
import { jsonString } from './render.js'

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

/** The engine's answer options of a query: its rounding profile resolved at its instant (the route answered 404 for an unknown one). */
export function answerOptions(
  catalog: Catalog,
  currency: string,
  rounding: string | null,
  at: number,
  quantity: number,
) {
  const profile = resolveProfile(catalog, rounding ?? undefined, currency, at)
  assert(profile !== 'not_found', 'the route answered 404 for an unknown profile')
  const options: AnswerOptions = { currency, rounding: profile === null ? null : profile.compiled, quantity }
  return { options, roundingCode: profile === null ? null : profile.code }
}

/**
 * A query's items as the plain query answers them, with the context and options they were priced in;
 * `itemSkuIds` (an unsorted query's): each item's SKU id is pushed to it.
 */
export function answeredQuery(catalog: Catalog, prices: PriceReader, input: QueryInput, itemSkuIds?: number[]) {
  const context = new PriceContext(catalog, prices, input.at, input.taxArea)
  const { options, roundingCode } = answerOptions(catalog, input.currency, input.rounding, input.at, input.quantity)
  const result = queryPrices(context, {
    skus: input.skus,
    pricelists: input.pricelists,
    options,
    sortOrder: input.sortOrder,
    ...(itemSkuIds === undefined ? {} : { itemSkuIds }),
  })
  return { context, options, roundingCode, result }
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

/** Explained bytes as the main thread gets them: `release` (when not null) once they are filled. */
export interface ExplainedAnswer extends ExplainedBytes {
  readonly release: (() => void) | null
}

const decoder = new TextDecoder()

/** The price query with `explain: true`: the plain answer's items, each with its trace, as bytes of their own. */
export function explainQueryBytes(catalog: Catalog, prices: PriceReader, request: ExplainQueryInput): ExplainedBytes {
  const view = explainQueryView(catalog, prices, request)
  return { ...view, bytes: view.bytes.slice() }
}

/**
 * `explainQueryBytes` with its bytes a view of this thread's scratch buffer, valid until the next
 * explained query here: a worker copies them into its answer arena (./answer-arena.ts) at once.
 */
export function explainQueryView(catalog: Catalog, prices: PriceReader, request: ExplainQueryInput): ExplainedBytes {
  const input = request.query
  const { context, options, roundingCode, result } = answeredQuery(catalog, prices, input)
  const versions: VersionRef[] = []
  const writer = new ExplainWriter({
    context,
    result,
    request: { pricelists: input.pricelists, excluded: request.excluded, options, roundingCode },
    render: { roundingCode, versions },
  })
  const bytes = writer.write()
  return { bytes, holes: writer.holes, versions }
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
export function fillVersionBytes(
  explained: ExplainedBytes,
  meta: VersionMeta,
  allocate: (length: number) => Buffer = (length) => Buffer.allocUnsafe(length),
): Buffer {
  const { bytes, holes, versions } = explained
  assert(holes.length === versions.length, 'one hole per version step')
  if (holes.length === 0) {
    const answer = allocate(bytes.length)
    answer.set(bytes)
    return answer
  }
  const fields: Uint8Array[] = new Array<Uint8Array>(holes.length)
  let length = bytes.length - holes.length
  for (let index = 0; index < holes.length; index++) {
    const [pricelist, sku, start] = versions[index]!
    const field = versionFieldBytes(meta(pricelist, sku, start))
    fields[index] = field
    length += field.length
  }
  const answer = allocate(length)
  // Buffer's copy (a memmove), not TypedArray set: no view per slice, and its source may be a
  // worker's shared arena, which set copies on a slower path.
  const source = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length)
  let from = 0
  let at = 0
  for (let index = 0; index < holes.length; index++) {
    const hole = holes[index]!
    at += source.copy(answer, at, from, hole)
    const field = fields[index]!
    if (field.length > 16) answer.set(field, at)
    else for (let offset = 0; offset < field.length; offset++) answer[at + offset] = field[offset]!
    at += field.length
    from = hole + 1
  }
  source.copy(answer, at, from)
  return answer
}

/**
 * The main thread's buffer for filled answers, lent to one answer at a time until it is written:
 * a new buffer of ~200 KB per explained query counted as external memory, and pushed the main
 * thread into full collections (the reason for ./answer-arena.ts). While lent, another answer gets
 * a buffer of its own.
 */
let fillBuffer: Buffer | null = Buffer.allocUnsafeSlow(256 * 1024)

/** `fillVersionBytes` into the lent buffer when free: the answer is valid until `release` is called. */
export function fillVersionBytesLent(
  explained: ExplainedBytes,
  meta: VersionMeta,
): { readonly body: Buffer; readonly release: (() => void) | null } {
  const lent = fillBuffer
  if (lent === null) return { body: fillVersionBytes(explained, meta), release: null }
  fillBuffer = null
  let target = lent
  const body = fillVersionBytes(explained, meta, (length) => {
    if (length > target.length) target = Buffer.allocUnsafeSlow(Math.max(length, target.length * 2))
    return target.subarray(0, length)
  })
  return {
    body,
    release: () => {
      fillBuffer = target
    },
  }
}

/**
 * `versionFields` as UTF-8, by instant and writer: the versions of one answer were mostly written
 * by a few imports, so the same few (bounded; starts again empty).
 */
const fieldBytes = new Map<number, Map<string, Uint8Array>>()
const fieldBytesMax = 4096
const unknownFields = new TextEncoder().encode(versionFields(null))

function versionFieldBytes(found: { at: number; by: string } | null): Uint8Array {
  if (found === null) return unknownFields
  let byWriter = fieldBytes.get(found.at)
  if (byWriter === undefined) {
    if (fieldBytes.size >= fieldBytesMax) fieldBytes.clear()
    byWriter = new Map()
    fieldBytes.set(found.at, byWriter)
  }
  let bytes = byWriter.get(found.by)
  if (bytes === undefined) {
    if (byWriter.size >= fieldBytesMax) byWriter.clear()
    bytes = Buffer.from(versionFields(found))
    byWriter.set(found.by, bytes)
  }
  return bytes
}
