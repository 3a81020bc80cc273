/**
 * `explain=true` on the price query and the taxed single read: each answered (and each unavailable)
 * item gains a `trace` (engine/explain/). The plain answer is computed exactly as without explain,
 * so its fields keep their bytes; the trace is added as the item's last field. Explanations run on
 * the price workers; the main thread, which alone knows who wrote a price version and when, fills
 * those in. They are bounded by `explainSkusMax` SKUs per request (an explanation prices every
 * candidate and writes its trace).
 * @module
 */
import { Type } from '@sinclair/typebox'
import { assert } from '../../engine/assert.js'
import type { Catalog } from '../../engine/catalog.js'
import { candidateReasons, type CandidateReason } from '../../engine/explain/explain.js'
import type { PricedItem } from '../../engine/pipeline.js'
import { pricelistActiveAt } from '../../engine/pricelists.js'
import type { PriceBook } from '../../engine/prices.js'
import { validationError } from '../../platform/errors.js'
import { dispatchExplainQuery, dispatchExplainRead, type Engine } from '../../tenant/price-dispatch.js'
import type { TenantRuntime } from '../../tenant/runtime.js'
import type { QueryInput } from '../../workers/execute.js'
import { fillVersionBytesLent, fillVersions, withTrace, type VersionMeta } from '../../workers/explain-query.js'
import { itemJson } from '../../workers/render.js'
import { pricelistFilterMatcher, type PricelistFilter } from './pricelists.js'

/** SKUs one explained query may ask for: each prices every candidate and traces the winner. */
export const explainSkusMax = 100

/**
 * Items an explained SKU costs against the query rate limit: the 3x the route was built for, which
 * the plans' tests assume; bench/explain-only.ts measures 8-10x a plain SKU's CPU (docs/api.md).
 */
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

/** Who wrote a price version and when, from the main thread's book (the workers' replicas do not hold it). */
function versionMeta(book: PriceBook): VersionMeta {
  return (pricelist, sku, start) => book.written(pricelist, sku, start)
}

/** The price query with `explain: true`: the plain answer's items, each with its trace. */
export async function explainQuery(
  tenant: TenantRuntime,
  input: QueryInput,
  filter: typeof PricelistFilter.static,
): Promise<{ json: Buffer; engine: Engine; release: (() => void) | null }> {
  if (input.skus.length > explainSkusMax) {
    throw validationError(
      [{ path: '/skus', message: `at most ${explainSkusMax} with explain` }],
      `A query with explain may ask for at most ${explainSkusMax} SKUs`,
    )
  }
  const excluded = excludedPricelists(tenant.catalog, filter, input.at)
  const { explained, engine } = await dispatchExplainQuery(tenant, { query: input, excluded })
  // Filled into the main thread's lent buffer, valid until `release` once written (after the
  // worker's arena bytes are released: they are copied).
  try {
    const { body, release } = fillVersionBytesLent(explained, versionMeta(tenant.prices))
    return { json: body, engine, release }
  } finally {
    explained.release?.()
  }
}

export interface ExplainReadRequest {
  readonly at: number
  readonly taxArea: string
  readonly pricelist: string
  readonly item: PricedItem
  readonly rounding: string | null
  readonly quantity: number
}

/** The taxed single read's answer with its trace: the named pricelist is the one candidate. */
export async function explainReadJson(
  tenant: TenantRuntime,
  input: ExplainReadRequest,
): Promise<{ json: string; engine: Engine }> {
  const { at, taxArea, pricelist, item } = input
  const { explained, engine } = await dispatchExplainRead(tenant, {
    at,
    taxArea,
    pricelist,
    sku: item.sku,
    currency: item.currency,
    rounding: input.rounding,
    quantity: input.quantity,
  })
  const winner = explained.winner
  assert(
    winner !== null && winner.net === item.net && winner.vat === item.vat && winner.gross === item.gross,
    'the explanation names the plain answer',
  )
  // A single read's item names no pricelist (the route prints the one asked).
  const json = withTrace(itemJson(item, pricelist, taxArea), fillVersions(explained, versionMeta(tenant.prices)))
  return { json, engine }
}
