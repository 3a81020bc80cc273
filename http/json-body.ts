/**
 * Reads a JSON request body into values the handlers can trust, with one pass over the bytes
 * before `JSON.parse` and more work only for the rare body that needs it:
 * - nesting depth: a body of 8 MiB of `[` would otherwise become 8 million nested arrays (hundreds
 *   of MB and a long pause of the collector) before any schema saw it;
 * - Unicode: the bytes must be UTF-8 (RFC 8259), and a string or key that is not well-formed
 *   (a lone UTF-16 surrogate written as a `\u` escape) is refused, since storage (msgpackr) would
 *   turn it into U+FFFD and a value would change across a restart;
 * - exact numbers: a number literal that no double holds in its shortest form (more than 15
 *   significant digits, e.g. 0.100049999999999999999999999) becomes a string holding its decimal
 *   text, so an amount is rounded once, from what the client wrote, not from a double. The decimal
 *   fields (amounts, quantities, rates) take numeric strings; other number fields refuse it.
 * The scan counts digit runs outside strings and notes `\u` escapes inside them; a body with no run
 * longer than 15 digits and no escape costs that pass and nothing more (the common case).
 * @module
 */
import { isUtf8 } from 'node:buffer'

const quote = 0x22
const backslash = 0x5c
const openBracket = 0x5b
const closeBracket = 0x5d
const openBrace = 0x7b
const closeBrace = 0x7d
const letterU = 0x75
const digitZero = 0x30
const dot = 0x2e
const letterE = 0x65
const capitalE = 0x45
const plus = 0x2b
const minus = 0x2d

/** Significant digits that every double holds exactly (DBL_DIG): up to this many, String(Number(t)) is t's value. */
export const exactDigitsMax = 15

/** What one pass over a JSON text found. */
export interface JsonScan {
  /** More than `max` arrays and objects inside each other. */
  readonly deep: boolean
  /** Some number literal has a run of more than 15 digits (it may need its text). */
  readonly longNumber: boolean
  /** Some string has a `\u` escape (it may hold a lone surrogate). */
  readonly unicodeEscape: boolean
}

/** One pass over the bytes: nesting depth, long digit runs outside strings, `\u` escapes inside them. */
export function scanJson(bytes: Uint8Array, depthMax: number): JsonScan {
  let depth = 0
  let digits = 0
  let longNumber = false
  let unicodeEscape = false
  const length = bytes.length
  for (let index = 0; index < length; index++) {
    const byte = bytes[index]!
    if (byte === quote) {
      digits = 0
      // Skip the string: to the next quote not escaped.
      for (index++; index < length; index++) {
        const inner = bytes[index]!
        if (inner === backslash) {
          if (bytes[index + 1] === letterU) unicodeEscape = true
          index++
        } else if (inner === quote) break
      }
    } else if ((byte - digitZero) >>> 0 < 10) {
      if (++digits > exactDigitsMax) longNumber = true
    } else if (byte === dot || byte === letterE || byte === capitalE || byte === plus || byte === minus) {
      // Inside a number literal: its mantissa's digits are counted together (an exponent's too,
      // which only sends a few harmless literals down the exact path).
    } else {
      digits = 0
      if (byte === openBracket || byte === openBrace) {
        if (++depth > depthMax) return { deep: true, longNumber, unicodeEscape }
      } else if (byte === closeBracket || byte === closeBrace) {
        depth--
      }
    }
  }
  return { deep: false, longNumber, unicodeEscape }
}

/** Whether the JSON text in `bytes` opens more than `max` arrays and objects inside each other. */
export function jsonNestsDeeperThan(bytes: Uint8Array, max: number): boolean {
  return scanJson(bytes, max).deep
}

/** Why a body was refused: `path` is a JSON pointer ('' for the whole body). */
export class JsonBodyProblem extends Error {
  constructor(
    readonly kind: 'deep' | 'encoding' | 'syntax' | 'unicode',
    readonly path: string,
    message: string,
  ) {
    super(message)
  }
}

/**
 * Parses a JSON body; throws JsonBodyProblem when it nests deeper than `depthMax`, is not UTF-8,
 * is not JSON or holds a string that is not well-formed Unicode.
 */
export function readJsonBody(bytes: Buffer, depthMax: number): unknown {
  const scan = scanJson(bytes, depthMax)
  if (scan.deep)
    throw new JsonBodyProblem('deep', '', `JSON nests deeper than ${depthMax} levels of arrays and objects`)
  // toString would turn bytes that are not UTF-8 into U+FFFD silently: a value the client never sent.
  if (!isUtf8(bytes)) throw new JsonBodyProblem('encoding', '', 'the body is not UTF-8')
  let text = bytes.toString('utf8')
  if (scan.longNumber) text = quoteInexactNumbers(text)
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (error) {
    throw new JsonBodyProblem('syntax', '', (error as Error).message)
  }
  if (scan.unicodeEscape) {
    const path = illFormedPath(value, '')
    if (path !== null)
      throw new JsonBodyProblem('unicode', path, 'is not well-formed Unicode (it holds a lone UTF-16 surrogate)')
  }
  return value
}

// --- Exact number literals -------------------------------------------------------------------

const numberPattern = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/

