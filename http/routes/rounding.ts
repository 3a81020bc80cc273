/**
 * Rounding profiles: create or replace (POST), partial update (PUT, 404 when absent), reads, soft
 * delete, and applying a profile (stored, by code, or inline) to a list of values. Profiles are
 * versioned at write time. At most one profile is default_global and at most one is
 * default_for_currency per currency: a write that claims a default clears it on the previous holder
 * in the same commit (the newest claim wins; the cleared profile records an `updated` change).
 * Semantics of the tiers and modes: engine/rounding.ts.
 * @module
 */
import { Type } from '@sinclair/typebox'
import type { Change, RoundingProfile, RoundingTierRule } from '../../engine/catalog.js'
import { isIso4217 } from '../../engine/currencies.js'
import { amountAbsMax, batchItemsMax, codeLengthMax } from '../../engine/limits.js'
import { parseAmount, toNumber } from '../../engine/money.js'
import {
  applyRounding, canonicalAmount, compileProfile, defaultProfileName, isAmountInRange, normalizeProfile, profileProblems,
  resolveProfile, roundingProfilesMax, roundingTiersMax, type CompiledProfile,
} from '../../engine/rounding.js'
import type { View } from '../../engine/temporal.js'
import { parseInstant } from '../../engine/time.js'
import { route, type TenantContext, type TenantRoute } from '../contracts.js'
import { ApiError, validationError, type ErrorDetail } from '../../platform/errors.js'
import { AsOfQuery, Code, DateTime, IncludeDeletedQuery, readOnlyFields, WhenQuery } from '../schemas.js'
import type { TenantRuntime } from '../../tenant/runtime.js'
import {
  accepted, createsLiveKey, deleteInstant, itemProblem, readInstant, requireView, withVersionMeta,
} from './common.js'

// ---------------------------------------------------------------------------------------------
// Schemas

const AmountInput = Type.Union([Type.Number(), Type.String({ maxLength: 32 })], {
  description: 'a decimal number or numeric string with at most 4 decimals',
})
const Mode = Type.Union(
  [Type.Literal('HALF_UP'), Type.Literal('UP'), Type.Literal('DOWN'), Type.Literal('HALF_EVEN')],
  { description: 'UP: away from zero; DOWN: toward zero; HALF_UP: ties away from zero; HALF_EVEN: ties to even' },
)
const TierRuleWrite = Type.Object(
  {
    from: AmountInput,
    to: Type.Optional(Type.Union([AmountInput, Type.Null()], { description: 'exclusive; null or absent: unbounded' })),
    increment: AmountInput,
    mode: Type.Optional(Mode),
    offset: Type.Optional(AmountInput),
  },
  { additionalProperties: false },
)
const TierRules = Type.Array(TierRuleWrite, { minItems: 1, maxItems: roundingTiersMax })
const ProfileFields = {
  // Any text here: a code outside ISO 4217 answers currency_unknown, not a pattern failure.
  currency_code: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: codeLengthMax }), Type.Null()])),
  default_for_currency: Type.Optional(Type.Boolean({ default: false })),
  default_global: Type.Optional(Type.Boolean({ default: false })),
  ...readOnlyFields,
}
export const ProfileCreate = Type.Object(
  { code: Code, ...ProfileFields, tier_rules: TierRules },
  { additionalProperties: false },
)
export const ProfileUpdate = Type.Object(
  { code: Type.Optional(Code), ...ProfileFields, tier_rules: Type.Optional(TierRules) },
  { additionalProperties: false },
)
/** An inline profile for apply; its default flags and currency are accepted (paste a GET answer) but unused. */
const ProfileInline = Type.Object(
  { code: Type.Optional(Code), ...ProfileFields, tier_rules: TierRules },
  { additionalProperties: false },
)
export const ApplyBody = Type.Object(
  {
    profile: Type.Union([Code, ProfileInline], {
      description: 'a stored profile code, `default` (resolved for currency_code), or a profile object',
    }),
    values: Type.Array(AmountInput, { maxItems: batchItemsMax }),
    currency_code: Type.Optional(Type.String({
      minLength: 1,
      maxLength: codeLengthMax,
      description: 'with profile `default`: whose currency default applies (absent: the global default only)',
    })),
    as_of: Type.Optional(DateTime),
  },
  { additionalProperties: false },
)
const TierRuleResponse = Type.Object({
  from: Type.Number(),
  to: Type.Union([Type.Number(), Type.Null()]),
  increment: Type.Number(),
  mode: Mode,
  offset: Type.Number(),
})
export const ProfileResponse = Type.Object({
  code: Type.String(),
  currency_code: Type.Union([Type.String(), Type.Null()]),
  default_for_currency: Type.Boolean(),
  default_global: Type.Boolean(),
  tier_rules: Type.Array(TierRuleResponse),
  updated_at: Type.String(),
  updated_by: Type.String(),
  deleted_at: Type.Optional(Type.String()),
})
const ReadQuery = Type.Object({ ...AsOfQuery, ...IncludeDeletedQuery }, { additionalProperties: false })

