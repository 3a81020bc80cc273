/**
 * Exchange rates (SPEC.md "Exchange rate"). Rates are EUR -> X (units of X per 1 EUR), stored in the
 * catalogue as type `fx_rate` under compositeKey('EUR', X): one version per publication date, in
 * force from that date's midnight UTC. This module holds the lookup rule, cross rates through EUR as
 * exact fractions, conversion of scaled amounts, the list of feed currencies and the planning of
 * rate writes. Pure: no I/O, no clock.
 * Rates are canonical decimal strings (no exponent, no trailing zeros) with at most
 * `fxRateDecimalsMax` decimals, above zero and at most `fxRateMax`. Arithmetic on them is exact
 * (BigInt fractions); binary floating point only ever produces the display rate.
 * Non-goals: a base other than EUR (the setting `fx.base.currency` accepts only EUR), and deleting
 * rates (history is kept permanently).
 * @module
 */
import { Decimal } from 'decimal.js'
import { assert } from './assert.js'
import { compositeKey, type Catalog, type Change, type FxRate } from './catalog.js'
import { contentHash } from './hash.js'
import { decimalText, mulDivRound } from './money.js'
import { indexAt, type ChangeType, type Version } from './temporal.js'

/** The currency every stored rate starts from. */
export const fxBaseCurrency = 'EUR'
/** Decimals a rate may have: the ECB publishes at most 5; manual rates get room to spare. */
export const fxRateDecimalsMax = 10
/** Largest rate accepted: far above any real EUR rate (IDR is about 2e4), refuses typos like 1e15. */
export const fxRateMax = 1_000_000_000
/** Significant digits of the display rate (`rate` in answers); conversions use the exact rate. */
export const fxDisplayDigits = 10

const decimal = Decimal.clone({ precision: 60, rounding: Decimal.ROUND_HALF_UP })

/** The catalogue key of the EUR -> `quote` rate. */
export function fxKey(quote: string): string {
  return compositeKey(fxBaseCurrency, quote)
}

/**
 * A rate from a request or a feed (a JSON number or a numeric string) as its canonical decimal
 * string, or null when it is not a number above 0 and at most `fxRateMax` with at most
 * `fxRateDecimalsMax` decimals. A number goes through its shortest round-trip text, which is the
 * decimal the client wrote.
 */
export function canonicalFxRate(input: unknown): string | null {
  const text = decimalText(input)
  if (text === null) return null
  const value = new decimal(text)
  if (value.lte(0) || value.gt(fxRateMax) || value.decimalPlaces() > fxRateDecimalsMax) return null
  return value.toFixed()
}

/** An exact rate numerator/denominator (both positive). */
export interface RateFraction {
  readonly numerator: bigint
  readonly denominator: bigint
}

/** A canonical rate string as an exact fraction over a power of ten. */
export function rateFraction(rate: string): RateFraction {
  const match = /^(\d+)(?:\.(\d+))?$/.exec(rate)
  assert(match !== null, 'a stored rate is a canonical decimal')
  const fraction = match[2] ?? ''
  const numerator = BigInt(`${match[1]}${fraction}`)
  assert(numerator > 0n, 'a stored rate is positive')
  return { numerator, denominator: 10n ** BigInt(fraction.length) }
}

/** The rate a lookup found and the publication date (epoch ms, midnight UTC) it belongs to. */
export interface FxLookup {
  readonly rate: string
  readonly asOf: number
}

/**
 * The EUR -> `quote` rate for instant `at` (SPEC.md): the most recent rate published on or before
 * `at`, otherwise the earliest published after it; null when the currency has no rate at all.
 * EUR -> EUR is 1 at any instant (asOf = at).
 */
export function fxLookup(catalog: Catalog, quote: string, at: number): FxLookup | null {
  if (quote === fxBaseCurrency) return { rate: '1', asOf: at }
  const versions = catalog.versions('fx_rate', fxKey(quote))
  if (versions === undefined) return null
  const index = indexAt(versions, at)
  // Rates are never deleted; skipping tombstones keeps the rule right should one ever exist.
  for (let earlier = index; earlier >= 0; earlier--) {
    const version = versions[earlier]!
    if (version.value !== null) return { rate: version.value.rate, asOf: version.from }
  }
  for (let later = index + 1; later < versions.length; later++) {
    const version = versions[later]!
    if (version.value !== null) return { rate: version.value.rate, asOf: version.from }
  }
  return null
}

