/**
 * Content hashes: the same content gives the same hash whatever the key order of its objects.
 * @module
 */
import crypto from 'node:crypto'

/** JSON with object keys sorted, so that equal content serialises equally. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null'
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  const record = value as Record<string, unknown>
  const keys = Object.keys(record)
    .filter((key) => record[key] !== undefined)
    .sort()
  return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key])}`).join(',')}}`
}

/**
 * 128 bits of SHA-256 over a text, in hex. The one-shot `crypto.hash` (Node 20.12+) costs about half
 * of createHash/update/digest for short texts, which matters once per written item; which of the
 * two is chosen once, not per call.
 */
export const sha256Hex128: (text: string) => string =
  typeof crypto.hash === 'function'
    ? (text) => crypto.hash('sha256', text, 'hex').slice(0, 32)
    : (text) => crypto.createHash('sha256').update(text).digest('hex').slice(0, 32)

/** 128 bits of SHA-256 over the canonical JSON, in hex. */
export function contentHash(value: unknown): string {
  return sha256Hex128(canonicalJson(value))
}