/** A decimal's value as sign, significant digits and exponent: equal texts name equal values. */
function canonicalDecimal(text: string): string {
  const negative = text.startsWith('-')
  const unsigned = negative || text.startsWith('+') ? text.slice(1) : text
  const marker = unsigned.search(/[eE]/)
  const mantissa = marker < 0 ? unsigned : unsigned.slice(0, marker)
  let exponent = marker < 0 ? 0 : Number(unsigned.slice(marker + 1))
  const point = mantissa.indexOf('.')
  const whole = point < 0 ? mantissa : mantissa.slice(0, point)
  const fraction = point < 0 ? '' : mantissa.slice(point + 1)
  let digits = whole + fraction
  exponent += whole.length
  const leading = digits.length - digits.replace(/^0+/, '').length
  digits = digits.slice(leading).replace(/0+$/, '')
  exponent -= leading
  return digits === '' ? '0' : `${negative ? '-' : ''}${digits}e${exponent}`
}

/** Significant digits of a number literal: its mantissa without leading and trailing zeros. */
function significantDigits(literal: string): number {
  const marker = literal.search(/[eE]/)
  const mantissa = (marker < 0 ? literal : literal.slice(0, marker)).replace(/[-.]/g, '')
  return mantissa.replace(/^0+/, '').replace(/0+$/, '').length
}

/**
 * Whether a JSON number literal must be read from its text: more than 15 significant digits and not
 * the shortest text of its double (0.30000000000000004, what JavaScript writes for 0.1 + 0.2, is;
 * its double gives it back exactly, so it stays a number).
 */
export function needsText(literal: string): boolean {
  if (significantDigits(literal) <= exactDigitsMax) return false
  const value = Number(literal)
  return !Number.isFinite(value) || canonicalDecimal(String(value)) !== canonicalDecimal(literal)
}

/**
 * The JSON text with every number literal in a value position that `needsText` picks written as a
 * string of its text. Anything that is not JSON stays as written, so `JSON.parse` refuses it as
 * before (a literal in a key position is never quoted: that would make `{1.2345678901234567: 1}` valid).
 */
export function quoteInexactNumbers(text: string): string {
  const parts: string[] = []
  const containers: number[] = []
  let copied = 0
  // The last structural character outside strings, or 0 at the start: a value may follow it.
  let previous = 0
  const length = text.length
  for (let index = 0; index < length; index++) {
    const code = text.charCodeAt(index)
    if (code === quote) {
      for (index++; index < length; index++) {
        const inner = text.charCodeAt(index)
        if (inner === backslash) index++
        else if (inner === quote) break
      }
      previous = quote
    } else if (code === minus || (code - digitZero) >>> 0 < 10) {
      let end = index + 1
      while (end < length && isNumberCharacter(text.charCodeAt(end))) end++
      const literal = text.slice(index, end)
      const inValuePosition =
        previous === 0 ||
        previous === 0x3a ||
        previous === openBracket ||
        (previous === 0x2c && containers.at(-1) === openBracket)
      if (inValuePosition && numberPattern.test(literal) && needsText(literal)) {
        parts.push(text.slice(copied, index), `"${literal}"`)
        copied = end
      }
      index = end - 1
      previous = digitZero
    } else if (code === openBracket || code === openBrace) {
      containers.push(code)
      previous = code
    } else if (code === closeBracket || code === closeBrace) {
      containers.pop()
      previous = code
    } else if (code === 0x3a || code === 0x2c) {
      previous = code
    } else if (code !== 0x20 && code !== 0x09 && code !== 0x0a && code !== 0x0d) {
      previous = code // a literal name (true, false, null) or a stray character
    }
  }
  if (copied === 0) return text
  parts.push(text.slice(copied))
  return parts.join('')
}

function isNumberCharacter(code: number): boolean {
  return (
    (code - digitZero) >>> 0 < 10 ||
    code === dot ||
    code === letterE ||
    code === capitalE ||
    code === plus ||
    code === minus
  )
}

// --- Well-formed Unicode ---------------------------------------------------------------------

/** String.prototype.isWellFormed and toWellFormed (ES2024; in Node 20 and later, not yet in our TypeScript lib). */
interface WellFormedString {
  isWellFormed(): boolean
  toWellFormed(): string
}

function wellFormed(text: string): boolean {
  return (text as unknown as WellFormedString).isWellFormed()
}

/** A JSON pointer token; an ill-formed key is shown with U+FFFD so the error body itself stays well-formed. */
function pointerToken(key: string): string {
  return (key as unknown as WellFormedString).toWellFormed().replace(/~/g, '~0').replace(/\//g, '~1')
}

/** The JSON pointer of the first string or key that is not well-formed Unicode, or null. */
export function illFormedPath(value: unknown, path: string): string | null {
  if (typeof value === 'string') return wellFormed(value) ? null : path
  if (value === null || typeof value !== 'object') return null
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      const found = illFormedPath(value[index], `${path}/${index}`)
      if (found !== null) return found
    }
    return null
  }
  for (const key of Object.keys(value)) {
    const child = `${path}/${pointerToken(key)}`
    if (!wellFormed(key)) return child
    const found = illFormedPath((value as Record<string, unknown>)[key], child)
    if (found !== null) return found
  }
  return null
}
