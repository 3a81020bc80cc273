/**
 * The floor of an explained query's answer format: the least work any implementation of it does,
 * measured on the same queries as the real one (bench/profile-explain.ts). What it keeps is what
 * the format asks for:
 *  - the plain query (the answer's items);
 *  - per candidate of each SKU: its amount from its cell, its version's start, the VAT on it, and
 *    its entry (its head's bytes per reason, three amounts digit by digit);
 *  - per SKU: the item's bytes, the trace's steps (their constant parts, the winner's five amounts),
 *    the inputs' bytes as long as the real ones (the pricelist and FX inputs, one price input per
 *    priced candidate, the VAT mapping and rate) and their SHA-256 in hex.
 * What it leaves out, each a cost the real writer pays: any allocation per SKU or candidate, the
 * look-ups of the VAT mapping (its input bytes are looked up once per SKU id here, an ideal cache),
 * the version holes and their list, the traced pipeline for a winner with breaks, the unavailable
 * SKUs, the assertions that the explanation agrees with the plain answer, and every branch a real
 * query may take off the fast path. Its bytes are not the answer's (its entries are the same
 * length, not the same text): it measures work, not output.
 * `lean` measures a leaner format instead: a losing candidate with one amount (its gross, which
 * decided it) instead of net, VAT and gross, and the inputs hashed from compact bytes (the
 * pricelist and FX inputs as one 32-byte digest per query, a price input as its candidate's index
 * and start, the VAT inputs as their starts) instead of their texts.
 * @module
 */
import * as crypto from 'node:crypto'
import { explainPlan, versionStart } from '../engine/explain/from-cells.js'
import { fastPlan } from '../engine/explain/fast.js'
import { mappingInputBytes, rateInputBytes } from '../engine/explain/explain.js'
import { type AnswerOptions, PriceContext, type PricedItem, vatOfGross, vatOfNet } from '../engine/pipeline.js'
import { fastAmount, fastFound, queryPrices } from '../engine/query.js'
import { itemBytesView, putAmount, putFragment } from '../workers/answer-bytes.js'
import type { QueryInput } from '../workers/execute.js'
import type { Catalog } from '../engine/catalog.js'
import type { PriceReader } from '../engine/price-replica.js'

const encoder = new TextEncoder()
const bytes = (text: string) => encoder.encode(text)

const out = new Uint8Array(4 << 20)
const hashed = new Uint8Array(16 << 10)
const hashedView = new DataView(hashed.buffer)
const traceStart = bytes(
  ',"trace":{"steps":[{"step":"candidates","pricelists":["CHILD-1","GROSS-1","NET-1","NET-2","NET-3","NET-4","NET-5","NET-6","NET-7","NET-8"]}',
)
const inheritance = bytes(',{"step":"inheritance","path":["NET-7"],"source":"NET-7"}')
const versionOpen = bytes(',{"step":"version","pricelist":"NET-7","start_date":"2026-11-28T20:50:53.739Z",')
const writer = bytes('"written_at":"2026-11-28T20:50:53.739Z","written_by":"bench-client"')
const amountKey = bytes(',"amount":')
const vatStep = bytes(
  '},{"step":"vat","vat_class":"standard","mapping_start":"2026-11-28T20:50:53.739Z","rate_start":"2026-11-28T20:50:53.739Z","rate":25,"mode":"NET"}',
)
const amountsOpen = bytes(',{"step":"amounts","net":')
const vatKey = bytes(',"vat":')
const grossKey = bytes(',"gross":')
const candidatesOpen = bytes('}],"candidates":[')
const head = bytes('{"pricelist":"NET-1","outcome":"lost","reason":"lost_to_lower","amounts":{"net":')
const closeAmounts = bytes('}}')
const hashOpen = bytes('],"inputs_hash":"sha256:')
const hashClose = bytes('"}}')
const digitsOf = new Map<number, Uint8Array>()

/** The bytes of a VAT mapping and rate input per SKU id, looked up once: the floor's ideal cache. */
const vatBytes: (Uint8Array | undefined)[] = []

/** The item's bytes and its trace's steps up to the candidates: constant parts and the winner's amounts. */
function putHead(start: number, item: PricedItem): number {
  let at = start
  const itemBytes = itemBytesView(item)
  out.set(itemBytes.subarray(0, itemBytes.length - 1), at)
  at += itemBytes.length - 1
  at = putFragment(out, at, traceStart)
  at = putFragment(out, at, inheritance)
  at = putFragment(out, at, versionOpen)
  at = putFragment(out, at, writer)
  at = putAmount(out, putFragment(out, at, amountKey), item.net)
  at = putFragment(out, at, vatStep)
  at = putAmount(out, putFragment(out, at, amountsOpen), item.net)
  at = putAmount(out, putFragment(out, at, vatKey), item.vat)
  at = putAmount(out, putFragment(out, at, grossKey), item.gross)
  at = putFragment(out, at, candidatesOpen)
  return at
}

