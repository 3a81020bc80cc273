/**
 * The batch price query: the best price per SKU across the selected pricelists.
 *
 * Control plane once per query: the pricelists (with their FX to the answer currency, and the
 * chain of ancestors each inherits from unchanged), the VAT precision, the rounding profile. Data
 * plane per (SKU, pricelist), the fast path: a cell of the SKU's row (engine/current-rows.ts) gives
 * the pricelist's own price, or an unchanged ancestor's, and a version with quantity breaks gives
 * the amount the quantity selects; integer arithmetic, no allocation, only the gross compared.
 * Everything else (rules, conversions along the chain, bundles, breaks in another currency) takes
 * the full pipeline. The winner of each SKU is then answered with exactly the amounts the full
 * pipeline gives (test/engine/query-fast-path.test.ts compares the two).
 * @module
 */
import { assert } from './assert.js'
import { cellExtras, cellNoPrice } from './current-rows.js'
import { convertAmount, type FxResolved } from './fx.js'
import {
  outOfRange,
  priceItem,
  resolveBase,
  Status,
  statusReasons,
  vatOfGross,
  vatOfNet,
  vatStatus,
  type AnswerOptions,
  type PricedAmounts,
  type PriceContext,
  type PricedItem,
  type PricelistInfo,
  type Resolved,
} from './pipeline.js'
import { scaleQuantity } from './money.js'
import { applyRounding } from './rounding.js'
import { pricelistDepthMax } from './limits.js'
import type { PriceReader } from './price-replica.js'
import type { VatInfo } from './vat-column.js'

export interface QueryRequest {
  readonly skus: readonly string[]
  /** Selected pricelist codes (active at the instant), sorted: a tie goes to the first. */
  readonly pricelists: readonly string[]
  readonly options: AnswerOptions
  readonly sortOrder: 'ASC' | 'DESC' | null
  /**
   * When given (and `sortOrder` is null), the price-book id of each item's SKU is pushed to it, in
   * the order of the items (-1: none): who keeps something per SKU beside the answer finds it by id.
   */
  readonly itemSkuIds?: number[]
}

export interface QueryResult {
  readonly items: PricedItem[]
  readonly unavailable: { sku: string; reason: (typeof statusReasons)[number] }[]
}

/** Per-query facts of one selected pricelist. */
export interface Candidate {
  readonly code: string
  readonly info: PricelistInfo | null
  /** Own prices may take the fast path: a live pricelist with a VAT mode and no rules. */
  readonly fast: boolean
  /** Its VAT mode is NET (the fast path adds the VAT). */
  readonly net: boolean
  /** FX to the answer currency: null when the currencies are equal, undefined when no rate exists. */
  readonly fx: FxResolved | null | undefined
  /**
   * Fast path: price-book ids (-1: no prices) of the pricelist and of the ancestors whose price it
   * inherits as it stands (no rules, the same currency and VAT mode), nearest first. The first with
   * a live version in force prices the SKU.
   */
  readonly chain: readonly number[]
  /** The codes of the chain's pricelists (the answer's source). */
  readonly chainCodes: readonly string[]
  /** An ancestor past the chain would convert its price or apply rules: then the full path answers. */
  readonly chainOpen: boolean
}

function candidates(context: PriceContext, pricelists: readonly string[], currency: string): Candidate[] {
  // Once per query, before any row is read.
  context.prices.refreshRows()
  return pricelists.map((code) => {
    const info = context.pricelist(code)
    const fx = info === null || info.currency === currency ? null : (context.fx(info.currency, currency) ?? undefined)
    const fast = info !== null && info.vatMode !== null && info.rules.length === 0
    const chain: number[] = []
    const chainCodes: string[] = []
    let chainOpen = false
    for (let current = fast ? info : null, depth = 0; current !== null; depth++) {
      chain.push(current.id)
      chainCodes.push(current.code)
      if (current.parent === null) break
      // resolveBase answers no_price through a parent that is not live or has no VAT mode.
      const parent = context.pricelist(current.parent)
      if (parent === null || parent.vatMode === null) break
      if (
        parent.rules.length > 0 ||
        parent.currency !== info!.currency ||
        parent.vatMode !== info!.vatMode ||
        depth >= pricelistDepthMax
      ) {
        chainOpen = true
        break
      }
      current = parent
    }
    return { code, info, fast, net: fast && info.vatMode === 'NET', fx, chain, chainCodes, chainOpen }
  })
}

