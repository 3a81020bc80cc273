/**
 * Price corrections (docs/api.md, "Corrections"): `/price/corrections/{pricelist}/{sku}` lists the
 * versions of a price marked as errors, marks one (POST, with the version's start and a reason) and
 * takes a mark back (DELETE ?start_date=). Marks change no price read; the EU prior price leaves the
 * marked versions out. Each mark and unmark is a changelog entry of type `price_correction` (entity
 * code the SKU, composite key the pricelist) with who made it and when. The checks live in the
 * write layer (tenant/writes/price-corrections.ts).
 * @module
 */
import { Type } from '@sinclair/typebox'
import { priceErrorReasonLengthMax } from '../../engine/limits.js'
import { formatInstant } from '../../engine/time.js'
import { validationError } from '../../platform/errors.js'
import { markPriceErrors, priceErrorMarks, unmarkPriceErrors } from '../../tenant/writes/price-corrections.js'
import { route, type TenantRoute } from '../contracts.js'
import { Code, DateTime } from '../schemas.js'
import { accepted, acceptedOrThrow, itemProblem } from './common.js'

export const PriceErrorMark = Type.Object(
  {
    start_date: DateTime,
    reason: Type.Optional(
      Type.Union([Type.String({ maxLength: priceErrorReasonLengthMax }), Type.Null()], {
        description: 'why the version was an error, for the people who read the changelog and the console',
      }),
    ),
  },
  { additionalProperties: false },
)
const UnmarkQuery = Type.Object({ start_date: DateTime }, { additionalProperties: false })
export const PriceCorrections = Type.Object({
  sku: Type.String(),
  pricelist: Type.String(),
  errors: Type.Array(
    Type.Object({
      start_date: DateTime,
      reason: Type.Union([Type.String(), Type.Null()]),
      marked_at: DateTime,
      marked_by: Type.String(),
    }),
    { description: 'the versions marked as errors, by start; the prior price leaves them out' },
  ),
})

/** The pair named by the path, its codes checked as a price write checks them. */
function pairOf(params: Record<string, string | undefined>): { sku: string; pricelist: string } {
  const sku = params['sku']!
  const pricelist = params['pricelist']!
  for (const [path, code] of [
    ['/sku', sku],
    ['/pricelist', pricelist],
  ] as const) {
    const problem = itemProblem(Code, code)
    if (problem !== null) throw validationError([{ path, message: problem }])
  }
  return { sku, pricelist }
}

export function priceCorrectionRoutes(): TenantRoute[] {
  return [
    route({
      method: 'GET',
      path: '/price/corrections/:pricelist/:sku',
      operationId: 'listPriceCorrections',
      summary: 'The versions of a price marked as errors (left out of the prior price); none: an empty list',
      tag: 'prices',
      response: PriceCorrections,
      dimension: 'query',
      handler: (context) => {
        const { sku, pricelist } = pairOf(context.params)
        const errors = priceErrorMarks(context.tenant, sku, pricelist).map((mark) => ({
          start_date: formatInstant(mark.start),
          reason: mark.reason,
          marked_at: formatInstant(mark.marked_at),
          marked_by: mark.marked_by,
        }))
        return { status: 200, body: { sku, pricelist, errors } }
      },
    }),
    route<typeof PriceErrorMark.static>({
      method: 'POST',
      path: '/price/corrections/:pricelist/:sku',
      operationId: 'markPriceError',
      summary: 'Mark the version of a price starting at start_date as an error (404: no such version)',
      tag: 'prices',
      body: PriceErrorMark,
      responseStatus: 202,
      dimension: 'ingest',
      handler: async (context) => {
        const pair = pairOf(context.params)
        acceptedOrThrow(await markPriceErrors(context.tenant, context, [{ ...pair, ...context.body }]))
        return accepted
      },
    }),
    route<undefined, typeof UnmarkQuery.static>({
      method: 'DELETE',
      path: '/price/corrections/:pricelist/:sku',
      operationId: 'unmarkPriceError',
      summary: 'Take back the mark on the version starting at start_date (404: not marked)',
      tag: 'prices',
      query: UnmarkQuery,
      responseStatus: 202,
      dimension: 'ingest',
      handler: async (context) => {
        const pair = pairOf(context.params)
        const input = { ...pair, start_date: context.query.start_date }
        acceptedOrThrow(await unmarkPriceErrors(context.tenant, context, [input]))
        return accepted
      },
    }),
  ]
}
