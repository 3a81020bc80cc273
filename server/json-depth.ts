/**
 * The nesting depth of a JSON text, checked before `JSON.parse`: a body of 8 MiB of `[` would
 * otherwise become 8 million nested arrays (hundreds of MB and a long pause of the collector)
 * before any schema saw it. One pass over the bytes; strings (and the escapes in them) are skipped.
 * @module
 */

const quote = 0x22
const backslash = 0x5c
const openBracket = 0x5b
const closeBracket = 0x5d
const openBrace = 0x7b
const closeBrace = 0x7d

/** Whether the JSON text in `bytes` opens more than `max` arrays and objects inside each other. */
export function jsonNestsDeeperThan(bytes: Uint8Array, max: number): boolean {
  let depth = 0
  const length = bytes.length
  for (let index = 0; index < length; index++) {
    const byte = bytes[index]!
    if (byte === quote) {
      // Skip the string: to the next quote not escaped.
      for (index++; index < length; index++) {
        const inner = bytes[index]!
        if (inner === backslash) index++
        else if (inner === quote) break
      }
    } else if (byte === openBracket || byte === openBrace) {
      if (++depth > max) return true
    } else if (byte === closeBracket || byte === closeBrace) {
      depth--
    }
  }
  return false
}
