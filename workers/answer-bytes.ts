/**
 * The price query's answer written as UTF-8 bytes straight into a buffer: byte for byte what
 * `answerJson` (./render.ts) gives as text, without building a string per item or per field and
 * without encoding one long string at the end.
 *
 * An item is a byte template: the constant parts are copied from fragments encoded once per
 * distinct value (`,"pricelist":"NET-1","currency_code":"SEK","vat_mode":"NET","net":` is one
 * copy), amounts are written digit by digit from their scaled integers, and codes that are
 * printable ASCII without `"` or `\` (nearly all) are copied character by character; anything else
 * goes through the text renderer for that piece (`jsonString`, `amountJson`), so the two never
 * disagree. The answer is assembled in one scratch buffer per thread and copied once into a buffer
 * of its own (a worker moves it to the main thread without a copy).
 * @module
 */
import { amountUnit } from '../engine/money.js'
import type { PricedItem, statusReasons } from '../engine/pipeline.js'
import { formatInstant } from '../engine/time.js'
import { amountJson, jsonNumber, jsonString } from './render.js'

let scratch = new Uint8Array(64 * 1024)

/** Room for `count` bytes after `at` (doubling); answers the buffer to write to. */
function reserve(at: number, count: number): Uint8Array {
  if (at + count <= scratch.length) return scratch
  let length = scratch.length * 2
  while (at + count > length) length *= 2
  const grown = new Uint8Array(length)
  grown.set(scratch.subarray(0, at))
  scratch = grown
  return grown
}

// The put functions write at `at` into a buffer with room (the caller reserved) and answer the
// position after what they wrote.

export function putFragment(target: Uint8Array, at: number, bytes: Uint8Array): number {
  const length = bytes.length
  if (length > 32) {
    target.set(bytes, at)
  } else {
    for (let index = 0; index < length; index++) target[at + index] = bytes[index]!
  }
  return at + length
}

/** Text that is ASCII already (JSON from the text renderer, digits). */
function putAscii(target: Uint8Array, at: number, text: string): number {
  for (let index = 0; index < text.length; index++) target[at + index] = text.charCodeAt(index)
  return at + text.length
}

const encoder = new TextEncoder()

/** Bytes a string may take as JSON text (`\uXXXX` escapes: 6 per unit, and the quotes). */
function stringRoom(text: string): number {
  return text.length * 6 + 2
}

/** A string as JSON text, the bytes of `jsonString(text)` (room: `stringRoom`). */
function putString(target: Uint8Array, at: number, text: string): number {
  target[at] = 0x22
  const length = text.length
  for (let index = 0; index < length; index++) {
    const unit = text.charCodeAt(index)
    // Printable ASCII without `"` and `\`: its own JSON text (render.ts: plainText).
    if (unit < 0x20 || unit > 0x7e || unit === 0x22 || unit === 0x5c) {
      const encoded = encoder.encodeInto(jsonString(text), target.subarray(at))
      return at + encoded.written
    }
    target[at + 1 + index] = unit
  }
  target[at + 1 + length] = 0x22
  return at + length + 2
}

/** Scaled amounts at or above this are printed by the text renderer (render.ts: scaledPrintMax). */
const scaledPrintMax = 1e15
/** "00" to "99" as character codes, two per number. */
const digitPairs = new Uint8Array(200)
for (let value = 0; value < 100; value++) {
  digitPairs[value * 2] = 0x30 + Math.floor(value / 10)
  digitPairs[value * 2 + 1] = 0x30 + (value % 10)
}

/** The bytes of `amountJson(scaled)`: the integer part, then the fraction without trailing zeros. */
export function putAmount(target: Uint8Array, at: number, scaled: number): number {
  if (!Number.isInteger(scaled) || !(Math.abs(scaled) < scaledPrintMax)) return putAscii(target, at, amountJson(scaled))
  const magnitude = Math.abs(scaled)
  if (scaled < 0 && magnitude !== 0) target[at++] = 0x2d
  const whole = Math.floor(magnitude / amountUnit)
  const units = magnitude - whole * amountUnit
  at = whole < 2 ** 31 ? putSmallWhole(target, at, whole | 0) : putAscii(target, at, String(whole))
  if (units === 0) return at
  // units: 1-9999, four digits after the point, trailing zeros dropped.
  const high = (units / 100) | 0
  const low = units - high * 100
  target[at] = 0x2e
  target[at + 1] = digitPairs[high * 2]!
  if (low === 0) {
    if (high % 10 === 0) return at + 2
    target[at + 2] = digitPairs[high * 2 + 1]!
    return at + 3
  }
  target[at + 2] = digitPairs[high * 2 + 1]!
  target[at + 3] = digitPairs[low * 2]!
  if (low % 10 === 0) return at + 4
  target[at + 4] = digitPairs[low * 2 + 1]!
  return at + 5
}

