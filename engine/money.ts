/**
 * Money as scaled integers: an amount is an integer count of 10^-4 units held in a double (exact
 * below 2^53; `amountAbsMax` keeps every stored amount well inside). The only place with amount
 * arithmetic. Rounding is half-up in the commercial sense (ties away from zero, as decimal.js
 * ROUND_HALF_UP). Products that could pass 2^53 are computed in BigInt; the common small case stays
 * in doubles, where it is exact.
 * @module
 */
import { Decimal } from 'decimal.js'
import { assert } from './assert.js'
import { amountAbsMax } from './limits.js'

/** Decimals kept for amounts. */
export const amountScale = 4
export const amountUnit = 10_000

const decimal = Decimal.clone({ precision: 40, rounding: Decimal.ROUND_HALF_UP })

const decimalPattern = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/

/**
 * The decimal text of a JSON number or numeric string, or null. A number gives its shortest
 * round-trip text, which is the decimal the client wrote.
 */
export function decimalText(input: unknown): string | null {
  if (typeof input === 'number') return Number.isFinite(input) ? String(input) : null
  if (typeof input !== 'string') return null
  const text = input.trim()
  return decimalPattern.test(text) ? text : null
}

/**
 * Parses a JSON number or numeric string to scaled units, rounding half-up to 4 decimals.
 * Null when it is not a finite decimal number or lies outside ±amountAbsMax.
 */
export function parseAmount(input: unknown): number | null {
  const text = decimalText(input)
  if (text === null) return null
  // Fast path: at most 4 decimals, so text × 10^4 is an integer the double product rounds onto.
  if (/^[+-]?\d{1,11}(\.\d{1,4})?$/.test(text)) {
    const scaled = Math.round(Number(text) * amountUnit)
    return Math.abs(scaled) > amountAbsMax * amountUnit ? null : scaled === 0 ? 0 : scaled
  }
  const value = new decimal(text)
  if (value.abs().greaterThan(amountAbsMax)) return null
  const scaled = value.toDecimalPlaces(amountScale, Decimal.ROUND_HALF_UP).times(amountUnit).toNumber()
  // "-0.00001" rounds to -0: one zero, so that stored content and its hash do not depend on the sign.
  return scaled === 0 ? 0 : scaled
}

let lastQuantity = Number.NaN
let lastQuantityScaled = 0

/**
 * A quantity (in units) to scaled units, half-up to 4 decimals from its decimal text as
 * parseAmount reads it: `Math.round(q * 10^4)` would round a tie such as 1.49995 by its binary
 * neighbour (14999.499999999998) instead. Beyond ±amountAbsMax a positive quantity is above every
 * break. The last answer is kept: a price query asks this for each item with one quantity.
 */
export function scaleQuantity(quantity: number): number {
  if (quantity === lastQuantity) return lastQuantityScaled
  const scaled = parseAmount(quantity) ?? (quantity > 0 ? Number.MAX_SAFE_INTEGER : 0)
  lastQuantity = quantity
  lastQuantityScaled = scaled
  return scaled
}

/** Scaled units to a JSON number: n / 10^4 prints as the exact decimal (at most 15 digits). */
export function toNumber(scaled: number): number {
  return scaled / amountUnit
}

/** Scaled units to a canonical decimal string. */
export function toDecimalString(scaled: number): string {
  return new decimal(scaled).dividedBy(amountUnit).toFixed()
}

/**
 * round_half_up(n / d) for an integer |n| < 2^53 and an integer d > 0, exactly: the double quotient
 * may be off by one, so the remainder (exact in doubles) corrects it before rounding.
 */
function divideRound(numerator: number, denominator: number): number {
  let quotient = Math.trunc(numerator / denominator)
  let remainder = numerator - quotient * denominator
  if (numerator >= 0) {
    if (remainder < 0) {
      quotient -= 1
      remainder += denominator
    } else if (remainder >= denominator) {
      quotient += 1
      remainder -= denominator
    }
  } else if (remainder > 0) {
    quotient += 1
    remainder -= denominator
  } else if (remainder <= -denominator) {
    quotient -= 1
    remainder += denominator
  }
  if (Math.abs(remainder) * 2 >= denominator) quotient += numerator < 0 ? -1 : 1
  return quotient
}

/**
 * round_half_up(a × b / c) for integers a, b and a positive integer c, exactly.
 * The fast path needs |a × b| < 2^52 (so that quotient × c stays exact); otherwise BigInt.
 */
export function mulDivRound(a: number, b: number, c: number): number {
  assert(c > 0, 'mulDivRound divisor must be positive')
  const product = a * b
  if (Math.abs(product) < 2 ** 52 && c < 2 ** 52) return divideRound(product, c)
  const big = BigInt(a) * BigInt(b)
  const divisor = BigInt(c)
  let quotient = big / divisor
  const remainder = big - quotient * divisor
  const twice = (remainder < 0n ? -remainder : remainder) * 2n
  if (twice >= divisor) quotient += big < 0n ? -1n : 1n
  return Number(quotient)
}

/** Rounds scaled units to `decimals` (0-4) decimals, half-up, staying in scaled units. */
export function roundTo(scaled: number, decimals: number): number {
  assert(decimals >= 0 && decimals <= amountScale, 'decimals out of range')
  if (decimals === amountScale) return scaled
  const step = 10 ** (amountScale - decimals)
  return divideRound(scaled, step) * step
}

/**
 * A decimal (percentage, exchange rate) as an exact fraction numerator/denominator with
 * denominator 10^k, from its canonical text. Null when the text is not a plain decimal.
 */
export interface Fraction {
  readonly numerator: number
  readonly denominator: number
}

export function parseFraction(text: string, decimalsMax: number): Fraction | null {
  const match = /^(-?)(\d+)(?:\.(\d+))?$/.exec(text)
  if (match === null) return null
  const fraction = (match[3] ?? '').replace(/0+$/, '')
  if (fraction.length > decimalsMax) return null
  const denominator = 10 ** fraction.length
  const numerator = Number(`${match[2]}${fraction}`) * (match[1] === '-' ? -1 : 1)
  if (!Number.isSafeInteger(numerator)) return null
  return { numerator, denominator }
}

/**
 * A double from a price rule (CEL evaluates in doubles) to scaled units: the value is read to 15
 * significant digits, which removes binary noise such as 8.991000000000001, then rounded half-up.
 */
export function fromRuleResult(value: number): number | null {
  if (!Number.isFinite(value)) return null
  return parseAmount(value.toPrecision(15))
}
