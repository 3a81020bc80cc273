/**
 * Price writes over HTTP: batch and single writes, single and batch deletes. The routes check each
 * item's shape, hand the items to the write layer's use cases (tenant/writes/prices.ts: amounts,
 * start dates, strict validation, dedup, quota, the unit of work) and render their outcomes: a
 * batch's refused items in `failed`, a single write's refusal as its error.
 * @module
 */
import { Type } from '@sinclair/typebox'
import { batchItemsMax } from '../../engine/limits.js'
import { toNumber } from '../../engine/money.js'
import { breakKindFixed, type PriceContent } from '../../engine/prices.js'
import { Refusal, type ItemOutcome } from '../../tenant/writes/core.js'
import { deletePrices, writePrices, type PriceDeleteInput, type PriceInput } from '../../tenant/writes/prices.js'
import { arrayCost, route, type Reply, type TenantRoute } from '../contracts.js'
import { validationError } from '../../platform/errors.js'
import { BatchResult, Code, DateTime, mapKeys, WhenQuery } from '../schemas.js'
import { isValid, precompile } from '../validate.js'
import { accepted, acceptedOrThrow, checkedItems, itemProblem, shapeRefusal } from './common.js'

const Amount = Type.Union([Type.Number(), Type.String({ maxLength: 40 })], {
  description: 'decimal number or numeric string',
})
export const PriceDefinition = Type.Union([
  Amount,
  Type.Object(
    {
      sales: Amount,
      fields: Type.Optional(
        Type.Union([Type.Record(mapKeys(64), Amount, { maxProperties: 32, additionalProperties: false }), Type.Null()]),
      ),
    },
    { additionalProperties: false },
  ),
])
export const QuantityBreakInput = Type.Object(
  {
    quantity_break: Amount,
    fixed_price: Type.Optional(Type.Union([Amount, Type.Null()])),
    percent_of_base: Type.Optional(Type.Union([Amount, Type.Null()])),
  },
  { additionalProperties: false },
)
const PriceFields = {
  price: PriceDefinition,
  quantity_breaks: Type.Optional(Type.Union([Type.Array(QuantityBreakInput, { maxItems: 32 }), Type.Null()])),
  start_date: Type.Optional(Type.Union([DateTime, Type.Null()])),
  remove_future_changes: Type.Optional(Type.Boolean()),
  updated_at: Type.Optional(Type.Unknown()),
  updated_by: Type.Optional(Type.Unknown()),
}
export const PriceWriteItem = Type.Object(
  { sku: Code, pricelist: Code, ...PriceFields },
  { additionalProperties: false },
)
/**
 * PriceWriteItem with `start_date` as any text: a batch item is checked against this, and its start
 * date against DateTime once per distinct text (a batch mostly repeats one or two), instead of
 * parsing the same date per item. Valid for both exactly when valid for PriceWriteItem.
 */
const PriceWriteShape = Type.Object(
  { ...PriceWriteItem.properties, start_date: Type.Optional(Type.Union([Type.String(), Type.Null()])) },
  { additionalProperties: false },
)
// Batch items are checked in the handler, not by the route: compiled now, so no request pays.
for (const schema of [PriceWriteItem, PriceWriteShape, DateTime]) precompile(schema)
export const PriceWriteSingle = Type.Object(
  { sku: Type.Optional(Code), pricelist: Type.Optional(Code), ...PriceFields },
  { additionalProperties: false },
)
const DeleteItem = Type.Object(
  { sku: Code, pricelist: Code, when: Type.Optional(DateTime) },
  { additionalProperties: false },
)
const BatchBody = Type.Array(Type.Unknown(), { minItems: 1, maxItems: batchItemsMax })

type PriceWriteBody = typeof PriceWriteSingle.static

/** The schema of `renderContent`'s answer (the fields of the price reads). */
export const RenderedContent = {
  price: Type.Object({ sales: Type.Number(), fields: Type.Record(Type.String(), Type.Number()) }),
  quantity_breaks: Type.Array(
    Type.Union([
      Type.Object({ quantity_break: Type.Number(), fixed_price: Type.Number() }),
      Type.Object({
        quantity_break: Type.Number(),
        percent_of_base: Type.Number({ description: 'percent of the base price' }),
      }),
    ]),
  ),
}

/** The content as the API shows it: `{sales, fields}` and `[{quantity_break, fixed_price | percent_of_base}]`. */
export function renderContent(content: PriceContent): {
  price: Record<string, unknown>
  quantity_breaks: Record<string, unknown>[]
} {
  const fields: Record<string, number> = {}
  if (content.fields !== null) for (const name in content.fields) fields[name] = toNumber(content.fields[name]!)
  return {
    price: { sales: toNumber(content.sales), fields },
    quantity_breaks: (content.breaks ?? []).map((entry) =>
      entry.kind === breakKindFixed
        ? { quantity_break: toNumber(entry.quantity), fixed_price: toNumber(entry.value) }
        : { quantity_break: toNumber(entry.quantity), percent_of_base: toNumber(entry.value) },
    ),
  }
}