/**
 * SKUs per step of a query. A step first finds the SKUs' ids, then their VAT slots and rows, then
 * prices them: each of the first two loops makes independent reads that miss the CPU caches (the
 * dictionary, the VAT column and the rows together are tens of MB for 100,000 SKUs), so the CPU
 * overlaps them, and the pricing loop finds what it reads in the cache. One SKU at a time, each
 * miss would wait for the one before.
 */
const stepSkus = 64
const stepIds = new Int32Array(stepSkus)
const stepRows = new Int32Array(stepSkus)
const stepVat: (VatInfo | Status)[] = new Array<VatInfo | Status>(stepSkus).fill(Status.noVatClass)
/** A SKU already answered earlier in the query. */
const duplicate = -2

/** Best = lowest gross in the requested currency after rounding; ties to the first pricelist code. */
export function queryPrices(context: PriceContext, request: QueryRequest): QueryResult {
  const items: PricedItem[] = []
  const unavailable: QueryResult['unavailable'] = []
  const options = request.options
  const selected = candidates(context, request.pricelists, options.currency)
  const precision = context.vatPrecision(options.currency)
  const prices = context.prices
  const at = context.at
  const column = context.vatColumn()
  const mark = column.nextMark()
  /** SKUs without an id (no price anywhere) are checked for duplicates by code. */
  let unknownSeen: Set<string> | null = null
  /** The row cells the fast path reads first (its candidates' own pricelists). */
  const ownIds: number[] = []
  for (const candidate of selected) if (candidate.fast && candidate.chain[0]! >= 0) ownIds.push(candidate.chain[0]!)
  const lastCell = ownIds.length === 0 ? 0 : Math.max(...ownIds)
  const withExtras = prices.hasExtrasBlocks()
  const skus = request.skus
  const itemSkuIds = request.itemSkuIds
  assert(itemSkuIds === undefined || request.sortOrder === null, 'item ids follow the items unsorted')
  for (let start = 0; start < skus.length; start += stepSkus) {
    const count = Math.min(stepSkus, skus.length - start)
    prices.skuIds(skus, start, count, stepIds)
    let touched = 0
    let rows = prices.rows
    for (let step = 0; step < count; step++) {
      const skuId = stepIds[step]!
      if (skuId < 0) continue
      if (!column.markOnce(skuId, mark)) {
        stepIds[step] = duplicate
        continue
      }
      const vat = vatStatus(column.get(skus[start + step]!, skuId, at))
      stepVat[step] = vat
      const row = typeof vat === 'number' ? -1 : prices.currentRow(skuId, at)
      stepRows[step] = row
      if (row >= 0) touched += prices.rows[row + lastCell]!
    }
    if (prices.rows !== rows) {
      // The rows grew (the first query after the book did): row indexes from before are stale.
      rows = prices.rows
      for (let step = 0; step < count; step++) {
        if (stepIds[step]! >= 0 && stepRows[step]! >= 0) stepRows[step] = prices.currentRow(stepIds[step]!, at)
      }
    }
    // The extras blocks (breaks) the filled cells point to, read together for the same reason.
    for (let step = 0; step < (withExtras ? count : 0); step++) {
      const row = stepRows[step]!
      if (stepIds[step]! < 0 || row < 0) continue
      for (let index = 0; index < ownIds.length; index++) {
        const cell = rows[row + ownIds[index]!]!
        if (cell >= cellExtras) touched += prices.extrasAt(cell - cellExtras)
      }
    }
    if (touched !== touched) rowsTouched++
    for (let step = 0; step < count; step++) {
      const skuId = stepIds[step]!
      if (skuId === duplicate) continue
      const sku = skus[start + step]!
      let best: PricedItem | Status
      if (skuId < 0) {
        if ((unknownSeen ??= new Set()).has(sku)) continue
        unknownSeen.add(sku)
        best = bestOf(context, sku, -1, context.vat(sku, -1), -1, selected, options, precision, null)
      } else {
        best = bestOf(context, sku, skuId, stepVat[step]!, stepRows[step]!, selected, options, precision, null)
      }
      if (typeof best === 'number') unavailable.push({ sku, reason: statusReasons[best] })
      else {
        items.push(best)
        itemSkuIds?.push(skuId)
      }
    }
  }
  if (request.sortOrder !== null) {
    const direction = request.sortOrder === 'ASC' ? 1 : -1
    items.sort((left, right) => direction * (left.gross - right.gross))
  }
  return { items, unavailable }
}

