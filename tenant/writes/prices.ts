/**
 * Price writes and deletes as use cases (./core.ts): amounts are parsed exactly to scaled integers
 * (4 decimals, half-up); a past start date means now; identical prices store nothing unless
 * `ingest.skip.dedup`; strict article and pricelist validation refuse items; a price that makes a
 * pair live counts against the plan's price quota. The price ingest is the service's hot path:
 * accepted items allocate nothing beyond their change, and a batch parses each start date once.
 * @module
 */
import { amountUnit, parseAmount } from '../../engine/money.js'
import {
  breakKindFixed,
  breakKindPercent,
  planPriceWrite,
  priceContentHash,
  type PriceContent,
  type QuantityBreak,
} from '../../engine/prices.js'
import { settingEnabled } from '../../engine/settings.js'
import { formatInstant } from '../../engine/time.js'
import type { PriceChange } from '../../storage/tenant-store.js'
import {
  applyBatch,
  invalid,
  quotaExceeded,
  Refusal,
  writeInstant,
  type EntityWriter,
  type ItemOutcome,
  type WriteContext,
  type WriteTarget,
} from './core.js'

/** A decimal amount as JSON carries it: a number, or its text. */
export type AmountInput = number | string

/** A price's content as written: an amount, or sales with named extra fields; breaks by quantity. */
export interface PriceContentInput {
  readonly price:
    | AmountInput
    | { readonly sales: AmountInput; readonly fields?: Readonly<Record<string, AmountInput>> | null }
  readonly quantity_breaks?:
    | readonly {
        readonly quantity_break: AmountInput
        readonly fixed_price?: AmountInput | null
        readonly percent_of_base?: AmountInput | null
      }[]
    | null
}

/** One price write, its shape checked by the edge (start_date a valid instant). */
export interface PriceInput extends PriceContentInput {
  readonly sku: string
  readonly pricelist: string
  readonly start_date?: string | null
  readonly remove_future_changes?: boolean
}

/** One price delete: the pair and the instant (`when`, default now). */
export interface PriceDeleteInput {
  readonly sku: string
  readonly pricelist: string
  readonly when?: string
}

/** |n| below which n x 10^4 and back is exact in doubles (parseAmount's fast-path range). */
const fastAmountAbsMax = 1e11

/** The exact scaled amount, or a refusal naming `path`. */
function amountOf(input: unknown, path: string): number | Refusal {
  // A JSON number with at most 4 decimals: n x 10^4 is the integer parseAmount would answer (the
  // shortest text of n has those decimals), without its text and regular expressions.
  if (typeof input === 'number' && Math.abs(input) < fastAmountAbsMax) {
    const scaled = Math.round(input * amountUnit)
    if (scaled / amountUnit === input) return scaled === 0 ? 0 : scaled
  }
  const scaled = parseAmount(input)
  if (scaled === null) return invalid(path, 'must be a decimal number (at most ±100000000000)')
  return scaled
}

/** Parses the price definition and breaks into exact content, or the first refused part. */
export function parseContent(input: PriceContentInput): PriceContent | Refusal {
  const price = input.price
  const definition = typeof price === 'object' && price !== null ? price : { sales: price, fields: null }
  const sales = amountOf(definition.sales, '/price/sales')
  if (sales instanceof Refusal) return sales
  let fields: Record<string, number> | null = null
  if (definition.fields !== undefined && definition.fields !== null && Object.keys(definition.fields).length > 0) {
    fields = {}
    for (const name of Object.keys(definition.fields).sort()) {
      const amount = amountOf(definition.fields[name], `/price/fields/${name}`)
      if (amount instanceof Refusal) return amount
      fields[name] = amount
    }
  }
  let breaks: QuantityBreak[] | null = null
  if (input.quantity_breaks !== undefined && input.quantity_breaks !== null && input.quantity_breaks.length > 0) {
    breaks = []
    for (let index = 0; index < input.quantity_breaks.length; index++) {
      const parsed = parseBreak(input.quantity_breaks[index]!, index)
      if (parsed instanceof Refusal) return parsed
      breaks.push(parsed)
    }
    breaks.sort((left, right) => left.quantity - right.quantity)
    for (let index = 1; index < breaks.length; index++) {
      if (breaks[index]!.quantity === breaks[index - 1]!.quantity)
        return invalid('/quantity_breaks', 'quantities must differ')
    }
  }
  return { sales, fields, breaks }
}

type BreakInput = NonNullable<PriceContentInput['quantity_breaks']>[number]

function parseBreak(entry: BreakInput, index: number): QuantityBreak | Refusal {
  const quantity = amountOf(entry.quantity_break, `/quantity_breaks/${index}/quantity_break`)
  if (quantity instanceof Refusal) return quantity
  if (quantity <= 0) return invalid(`/quantity_breaks/${index}/quantity_break`, 'must be positive')
  const fixed = entry.fixed_price ?? null
  const percent = entry.percent_of_base ?? null
  if ((fixed === null) === (percent === null)) {
    return invalid(`/quantity_breaks/${index}`, 'give exactly one of fixed_price and percent_of_base')
  }
  if (fixed !== null) {
    const value = amountOf(fixed, `/quantity_breaks/${index}/fixed_price`)
    return value instanceof Refusal ? value : { quantity, kind: breakKindFixed, value }
  }
  const path = `/quantity_breaks/${index}/percent_of_base`
  const value = amountOf(percent, path)
  if (value instanceof Refusal) return value
  // A percentage of the base (80 means 80%); a break never costs more than the base.
  if (value < 0 || value > 100 * amountUnit) return invalid(path, 'must be a percentage from 0 to 100')
  return { quantity, kind: breakKindPercent, value }
}

