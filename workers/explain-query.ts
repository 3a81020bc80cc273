/**
 * An explained price query or single read (engine/explain/) as answer text, on whichever thread
 * runs it: a price worker from its replica, or the main thread without workers. Who wrote a price
 * version and when live only in the main thread's price book, so the text leaves a hole at each
 * version step's `written_at`/`written_by` and lists the versions it needs, in order; the main
 * thread fills them (`fillVersions`: a lookup per version step of the winners) and so answers the
 * same bytes whichever thread explained.
 * @module
 */
import { assert } from '../engine/assert.js'
import type { Catalog } from '../engine/catalog.js'
import { explainPrice, type CandidateReason, type Explanation } from '../engine/explain/explain.js'
import { explainFromCells, explainPlan } from '../engine/explain/from-cells.js'
import { PriceContext, statusReasons, type AnswerOptions, type PricedItem } from '../engine/pipeline.js'
import type { PriceReader } from '../engine/price-replica.js'
import { queryPrices } from '../engine/query.js'
import { resolveProfile } from '../engine/rounding.js'
import type { QueryInput } from './execute.js'
import { instant, traceText, versionHole, type VersionRef } from './explain-render.js'
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

/** The price query with `explain: true`: the plain answer's items, each with its trace. */
export function explainQueryText(catalog: Catalog, prices: PriceReader, request: ExplainQueryInput): ExplainedText {
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
  const render = { roundingCode, versions }
  const { excluded } = request
  // Losing candidates come from the query's fast path; the winner's pipeline is traced (engine/explain/from-cells.ts).
  const plan = explainPlan(context, input.pricelists, options)
  const explain = (sku: string) =>
    explainFromCells(context, { sku, pricelists: input.pricelists, excluded, options, roundingCode }, plan)
  const items = result.items.map((item) => {
    const explanation = explain(item.sku)
    assertAgrees(explanation, item, null)
    return withTrace(itemJson(item, item.pricelist), traceText(explanation, render))
  })
  const unavailable = result.unavailable.map((entry) => {
    const explanation = explain(entry.sku)
    assertAgrees(explanation, null, entry.reason)
    const trace = traceText(explanation, render)
    return `{"sku":${jsonString(entry.sku)},"reason":${jsonString(entry.reason)},"trace":${trace}}`
  })
  return { text: `{"items":[${items.join(',')}],"unavailable":[${unavailable.join(',')}]}`, versions }
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
    const found = meta(pricelist, sku, start)
    filled +=
      found === null
        ? '"written_at":null,"written_by":null'
        : `"written_at":"${instant(found.at)}","written_by":${jsonString(found.by)}`
    filled += pieces[index + 1]!
  }
  return filled
}
