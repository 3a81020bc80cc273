/**
 * Request ids: a client's `X-Request-Id` is kept when it is sane (1 to 128 visible ASCII
 * characters, 0x21-0x7E), otherwise the server makes one. A made id is this process's random
 * prefix and a counter (`q3V9bX0c-1k`): unique across requests and, with 48 random bits per
 * process, across the processes of a fleet, at the cost of a string concatenation per request
 * (no random bytes per request: the ids need not be secret or unguessable).
 * @module
 */
import { randomBytes } from 'node:crypto'

/** The longest incoming id kept; a longer one is replaced. */
export const requestIdLengthMax = 128

const prefix = `${randomBytes(6).toString('base64url')}-`
let counter = 0

/** The request's id: `header` (the incoming `X-Request-Id`, '' when absent) if sane, else a new one. */
export function requestIdOf(header: string): string {
  return isSaneRequestId(header) ? header : nextRequestId()
}

/** 1 to 128 characters, each visible ASCII (no space, no control character, nothing above 0x7E). */
export function isSaneRequestId(text: string): boolean {
  const length = text.length
  if (length === 0 || length > requestIdLengthMax) return false
  for (let index = 0; index < length; index++) {
    const code = text.charCodeAt(index)
    if (code < 0x21 || code > 0x7e) return false
  }
  return true
}

export function nextRequestId(): string {
  counter += 1
  return prefix + counter.toString(36)
}