/** Counts steps whose touched cells summed to NaN (unfilled cells): keeps the touching reads live. */
// biome-ignore lint/correctness/noUnusedVariables: written, never read, so that the reads are not optimised away
let rowsTouched = 0

/**
 * Until when an answer stays right by time alone (writes are counted separately): the first
 * scheduled change among what it was computed from. NaN: not cached (it depended on inheritance,
 * rules or bundles, whose inputs are not tracked).
 */
export interface Validity {
  until: number
}

/** bestOf for one SKU on its own: its id, VAT and row looked up here. */
function bestOfSku(
  context: PriceContext,
  sku: string,
  selected: readonly Candidate[],
  options: AnswerOptions,
  precision: number,
  validity: Validity | null,
): PricedItem | Status {
  const skuId = context.skuId(sku)
  const vat = context.vat(sku, skuId)
  const row = skuId >= 0 && typeof vat !== 'number' ? context.prices.currentRow(skuId, context.at) : -1
  return bestOf(context, sku, skuId, vat, row, selected, options, precision, validity)
}

/**
 * The best price of one SKU over the candidates (see the module comment). `skuId`: its id in the
 * price book or -1; `vat`: its VAT in the context's area; `row`: its current row or -1.
 */
function bestOf(
  context: PriceContext,
  sku: string,
  skuId: number,
  vat: VatInfo | Status,
  row: number,
  selected: readonly Candidate[],
  options: AnswerOptions,
  precision: number,
  validity: Validity | null,
): PricedItem | Status {
  const prices = context.prices
  const at = context.at
  if (validity !== null) trackValidity(context, sku, skuId, selected, validity)
  const rounding = options.rounding
  // Scaled like break quantities, exactly from the quantity's decimal (as priceItem does).
  const quantity = scaleQuantity(options.quantity)
  let status: Status = Status.noPrice
  let bestGross = Number.POSITIVE_INFINITY
  let bestIndex = -1
  let bestItem: PricedItem | null = null
  /** The fast-path winner's cell (a plain price or an extras cursor) and the link of its chain it came from. */
  let bestCell = 0
  let bestLink = 0
  /** The fast-path winner's sales in the answer's currency, rounded (its net on NET, gross on GROSS). */
  let bestSales = 0
  // NET candidates on the fast path compete by sales first: with a rate >= 0, gross = sales +
  // VAT(sales) rises with sales (VAT rounds half-up, which never falls as its input rises), so the
  // lowest sales has the lowest gross, and equal sales equal gross. The VAT is then computed once.
  const knownVat = typeof vat === 'number' ? null : vat
  // A SKU without an id has no price of its own anywhere: only inherited or bundle prices.
  const fastVat = skuId >= 0 ? knownVat : null
  const byNetSales = fastVat !== null && fastVat.rate.numerator >= 0
  let netSales = Number.POSITIVE_INFINITY
  let netIndex = -1
  let netCell = 0
  let netLink = 0
  // The SKU's row of cells in force (main thread), else each pair's run.
  const rows = prices.rows
  for (let index = 0; index < selected.length; index++) {
    const candidate = selected[index]!
    if (candidate.fast && fastVat !== null) {
      const pricelistId = candidate.chain[0]!
      let cell = cellNoPrice
      if (pricelistId >= 0) {
        if (row >= 0) {
          cell = rows[row + pricelistId]!
          // NaN: not filled yet.
          if (cell !== cell) cell = prices.fillCell(row, skuId, pricelistId, at)
        } else {
          cell = prices.cellAt(pricelistId, skuId, at)
        }
      }
      let amount = cell
      let link = 0
      if (!(cell > cellNoPrice && cell < cellExtras)) {
        amount = otherAmount(context, candidate, cell, row, skuId, sku, quantity)
        // No price anywhere along the chain, and nothing past it that could give one.
        if (amount === cellNoPrice) continue
        cell = found.cell
        link = found.link
      }
      if (amount === amount) {
        const fx = candidate.fx
        if (fx === undefined) {
          if (Status.noFxRate > status) status = Status.noFxRate
          continue
        }
        const converted = fx === null ? amount : convertAmount(amount, fx)
        if (outOfRange(converted)) {
          if (Status.noFxRate > status) status = Status.noFxRate
          continue
        }
        const sales = rounding === null ? converted : applyRounding(rounding, converted)
        let gross = sales
        if (candidate.net) {
          if (byNetSales) {
            // Strictly lower: the pricelists come sorted, so a tie keeps the code that sorts first.
            if (sales < netSales) {
              netSales = sales
              netIndex = index
              netCell = cell
              netLink = link
            }
            continue
          }
          gross = sales + vatOfNet(sales, fastVat.rate, precision)
        }
        if (gross < bestGross) {
          bestGross = gross
          bestIndex = index
          bestItem = null
          bestCell = cell
          bestLink = link
          bestSales = sales
        }
        continue
      }
    }
    const resolved = resolveBase(context, candidate.code, sku)
    if (typeof resolved === 'number') {
      if (resolved > status) status = resolved
      continue
    }
    const priced = priceItem(context, resolved, sku, options, candidate.code, knownVat, precision)
    if (typeof priced === 'number') {
      if (priced > status) status = priced
      continue
    }
    if (priced.gross < bestGross) {
      bestGross = priced.gross
      bestIndex = index
      bestItem = priced
    }
  }
  if (netIndex >= 0) {
    const gross = netSales + vatOfNet(netSales, fastVat!.rate, precision)
    if (gross < bestGross || (gross === bestGross && netIndex < bestIndex)) {
      bestGross = gross
      bestIndex = netIndex
      bestItem = null
      bestCell = netCell
      bestLink = netLink
      bestSales = netSales
    }
  }
  if (bestIndex < 0) return status
  if (bestItem !== null) return bestItem
  const candidate = selected[bestIndex]!
  const winner = candidate.info!
  if (bestCell < cellExtras) {
    // A plain price (the pricelist's own or, unchanged, an ancestor's): its amounts are what the
    // comparison computed, as priceItem computes them (FX, rounding, then VAT in the list's mode).
    const net = winner.vatMode === 'NET'
    const vatAmount = net ? bestGross - bestSales : vatOfGross(bestSales, fastVat!.rate, precision)
    return {
      sku,
      pricelist: winner.code,
      currency: options.currency,
      vatMode: winner.vatMode!,
      net: net ? bestSales : bestSales - vatAmount,
      vat: vatAmount,
      gross: net ? bestGross : bestSales,
      vatRateText: fastVat!.rateText,
      vatClass: fastVat!.classCode,
      inherited: bestLink > 0,
      breaks: noBreaks,
      fx: candidate.fx ?? null,
    }
  }
  // A version with extras: priced in full once from its block (breaks and fields), as resolveBase
  // gives it for the pricelist's own version or, unchanged, an ancestor's (inherited).
  const content = prices.contentAtCursor(bestCell - cellExtras)
  const resolved: Resolved = {
    sales: content.sales,
    fields: content.fields,
    breaks: content.breaks,
    currency: winner.currency,
    vatMode: winner.vatMode!,
    inherited: bestLink > 0,
    source: candidate.chainCodes[bestLink]!,
    startDate: null,
  }
  const priced = priceItem(context, resolved, sku, options, winner.code, fastVat, precision)
  assert(typeof priced !== 'number' && priced.gross === bestGross, 'the fast path and the pipeline agree')
  return priced
}

