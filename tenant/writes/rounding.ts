/**
 * Rounding profile writes as use cases (./core.ts): create or replace, partial update (not_found
 * when absent), soft delete. Profiles are versioned at write time. At most one profile is
 * default_global and at most one is default_for_currency per currency: a write that claims a
 * default clears it on the previous holder in the same unit of work (the newest claim wins; the
 * cleared profile records an `updated` change). At most roundingProfilesMax live profiles.
 * The checks of a profile's content are shared with the apply endpoint's inline profiles.
 * @module
 */
import type { Change, RoundingProfile, RoundingTierRule } from '../../engine/catalog.js'
import { isIso4217 } from '../../engine/currencies.js'
import { amountAbsMax } from '../../engine/limits.js'
import { canonicalAmount, normalizeProfile, profileProblems, roundingProfilesMax } from '../../engine/rounding.js'
import { applyChange, createsLiveKey, deleteKeys, type DeleteInput } from './catalog.js'
import {
  applyBatch,
  invalidParts,
  Refusal,
  type EntityWriter,
  type ItemOutcome,
  type RefusalDetail,
  type WriteContext,
  type WriteTarget,
} from './core.js'

type AmountInput = number | string

/** One tier rule as written (its shape checked by the edge). */
export interface TierRuleInput {
  readonly from: AmountInput
  readonly to?: AmountInput | null
  readonly increment: AmountInput
  readonly mode?: RoundingTierRule['mode']
  readonly offset?: AmountInput
}

/** The fields of a profile besides its tiers. */
export type ProfileFields = Omit<RoundingProfile, 'tier_rules'>

/** A whole profile to create or replace. */
export interface ProfileInput extends Partial<ProfileFields> {
  readonly code: string
  readonly tier_rules: readonly TierRuleInput[]
}

/** A partial update: the given fields replace the stored ones; `tier_rules`, when given, all tiers. */
export interface ProfileUpdateInput {
  readonly code: string
  readonly currency_code?: string | null
  readonly default_for_currency?: boolean
  readonly default_global?: boolean
  readonly tier_rules?: readonly TierRuleInput[]
}

const amountMessage = `must be a decimal number with at most 4 decimals within ±${amountAbsMax}`

/** Tier rules as canonical strings, or a refusal naming every amount that is not one. */
export function tierRules(rules: readonly TierRuleInput[], prefix: string): RoundingTierRule[] | Refusal {
  const details: RefusalDetail[] = []
  const amount = (input: unknown, path: string): string => {
    const canonical = canonicalAmount(input)
    if (canonical === null) details.push({ path, message: amountMessage })
    return canonical ?? '0'
  }
  const canonical = rules.map((rule, index) => {
    const at = `${prefix}/tier_rules/${index}`
    return {
      from: amount(rule.from, `${at}/from`),
      to: rule.to === undefined || rule.to === null ? null : amount(rule.to, `${at}/to`),
      increment: amount(rule.increment, `${at}/increment`),
      mode: rule.mode ?? 'HALF_UP',
      offset: rule.offset === undefined ? '0' : amount(rule.offset, `${at}/offset`),
    }
  })
  return details.length > 0 ? invalidParts(details) : canonical
}

/** A complete profile (currency, tiers, defaults) in its stored form (tiers sorted by from), or why not. */
export function checkedProfile(
  fields: ProfileFields,
  rules: RoundingTierRule[] | Refusal,
  prefix: string,
): RoundingProfile | Refusal {
  if (rules instanceof Refusal) return rules
  const currency = fields.currency_code
  if (currency !== null && !isIso4217(currency)) {
    const message = `Currency ${currency} is not an ISO 4217 code`
    const path = `${prefix}/currency_code`
    return new Refusal({ status: 'currency_unknown', message, path, problem: 'not an ISO 4217 code' })
  }
  const profile: RoundingProfile = { ...fields, tier_rules: rules }
  const problems = profileProblems(profile).map((problem) => ({ ...problem, path: prefix + problem.path }))
  if (problems.length > 0) return invalidParts(problems)
  return normalizeProfile(profile)
}

