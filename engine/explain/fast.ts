/**
 * The explanation of a SKU whose every candidate takes the query's fast path (the common case: own
 * or unchanged ancestors' prices, no rules, conversions or bundles), without an object or an input
 * text per candidate. The outcomes go into typed arrays, and the inputs are marked per pricelist,
 * price version and FX rate, then written as UTF-8 straight into a buffer in the order their texts
 * sort (the plan orders them once per query) and hashed there: the join and the hash of the texts
 * were half of an explanation's time. The winner's steps still come from the traced pipeline (one
 * candidate per SKU). Equal, byte for byte once rendered, to the full pipeline's explanation
 * (./explain.ts `explainPrice`; test/workers/explain-query.test.ts); a SKU this path cannot take
 * (a candidate off the fast path, no VAT, an unknown SKU) goes to ./from-cells.ts.
 * @module
 */
import * as crypto from 'node:crypto'
import { cellExtras, cellNoPrice } from '../current-rows.js'
import { convertAmount, type FxResolved } from '../fx.js'
import { outOfRange, Status, vatOfGross, vatOfNet, type PriceContext } from '../pipeline.js'
import { fastAmount, fastFound } from '../query.js'
import { applyRounding, roundingTier, type CompiledTier } from '../rounding.js'
import type { VatInfo } from '../vat-column.js'
import { fxInput, mappingInputBytes, rateInputBytes, roundingInput, type InputBytes } from './explain.js'
import { versionStart, type ExplainPlan } from './from-cells.js'

const encoder = new TextEncoder()

/** SHA-256 of bytes in hex; the one-shot `crypto.hash` (Node 20.12+) when there is one. */
const sha256Hex: (bytes: Uint8Array) => string =
  typeof crypto.hash === 'function'
    ? (bytes) => crypto.hash('sha256', bytes, 'hex')
    : (bytes) => crypto.createHash('sha256').update(bytes).digest('hex')

/** Version starts as their input texts' digits (`${start}`), bounded: starts again empty. */
const starts = new Map<number, Uint8Array>()
const startsMax = 65_536

/** A version start as its input text's digits (`${start}`). */
function startBytes(start: number): Uint8Array {
  let bytes = starts.get(start)
  if (bytes === undefined) {
    if (starts.size >= startsMax) starts.clear()
    bytes = encoder.encode(`${start}`)
    starts.set(start, bytes)
  }
  return bytes
}

/** What the fast explanations of one query share: its candidates' inputs, indexed in sort order. */
export interface FastPlan {
  readonly plan: ExplainPlan
  /** Per candidate, per link of its chain: the index of its pricelist input in `pricelistBytes` (-1: none). */
  readonly chainInputs: readonly Int32Array[]
  /** The distinct pricelist inputs, sorted, as UTF-8. */
  readonly pricelistBytes: readonly Uint8Array[]
  /** Per candidate, per link: the index of the link's code in `pricePrefixes` (codes in the order of their price inputs). */
  readonly versionCodes: readonly Int32Array[]
  /** `price|<code>|` per code, in the order the price inputs of one SKU sort. */
  readonly pricePrefixes: readonly Uint8Array[]
  /** Per candidate: the index of its FX input in `fxBytes` (-1: none). */
  readonly fxInputs: Int32Array
  readonly fxBytes: readonly Uint8Array[]
  /** The rounding profile's input, or null. */
  readonly rounding: Uint8Array | null
  /** Per candidate, per link: the inheritance path walked to a price found there (the chain up to it). */
  readonly paths: readonly (readonly string[])[][]
}

/**
 * What a fast winner's steps are written from, as the traced pipeline records them (./explain.ts
 * Recorder): resolveBase's walk and version, then priceItem's FX, rounding, VAT and amounts. One
 * object per explanation, filled again for each SKU (read it before the next).
 */