const noBreaks: readonly PricedAmounts[] = Object.freeze([])

/**
 * A candidate's pre-VAT amount when its own cell is not a plain price (engine/current-rows.ts):
 * the amount its quantity selects from breaks, or the price of the first unchanged ancestor with
 * one (no own price and no bundle rule); cellNoPrice when there is none and the full path could
 * find none either; NaN when the full path must answer (a bundle rule, conversion or rules past the
 * chain, breaks in another currency, a break out of range).
 */
function otherAmount(
  context: PriceContext,
  candidate: Candidate,
  own: number,
  row: number,
  skuId: number,
  sku: string,
  quantity: number,
): number {
  let cell = own
  found.link = 0
  if (cell === cellNoPrice) {
    if (context.hasBundleRule(sku)) return Number.NaN
    cell = inheritedCell(context.prices, candidate.chain, row, skuId, context.at)
    if (cell === cellNoPrice) return candidate.chainOpen ? Number.NaN : cellNoPrice
  }
  found.cell = cell
  if (cell < cellExtras) return cell
  return candidate.fx === null ? context.prices.amountForQuantity(cell - cellExtras, quantity) : Number.NaN
}

/** Where `otherAmount` found its amount: the cell, and the link of the candidate's chain. */
const found = { cell: 0, link: 0 }

