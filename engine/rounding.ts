/**
 * Rounding profiles: tier rules `[from, to)` that round a price to a multiple of `increment` with a
 * mode, then add `offset` (-0.01 gives .99 endings). Pure and exact: amounts are scaled integers
 * (money.ts, 10^-4 units) and every digit is decided by integer arithmetic on doubles below 2^53.
 *
 * Semantics (documented in docs/api.md):
 * - A tier matches when from <= amount < to (`to` null: unbounded). Tiers never overlap; no tier
 *   matching leaves the amount unchanged. Tiers match by the signed amount, so a negative amount
 *   matches only a tier whose range covers negative values.
 * - Modes follow java.math.RoundingMode, symmetric around zero: UP rounds away from zero, DOWN
 *   toward zero, HALF_UP to the nearest multiple with ties away from zero, HALF_EVEN to the nearest
 *   multiple with ties to the even multiple (an even count of increments).
 * - The offset is added after rounding, unconditionally (a tier from 0 with offset -0.01 turns 0.3
 *   into -0.01; start such tiers at a price where that cannot happen).
 *
 * Compiled profiles are cached per stored value object, so a profile compiles once per written
 * version, not once per query. Non-goals: storage, HTTP, and choosing when rounding applies.
 * @module
 */
import { assert } from './assert.js'
import type { Catalog, RoundingMode, RoundingProfile, RoundingTierRule } from './catalog.js'
import { amountAbsMax } from './limits.js'
import { amountUnit, parseAmount, toDecimalString } from './money.js'

/** Tiers per profile: a profile is a short price-band table; the bound keeps lookups trivial. */
export const roundingTiersMax = 50
/** Profiles per tenant: `rounding_profile=default` scans them, and they are a small list. */
export const roundingProfilesMax = 1000
/** The code `default` names the default-resolution rule in requests, so no profile may take it. */
export const defaultProfileName = 'default'

export const roundingModes: readonly RoundingMode[] = ['HALF_UP', 'UP', 'DOWN', 'HALF_EVEN']

export interface CompiledTier {
  /** Scaled units; `to` null is unbounded. */
  readonly from: number
  readonly to: number | null
  readonly increment: number
  readonly mode: RoundingMode
  readonly offset: number
}

export interface CompiledProfile {
  /** Sorted by `from`, non-overlapping. */
  readonly tiers: readonly CompiledTier[]
}

// ---------------------------------------------------------------------------------------------
// Input: canonical amounts and the checks a written profile must pass

const plainDecimal = /^[+-]?(\d+)(?:\.(\d*))?$/
export const amountDecimalsMax = 4

/**
 * A tier amount (number or numeric string) as its canonical decimal string, or null when it is not
 * a plain decimal with at most 4 decimals inside ±amountAbsMax. More decimals are refused rather
 * than rounded, so a stored bound is exactly the one written. Exponent forms are refused (numbers
 * print in plain notation from 1e-6 to 1e21, which covers every amount that could pass).
 */
export function canonicalAmount(input: unknown): string | null {
  let text: string
  if (typeof input === 'number') text = Number.isFinite(input) ? String(input) : ''
  else if (typeof input === 'string') text = input.trim()
  else return null
  const match = plainDecimal.exec(text)
  if (match === null) return null
  if ((match[2] ?? '').replace(/0+$/, '').length > amountDecimalsMax) return null
  const value = parseAmount(text)
  if (value === null) return null
  // -0 prints as "-0"; one spelling per amount keeps content hashes stable.
  return toDecimalString(value === 0 ? 0 : value)
}

export interface ProfileProblem {
  path: string
  message: string
}

/**
 * What is wrong with a profile whose amounts are canonical already: tier bounds, increments,
 * overlaps, the tier count, and a currency default without a currency. Paths point at the tier as
 * written (its index in the request), not as sorted.
 */