/** The floor of one explained query's answer; answers its length. */
export function explainFloor(catalog: Catalog, book: PriceReader, input: QueryInput, lean = false): number {
  const context = new PriceContext(catalog, book, input.at, input.taxArea)
  const options: AnswerOptions = { currency: input.currency, rounding: null, quantity: input.quantity }
  const result = queryPrices(context, { skus: input.skus, pricelists: input.pricelists, options, sortOrder: null })
  const plan = explainPlan(context, input.pricelists, options)
  const fast = fastPlan(context, plan, null)!
  const block = Buffer.concat([...fast.fxBytes, ...fast.pricelistBytes].flatMap((input) => [input, bytes('\n')]))
  const selected = plan.selected
  let at = 0
  for (const item of result.items) {
    const sku = item.sku
    const skuId = context.skuId(sku)
    const vatInfo = context.vat(sku, skuId)
    if (typeof vatInfo === 'number') continue
    const row = context.prices.currentRow(skuId, context.at)
    at = putHead(at, item)
    // Lean: the pricelist and FX inputs as one 32-byte digest (per query), not their ~1 KB of text.
    const blockLength = lean ? 32 : block.length
    hashed.set(block.subarray(0, blockLength), 0)
    let hashedAt = blockLength
    let skuFrom = -1
    let skuLength = 0
    for (let index = 0; index < selected.length; index++) {
      const candidate = selected[index]!
      const amount = fastAmount(context, candidate, row, skuId, sku, plan.quantity)
      if (!(amount >= 0)) continue
      const start = versionStart(context, candidate.chain[fastFound.link]!, row, skuId)
      if (lean) {
        // Lean: a price input as its candidate's index and its start's 8 bytes, not its text.
        hashed[hashedAt++] = index
        hashedView.setFloat64(hashedAt, start)
        hashedAt += 8
      } else {
        let digits = digitsOf.get(start)
        if (digits === undefined) {
          digits = bytes(`${start}`)
          digitsOf.set(start, digits)
        }
        hashedAt = putFragment(hashed, hashedAt, fast.pricePrefixes[index % fast.pricePrefixes.length]!)
        if (skuFrom < 0) {
          skuFrom = hashedAt
          skuLength = encoder.encodeInto(sku, hashed.subarray(hashedAt)).written
        } else hashed.copyWithin(hashedAt, skuFrom, skuFrom + skuLength)
        hashedAt += skuLength
        hashed[hashedAt++] = 0x7c
        hashedAt = putFragment(hashed, hashedAt, digits)
        hashed[hashedAt++] = 0x0a
      }
      let net: number
      let vat: number
      let gross: number
      if (candidate.net) {
        vat = vatOfNet(amount, vatInfo.rate, plan.precision)
        net = amount
        gross = amount + vat
      } else {
        vat = vatOfGross(amount, vatInfo.rate, plan.precision)
        net = amount - vat
        gross = amount
      }
      if (index > 0) out[at++] = 0x2c
      if (lean) {
        // Lean: a candidate's one compared amount, its gross.
        at = putAmount(out, putFragment(out, at, head), gross)
        out[at++] = 0x7d
        continue
      }
      at = putAmount(out, putFragment(out, at, head), net)
      at = putAmount(out, putFragment(out, at, vatKey), vat)
      at = putAmount(out, putFragment(out, at, grossKey), gross)
      at = putFragment(out, at, closeAmounts)
    }
    let vatInputs = vatBytes[skuId]
    if (vatInputs === undefined) {
      const mapping = mappingInputBytes(context, sku)?.bytes ?? new Uint8Array(0)
      const rate = rateInputBytes(context, vatInfo.classCode)?.bytes ?? new Uint8Array(0)
      vatInputs = Buffer.concat([mapping, bytes('\n'), rate])
      vatBytes[skuId] = vatInputs
    }
    // Lean: the VAT mapping's and rate's starts (16 bytes), not their texts.
    const vatLength = lean ? 16 : vatInputs.length
    hashed.set(vatInputs.subarray(0, vatLength), hashedAt)
    hashedAt += vatLength
    at = putFragment(out, at, hashOpen)
    const hex = crypto.hash('sha256', hashed.subarray(0, hashedAt), 'hex')
    for (let index = 0; index < hex.length; index++) out[at + index] = hex.charCodeAt(index)
    at = putFragment(out, at + hex.length, hashClose)
  }
  return at
}
