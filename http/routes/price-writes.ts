/**
 * Price writes: batch and single writes, single and batch deletes. Amounts are parsed exactly to
 * scaled integers (4 decimals, half-up); a past start date means now; identical prices store
 * nothing unless `ingest.skip.dedup`; strict article and pricelist validation refuse items.
 * @module
 */
import { statusOf } from '../error-status.js'
import { Type } from '@sinclair/typebox'
import { batchItemsMax } from '../../engine/limits.js'
import { amountUnit, parseAmount, toNumber } from '../../engine/money.js'
import { breakKindFixed, breakKindPercent, planPriceWrite, priceContentHash, type PriceContent, type QuantityBreak } from '../../engine/prices.js'
import { settingEnabled } from '../../engine/settings.js'
import { formatInstant } from '../../engine/time.js'
import type { PriceChange } from '../../storage/tenant-store.js'
import { arrayCost, route, type TenantContext, type TenantRoute } from '../contracts.js'
import { ApiError, validationError } from '../../platform/errors.js'
import { BatchResult, Code, DateTime, mapKeys, WhenQuery } from '../schemas.js'
import type { TenantRuntime } from '../../tenant/runtime.js'
import { isValid, precompile } from '../validate.js'
import { accepted, itemProblem, writeInstant } from './common.js'

