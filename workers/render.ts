/**
 * The price query item as the API shows it, shared by the main thread and the workers (which
 * serialise their answers themselves, so that JSON work leaves the main thread too).
 * @module
 */
import { toNumber } from '../engine/money.js'
import type { PricedItem } from '../engine/pipeline.js'
import { formatInstant } from '../engine/time.js'

export function renderItem(item: PricedItem, pricelist: string): Record<string, unknown> {
  return {
    sku: item.sku,
    pricelist,
    currency_code: item.currency,
    vat_mode: item.vatMode,
    net: toNumber(item.net),
    vat: toNumber(item.vat),
    gross: toNumber(item.gross),
    vat_rate: Number(item.vatRateText),
    vat_class: item.vatClass,
    inherited: item.inherited,
    quantity_breaks: item.breaks.map((entry) => ({
      quantity_break: toNumber(entry.quantity),
      net: toNumber(entry.net),
      vat: toNumber(entry.vat),
      gross: toNumber(entry.gross),
    })),
    fx: item.fx === null ? null : { base: item.fx.base, quote: item.fx.quote, rate: item.fx.rate, as_of: formatInstant(item.fx.asOf) },
  }
}