export interface WinnerFacts {
  /** The inheritance path walked, and the pricelist whose version gave the price. */
  path: readonly string[]
  source: string
  /** The version's start and its sales amount (the cell). */
  start: number
  cell: number
  /** FX into the answer's currency (null: none), and the amount after it. */
  fx: FxResolved | null
  converted: number
  /** The rounding profile's tier and output, when the query rounds. */
  rounds: boolean
  tier: CompiledTier | null
  rounded: number
  vatClass: string
  rateText: string
  mode: string
  mappingStart: number | null
  rateStart: number | null
}

/**
 * The plan of the fast explanations of a query, or null when its inputs cannot be ordered without
 * their texts: a code followed by `|` that starts another code (codes may hold `|`), which the
 * order of `price|<code>|…` texts would interleave.
 */
export function fastPlan(context: PriceContext, plan: ExplainPlan, roundingCode: string | null): FastPlan | null {
  // What the plan is made of, as text: queries over the same lists at instants with the same
  // versions and rates share it (the plan itself is the query's).
  const rounding = roundingCode === null ? '' : roundingInput(context, roundingCode)
  let key = rounding
  for (let index = 0; index < plan.selected.length; index++) {
    const candidate = plan.selected[index]!
    const fx = candidate.fx === undefined || candidate.fx === null ? '' : fxInput(candidate.fx)
    key += `\u0000${plan.chainInputs[index]!.join('\u0001')}\u0002${candidate.chainCodes.join('\u0001')}\u0002${fx}`
  }
  let parts = fastParts.get(key)
  if (parts === undefined) {
    if (fastParts.size >= fastPartsMax) fastParts.clear()
    parts = fastPartsOf(plan, rounding)
    fastParts.set(key, parts)
  }
  return parts === null ? null : { ...parts, plan }
}

/** The parts of fast plans by what they are made of (bounded: cleared when full). */
const fastParts = new Map<string, Omit<FastPlan, 'plan'> | null>()
const fastPartsMax = 256

function fastPartsOf(plan: ExplainPlan, rounding: string): Omit<FastPlan, 'plan'> | null {
  const selected = plan.selected
  const pricelistTexts = new Set<string>()
  const codes = new Set<string>()
  const fxTexts = new Set<string>()
  for (let index = 0; index < selected.length; index++) {
    for (const input of plan.chainInputs[index]!) if (input !== null) pricelistTexts.add(input)
    const candidate = selected[index]!
    for (const code of candidate.chainCodes) codes.add(code)
    if (candidate.fx !== undefined && candidate.fx !== null) fxTexts.add(fxInput(candidate.fx))
  }
  const codeOrder = [...codes].sort((left, right) => (`${left}|` < `${right}|` ? -1 : 1))
  for (const code of codeOrder)
    for (const other of codeOrder) if (other !== code && other.startsWith(`${code}|`)) return null
  const pricelistOrder = [...pricelistTexts].sort()
  const fxOrder = [...fxTexts].sort()
  const pricelistIndex = new Map(pricelistOrder.map((text, index) => [text, index]))
  const codeIndex = new Map(codeOrder.map((code, index) => [code, index]))
  const fxIndex = new Map(fxOrder.map((text, index) => [text, index]))
  return {
    chainInputs: plan.chainInputs.map(
      (links) => new Int32Array(links.map((input) => (input === null ? -1 : pricelistIndex.get(input)!))),
    ),
    pricelistBytes: pricelistOrder.map((text) => encoder.encode(text)),
    versionCodes: selected.map((candidate) => new Int32Array(candidate.chainCodes.map((code) => codeIndex.get(code)!))),
    pricePrefixes: codeOrder.map((code) => encoder.encode(`price|${code}|`)),
    fxInputs: new Int32Array(
      selected.map((candidate) =>
        candidate.fx === undefined || candidate.fx === null ? -1 : fxIndex.get(fxInput(candidate.fx))!,
      ),
    ),
    fxBytes: fxOrder.map((text) => encoder.encode(text)),
    rounding: rounding === '' ? null : encoder.encode(rounding),
    paths: selected.map((candidate) => candidate.chainCodes.map((_, link) => candidate.chainCodes.slice(0, link + 1))),
  }
}