/** A resolved conversion base -> quote: the exact rate and its display value. */
export interface FxResolved {
  readonly base: string
  readonly quote: string
  /** Publication date used (epoch ms); for a cross rate the later of the two legs. */
  readonly asOf: number
  /** Exact rate = numerator / denominator, in lowest terms. */
  readonly numerator: bigint
  readonly denominator: bigint
  /** For display: the exact rate rounded half-up to `fxDisplayDigits` significant digits. */
  readonly rate: number
}

/**
 * The rate base -> quote at `at`, through EUR: rate = EURtoQuote / EURtoBase, exactly. Null when
 * either currency has no rate (the caller answers 404 or `no_fx_rate`). A EUR leg adds no date:
 * EUR -> USD is dated by the USD rate alone.
 */
export function resolveFx(catalog: Catalog, base: string, quote: string, at: number): FxResolved | null {
  const baseLeg = fxLookup(catalog, base, at)
  const quoteLeg = fxLookup(catalog, quote, at)
  if (baseLeg === null || quoteLeg === null) return null
  const dates: number[] = []
  if (base !== fxBaseCurrency) dates.push(baseLeg.asOf)
  if (quote !== fxBaseCurrency) dates.push(quoteLeg.asOf)
  const asOf = dates.length === 0 ? at : Math.max(...dates)
  const toBase = rateFraction(baseLeg.rate)
  const toQuote = rateFraction(quoteLeg.rate)
  // (q.n / q.d) / (b.n / b.d) = q.n * b.d / (q.d * b.n)
  let numerator = toQuote.numerator * toBase.denominator
  let denominator = toQuote.denominator * toBase.numerator
  const divisor = gcd(numerator, denominator)
  numerator /= divisor
  denominator /= divisor
  return { base, quote, asOf, numerator, denominator, rate: displayRate(numerator, denominator) }
}

function gcd(left: bigint, right: bigint): bigint {
  let a = left < 0n ? -left : left
  let b = right < 0n ? -right : right
  while (b !== 0n) [a, b] = [b, a % b]
  return a
}

/** round_half_up(n / d) for n >= 0 and d > 0. */
function divideHalfUp(numerator: bigint, denominator: bigint): bigint {
  const quotient = numerator / denominator
  return (numerator % denominator) * 2n >= denominator ? quotient + 1n : quotient
}

/**
 * A positive fraction rounded half-up to `fxDisplayDigits` significant digits, as a double. The
 * rounded decimal has at most 10 digits, so the double prints back as exactly that decimal.
 */
export function displayRate(numerator: bigint, denominator: bigint): number {
  assert(numerator > 0n && denominator > 0n, 'display rates are positive')
  const low = 10n ** BigInt(fxDisplayDigits - 1)
  const high = low * 10n
  // Scale by 10^shift so that the integer part has exactly fxDisplayDigits digits.
  let shift = fxDisplayDigits - (numerator.toString().length - denominator.toString().length) - 1
  for (;;) {
    const scaled =
      shift >= 0 ? (numerator * 10n ** BigInt(shift)) / denominator : numerator / (denominator * 10n ** BigInt(-shift))
    if (scaled < low) shift++
    else if (scaled >= high) shift--
    else break
  }
  let digits =
    shift >= 0
      ? divideHalfUp(numerator * 10n ** BigInt(shift), denominator)
      : divideHalfUp(numerator, denominator * 10n ** BigInt(-shift))
  if (digits === high) {
    digits = low
    shift--
  }
  return Number(`${digits}e${-shift}`)
}

/**
 * round_half_up(amount × rate) in scaled units (10^-4), exactly; ties go away from zero as in
 * engine/money.ts. Exact whenever the result is below 2^53 in magnitude; callers bound amounts.
 */
export function convertAmount(scaledAmount: number, fx: FxResolved): number {
  assert(Number.isSafeInteger(scaledAmount), 'amounts are scaled integers')
  const { numerator, denominator } = fx
  if (numerator <= maxSafe && denominator <= maxSafe) {
    return mulDivRound(scaledAmount, Number(numerator), Number(denominator))
  }
  const product = BigInt(scaledAmount) * numerator
  const magnitude = divideHalfUp(product < 0n ? -product : product, denominator)
  return Number(product < 0n ? -magnitude : magnitude)
}

const maxSafe = BigInt(Number.MAX_SAFE_INTEGER)

/** The currencies of the latest feed date a tenant holds (GET /fx/currencies). */
export interface FeedCurrencies {
  /** That publication date (epoch ms), or null when no rate is held. */
  readonly asOf: number | null
  /** Codes with a rate published on that date, plus EUR, sorted. */
  readonly currencies: string[]
}