const Amount = Type.Union([Type.Number(), Type.String({ maxLength: 40 })], { description: 'decimal number or numeric string' })
export const PriceDefinition = Type.Union([
  Amount,
  Type.Object(
    {
      sales: Amount,
      fields: Type.Optional(Type.Union([Type.Record(mapKeys(64), Amount, { maxProperties: 32, additionalProperties: false }), Type.Null()])),
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
export const PriceWriteItem = Type.Object({ sku: Code, pricelist: Code, ...PriceFields }, { additionalProperties: false })
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
const DeleteItem = Type.Object({ sku: Code, pricelist: Code, when: Type.Optional(DateTime) }, { additionalProperties: false })
const BatchBody = Type.Array(Type.Unknown(), { minItems: 1, maxItems: batchItemsMax })

type PriceWriteBody = typeof PriceWriteSingle.static

/** A refusal of one item: 400 for a single write (with `path` in the details), a `failed` entry in a batch. */
class ItemRefused extends Error {
  constructor(
    readonly path: string,
    readonly problem: string,
  ) {
    super(`${path}: ${problem}`)
  }
}

/** |n| below which n x 10^4 and back is exact in doubles (parseAmount's fast-path range). */
const fastAmountAbsMax = 1e11

function amountOf(input: unknown, path: string): number {
  // A JSON number with at most 4 decimals: n x 10^4 is the integer parseAmount would answer (the
  // shortest text of n has those decimals), without its text and regular expressions.
  if (typeof input === 'number' && Math.abs(input) < fastAmountAbsMax) {
    const scaled = Math.round(input * amountUnit)
    if (scaled / amountUnit === input) return scaled === 0 ? 0 : scaled
  }
  const scaled = parseAmount(input)
  if (scaled === null) throw new ItemRefused(path, 'must be a decimal number (at most ±100000000000)')
  return scaled
}

/** Parses the price definition and breaks into exact content. */
export function parseContent(body: Pick<PriceWriteBody, 'price' | 'quantity_breaks'>): PriceContent {
  const price = body.price
  const definition = typeof price === 'object' && price !== null ? price : { sales: price, fields: null }
  const sales = amountOf(definition.sales, '/price/sales')
  let fields: Record<string, number> | null = null
  if (definition.fields !== undefined && definition.fields !== null && Object.keys(definition.fields).length > 0) {
    fields = {}
    for (const name of Object.keys(definition.fields).sort()) fields[name] = amountOf(definition.fields[name], `/price/fields/${name}`)
  }
  let breaks: QuantityBreak[] | null = null
  if (body.quantity_breaks !== undefined && body.quantity_breaks !== null && body.quantity_breaks.length > 0) {
    breaks = body.quantity_breaks.map((entry, index): QuantityBreak => {
      const quantity = amountOf(entry.quantity_break, `/quantity_breaks/${index}/quantity_break`)
      if (quantity <= 0) throw new ItemRefused(`/quantity_breaks/${index}/quantity_break`, 'must be positive')
      const fixed = entry.fixed_price ?? null
      const percent = entry.percent_of_base ?? null
      if ((fixed === null) === (percent === null)) {
        throw new ItemRefused(`/quantity_breaks/${index}`, 'give exactly one of fixed_price and percent_of_base')
      }
      if (fixed !== null) return { quantity, kind: breakKindFixed, value: amountOf(fixed, `/quantity_breaks/${index}/fixed_price`) }
      const path = `/quantity_breaks/${index}/percent_of_base`
      const value = amountOf(percent, path)
      // A percentage of the base (80 means 80%); a break never costs more than the base.
      if (value < 0 || value > 100 * amountUnit) throw new ItemRefused(path, 'must be a percentage from 0 to 100')
      return { quantity, kind: breakKindPercent, value }
    })
    breaks.sort((left, right) => left.quantity - right.quantity)
    for (let index = 1; index < breaks.length; index++) {
      if (breaks[index]!.quantity === breaks[index - 1]!.quantity) throw new ItemRefused('/quantity_breaks', 'quantities must differ')
    }
  }
  return { sales, fields, breaks }
}

/** The schema of `renderContent`'s answer (the fields of the price reads). */
export const RenderedContent = {
  price: Type.Object({ sales: Type.Number(), fields: Type.Record(Type.String(), Type.Number()) }),
  quantity_breaks: Type.Array(Type.Union([
    Type.Object({ quantity_break: Type.Number(), fixed_price: Type.Number() }),
    Type.Object({ quantity_break: Type.Number(), percent_of_base: Type.Number({ description: 'percent of the base price' }) }),
  ])),
}

/** The content as the API shows it: `{sales, fields}` and `[{quantity_break, fixed_price | percent_of_base}]`. */
export function renderContent(content: PriceContent): { price: Record<string, unknown>; quantity_breaks: Record<string, unknown>[] } {
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

interface WriteSettings {
  readonly strictArticles: boolean
  readonly strictPricelists: boolean
  readonly skipDedup: boolean
  /** The last start date checked and parsed in this request: a batch mostly repeats one. */
  startText: string | null
  startValid: boolean
  startMs: number
}

function writeSettings(tenant: TenantRuntime, nowMs: number): WriteSettings {
  return {
    strictArticles: settingEnabled(tenant.catalog, 'strict.article.validation', nowMs),
    strictPricelists: settingEnabled(tenant.catalog, 'strict.pricelist.validation', nowMs),
    skipDedup: settingEnabled(tenant.catalog, 'ingest.skip.dedup', nowMs),
    startText: null,
    startValid: false,
    startMs: nowMs,
  }
}

function rememberStart(settings: WriteSettings, text: string, nowMs: number): void {
  if (text === settings.startText) return
  settings.startText = text
  settings.startValid = isValid(DateTime, text)
  settings.startMs = settings.startValid ? writeInstant(text, nowMs) : Number.NaN
}

/** Is a batch item a PriceWriteItem? (See PriceWriteShape.) */
function validItem(settings: WriteSettings, item: unknown, nowMs: number): boolean {
  if (!isValid(PriceWriteShape, item)) return false
  const text = (item as PriceWriteBody).start_date
  if (text === undefined || text === null) return true
  rememberStart(settings, text, nowMs)
  return settings.startValid
}

function startInstant(settings: WriteSettings, text: string | null | undefined, nowMs: number): number {
  if (text === undefined || text === null) return nowMs
  rememberStart(settings, text, nowMs)
  return settings.startMs
}

/**
 * Plans one price write and applies it to memory (so later items of a batch plan against it).
 * Null when nothing changes; throws ItemRefused with the reason when refused.
 */
function planAndApply(context: TenantContext, settings: WriteSettings, sku: string, pricelist: string, body: PriceWriteBody): PriceChange | null {
  const { tenant, nowMs, actor } = context
  const content = parseContent(body)
  const from = startInstant(settings, body.start_date, nowMs)
  if (settings.strictArticles && tenant.catalog.view('article', sku, from) === null) {
    throw new ItemRefused('/sku', `article ${sku} does not exist at ${formatInstant(from)} (strict.article.validation)`)
  }
  if (settings.strictPricelists && !tenant.catalog.exists('pricelist', pricelist)) {
    throw new ItemRefused('/pricelist', `pricelist ${pricelist} was never created (strict.pricelist.validation)`)
  }
  const existing = tenant.prices.versions(pricelist, sku)
  const planned = planPriceWrite(existing, { from, content, writtenAt: nowMs, writtenBy: actor }, {
    removeLater: body.remove_future_changes === true,
    force: settings.skipDedup,
  })
  if (planned === null) return null
  const wasLive = existing.length > 0 && existing[existing.length - 1]!.content !== null
  const limit = tenant.limits.prices
  if (!wasLive && limit !== null && tenant.prices.livePairCount + 1 > limit) {
    throw new ApiError('quota_exceeded', `The plan allows ${limit} prices; ${tenant.prices.livePairCount} exist`)
  }
  tenant.prices.apply(pricelist, sku, planned.versions)
  return {
    pricelist,
    sku,
    versions: planned.versions,
    changeType: planned.changeType,
    hash: priceContentHash(content),
    at: nowMs,
    by: actor,
  }
}

function planDelete(context: TenantContext, sku: string, pricelist: string, when: string | undefined): PriceChange | null {
  const { tenant, nowMs, actor } = context
  const at = writeInstant(when, nowMs)
  const existing = tenant.prices.versions(pricelist, sku)
  const planned = planPriceWrite(existing, { from: at, content: null, writtenAt: nowMs, writtenBy: actor }, { removeLater: false, force: false })
  if (planned === null) throw new ApiError('not_found', `No price for ${sku} on ${pricelist} at ${new Date(at).toISOString()}`)
  tenant.prices.apply(pricelist, sku, planned.versions)
  return { pricelist, sku, versions: planned.versions, changeType: 'deleted', hash: '', at: nowMs, by: actor }
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
        const settings = writeSettings(context.tenant, context.nowMs)
        const failed: Record<string, unknown>[] = []
        const changes: PriceChange[] = []
        let acceptedCount = 0
        for (const item of context.body) {
          // The compiled check first: walking the schema for error messages costs ten times more.
          if (!validItem(settings, item, context.nowMs)) {
            const keys = { sku: stringField(item, 'sku'), pricelist: stringField(item, 'pricelist') }
            failed.push({ ...keys, message: itemProblem(PriceWriteItem, item) })
            continue
          }
          const body = item as PriceWriteBody & { sku: string; pricelist: string }
          try {
            const change = planAndApply(context, settings, body.sku, body.pricelist, body)
            if (change !== null) changes.push(change)
            acceptedCount++
          } catch (error) {
            if (error instanceof ItemRefused || error instanceof ApiError) failed.push({ sku: body.sku, pricelist: body.pricelist, message: error.message })
            else return commitThenThrow(context, changes, error)
          }
        }
        await context.tenant.commit([], [], changes, { applied: true })
        return { status: 202, body: { accepted: acceptedCount, failed } }
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
        let change: PriceChange | null
        try {
          change = planAndApply(context, writeSettings(context.tenant, context.nowMs), sku, pricelist, context.body)
        } catch (error) {
          if (error instanceof ItemRefused) throw validationError([{ path: error.path, message: error.problem }], error.message)
          throw error
        }
        if (change !== null) await context.tenant.commit([], [], [change], { applied: true })
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
        const change = planDelete(context, context.params['sku']!, context.params['pricelist']!, context.query.when)
        await context.tenant.commit([], [], change === null ? [] : [change], { applied: true })
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
        const failed: Record<string, unknown>[] = []
        const changes: PriceChange[] = []
        let acceptedCount = 0
        for (const item of context.body) {
          const keys = { sku: stringField(item, 'sku'), pricelist: stringField(item, 'pricelist') }
          const problem = itemProblem(DeleteItem, item)
          if (problem !== null) {
            failed.push({ ...keys, message: problem })
            continue
          }
          try {
            const change = planDelete(context, keys.sku!, keys.pricelist!, (item as { when?: string }).when)
            if (change !== null) changes.push(change)
            acceptedCount++
          } catch (error) {
            if (error instanceof ApiError && statusOf(error) < 500) failed.push({ ...keys, message: error.message })
            else return commitThenThrow(context, changes, error)
          }
        }
        await context.tenant.commit([], [], changes, { applied: true })
        return { status: 202, body: { accepted: acceptedCount, failed } }
      },
    }),
  ]
}

/**
 * An unexpected failure part-way through a batch: the items before it are in memory already, so
 * they are stored (memory and disk stay alike) before the failure is answered (500).
 */
async function commitThenThrow(context: TenantContext, changes: PriceChange[], error: unknown): Promise<never> {
  await context.tenant.commit([], [], changes, { applied: true })
  throw error
}

function stringField(item: unknown, name: string): string | null {
  const value = typeof item === 'object' && item !== null ? (item as Record<string, unknown>)[name] : undefined
  return typeof value === 'string' ? value : null
}

function checkPathCode(fromPath: string, path: string, fromBody: string | undefined): void {
  const problem = itemProblem(Code, fromPath)
  if (problem !== null) throw validationError([{ path, message: problem }])
  if (fromBody !== undefined && fromBody !== fromPath) throw validationError([{ path, message: 'must equal the code in the path' }])
}