/**
 * A fast candidate's pre-VAT amount for one SKU with an id and a VAT, read as `bestOf` reads it
 * (an explanation prices its losing candidates with it): the amount, with `fastFound` saying which
 * cell and which link of the chain gave it; cellNoPrice when neither the chain nor the full path
 * has a price; NaN when the full path must answer. `row`: the SKU's current row or -1.
 */
export function fastAmount(
  context: PriceContext,
  candidate: Candidate,
  row: number,
  skuId: number,
  sku: string,
  quantity: number,
): number {
  const prices = context.prices
  const pricelistId = candidate.chain[0]!
  let cell = cellNoPrice
  if (pricelistId >= 0) {
    if (row >= 0) {
      cell = prices.rows[row + pricelistId]!
      if (cell !== cell) cell = prices.fillCell(row, skuId, pricelistId, context.at)
    } else {
      cell = prices.cellAt(pricelistId, skuId, context.at)
    }
  }
  if (cell > cellNoPrice && cell < cellExtras) {
    found.cell = cell
    found.link = 0
    return cell
  }
  return otherAmount(context, candidate, cell, row, skuId, sku, quantity)
}

/** Where `fastAmount` found its amount. */
export const fastFound: { readonly cell: number; readonly link: number } = found

/**
 * The first cell with a live version along a candidate's chain of unchanged ancestors (past its
 * own pricelist; `found.link` says which), or cellNoPrice.
 */
function inheritedCell(prices: PriceReader, chain: readonly number[], row: number, skuId: number, at: number): number {
  const rows = prices.rows
  for (let link = 1; link < chain.length; link++) {
    const pricelistId = chain[link]!
    if (pricelistId < 0) continue
    let cell: number
    if (row >= 0) {
      cell = rows[row + pricelistId]!
      if (cell !== cell) cell = prices.fillCell(row, skuId, pricelistId, at)
    } else {
      cell = prices.cellAt(pricelistId, skuId, at)
    }
    if (cell !== cellNoPrice) {
      found.link = link
      return cell
    }
  }
  return cellNoPrice
}

/** Fills `validity` for one SKU: the runs of every candidate and the SKU's VAT mapping and rate. */
function trackValidity(
  context: PriceContext,
  sku: string,
  skuId: number,
  selected: readonly Candidate[],
  validity: Validity,
): void {
  if (context.hasBundleRule(sku)) {
    validity.until = Number.NaN
    return
  }
  let until = context.vatNextChange(sku)
  for (const candidate of selected) {
    // The pricelist and its ancestors: an inherited price depends on theirs.
    let info = candidate.info
    for (let depth = 0; info !== null && depth <= pricelistDepthMax; depth++) {
      if (info.rules.length > 0) {
        validity.until = Number.NaN
        return
      }
      if (skuId >= 0 && info.id >= 0)
        until = Math.min(until, context.prices.nextChangeAfter(info.id, skuId, context.at))
      info = info.parent === null ? null : context.pricelist(info.parent)
    }
  }
  validity.until = until
}

/** Currencies of the selected pricelists and their ancestors (what FX conversions may use). */
export function chainCurrencies(context: PriceContext, selected: readonly Candidate[]): string[] {
  const currencies = new Set<string>()
  for (const candidate of selected) {
    let info = candidate.info
    for (let depth = 0; info !== null && depth <= pricelistDepthMax; depth++) {
      currencies.add(info.currency)
      info = info.parent === null ? null : context.pricelist(info.parent)
    }
  }
  return [...currencies]
}

/**
 * The best price of one SKU and how long that answer holds (see Validity), for answer caches.
 * `selected` comes from `selectCandidates`.
 */
export function bestWithValidity(
  context: PriceContext,
  sku: string,
  selected: readonly Candidate[],
  options: AnswerOptions,
  validity: Validity,
): PricedItem | Status {
  return bestOfSku(context, sku, selected, options, context.vatPrecision(options.currency), validity)
}

export function selectCandidates(
  context: PriceContext,
  pricelists: readonly string[],
  currency: string,
): readonly Candidate[] {
  return candidates(context, pricelists, currency)
}

/** The best price of one SKU over pricelist codes (single reads and tests). */
export function bestPrice(
  context: PriceContext,
  sku: string,
  pricelists: readonly string[],
  options: AnswerOptions,
): PricedItem | Status {
  return bestOfSku(
    context,
    sku,
    candidates(context, pricelists, options.currency),
    options,
    context.vatPrecision(options.currency),
    null,
  )
}