/**
 * A batch's settings and its last start date parsed (a batch mostly repeats one or two). Plain
 * fields, not #private ones: this runs once per ingested price.
 */
class PriceWriter implements EntityWriter<PriceInput, PriceChange> {
  private readonly tenant: WriteTarget
  private readonly context: WriteContext
  private readonly strictArticles: boolean
  private readonly strictPricelists: boolean
  private readonly skipDedup: boolean
  private startText: string | null = null
  private startMs = 0

  constructor(tenant: WriteTarget, context: WriteContext) {
    this.tenant = tenant
    this.context = context
    const nowMs = context.nowMs
    this.strictArticles = settingEnabled(tenant.catalog, 'strict.article.validation', nowMs)
    this.strictPricelists = settingEnabled(tenant.catalog, 'strict.pricelist.validation', nowMs)
    this.skipDedup = settingEnabled(tenant.catalog, 'ingest.skip.dedup', nowMs)
  }

  private startInstant(text: string | null | undefined): number {
    if (text === undefined || text === null) return this.context.nowMs
    if (text !== this.startText) {
      this.startMs = writeInstant(text, this.context.nowMs)
      this.startText = text
    }
    return this.startMs
  }

  plan(input: PriceInput): PriceChange | null | Refusal {
    const tenant = this.tenant
    const { nowMs, actor } = this.context
    const { sku, pricelist } = input
    const content = parseContent(input)
    if (content instanceof Refusal) return content
    const from = this.startInstant(input.start_date)
    if (this.strictArticles && tenant.catalog.view('article', sku, from) === null) {
      return invalid('/sku', `article ${sku} does not exist at ${formatInstant(from)} (strict.article.validation)`)
    }
    if (this.strictPricelists && !tenant.catalog.exists('pricelist', pricelist)) {
      return invalid('/pricelist', `pricelist ${pricelist} was never created (strict.pricelist.validation)`)
    }
    const planned = planPriceWrite(
      tenant.prices.versions(pricelist, sku),
      { from, content, writtenAt: nowMs, writtenBy: actor },
      {
        removeLater: input.remove_future_changes === true,
        force: this.skipDedup,
      },
    )
    if (planned === null) return null
    const { versions, changeType } = planned
    return { pricelist, sku, versions, changeType, hash: priceContentHash(content), at: nowMs, by: actor }
  }

  quota(change: PriceChange): Refusal | null {
    return priceQuota(this.tenant, change)
  }

  apply(change: PriceChange, applied: { prices: PriceChange[] }): void {
    this.tenant.prices.apply(change.pricelist, change.sku, change.versions)
    applied.prices.push(change)
  }
}

/** A write that makes a pair live (it had no price, or a deleted one) counts against the plan. */
function priceQuota(tenant: WriteTarget, change: PriceChange): Refusal | null {
  const limit = tenant.limits.prices
  if (limit === null) return null
  const existing = tenant.prices.versions(change.pricelist, change.sku)
  const wasLive = existing.length > 0 && existing[existing.length - 1]!.content !== null
  const count = tenant.prices.livePairCount
  return !wasLive && count + 1 > limit ? quotaExceeded('prices', limit, count) : null
}

/** How to write prices, for `applyBatch` or `applyItems` (its settings are read once, now). */
export function priceWriter(tenant: WriteTarget, context: WriteContext): EntityWriter<PriceInput, PriceChange> {
  return new PriceWriter(tenant, context)
}

/** Writes prices (each item a PriceInput or the refusal of its shape); an outcome per item. */
export function writePrices(
  tenant: WriteTarget,
  context: WriteContext,
  items: readonly (PriceInput | Refusal)[],
): Promise<ItemOutcome[]> {
  return applyBatch(tenant, items, new PriceWriter(tenant, context))
}

/** Soft-deletes prices at their instant; a pair without a price then is refused (not_found). */
export function deletePrices(
  tenant: WriteTarget,
  context: WriteContext,
  items: readonly (PriceDeleteInput | Refusal)[],
): Promise<ItemOutcome[]> {
  const { nowMs, actor } = context
  return applyBatch<PriceDeleteInput, PriceChange>(tenant, items, {
    plan: ({ sku, pricelist, when }) => {
      const at = writeInstant(when, nowMs)
      const planned = planPriceWrite(
        tenant.prices.versions(pricelist, sku),
        { from: at, content: null, writtenAt: nowMs, writtenBy: actor },
        {
          removeLater: false,
          force: false,
        },
      )
      if (planned === null) {
        return new Refusal({
          status: 'not_found',
          message: `No price for ${sku} on ${pricelist} at ${new Date(at).toISOString()}`,
        })
      }
      return { pricelist, sku, versions: planned.versions, changeType: 'deleted', hash: '', at: nowMs, by: actor }
    },
    quota: () => null,
    apply: (change, applied) => {
      tenant.prices.apply(change.pricelist, change.sku, change.versions)
      applied.prices.push(change)
    },
  })
}