type CreateBody = typeof ProfileCreate.static
type UpdateBody = typeof ProfileUpdate.static
type ApplyBodyType = typeof ApplyBody.static
type TierRuleBody = typeof TierRuleWrite.static

// ---------------------------------------------------------------------------------------------
// Values and checks

const valueMessage = `must be a finite number within ±${amountAbsMax}`
const amountMessage = `must be a decimal number with at most 4 decimals within ±${amountAbsMax}`

/** Tier rules from a request to canonical strings; 400 naming every amount that is not one. */
function toTierRules(rules: TierRuleBody[], prefix: string): RoundingTierRule[] {
  const details: ErrorDetail[] = []
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
  if (details.length > 0) throw validationError(details)
  return canonical
}

/** Checks a complete profile (currency, tiers, defaults) and answers its stored form (tiers sorted by from). */
function checkedProfile(
  fields: Omit<RoundingProfile, 'tier_rules'>,
  rules: RoundingTierRule[],
  prefix: string,
): RoundingProfile {
  const currency = fields.currency_code
  if (currency !== null && !isIso4217(currency)) {
    throw new ApiError('currency_unknown', `Currency ${currency} is not an ISO 4217 code`, {
      details: [{ path: `${prefix}/currency_code`, message: 'not an ISO 4217 code' }],
    })
  }
  const profile: RoundingProfile = { ...fields, tier_rules: rules }
  const problems = profileProblems(profile).map((problem) => ({ ...problem, path: prefix + problem.path }))
  if (problems.length > 0) throw validationError(problems)
  return normalizeProfile(profile)
}

function checkPathCode(code: string): void {
  const problem = itemProblem(Code, code)
  if (problem !== null) throw validationError([{ path: '/code', message: problem }])
  if (code === defaultProfileName) {
    throw validationError([{ path: '/code', message: `"${defaultProfileName}" is reserved for default resolution` }])
  }
}

/** Does `other` hold a default that `claimant` claims (so `other` must give it up)? */
function lostDefaults(claimant: RoundingProfile, other: RoundingProfile): Partial<RoundingProfile> | null {
  const global = claimant.default_global && other.default_global
  const currency = claimant.default_for_currency && other.default_for_currency &&
    other.currency_code === claimant.currency_code
  if (!global && !currency) return null
  return {
    ...(global ? { default_global: false } : {}),
    ...(currency ? { default_for_currency: false } : {}),
  }
}

/**
 * Plans writing `profile` under `code` now, plus clearing the defaults it claims from other
 * profiles, and commits them together. A new key past roundingProfilesMax answers 422.
 */
async function writeProfile(context: TenantContext<unknown>, code: string, profile: RoundingProfile): Promise<void> {
  const { tenant, nowMs, actor } = context
  const changes: Change[] = []
  const own = tenant.catalog.plan('rounding_profile', code, profile, nowMs, nowMs, actor)
  if (own !== null) {
    checkProfileCount(tenant, own)
    changes.push(own)
  }
  for (const [otherCode, view] of tenant.catalog.viewsAt('rounding_profile', nowMs)) {
    if (otherCode === code) continue
    const cleared = lostDefaults(profile, view.value)
    if (cleared === null) continue
    const value = { ...view.value, ...cleared }
    const change = tenant.catalog.plan('rounding_profile', otherCode, value, nowMs, nowMs, actor)
    if (change !== null) changes.push(change)
  }
  await tenant.commit(changes)
}