/**
 * The start dates of a request's items checked against DateTime, the last one remembered: a batch
 * mostly repeats one or two, so each distinct text is checked once (the use case parses it once).
 */
class StartDates {
  #text: string | null = null
  #valid = false

  valid(text: string): boolean {
    if (text !== this.#text) {
      this.#text = text
      this.#valid = isValid(DateTime, text)
    }
    return this.#valid
  }
}

/** Is a batch item a PriceWriteItem? (See PriceWriteShape.) */
function validItem(dates: StartDates, item: unknown): boolean {
  if (!isValid(PriceWriteShape, item)) return false
  const text = (item as PriceWriteBody).start_date
  return text === undefined || text === null || dates.valid(text)
}

/** A batch's answer: how many items were accepted, and each refused one with its pair and why. */
function batchAnswer(items: readonly unknown[], outcomes: readonly ItemOutcome[]): Reply {
  const failed: Record<string, unknown>[] = []
  for (let index = 0; index < outcomes.length; index++) {
    const outcome = outcomes[index]!
    if (outcome instanceof Refusal) {
      const item = items[index]
      const message = outcome.message
      failed.push({ sku: stringField(item, 'sku'), pricelist: stringField(item, 'pricelist'), message })
    }
  }
  return { status: 202, body: { accepted: outcomes.length - failed.length, failed } }
}

export function priceWriteRoutes(): TenantRoute[] {
  return [
    route<unknown[]>({
      method: 'POST',
      path: '/price/batch',
      operationId: 'writePrices',
      summary: 'Write prices in bulk (not atomic: refused items are listed in failed)',
      tag: 'prices',
      body: BatchBody,
      response: BatchResult,
      responseStatus: 202,
      dimension: 'ingest',
      cost: arrayCost,
      handler: async (context) => {
        const dates = new StartDates()
        const items = context.body
        const inputs: (PriceInput | Refusal)[] = []
        for (let index = 0; index < items.length; index++) {
          const item = items[index]
          // The compiled check first: walking the schema for error messages costs ten times more.
          inputs.push(validItem(dates, item) ? (item as PriceInput) : shapeRefusal(PriceWriteItem, item))
        }
        return batchAnswer(items, await writePrices(context.tenant, context, inputs))
      },
    }),
    route<PriceWriteBody>({
      method: 'PUT',
      path: '/price/:sku/:pricelist',
      operationId: 'putPrice',
      errors: [422],
      summary: 'Write one price (400 when refused by validation)',
      tag: 'prices',
      body: PriceWriteSingle,
      responseStatus: 202,
      dimension: 'ingest',
      handler: async (context) => {
        const sku = context.params['sku']!
        const pricelist = context.params['pricelist']!
        checkPathCode(sku, '/sku', context.body.sku)
        checkPathCode(pricelist, '/pricelist', context.body.pricelist)
        acceptedOrThrow(await writePrices(context.tenant, context, [{ ...context.body, sku, pricelist }]))
        return accepted
      },
    }),
    route<undefined, typeof WhenQuery.static>({
      method: 'DELETE',
      path: '/price/:sku/:pricelist',
      operationId: 'deletePrice',
      summary: 'Soft-delete a price at `when` (default now)',
      tag: 'prices',
      query: WhenQuery,
      responseStatus: 202,
      dimension: 'ingest',
      handler: async (context) => {
        const input = { sku: context.params['sku']!, pricelist: context.params['pricelist']!, when: context.query.when }
        acceptedOrThrow(await deletePrices(context.tenant, context, [input]))
        return accepted
      },
    }),
    route<unknown[]>({
      method: 'DELETE',
      path: '/price/batch',
      operationId: 'deletePrices',
      summary: 'Soft-delete prices in bulk: [{sku, pricelist, when}]',
      tag: 'prices',
      body: BatchBody,
      response: BatchResult,
      responseStatus: 202,
      dimension: 'ingest',
      cost: arrayCost,
      handler: async (context) => {
        const items = context.body
        const inputs = checkedItems<PriceDeleteInput>(DeleteItem, items)
        return batchAnswer(items, await deletePrices(context.tenant, context, inputs))
      },
    }),
  ]
}

function stringField(item: unknown, name: string): string | null {
  const value = typeof item === 'object' && item !== null ? (item as Record<string, unknown>)[name] : undefined
  return typeof value === 'string' ? value : null
}

function checkPathCode(fromPath: string, path: string, fromBody: string | undefined): void {
  const problem = itemProblem(Code, fromPath)
  if (problem !== null) throw validationError([{ path, message: problem }])
  if (fromBody !== undefined && fromBody !== fromPath)
    throw validationError([{ path, message: 'must equal the code in the path' }])
}