/** One SKU's fast explanation, reused from SKU to SKU (read it before the next). */
export class FastExplanation {
  /** Per candidate: Status.ok when priced (its amounts below), else the status it stopped at. */
  status: Uint8Array
  net: Float64Array
  vat: Float64Array
  gross: Float64Array
  /** The winner's index, -1 when no candidate priced the SKU. */
  winner = -1
  /** The furthest status a candidate reached when none priced the SKU. */
  unavailable: Status = Status.noPrice
  /** "sha256:<hex>" over the inputs. */
  inputsHash = ''
  /** Per priced candidate: the link of its chain that gave the price, its cell, the price and after FX. */
  readonly #links: Int32Array
  readonly #cells: Float64Array
  readonly #converted: Float64Array
  /** The SKU's VAT, and the starts of its mapping and rate (once a candidate is priced). */
  #vatInfo: VatInfo | null = null
  #mappingStart: number | null = null
  #rateStart: number | null = null
  /** The VAT rate input of the last class asked for (one query: one instant and tax area). */
  #rateClass: string | null = null
  #rate: InputBytes | null = null
  #sku = ''
  #pricelistMarks: Uint8Array
  #codeMarks: Uint8Array
  #starts: Float64Array
  #fxMarks: Uint8Array
  #hashed = new Uint8Array(4096)
  /** The FX and pricelist inputs' bytes of the last SKU whose marks differed, and those marks. */
  #block: Uint8Array | null = null
  readonly #blockMarks: Uint8Array

  /** The SKU last explained. */
  get sku(): string {
    return this.#sku
  }

  constructor(readonly fast: FastPlan) {
    const count = fast.plan.selected.length
    this.status = new Uint8Array(count)
    this.net = new Float64Array(count)
    this.vat = new Float64Array(count)
    this.gross = new Float64Array(count)
    this.#links = new Int32Array(count)
    this.#cells = new Float64Array(count)
    this.#converted = new Float64Array(count)
    this.#pricelistMarks = new Uint8Array(fast.pricelistBytes.length)
    this.#codeMarks = new Uint8Array(fast.pricePrefixes.length)
    this.#starts = new Float64Array(fast.pricePrefixes.length)
    this.#fxMarks = new Uint8Array(fast.fxBytes.length)
    this.#blockMarks = new Uint8Array(fast.fxBytes.length + fast.pricelistBytes.length)
  }

  /**
   * Explains `sku` into this object; false (and nothing to read) when a candidate needs the full
   * pipeline, the SKU is unknown or has no VAT in the tax area: ./from-cells.ts answers it then.
   */
  explain(context: PriceContext, sku: string): boolean {
    const { plan } = this.fast
    const selected = plan.selected
    const skuId = context.skuId(sku)
    if (skuId < 0) return false
    const vatInfo = context.vat(sku, skuId)
    if (typeof vatInfo === 'number') return false
    const row = context.prices.currentRow(skuId, context.at)
    this.#pricelistMarks.fill(0)
    this.#codeMarks.fill(0)
    this.#fxMarks.fill(0)
    const rounding = plan.options.rounding
    let priced = false
    let winner = -1
    let unavailable: Status = Status.noPrice
    for (let index = 0; index < selected.length; index++) {
      const candidate = selected[index]!
      if (!candidate.fast) return false
      const amount = fastAmount(context, candidate, row, skuId, sku, plan.quantity)
      if (amount !== amount) return false
      const chainInputs = this.fast.chainInputs[index]!
      const link = amount === cellNoPrice ? chainInputs.length - 1 : fastFound.link
      for (let walked = 0; walked <= link; walked++) {
        const input = chainInputs[walked]!
        if (input >= 0) this.#pricelistMarks[input] = 1
      }
      if (amount === cellNoPrice) {
        this.status[index] = Status.noPrice
        continue
      }
      this.#links[index] = link
      this.#cells[index] = fastFound.cell
      const code = this.fast.versionCodes[index]![link]!
      if (this.#codeMarks[code] === 0) {
        this.#codeMarks[code] = 1
        this.#starts[code] = versionStart(context, candidate.chain[link]!, row, skuId)
      }
      const fx: FxResolved | null | undefined = candidate.fx
      const converted = fx === undefined ? Number.NaN : fx === null ? amount : convertAmount(amount, fx)
      if (fx === undefined || outOfRange(converted)) {
        this.status[index] = Status.noFxRate
        if (unavailable < Status.noFxRate) unavailable = Status.noFxRate
        continue
      }
      if (fx !== null) this.#fxMarks[this.fast.fxInputs[index]!] = 1
      this.#converted[index] = converted
      priced = true
      const sales = rounding === null ? converted : applyRounding(rounding, converted)
      let net: number
      let vat: number
      let gross: number
      if (candidate.net) {
        vat = vatOfNet(sales, vatInfo.rate, plan.precision)
        net = sales
        gross = sales + vat
      } else {
        vat = vatOfGross(sales, vatInfo.rate, plan.precision)
        net = sales - vat
        gross = sales
      }
      this.status[index] = Status.ok
      this.net[index] = net
      this.vat[index] = vat
      this.gross[index] = gross
      if (winner < 0 || gross < this.gross[winner]!) winner = index
    }
    this.winner = winner
    this.unavailable = unavailable
    this.#sku = sku
    this.#vatInfo = vatInfo
    this.inputsHash = `sha256:${sha256Hex(this.#inputBytes(context, sku, priced ? vatInfo.classCode : null))}`
    return true
  }