/**
 * The latest publication date on or before `at` over all rates (else the earliest after, as the
 * lookup rule), with every currency published on that date. A currency the feed stopped publishing
 * (RUB, HRK, BGN) is absent from a later date, so it is not listed.
 */
export function latestFeedCurrencies(catalog: Catalog, at: number): FeedCurrencies {
  let latestBefore = Number.NEGATIVE_INFINITY
  let earliestAfter = Number.POSITIVE_INFINITY
  const quotes: string[] = []
  for (const key of catalog.keys('fx_rate')) {
    const quote = quoteOf(key)
    const found = fxLookup(catalog, quote, at)
    if (found === null) continue
    quotes.push(quote)
    if (found.asOf <= at) latestBefore = Math.max(latestBefore, found.asOf)
    else earliestAfter = Math.min(earliestAfter, found.asOf)
  }
  const date = latestBefore !== Number.NEGATIVE_INFINITY ? latestBefore : earliestAfter
  if (date === Number.POSITIVE_INFINITY) return { asOf: null, currencies: [fxBaseCurrency] }
  const published = quotes.filter((quote) => versionAt(catalog, quote, date) !== null)
  return { asOf: date, currencies: [...published, fxBaseCurrency].sort() }
}

function quoteOf(key: string): string {
  const prefix = fxKey('')
  assert(key.startsWith(prefix), 'fx_rate keys start with EUR')
  return key.slice(prefix.length)
}

/** The live version published exactly at `from`, or null. */
function versionAt(catalog: Catalog, quote: string, from: number): Version<FxRate> | null {
  const versions = catalog.versions('fx_rate', fxKey(quote))
  if (versions === undefined) return null
  const index = indexAt(versions, from)
  const version = index >= 0 ? versions[index]! : null
  return version !== null && version.from === from && version.value !== null ? version : null
}

/** Has any rate for `quote` ever been stored (EUR always counts)? */
export function fxCurrencyHeld(catalog: Catalog, quote: string): boolean {
  return quote === fxBaseCurrency || catalog.exists('fx_rate', fxKey(quote))
}

/** One rate to write: EUR -> quote published at `from` (midnight UTC of its date). */
export interface FxEntry {
  readonly from: number
  readonly rate: string
}

/** A planned rate write; `from` is its publication date, so writes of several days can be ordered. */
export interface FxChange extends Change {
  readonly from: number
}

/**
 * Plans writing rates of one currency, `entries` sorted by `from` without repeats. A rate equal to
 * the one already published on the same date records nothing; any other is written even when equal
 * to the rate in force (so a new date gets its own version and `as_of` names it), replacing a
 * version of the same date. This is catalog.plan with {force: true} after that exact-date check,
 * done as one linear merge so a multi-year history file stays linear in its size.
 * Every returned change carries the same final version list; apply it once.
 */
export function planFxRates(
  catalog: Catalog,
  quote: string,
  entries: readonly FxEntry[],
  nowMs: number,
  by: string,
): FxChange[] {
  assert(quote !== fxBaseCurrency, 'EUR has no stored rate')
  const key = fxKey(quote)
  const existing = catalog.versions('fx_rate', key) ?? []
  const merged: Version<FxRate>[] = []
  const written: { from: number; hash: string; changeType: ChangeType }[] = []
  let next = 0
  let previousFrom = Number.NEGATIVE_INFINITY
  for (const entry of entries) {
    assert(entry.from > previousFrom, 'fx entries are sorted by date without repeats')
    previousFrom = entry.from
    while (next < existing.length && existing[next]!.from < entry.from) merged.push(existing[next++]!)
    const sameDate = next < existing.length && existing[next]!.from === entry.from ? existing[next]! : null
    if (sameDate !== null && sameDate.value !== null && sameDate.value.rate === entry.rate) continue
    const value: FxRate = { rate: entry.rate }
    const hash = contentHash(value)
    const inForce = sameDate ?? merged[merged.length - 1] ?? null
    const changeType: ChangeType = inForce !== null && inForce.value !== null ? 'updated' : 'created'
    if (sameDate !== null) next++
    merged.push({ from: entry.from, value, hash, writtenAt: nowMs, writtenBy: by })
    written.push({ from: entry.from, hash, changeType })
  }
  if (written.length === 0) return []
  while (next < existing.length) merged.push(existing[next++]!)
  const versions = merged as Version<unknown>[]
  return written.map(
    ({ from, hash, changeType }): FxChange => ({
      type: 'fx_rate',
      key,
      versions,
      changeType,
      hash,
      at: nowMs,
      by,
      from,
    }),
  )
}