export function profileProblems(profile: RoundingProfile): ProfileProblem[] {
  const problems: ProfileProblem[] = []
  if (profile.default_for_currency && profile.currency_code === null) {
    problems.push({ path: '/currency_code', message: 'required when default_for_currency is true' })
  }
  const rules = profile.tier_rules
  if (rules.length > roundingTiersMax) {
    problems.push({ path: '/tier_rules', message: `at most ${roundingTiersMax} tiers` })
    return problems
  }
  const tiers = rules.map(compileTier)
  tiers.forEach((tier, index) => {
    const at = `/tier_rules/${index}`
    if (tier.increment <= 0) problems.push({ path: `${at}/increment`, message: 'must be greater than 0' })
    if (tier.to !== null && tier.to <= tier.from)
      problems.push({ path: `${at}/to`, message: 'must be greater than from' })
  })
  if (problems.length === 0) problems.push(...overlapProblems(tiers))
  return problems
}

function overlapProblems(tiers: CompiledTier[]): ProfileProblem[] {
  const order = tiers.map((_, index) => index).sort((left, right) => tiers[left]!.from - tiers[right]!.from)
  for (let position = 1; position < order.length; position++) {
    const previous = tiers[order[position - 1]!]!
    const current = tiers[order[position]!]!
    if (previous.to === null || previous.to > current.from) {
      return [
        {
          path: `/tier_rules/${order[position]}`,
          message: `overlaps tier ${order[position - 1]} (tiers cover [from, to) and must not overlap)`,
        },
      ]
    }
  }
  return []
}

// ---------------------------------------------------------------------------------------------
// Compilation (once per stored version)

function scaled(text: string): number {
  const value = parseAmount(text)
  assert(value !== null, 'stored rounding amounts are canonical decimals')
  return value
}

function compileTier(rule: RoundingTierRule): CompiledTier {
  return Object.freeze({
    from: scaled(rule.from),
    to: rule.to === null ? null : scaled(rule.to),
    increment: scaled(rule.increment),
    mode: rule.mode,
    offset: scaled(rule.offset),
  })
}

/** Tiers in scaled integers, sorted by `from`. The profile must have passed `profileProblems`. */
export function compileProfile(profile: RoundingProfile): CompiledProfile {
  const tiers = profile.tier_rules.map(compileTier).sort((left, right) => left.from - right.from)
  for (let index = 0; index < tiers.length; index++) {
    const tier = tiers[index]!
    assert(tier.increment > 0, 'rounding increment must be positive')
    assert(tier.to === null || tier.to > tier.from, 'rounding tier must not be empty')
    const next = tiers[index + 1]
    assert(next === undefined || (tier.to !== null && tier.to <= next.from), 'rounding tiers must not overlap')
  }
  return Object.freeze({ tiers: Object.freeze(tiers) })
}

/** The stored form: tiers sorted by `from`, so the same table hashes the same in any order. */
export function normalizeProfile(profile: RoundingProfile): RoundingProfile {
  const keyed = profile.tier_rules.map((rule) => ({ rule, from: scaled(rule.from) }))
  keyed.sort((left, right) => left.from - right.from)
  return { ...profile, tier_rules: keyed.map((entry) => entry.rule) }
}

const compiledCache = new WeakMap<RoundingProfile, CompiledProfile>()

/** The compiled form of a stored profile value, compiled on first use and kept with the value. */
export function compiledOf(profile: RoundingProfile): CompiledProfile {
  let compiled = compiledCache.get(profile)
  if (compiled === undefined) {
    compiled = compileProfile(profile)
    compiledCache.set(profile, compiled)
  }
  return compiled
}

// ---------------------------------------------------------------------------------------------
// Application (the hot path)