/** Does `other` hold a default that `claimant` claims (so `other` must give it up)? */
function lostDefaults(claimant: RoundingProfile, other: RoundingProfile): Partial<RoundingProfile> | null {
  const global = claimant.default_global && other.default_global
  const currency =
    claimant.default_for_currency && other.default_for_currency && other.currency_code === claimant.currency_code
  if (!global && !currency) return null
  return {
    ...(global ? { default_global: false } : {}),
    ...(currency ? { default_for_currency: false } : {}),
  }
}

/** A profile's own change (first, if any) and the other profiles' cleared defaults. */
interface ProfileChanges {
  readonly own: Change | null
  readonly changes: Change[]
}

/**
 * How to write a checked profile under its code: its own change plus the defaults it claims cleared
 * on other profiles, stored together; a new key past roundingProfilesMax is refused.
 */
function profileWriter(
  tenant: WriteTarget,
  context: WriteContext,
): EntityWriter<{ code: string; profile: RoundingProfile }, ProfileChanges> {
  const { nowMs, actor } = context
  return {
    plan: ({ code, profile }) => {
      const own = tenant.catalog.plan('rounding_profile', code, profile, nowMs, nowMs, actor)
      const changes = own === null ? [] : [own]
      for (const [otherCode, view] of tenant.catalog.viewsAt('rounding_profile', nowMs)) {
        if (otherCode === code) continue
        const cleared = lostDefaults(profile, view.value)
        if (cleared === null) continue
        const change = tenant.catalog.plan(
          'rounding_profile',
          otherCode,
          { ...view.value, ...cleared },
          nowMs,
          nowMs,
          actor,
        )
        if (change !== null) changes.push(change)
      }
      return changes.length === 0 ? null : { own, changes }
    },
    quota: ({ own }) => {
      if (own === null || !createsLiveKey(tenant, own)) return null
      const count = tenant.catalog.liveCount('rounding_profile')
      if (count + 1 <= roundingProfilesMax) return null
      const message = `At most ${roundingProfilesMax} rounding profiles per tenant; ${count} exist`
      return new Refusal({ status: 'quota_exceeded', message, limit: roundingProfilesMax })
    },
    apply: ({ changes }, applied) => {
      for (const change of changes) applyChange(tenant, change, applied)
    },
  }
}

/** Creates or replaces rounding profiles; an outcome per item. */
export function writeRoundingProfiles(
  tenant: WriteTarget,
  context: WriteContext,
  items: readonly (ProfileInput | Refusal)[],
): Promise<ItemOutcome[]> {
  const checked = items.map((item) => {
    if (item instanceof Refusal) return item
    const fields: ProfileFields = {
      currency_code: item.currency_code ?? null,
      default_for_currency: item.default_for_currency ?? false,
      default_global: item.default_global ?? false,
    }
    const profile = checkedProfile(fields, tierRules(item.tier_rules, ''), '')
    return profile instanceof Refusal ? profile : { code: item.code, profile }
  })
  return applyBatch(tenant, checked, profileWriter(tenant, context))
}

/** Updates stored rounding profiles field by field; one not live now is refused (not_found). */
export function updateRoundingProfiles(
  tenant: WriteTarget,
  context: WriteContext,
  items: readonly (ProfileUpdateInput | Refusal)[],
): Promise<ItemOutcome[]> {
  const checked = items.map((item) => {
    if (item instanceof Refusal) return item
    const stored = tenant.catalog.get('rounding_profile', item.code, context.nowMs)
    if (stored === null) return new Refusal({ status: 'not_found', message: `Rounding profile ${item.code} not found` })
    const fields: ProfileFields = {
      currency_code: item.currency_code === undefined ? stored.currency_code : item.currency_code,
      default_for_currency: item.default_for_currency ?? stored.default_for_currency,
      default_global: item.default_global ?? stored.default_global,
    }
    const rules = item.tier_rules === undefined ? stored.tier_rules : tierRules(item.tier_rules, '')
    const profile = checkedProfile(fields, rules, '')
    return profile instanceof Refusal ? profile : { code: item.code, profile }
  })
  return applyBatch(tenant, checked, profileWriter(tenant, context))
}

/** Soft-deletes rounding profiles at their instant; one not live then is refused (not_found). */
export function deleteRoundingProfiles(
  tenant: WriteTarget,
  context: WriteContext,
  items: readonly (DeleteInput | Refusal)[],
): Promise<ItemOutcome[]> {
  return deleteKeys(tenant, context, { type: 'rounding_profile', what: (code) => `Rounding profile ${code}`, items })
}