function checkProfileCount(tenant: TenantRuntime, change: Change): void {
  if (!createsLiveKey(tenant, change)) return
  const count = tenant.catalog.liveCount('rounding_profile')
  if (count + 1 > roundingProfilesMax) {
    throw new ApiError('quota_exceeded', `At most ${roundingProfilesMax} rounding profiles per tenant; ${count} exist`)
  }
}

// ---------------------------------------------------------------------------------------------
// Rendering

function renderTierRule(rule: RoundingTierRule): Record<string, unknown> {
  // Canonical decimals with at most 4 decimals print back exactly as JSON numbers.
  return {
    from: Number(rule.from),
    to: rule.to === null ? null : Number(rule.to),
    increment: Number(rule.increment),
    mode: rule.mode,
    offset: Number(rule.offset),
  }
}

export function renderProfile(code: string, view: View<RoundingProfile>): Record<string, unknown> {
  const profile = view.value
  return withVersionMeta({
    code,
    currency_code: profile.currency_code,
    default_for_currency: profile.default_for_currency,
    default_global: profile.default_global,
    tier_rules: profile.tier_rules.map(renderTierRule),
  }, view)
}

// ---------------------------------------------------------------------------------------------
// Handlers

async function createOrReplace(context: TenantContext<CreateBody>) {
  const body = context.body
  checkPathCode(body.code)
  const fields = {
    currency_code: body.currency_code ?? null,
    default_for_currency: body.default_for_currency ?? false,
    default_global: body.default_global ?? false,
  }
  await writeProfile(context, body.code, checkedProfile(fields, toTierRules(body.tier_rules, ''), ''))
  return accepted
}

/** PUT merges the given fields onto the stored profile; `tier_rules`, when given, replaces all tiers. */
async function update(context: TenantContext<UpdateBody>) {
  const code = context.params['code']!
  const body = context.body
  if (body.code !== undefined && body.code !== code) {
    throw validationError([{ path: '/code', message: 'must equal the code in the path' }])
  }
  const stored = context.tenant.catalog.get('rounding_profile', code, context.nowMs)
  if (stored === null) throw new ApiError('not_found', `Rounding profile ${code} not found`)
  const fields = {
    currency_code: body.currency_code === undefined ? stored.currency_code : body.currency_code,
    default_for_currency: body.default_for_currency ?? stored.default_for_currency,
    default_global: body.default_global ?? stored.default_global,
  }
  const profile = body.tier_rules === undefined
    ? checkedProfile(fields, stored.tier_rules, '')
    : checkedProfile(fields, toTierRules(body.tier_rules, ''), '')
  await writeProfile(context, code, profile)
  return accepted
}

/** The profile an apply request names: stored (by code or `default`) or inline; null: none applies. */
function applyProfile(context: TenantContext<ApplyBodyType>): CompiledProfile | null {
  const { profile, currency_code: currency, as_of: asOf } = context.body
  if (typeof profile !== 'string') {
    const fields = { currency_code: profile.currency_code ?? null, default_for_currency: false, default_global: false }
    return compileProfile(checkedProfile(fields, toTierRules(profile.tier_rules, '/profile'), '/profile'))
  }
  const at = asOf === undefined ? context.nowMs : parseInstant(asOf)
  const resolved = resolveProfile(context.tenant.catalog, profile, currency ?? '', at)
  if (resolved === 'not_found') throw new ApiError('not_found', `Rounding profile ${profile} not found`)
  return resolved?.compiled ?? null
}

