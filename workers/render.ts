/**
 * The price query item as the API shows it, shared by the main thread and the workers (which
 * serialise their answers themselves, so that JSON work leaves the main thread too).
 *
 * `renderItem` gives the object; `itemJson` and `answerJson` write the same JSON text as
 * JSON.stringify of those objects, field by field in the same order, without building the objects
 * (about 40% less CPU per item). Amounts print exactly as JSON.stringify prints the doubles
 * `renderItem` holds (19.99, never 19.990000000000002). The query answer itself is written as bytes
 * by ./answer-bytes.ts; `answerJson` is the text it must equal byte for byte
 * (test/workers/answer-bytes.test.ts), and `itemJson` renders single reads and cached items.
 * @module
 */
import { amountScale, amountUnit, toNumber } from '../engine/money.js'
import type { PricedItem, statusReasons } from '../engine/pipeline.js'
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
    fx:
      item.fx === null
        ? null
        : { base: item.fx.base, quote: item.fx.quote, rate: item.fx.rate, as_of: formatInstant(item.fx.asOf) },
  }
}

/** Printable ASCII without `"` and `\`: such a string is its own JSON text between quotes. */
const plainText = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/

/** A string as JSON text, exactly as JSON.stringify writes it. */
export function jsonString(text: string): string {
  return plainText.test(text) ? `"${text}"` : JSON.stringify(text)
}

/**
 * `jsonString` for the few distinct values of a field (pricelist, currency, VAT mode and class):
 * a map lookup instead of a scan per item.
 */
const quotedTexts = new Map<string, string>()
const quotedTextsMax = 4096

export function quoted(text: string): string {
  let json = quotedTexts.get(text)
  if (json === undefined) {
    json = jsonString(text)
    if (quotedTexts.size >= quotedTextsMax) quotedTexts.clear()
    quotedTexts.set(text, json)
  }
  return json
}

/** A number as JSON text, exactly as JSON.stringify writes it (null when not finite). */
export function jsonNumber(value: number): string {
  return Number.isFinite(value) ? String(value) : 'null'
}

/** `.` and the significant digits of units/10^4 (index 1-9999), made on first use. */
const fractionTexts = new Array<string | undefined>(amountUnit)

function fractionText(units: number): string {
  let text = fractionTexts[units]
  if (text === undefined) {
    text = `.${String(units).padStart(amountScale, '0')}`.replace(/0+$/, '')
    fractionTexts[units] = text
  }
  return text
}

/** Scaled amounts at or above this print through the double (never in practice: amounts stay far below). */
const scaledPrintMax = 1e15

/**
 * A scaled amount as JSON text: exactly `jsonNumber(toNumber(scaled))`, the double `renderItem`
 * holds printed as JSON.stringify prints it. For an integer below 10^15 that double prints as the
 * exact decimal (it has at most 15 significant digits, and the shortest round-trip text of a
 * double is unique at that length): the integer part, then the fraction without trailing zeros.
 * Printing those from integers costs a fifth of printing a double (about 35 vs 150 ns here; V8
 * caches number texts, but an answer's amounts are mostly distinct).
 */
export function amountJson(scaled: number): string {
  if (!Number.isInteger(scaled) || !(Math.abs(scaled) < scaledPrintMax)) return jsonNumber(toNumber(scaled))
  const magnitude = Math.abs(scaled)
  const whole = Math.floor(magnitude / amountUnit)
  const units = magnitude - whole * amountUnit
  const sign = scaled < 0 && magnitude !== 0 ? '-' : ''
  return units === 0 ? sign + whole : sign + whole + fractionText(units)
}

/** VAT rate texts as JSON numbers, `jsonNumber(Number(text))`: a handful of distinct rates per tenant. */
const rateJsonTexts = new Map<string, string>()
const rateJsonTextsMax = 1024

function rateJson(rateText: string): string {
  let text = rateJsonTexts.get(rateText)
  if (text === undefined) {
    text = jsonNumber(Number(rateText))
    if (rateJsonTexts.size >= rateJsonTextsMax) rateJsonTexts.clear()
    rateJsonTexts.set(rateText, text)
  }
  return text
}

/**
 * `JSON.stringify(renderItem(item, pricelist))`, written directly; `taxArea`, when given, is added
 * as a last field `tax_area` (the single read's answer). Plain concatenation of short pieces:
 * no object is built, JSON.stringify's generic walk is skipped, and amounts print from integers.
 */
export function itemJson(item: PricedItem, pricelist: string, taxArea: string | null = null): string {
  let text =
    '{"sku":' +
    jsonString(item.sku) +
    ',"pricelist":' +
    quoted(pricelist) +
    ',"currency_code":' +
    quoted(item.currency) +
    ',"vat_mode":' +
    quoted(item.vatMode) +
    ',"net":' +
    amountJson(item.net) +
    ',"vat":' +
    amountJson(item.vat) +
    ',"gross":' +
    amountJson(item.gross) +
    ',"vat_rate":' +
    rateJson(item.vatRateText) +
    ',"vat_class":' +
    quoted(item.vatClass) +
    (item.inherited ? ',"inherited":true,"quantity_breaks":[' : ',"inherited":false,"quantity_breaks":[')
  const breaks = item.breaks
  for (let index = 0; index < breaks.length; index++) {
    const entry = breaks[index]!
    text +=
      (index === 0 ? '{"quantity_break":' : ',{"quantity_break":') +
      amountJson(entry.quantity) +
      ',"net":' +
      amountJson(entry.net) +
      ',"vat":' +
      amountJson(entry.vat) +
      ',"gross":' +
      amountJson(entry.gross) +
      '}'
  }
  const fx = item.fx
  text +=
    fx === null
      ? '],"fx":null'
      : '],"fx":{"base":' +
        quoted(fx.base) +
        ',"quote":' +
        quoted(fx.quote) +
        ',"rate":' +
        jsonNumber(fx.rate) +
        ',"as_of":' +
        jsonString(formatInstant(fx.asOf)) +
        '}'
  return taxArea === null ? text + '}' : text + ',"tax_area":' + quoted(taxArea) + '}'
}

/**
 * The price query's answer, `JSON.stringify({items, unavailable})` with items rendered as
 * `renderItem(item, item.pricelist)`, written directly. One join of the item texts gives a flat
 * string (cheaper than flattening one long concatenation later).
 */
export function answerJson(
  items: readonly PricedItem[],
  unavailable: readonly { sku: string; reason: (typeof statusReasons)[number] }[],
): string {
  const texts = new Array<string>(items.length)
  for (let index = 0; index < items.length; index++) texts[index] = itemJson(items[index]!, items[index]!.pricelist)
  const missing = new Array<string>(unavailable.length)
  for (let index = 0; index < unavailable.length; index++) {
    const entry = unavailable[index]!
    missing[index] = '{"sku":' + jsonString(entry.sku) + ',"reason":' + quoted(entry.reason) + '}'
  }
  return '{"items":[' + texts.join(',') + '],"unavailable":[' + missing.join(',') + ']}'
}