/** A whole number below 2^31 in decimal. */
function putSmallWhole(target: Uint8Array, at: number, value: number): number {
  if (value < 10) {
    target[at] = 0x30 + value
    return at + 1
  }
  if (value < 100) {
    target[at] = digitPairs[value * 2]!
    target[at + 1] = digitPairs[value * 2 + 1]!
    return at + 2
  }
  let digits = 3
  for (let power = 1_000; power <= value && digits < 10; power *= 10) digits++
  let end = at + digits
  let rest = value
  while (rest >= 100) {
    const next = (rest / 100) | 0
    const pair = (rest - next * 100) * 2
    target[--end] = digitPairs[pair + 1]!
    target[--end] = digitPairs[pair]!
    rest = next
  }
  if (rest >= 10) {
    target[--end] = digitPairs[rest * 2 + 1]!
    target[--end] = digitPairs[rest * 2]!
  } else {
    target[--end] = 0x30 + rest
  }
  return at + digits
}

/** Fragments encoded once per distinct key (a handful per tenant: pricelists, rates, reasons). */
/** Texts as UTF-8 by key, each encoded once (bounded: starts again empty). */
export class Fragments {
  readonly #byKey = new Map<string, Uint8Array>()

  constructor(readonly make: (key: string) => string) {}

  get(key: string): Uint8Array {
    let bytes = this.#byKey.get(key)
    if (bytes === undefined) {
      if (this.#byKey.size >= fragmentsMax) this.#byKey.clear()
      bytes = encoder.encode(this.make(key))
      this.#byKey.set(key, bytes)
    }
    return bytes
  }
}

const fragmentsMax = 4096

/** `,"pricelist":…,"currency_code":…,"vat_mode":…,"net":` by pricelist, then currency and mode. */
const heads = new Map<string, { currency: string; vatMode: string; bytes: Uint8Array }>()

function head(item: PricedItem): Uint8Array {
  const found = heads.get(item.pricelist)
  if (found !== undefined && found.currency === item.currency && found.vatMode === item.vatMode) return found.bytes
  if (heads.size >= fragmentsMax) heads.clear()
  const bytes = encoder.encode(
    ',"pricelist":' +
      jsonString(item.pricelist) +
      ',"currency_code":' +
      jsonString(item.currency) +
      ',"vat_mode":' +
      jsonString(item.vatMode) +
      ',"net":',
  )
  heads.set(item.pricelist, { currency: item.currency, vatMode: item.vatMode, bytes })
  return bytes
}

/** `,"vat_rate":…,"vat_class":…,"inherited":…,"quantity_breaks":[` by rate, class and inheritance. */
const middles = new Map<string, Uint8Array>()
/**
 * The last few middles used, compared by identity of their texts first (items of one answer share
 * the VAT texts of a handful of classes): no key is built for them.
 */
const recentMiddles: { rateText: string; vatClass: string; inherited: boolean; bytes: Uint8Array }[] = []
const recentMiddlesMax = 8

function middle(item: PricedItem): Uint8Array {
  for (let index = 0; index < recentMiddles.length; index++) {
    const recent = recentMiddles[index]!
    if (
      recent.rateText === item.vatRateText &&
      recent.vatClass === item.vatClass &&
      recent.inherited === item.inherited
    )
      return recent.bytes
  }
  const key = JSON.stringify([item.vatRateText, item.vatClass, item.inherited])
  let bytes = middles.get(key)
  if (bytes === undefined) {
    if (middles.size >= fragmentsMax) middles.clear()
    bytes = encoder.encode(
      ',"vat_rate":' +
        jsonNumber(Number(item.vatRateText)) +
        ',"vat_class":' +
        jsonString(item.vatClass) +
        ',"inherited":' +
        item.inherited +
        ',"quantity_breaks":[',
    )
    middles.set(key, bytes)
  }
  if (recentMiddles.length >= recentMiddlesMax) recentMiddles.pop()
  recentMiddles.unshift({ rateText: item.vatRateText, vatClass: item.vatClass, inherited: item.inherited, bytes })
  return bytes
}

const reasonTails = new Fragments((reason) => ',"reason":' + jsonString(reason) + '}')

const itemOpen = encoder.encode('{"sku":')
const vatOpen = encoder.encode(',"vat":')
const grossOpen = encoder.encode(',"gross":')
const breakOpen = encoder.encode('{"quantity_break":')
const breakNet = encoder.encode(',"net":')
const fxNullClose = encoder.encode('],"fx":null}')
const answerOpen = encoder.encode('{"items":[')
const unavailableOpen = encoder.encode('],"unavailable":[')
const answerClose = encoder.encode(']}')
const comma = encoder.encode(',')

/** Room an item needs past its SKU and FX: the fragments and amounts of the base and each break. */
const itemRoom = 256
const breakRoom = 160

/** `net,"vat":vat,"gross":gross` (after a fragment ending in `"net":`). */
function putAmounts(target: Uint8Array, at: number, net: number, vat: number, gross: number): number {
  at = putAmount(target, at, net)
  at = putFragment(target, at, vatOpen)
  at = putAmount(target, at, vat)
  at = putFragment(target, at, grossOpen)
  return putAmount(target, at, gross)
}

function putItem(at: number, item: PricedItem): number {
  const breaks = item.breaks
  const headBytes = head(item)
  const middleBytes = middle(item)
  const target = reserve(
    at,
    itemRoom + breaks.length * breakRoom + stringRoom(item.sku) + headBytes.length + middleBytes.length,
  )
  at = putFragment(target, at, itemOpen)
  at = putString(target, at, item.sku)
  at = putFragment(target, at, headBytes)
  at = putAmounts(target, at, item.net, item.vat, item.gross)
  at = putFragment(target, at, middleBytes)
  for (let index = 0; index < breaks.length; index++) {
    const entry = breaks[index]!
    if (index > 0) target[at++] = 0x2c
    at = putFragment(target, at, breakOpen)
    at = putAmount(target, at, entry.quantity)
    at = putFragment(target, at, breakNet)
    at = putAmounts(target, at, entry.net, entry.vat, entry.gross)
    target[at++] = 0x7d
  }
  const fx = item.fx
  if (fx === null) return putFragment(target, at, fxNullClose)
  const tail =
    '],"fx":{"base":' +
    jsonString(fx.base) +
    ',"quote":' +
    jsonString(fx.quote) +
    ',"rate":' +
    jsonNumber(fx.rate) +
    ',"as_of":' +
    jsonString(formatInstant(fx.asOf)) +
    '}}'
  const room = reserve(at, tail.length * 3)
  return at + encoder.encodeInto(tail, room.subarray(at)).written
}

/**
 * One item's bytes (`itemJson(item, item.pricelist)`, ./render.ts) in this thread's scratch buffer:
 * valid until the next answer or item is written here (an explained answer copies it at once).
 */
export function itemBytesView(item: PricedItem): Uint8Array {
  const end = putItem(0, item)
  return scratch.subarray(0, end)
}

/**
 * Fields written after each item's own (each `,"name":value`, as UTF-8): item i's are bytes
 * `starts[i]` to `ends[i]` of `arena`, where whoever keeps them puts many side by side
 * (./prior-price-cache.ts).
 */
export interface ItemTails {
  readonly arena: Uint8Array
  readonly starts: readonly number[]
  readonly ends: readonly number[]
}

/** The bytes of `answerJson(items, unavailable)` (./render.ts), in a buffer of their own. */
export function answerBytes(
  items: readonly PricedItem[],
  unavailable: readonly { sku: string; reason: (typeof statusReasons)[number] }[],
  /** The items' tails, or null. */
  tails: ItemTails | null = null,
): Buffer {
  const view = answerBytesView(items, unavailable, tails)
  const answer = Buffer.allocUnsafeSlow(view.length)
  answer.set(view)
  return answer
}

/**
 * As `answerBytes`, in this thread's scratch buffer: valid until the next answer is rendered here
 * (a worker copies it into its answer arena at once, ./answer-arena.ts).
 */
export function answerBytesView(
  items: readonly PricedItem[],
  unavailable: readonly { sku: string; reason: (typeof statusReasons)[number] }[],
  tails: ItemTails | null = null,
): Buffer {
  let at = putFragment(reserve(0, answerOpen.length), 0, answerOpen)
  for (let index = 0; index < items.length; index++) {
    if (index > 0) at = putFragment(reserve(at, 1), at, comma)
    at = putItem(at, items[index]!)
    if (tails !== null) {
      // The tail goes before the item's closing brace, which is written again after it.
      const { arena } = tails
      const tailStart = tails.starts[index]!
      const tailEnd = tails.ends[index]!
      const target = reserve(at, tailEnd - tailStart + 1)
      at--
      for (let from = tailStart; from < tailEnd; from++) target[at++] = arena[from]!
      target[at++] = 0x7d
    }
  }
  at = putFragment(reserve(at, unavailableOpen.length), at, unavailableOpen)
  for (let index = 0; index < unavailable.length; index++) {
    const entry = unavailable[index]!
    const tail = reasonTails.get(entry.reason)
    const target = reserve(at, 1 + itemOpen.length + stringRoom(entry.sku) + tail.length)
    if (index > 0) target[at++] = 0x2c
    at = putFragment(target, at, itemOpen)
    at = putString(target, at, entry.sku)
    at = putFragment(target, at, tail)
  }
  at = putFragment(reserve(at, answerClose.length), at, answerClose)
  return Buffer.from(scratch.buffer, 0, at)
}