/** The tier with from <= amount < to, or null: binary search on the sorted, disjoint tiers. */
function tierOf(tiers: readonly CompiledTier[], amount: number): CompiledTier | null {
  let low = 0
  let high = tiers.length - 1
  let found = -1
  while (low <= high) {
    const middle = (low + high) >>> 1
    if (tiers[middle]!.from <= amount) {
      found = middle
      low = middle + 1
    } else {
      high = middle - 1
    }
  }
  if (found < 0) return null
  const tier = tiers[found]!
  return tier.to === null || amount < tier.to ? tier : null
}

/** The tier a profile applies to a scaled amount, or null when none covers it (the explanation's step). */
export function roundingTier(compiled: CompiledProfile, amount: number): CompiledTier | null {
  return tierOf(compiled.tiers, amount)
}

/**
 * `amount` rounded to a multiple of `increment` with `mode`, exactly. `%` on integral doubles is
 * exact, so `amount - remainder` is the multiple toward zero and the remainder decides the rest.
 */
export function roundToIncrement(amount: number, increment: number, mode: RoundingMode): number {
  assert(Number.isSafeInteger(amount) && Number.isSafeInteger(increment) && increment > 0, 'integer operands')
  const remainder = amount % increment
  const towardZero = amount - remainder
  if (remainder === 0) return towardZero
  const awayFromZero = towardZero + (amount < 0 ? -increment : increment)
  const twice = Math.abs(remainder) * 2
  switch (mode) {
    case 'DOWN':
      return towardZero
    case 'UP':
      return awayFromZero
    case 'HALF_UP':
      return twice >= increment ? awayFromZero : towardZero
    case 'HALF_EVEN': {
      if (twice !== increment) return twice > increment ? awayFromZero : towardZero
      // A tie: the even one of the two neighbouring multiples (towardZero / increment is exact).
      return (towardZero / increment) % 2 === 0 ? towardZero : awayFromZero
    }
  }
}

/**
 * Applies a compiled profile to a scaled amount: the matching tier's rounding plus its offset.
 * The result can pass ±amountAbsMax (by at most increment + |offset|, so it stays an exact integer);
 * callers check it with `isAmountInRange` and refuse it rather than answer an inexact number.
 */
export function applyRounding(compiled: CompiledProfile, amount: number): number {
  assert(Number.isSafeInteger(amount), 'amounts are scaled integers')
  const tier = tierOf(compiled.tiers, amount)
  if (tier === null) return amount
  const result = roundToIncrement(amount, tier.increment, tier.mode) + tier.offset
  assert(Number.isSafeInteger(result), 'rounded amounts stay exact integers')
  return result
}

/** Is a rounded amount still inside ±amountAbsMax (where JSON numbers print it exactly)? */
export function isAmountInRange(scaledAmount: number): boolean {
  return Math.abs(scaledAmount) <= amountAbsMax * amountUnit
}

// ---------------------------------------------------------------------------------------------
// Resolution for a request

export interface ResolvedProfile {
  readonly code: string
  readonly compiled: CompiledProfile
}

/**
 * The profile a request names, as of `at`. Undefined: no rounding (null). `default`: the profile
 * that is default_for_currency for `currency`, else the default_global one, else null (no
 * rounding). Any other name: that profile, or 'not_found'. Writes keep at most one default of each
 * kind; should two exist anyway, the first by code wins, so the answer stays deterministic.
 */
export function resolveProfile(
  catalog: Catalog,
  requested: string | undefined,
  currency: string,
  at: number,
): ResolvedProfile | null | 'not_found' {
  if (requested === undefined) return null
  if (requested !== defaultProfileName) {
    const profile = catalog.get('rounding_profile', requested, at)
    return profile === null ? 'not_found' : { code: requested, compiled: compiledOf(profile) }
  }
  let global: ResolvedProfile | null = null
  for (const [code, view] of catalog.viewsAt('rounding_profile', at)) {
    const profile = view.value
    if (profile.default_for_currency && profile.currency_code === currency) {
      return { code, compiled: compiledOf(profile) }
    }
    if (global === null && profile.default_global) global = { code, compiled: compiledOf(profile) }
  }
  return global
}