function applyValues(context: TenantContext<ApplyBodyType>) {
  const details: ErrorDetail[] = []
  const amounts = context.body.values.map((value, index) => {
    const amount = parseAmount(value)
    if (amount === null) details.push({ path: `/values/${index}`, message: valueMessage })
    return amount ?? 0
  })
  if (details.length > 0) throw validationError(details)
  const compiled = applyProfile(context)
  if (compiled === null) return { status: 200, body: { values: amounts.map(toNumber) } }
  const results = amounts.map((amount) => applyRounding(compiled, amount))
  results.forEach((result, index) => {
    if (!isAmountInRange(result)) details.push({ path: `/values/${index}`, message: `rounds to beyond ±${amountAbsMax}` })
  })
  if (details.length > 0) throw validationError(details)
  return { status: 200, body: { values: results.map(toNumber) } }
}

/** Cost of an apply request: one item per value (the spec counts items, not requests). */
function valuesCost(body: unknown): number {
  const values = (body as { values?: unknown } | null)?.values
  return Array.isArray(values) ? Math.max(1, values.length) : 1
}

export function roundingRoutes(): TenantRoute[] {
  return [
    route<CreateBody>({
      method: 'POST',
      path: '/rounding-profile',
      operationId: 'createRoundingProfile',
      errors: [422],
      summary: 'Create or replace a rounding profile (a claimed default is cleared on its previous holder)',
      tag: 'rounding profiles',
      body: ProfileCreate,
      responseStatus: 202,
      dimension: 'ingest',
      handler: createOrReplace,
    }),
    route<UpdateBody>({
      method: 'PUT',
      path: '/rounding-profile/:code',
      operationId: 'updateRoundingProfile',
      errors: [422],
      summary: 'Update a rounding profile: given fields replace the stored ones (404 when absent)',
      tag: 'rounding profiles',
      body: ProfileUpdate,
      responseStatus: 202,
      dimension: 'ingest',
      handler: update,
    }),
    route<undefined, typeof ReadQuery.static>({
      method: 'GET',
      path: '/rounding-profile',
      operationId: 'listRoundingProfiles',
      summary: 'Every rounding profile as of asOf, sorted by code',
      tag: 'rounding profiles',
      query: ReadQuery,
      response: Type.Array(ProfileResponse),
      dimension: 'query',
      handler: (context) => {
        const list: Record<string, unknown>[] = []
        const at = readInstant(context)
        const views = context.tenant.catalog.viewsAt('rounding_profile', at, context.query.include_deleted)
        for (const [code, view] of views) list.push(renderProfile(code, view))
        return { status: 200, body: list }
      },
    }),
    route<undefined, typeof ReadQuery.static>({
      method: 'GET',
      path: '/rounding-profile/:code',
      operationId: 'getRoundingProfile',
      summary: 'One rounding profile as of asOf',
      tag: 'rounding profiles',
      query: ReadQuery,
      response: ProfileResponse,
      dimension: 'query',
      handler: (context) => {
        const code = context.params['code']!
        const at = readInstant(context)
        const view = context.tenant.catalog.view('rounding_profile', code, at, context.query.include_deleted)
        return { status: 200, body: renderProfile(code, requireView(view, `Rounding profile ${code}`)) }
      },
    }),
    route<undefined, typeof WhenQuery.static>({
      method: 'DELETE',
      path: '/rounding-profile/:code',
      operationId: 'deleteRoundingProfile',
      summary: 'Soft-delete a rounding profile at when (default now)',
      tag: 'rounding profiles',
      query: WhenQuery,
      responseStatus: 202,
      dimension: 'ingest',
      handler: async (context) => {
        const code = context.params['code']!
        const at = deleteInstant(context)
        requireView(context.tenant.catalog.view('rounding_profile', code, at), `Rounding profile ${code}`)
        const change = context.tenant.catalog.plan('rounding_profile', code, null, at, context.nowMs, context.actor)
        if (change !== null) await context.tenant.commit([change])
        return accepted
      },
    }),
    route<ApplyBodyType>({
      method: 'POST',
      path: '/rounding-profile/apply',
      operationId: 'applyRoundingProfile',
      summary: 'Round values with a profile: a stored code, `default` (with currency_code), or an inline profile',
      tag: 'rounding profiles',
      body: ApplyBody,
      response: Type.Object({ values: Type.Array(Type.Number()) }),
      dimension: 'query',
      cost: valuesCost,
      handler: applyValues,
    }),
  ]
}
