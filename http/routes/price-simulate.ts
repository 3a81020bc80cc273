/**
 * POST /price/simulate: what a price query would answer if proposed writes had been made, with
 * nothing stored. The writes come in the shapes of the normal writes and are checked by the same
 * schemas and the same use cases (tenant/simulate/dry-run.ts runs the write layer's writers on a
 * throwaway copy of the tenant), so a write the real route would refuse is refused here with the
 * same error body, plus `write`, the JSON pointer of the refused write in this body. The read is
 * a POST /price/query body or a POST /price/diff body (one page), checked and answered as that route
 * does, on the copy: what changes between two instants is as much a question before a write as after.
 * Bounded by `proposedWritesMax` writes, and counted against the query rate limit by its writes
 * plus its SKUs (a diff: its page, as the diff route counts it). The writes are planned on the
 * main thread (the write layer lives there), in slices of about 1 ms; the read runs where the real
 * route would run it.
 * @module
 */
import { Type, type TSchema } from '@sinclair/typebox'
import { batchItemsMax } from '../../engine/limits.js'
import { ApiError, validationError } from '../../platform/errors.js'
import {
  dryRun,
  proposedWritesMax,
  type FxDay,
  type ProposedWrites,
  type SimulatedState,
} from '../../tenant/simulate/dry-run.js'
import type { PricelistInput } from '../../tenant/writes/pricelists.js'
import type { PriceInput } from '../../tenant/writes/prices.js'
import type { MappingInput, VatRateInput } from '../../tenant/writes/reference.js'
import { dispatchSimulation, type SimulatedAnswer } from '../../tenant/price-dispatch.js'
import { route, type Reply, type TenantContext, type TenantRoute } from '../contracts.js'
import { detailsOf, isValid } from '../validate.js'
import { refusalError } from './common.js'
import { checkedRates, FxDailyBody, publicationDate } from './fx.js'
import {
  diffAnswer,
  diffCost,
  diffPage,
  PriceDiffAnswer,
  type DiffPage,
  PriceDiffBody,
  type PriceDiffValue,
} from './price-diff.js'
import { PriceQueryAnswer, PriceQueryBody, queryInput, type PriceQueryValue } from './price-reads.js'
import { PricelistBatchItem } from './pricelists.js'
import { PriceWriteItem } from './price-writes.js'
import { MappingWrite, VatRateWrite } from './reference.js'

/** Each family's items, as the batch routes take theirs; the bound on all of them is checked after. */
function proposed(description: string) {
  return Type.Optional(Type.Array(Type.Unknown(), { maxItems: batchItemsMax, description }))
}

export const SimulateWrites = Type.Object(
  {
    prices: proposed('items of POST /price/batch'),
    pricelists: proposed('bodies of PUT /pricelist/{code}, each with its code'),
    vat_rates: proposed('bodies of POST /vat/rate'),
    mappings: proposed('bodies of POST /article-taxclass'),
    fx_rates: proposed('bodies of POST /fx/daily (each rate counts as a write)'),
  },
  {
    additionalProperties: false,
    description: `at most ${proposedWritesMax} writes in all; written in the order pricelists, prices, vat_rates, mappings, fx_rates`,
  },
)
export const SimulateBody = Type.Object(
  {
    writes: SimulateWrites,
    query: Type.Optional(PriceQueryBody),
    diff: Type.Optional(PriceDiffBody),
  },
  {
    additionalProperties: false,
    description:
      'writes, and exactly one read: query (a POST /price/query body) or diff (a POST /price/diff body, one page)',
  },
)
type SimulateValue = {
  writes: Partial<Record<keyof typeof SimulateWrites.properties, unknown[]>>
  query?: PriceQueryValue
  diff?: PriceDiffValue
}

export const SimulateAnswer = Type.Object({
  query: Type.Optional(
    Type.Object(PriceQueryAnswer.properties, {
      description: 'what POST /price/query answers for the query after the writes',
    }),
  ),
  diff: Type.Optional(
    Type.Object(PriceDiffAnswer.properties, {
      description: 'what POST /price/diff answers for the page after the writes',
    }),
  ),
})

/** The writes of a body as counted against its bound and the rate limit: each FX rate is one. */
function writeCount(writes: unknown): number {
  if (typeof writes !== 'object' || writes === null) return 0
  let count = 0
  for (const [family, items] of Object.entries(writes)) {
    if (!Array.isArray(items)) continue
    if (family !== 'fx_rates') count += items.length
    else for (const day of items) count += Math.max(1, ratesIn(day))
  }
  return count
}

function ratesIn(day: unknown): number {
  const rates = (day as { rates?: unknown } | null)?.rates
  return typeof rates === 'object' && rates !== null && !Array.isArray(rates) ? Object.keys(rates).length : 0
}

/**
 * The request's cost (counted on the raw body): its writes plus its query's SKUs, or plus what its
 * diff's page costs on POST /price/diff.
 */