  /**
   * The winner's steps' values, from what `explain` kept (the same object each time); null when
   * the winner's version has extras (breaks, fields), which the traced pipeline answers.
   */
  winnerFacts(): Readonly<WinnerFacts> | null {
    const winner = this.winner
    const cell = this.#cells[winner]!
    if (cell >= cellExtras) return null
    const plan = this.fast.plan
    const candidate = plan.selected[winner]!
    const link = this.#links[winner]!
    const facts = this.#facts
    facts.path = this.fast.paths[winner]![link]!
    facts.source = candidate.chainCodes[link]!
    facts.start = this.#starts[this.fast.versionCodes[winner]![link]!]!
    facts.cell = cell
    facts.fx = candidate.fx ?? null
    const converted = this.#converted[winner]!
    facts.converted = converted
    const rounding = plan.options.rounding
    facts.rounds = rounding !== null
    facts.tier = rounding === null ? null : roundingTier(rounding, converted)
    facts.rounded = rounding === null ? converted : applyRounding(rounding, converted)
    const vatInfo = this.#vatInfo!
    facts.vatClass = vatInfo.classCode
    facts.rateText = vatInfo.rateText
    facts.mode = candidate.info!.vatMode!
    facts.mappingStart = this.#mappingStart
    facts.rateStart = this.#rateStart
    return facts
  }

