/**
 * Instants as epoch milliseconds. Parsing follows the spec: RFC 3339 with an offset, or a bare date
 * meaning midnight UTC. Formatting is UTC with milliseconds only when they are not zero.
 * "Now" is always a parameter; nothing here reads the clock.
 * @module
 */

const instantPattern =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?([Zz]|[+-]\d{2}:\d{2}))?$/

/** Parses an RFC 3339 instant or a bare date; answers NaN when the text is not one. */
export function parseInstant(text: string): number {
  const match = instantPattern.exec(text)
  if (match === null) return Number.NaN
  const [, y, mo, d, h, mi, s, frac, zone] = match
  if (h !== undefined && zone === undefined) return Number.NaN
  const year = Number(y)
  const month = Number(mo)
  const day = Number(d)
  const hour = h === undefined ? 0 : Number(h)
  const minute = mi === undefined ? 0 : Number(mi)
  const second = s === undefined ? 0 : Number(s)
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) {
    return Number.NaN
  }
  const millis = frac === undefined ? 0 : Math.floor(Number(`0.${frac}`) * 1000)
  let ms = Date.UTC(year, month - 1, day, hour, minute, Math.min(second, 59), millis)
  const check = new Date(Date.UTC(year, month - 1, day))
  if (check.getUTCDate() !== day) return Number.NaN
  if (zone !== undefined && zone !== 'Z' && zone !== 'z') {
    const sign = zone[0] === '-' ? -1 : 1
    const offsetHours = Number(zone.slice(1, 3))
    const offsetMinutesPart = Number(zone.slice(4, 6))
    // RFC 3339's time-numoffset: hours 00-23, minutes 00-59; "+24:00" is not an offset.
    if (offsetHours > 23 || offsetMinutesPart > 59) return Number.NaN
    ms -= sign * (offsetHours * 60 + offsetMinutesPart) * 60_000
  }
  return ms
}

/** Formats epoch milliseconds as RFC 3339 UTC, dropping `.000`. */
export function formatInstant(ms: number): string {
  const text = new Date(ms).toISOString()
  return text.endsWith('.000Z') ? `${text.slice(0, -5)}Z` : text
}

/** Formats the UTC date part (yyyy-MM-dd). */
export function formatDate(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10)
}

/** Instants before the platform's range are refused by parseInstant's callers with this bound. */
export const instantMin = Date.UTC(1970, 0, 1)
export const instantMax = Date.UTC(9999, 11, 31, 23, 59, 59, 999)
export const forever = Number.POSITIVE_INFINITY
