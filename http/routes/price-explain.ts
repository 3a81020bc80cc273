/**
 * `explain=true` on the price query and the taxed single read: each answered (and each unavailable)
 * item gains a `trace` (engine/explain/). The plain answer is computed exactly as without explain,
 * so its fields keep their bytes; the trace is added as the item's last field. Explanations run on
 * the main thread, which alone knows who wrote a price version and when, and are bounded by
 * `explainSkusMax` SKUs per request (an explanation runs the full pipeline on every candidate).
 * @module
 */
import { Type } from '@sinclair/typebox'
import { assert } from '../../engine/assert.js'
import type { Catalog } from '../../engine/catalog.js'
import { candidateReasons, explainPrice, type CandidateReason, type Explanation } from '../../engine/explain/explain.js'
import { PriceContext, statusReasons, type AnswerOptions, type PricedItem } from '../../engine/pipeline.js'
import { pricelistActiveAt } from '../../engine/pricelists.js'
import type { PriceBook } from '../../engine/prices.js'
import { queryPrices } from '../../engine/query.js'
import { resolveProfile } from '../../engine/rounding.js'
import { validationError } from '../../platform/errors.js'
import type { TenantRuntime } from '../../tenant/runtime.js'
import type { QueryInput } from '../../workers/execute.js'
import { traceText, type TraceOptions } from '../../workers/explain-render.js'
import { itemJson, jsonString } from '../../workers/render.js'
import { pricelistFilterMatcher, type PricelistFilter } from './pricelists.js'

/** SKUs one explained query may ask for: each costs the full pipeline on every candidate. */
export const explainSkusMax = 100

/** Items an explained SKU costs against the query rate limit (bench/explain-only.ts: about 3x a plain one). */
export const explainCostFactor = 3

const Amounts = Type.Object({ net: Type.Number(), vat: Type.Number(), gross: Type.Number() })

/** The trace's schema (in /openapi.json): steps are objects named by `step`, with fields per kind. */
export const Trace = Type.Object(
  {
    steps: Type.Array(
      Type.Object(
        {
          step: Type.Union(
            [
              'candidates',
              'inheritance',
              'version',
              'bundle',
              'conversion',
              'rule',
              'fx',
              'quantity_break',
              'rounding',
              'vat',
              'amounts',
            ].map((kind) => Type.Literal(kind)),
          ),
        },
        { additionalProperties: true, description: 'one pipeline step as it ran; fields per kind: docs/api.md' },
      ),
    ),
    candidates: Type.Array(
      Type.Object({
        pricelist: Type.String(),
        outcome: Type.Union([Type.Literal('won'), Type.Literal('lost')]),
        reason: Type.Union([...candidateReasons.map((reason) => Type.Literal(reason)), Type.Null()]),
        amounts: Type.Union([Amounts, Type.Null()]),
      }),
    ),
    inputs_hash: Type.String({ pattern: '^sha256:[0-9a-f]{64}$' }),
  },
  { description: 'why this price (explain=true)' },
)

/** Live pricelists at `at` that a query did not select, with the reason. */
function excludedPricelists(
  catalog: Catalog,
  filter: typeof PricelistFilter.static,
  at: number,
): { pricelist: string; reason: CandidateReason }[] {
  const matcher = pricelistFilterMatcher(filter)
  const excluded: { pricelist: string; reason: CandidateReason }[] = []
  for (const [code, view] of catalog.viewsAt('pricelist', at)) {
    if (!matcher(code, view.value)) excluded.push({ pricelist: code, reason: 'filter_mismatch' })
    else if (!pricelistActiveAt(view.value, at)) excluded.push({ pricelist: code, reason: 'list_not_active' })
  }
  return excluded
}

function traceOptions(book: PriceBook, roundingCode: string | null): TraceOptions {
  return {
    roundingCode,
    versionMeta: (pricelist, sku, start) => {
      const version = book.versions(pricelist, sku).find((candidate) => candidate.from === start)
      return version === undefined ? null : { at: version.writtenAt, by: version.writtenBy }
    },
  }
}

/** The explanation names the winner and the amounts the plain answer gave: they must agree. */
function assertAgrees(
  explanation: Explanation,
  item: PricedItem | null,
  reason: string | null,
  pricelist = item?.pricelist,
): void {
  if (item === null) {
    assert(explanation.item === null, 'an unavailable SKU has no explained winner')
    assert(statusReasons[explanation.status] === reason, 'the explanation gives the unavailable reason')
    return
  }
  const explained = explanation.item
  assert(
    explained !== null &&
      explained.pricelist === pricelist &&
      explained.net === item.net &&
      explained.vat === item.vat &&
      explained.gross === item.gross,
    'the explanation names the plain answer',
  )
}

/** `itemJson` with the trace as its last field. */
function withTrace(json: string, trace: string): string {
  return `${json.slice(0, -1)},"trace":${trace}}`
}

/** The price query with `explain: true`: the plain answer's items, each with its trace. */
export function explainQuery(tenant: TenantRuntime, input: QueryInput, filter: typeof PricelistFilter.static): string {
  if (input.skus.length > explainSkusMax) {
    throw validationError(
      [{ path: '/skus', message: `at most ${explainSkusMax} with explain` }],
      `A query with explain may ask for at most ${explainSkusMax} SKUs`,
    )
  }
  const context = new PriceContext(tenant.catalog, tenant.prices, input.at, input.taxArea)
  const profile = resolveProfile(tenant.catalog, input.rounding ?? undefined, input.currency, input.at)
  assert(profile !== 'not_found', 'the route answered 404 for an unknown profile')
  const options: AnswerOptions = {
    currency: input.currency,
    rounding: profile === null ? null : profile.compiled,
    quantity: input.quantity,
  }
  const result = queryPrices(context, {
    skus: input.skus,
    pricelists: input.pricelists,
    options,
    sortOrder: input.sortOrder,
  })
  const excluded = excludedPricelists(tenant.catalog, filter, input.at)
  const roundingCode = profile === null ? null : profile.code
  const render = traceOptions(tenant.prices, roundingCode)
  const explain = (sku: string) =>
    explainPrice(context, { sku, pricelists: input.pricelists, excluded, options, roundingCode })
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
  return `{"items":[${items.join(',')}],"unavailable":[${unavailable.join(',')}]}`
}

export interface ExplainReadInput {
  readonly at: number
  readonly taxArea: string
  readonly pricelist: string
  readonly item: PricedItem
  readonly rounding: string | null
  readonly quantity: number
}

/** The taxed single read's answer with its trace: the named pricelist is the one candidate. */
export function explainReadJson(tenant: TenantRuntime, input: ExplainReadInput): string {
  const { at, taxArea, pricelist, item } = input
  const context = new PriceContext(tenant.catalog, tenant.prices, at, taxArea)
  const profile = resolveProfile(tenant.catalog, input.rounding ?? undefined, item.currency, at)
  assert(profile !== 'not_found', 'the read answered 404 for an unknown profile')
  const options: AnswerOptions = {
    currency: item.currency,
    rounding: profile === null ? null : profile.compiled,
    quantity: input.quantity,
  }
  const roundingCode = profile === null ? null : profile.code
  const explanation = explainPrice(context, {
    sku: item.sku,
    pricelists: [pricelist],
    excluded: [],
    options,
    roundingCode,
  })
  // A single read's item names no pricelist (the route prints the one asked).
  assertAgrees(explanation, item, null, pricelist)
  return withTrace(
    itemJson(item, pricelist, taxArea),
    traceText(explanation, traceOptions(tenant.prices, roundingCode)),
  )
}