function simulateCost(body: unknown): number {
  const value = body as { writes?: unknown; query?: { skus?: unknown }; diff?: unknown } | null
  const skus = value?.query?.skus
  const read = value?.diff !== undefined ? diffCost(value.diff) : Array.isArray(skus) ? skus.length : 0
  return Math.max(1, writeCount(value?.writes) + read)
}

/** Exactly one read: the query, or the diff. */
function checkOneRead(body: SimulateValue): void {
  if ((body.query === undefined) === (body.diff === undefined)) {
    const message = body.query === undefined ? 'a query or a diff is required' : 'only one of query and diff'
    throw validationError([{ path: body.query === undefined ? '' : '/diff', message }], message)
  }
}

/** The refused write's error: the real write's body, and where the write is in this one. */
function atWrite(error: ApiError, pointer: string): ApiError {
  return new ApiError(error.code, error.message, { ...error.extra, write: pointer }, error.retryAfterS)
}

/**
 * Each item checked against its real write's schema, as that route's validation answers. The
 * compiled check first: walking a valid item for its errors cost 6.5 ms of the main thread per
 * 1,000 proposed writes, and only a refused item needs its details.
 */
function shaped<Input>(family: string, items: readonly unknown[] | undefined, schema: TSchema): Input[] {
  const checked: Input[] = []
  for (const [index, item] of (items ?? []).entries()) {
    if (!isValid(schema, item)) throw atWrite(validationError(detailsOf(schema, item)), `/writes/${family}/${index}`)
    checked.push(item as Input)
  }
  return checked
}

/** FX bodies checked as POST /fx/daily checks them (date, then every rate). */
function fxDays(items: readonly unknown[] | undefined): FxDay[] {
  return shaped<typeof FxDailyBody.static>('fx_rates', items, FxDailyBody).map((body, index) => {
    try {
      return { from: publicationDate(body.date), rates: checkedRates(body.rates) }
    } catch (error) {
      throw error instanceof ApiError ? atWrite(error, `/writes/fx_rates/${index}`) : error
    }
  })
}

function proposedWrites(writes: SimulateValue['writes']): ProposedWrites {
  const count = writeCount(writes)
  if (count > proposedWritesMax) {
    const message = `at most ${proposedWritesMax} writes in all, got ${count}`
    throw validationError([{ path: '/writes', message }])
  }
  return {
    pricelists: shaped<PricelistInput>('pricelists', writes.pricelists, PricelistBatchItem),
    prices: shaped<PriceInput>('prices', writes.prices, PriceWriteItem),
    vatRates: shaped<VatRateInput>('vat_rates', writes.vat_rates, VatRateWrite),
    mappings: shaped<MappingInput>('mappings', writes.mappings, MappingWrite),
    fxDays: fxDays(writes.fx_rates),
  }
}

const answerOpen = Buffer.from('{"query":')
const answerClose = Buffer.from('}')
const answerHeaders = { 'cache-control': 'no-store', 'content-type': 'application/json' }

/**
 * The read of the simulated state, checked in the dry run's read turn as POST /price/query or POST
 * /price/diff checks it there, and answered where that route would answer it (tenant/price-dispatch.ts).
 */
function readState(context: TenantContext<SimulateValue>, state: SimulatedState): Reply | Promise<Reply> {
  const { query, diff } = context.body
  const page = diff === undefined ? null : diffPage(state, diff)
  const input = page === null ? queryInput(state, query!, context.nowMs) : null
  const answered = dispatchSimulation(context.tenant, state, { query: input, diff: page?.request ?? null })
  const reply = (answer: SimulatedAnswer): Reply => replyOf(answer, page)
  return answered instanceof Promise ? answered.then(reply) : reply(answered)
}

function replyOf(answer: SimulatedAnswer, page: DiffPage | null): Reply {
  if (page !== null) {
    const headers = { 'cache-control': 'no-store', 'x-price-engine': answer.engine }
    return { status: 200, headers, body: { diff: diffAnswer(answer.entries!, page.next) } }
  }
  const json = answer.json!
  const body = Buffer.concat([answerOpen, typeof json === 'string' ? Buffer.from(json) : json, answerClose])
  return { status: 200, headers: { ...answerHeaders, 'x-price-engine': answer.engine }, body }
}

export function priceSimulateRoutes(): TenantRoute[] {
  return [
    route<SimulateValue>({
      method: 'POST',
      path: '/price/simulate',
      operationId: 'simulatePrices',
      errors: [404, 422],
      summary: 'What a price query or a price diff would answer after proposed writes; stores nothing',
      tag: 'prices',
      body: SimulateBody,
      response: SimulateAnswer,
      dimension: 'query',
      cost: simulateCost,
      handler: async (context) => {
        checkOneRead(context.body)
        const writes = proposedWrites(context.body.writes)
        const outcome = await dryRun(context.tenant, context, writes, (state) => readState(context, state))
        if ('refused' in outcome) {
          const { family, index, refusal } = outcome.refused
          throw atWrite(refusalError(refusal), `/writes/${family}/${index}`)
        }
        return await outcome.answer
      },
    }),
  ]
}