  readonly #facts: WinnerFacts = {
    path: [],
    source: '',
    start: 0,
    cell: 0,
    fx: null,
    converted: 0,
    rounds: false,
    tier: null,
    rounded: 0,
    vatClass: '',
    rateText: '',
    mode: '',
    mappingStart: null,
    rateStart: null,
  }

  /**
   * The inputs of the SKU just priced, as their sorted texts joined by newlines would be in UTF-8:
   * FX rates, pricelists, price versions, the rounding profile, the VAT mapping and rate (kinds
   * sort in that order, ./explain.ts `inputKinds`; a fast SKU reads no article or bundle).
   */
  #inputBytes(context: PriceContext, sku: string, vatClass: string | null): Uint8Array {
    const fast = this.fast
    let at = 0
    // The FX and pricelist inputs come first: mostly the same for every SKU of a query, so the
    // bytes of the last SKU's are copied whole when its marks were the same.
    if (this.#sameBlock()) {
      const block = this.#block!
      this.#reserve(0, block.length)
      this.#hashed.set(block, 0)
      at = block.length
    } else {
      for (let index = 0; index < this.#fxMarks.length; index++)
        if (this.#fxMarks[index] === 1) at = this.#next(at, fast.fxBytes[index]!)
      for (let index = 0; index < this.#pricelistMarks.length; index++)
        if (this.#pricelistMarks[index] === 1) at = this.#next(at, fast.pricelistBytes[index]!)
      this.#block = this.#hashed.slice(0, at)
      this.#blockMarks.set(this.#fxMarks, 0)
      this.#blockMarks.set(this.#pricelistMarks, this.#fxMarks.length)
    }
    // Each price input is its prefix, the SKU, `|` and the start: the SKU's bytes are written once
    // and copied within the buffer after (`copyWithin`) for the next.
    let skuFrom = -1
    let skuLength = 0
    for (let index = 0; index < this.#codeMarks.length; index++) {
      if (this.#codeMarks[index] === 0) continue
      at = this.#next(at, fast.pricePrefixes[index]!)
      if (skuFrom < 0) {
        skuFrom = at
        skuLength = this.#putSku(at, sku) + 1
        this.#hashed[at + skuLength - 1] = 0x7c
      } else {
        this.#reserve(at, skuLength)
        this.#hashed.copyWithin(at, skuFrom, skuFrom + skuLength)
      }
      at += skuLength
      const start = startBytes(this.#starts[index]!)
      this.#reserve(at, start.length)
      this.#hashed.set(start, at)
      at += start.length
    }
    if (fast.rounding !== null) at = this.#next(at, fast.rounding)
    this.#mappingStart = null
    this.#rateStart = null
    if (vatClass !== null) {
      const mapping = mappingInputBytes(context, sku)
      if (mapping !== null) {
        at = this.#next(at, mapping.bytes)
        this.#mappingStart = mapping.start
      }
      // The class's rate is the same for every SKU of the query: kept while the class repeats.
      if (vatClass !== this.#rateClass) {
        this.#rateClass = vatClass
        this.#rate = rateInputBytes(context, vatClass)
      }
      if (this.#rate !== null) {
        at = this.#next(at, this.#rate.bytes)
        this.#rateStart = this.#rate.start
      }
    }
    return this.#hashed.subarray(0, at)
  }

  /** An input's bytes at `at`, after a newline unless it is the first; answers the position after. */
  #next(at: number, bytes: Uint8Array): number {
    this.#reserve(at, bytes.length + 1)
    const hashed = this.#hashed
    if (at > 0) hashed[at++] = 0x0a
    if (bytes.length > 16) hashed.set(bytes, at)
    else for (let index = 0; index < bytes.length; index++) hashed[at + index] = bytes[index]!
    return at + bytes.length
  }

  /** The SKU as UTF-8 at `at` (ASCII byte by byte, else encoded), with room for `|` after; answers its length. */
  #putSku(at: number, sku: string): number {
    this.#reserve(at, sku.length * 3 + 1)
    const hashed = this.#hashed
    for (let index = 0; index < sku.length; index++) {
      const unit = sku.charCodeAt(index)
      if (unit >= 0x80) return encoder.encodeInto(sku, hashed.subarray(at)).written
      hashed[at + index] = unit
    }
    return sku.length
  }

  /** Whether the FX and pricelist marks are those of `#block`. */
  #sameBlock(): boolean {
    if (this.#block === null) return false
    const marks = this.#blockMarks
    const fxCount = this.#fxMarks.length
    for (let index = 0; index < fxCount; index++) if (marks[index] !== this.#fxMarks[index]) return false
    for (let index = 0; index < this.#pricelistMarks.length; index++)
      if (marks[fxCount + index] !== this.#pricelistMarks[index]) return false
    return true
  }

  #reserve(at: number, count: number): void {
    if (at + count <= this.#hashed.length) return
    let length = this.#hashed.length * 2
    while (at + count > length) length *= 2
    const grown = new Uint8Array(length)
    grown.set(this.#hashed.subarray(0, at))
    this.#hashed = grown
  }
}
