/**
 * Rounding profiles: create or replace (POST), partial update (PUT, 404 when absent), reads, soft
 * delete, and applying a profile (stored, by code, or inline) to a list of values. Profiles are
 * versioned at write time; their checks, the defaults a write claims from other profiles and the
 * profile count are the write layer's (tenant/writes/rounding.ts).
 * Semantics of the tiers and modes: engine/rounding.ts.
 * @module
 */
import { Type } from '@sinclair/typebox'
import type { RoundingProfile, RoundingTierRule } from '../../engine/catalog.js'
import { amountAbsMax, batchItemsMax, codeLengthMax } from '../../engine/limits.js'
import { parseAmount, toNumber } from '../../engine/money.js'
import {
  applyRounding,
  compileProfile,
  defaultProfileName,
  isAmountInRange,
  resolveProfile,
  roundingTiersMax,
  type CompiledProfile,
} from '../../engine/rounding.js'
import type { View } from '../../engine/temporal.js'
import { parseInstant } from '../../engine/time.js'
import { route, type TenantContext, type TenantRoute } from '../contracts.js'
import { ApiError, validationError, type ErrorDetail } from '../../platform/errors.js'
import { AsOfQuery, Code, DateTime, IncludeDeletedQuery, readOnlyFields, WhenQuery } from '../schemas.js'
import { Refusal } from '../../tenant/writes/core.js'
import {
  checkedProfile,
  deleteRoundingProfiles,
  tierRules,
  updateRoundingProfiles,
  writeRoundingProfiles,
} from '../../tenant/writes/rounding.js'
import {
  accepted,
  acceptedOrThrow,
  itemProblem,
  readInstant,
  refusalError,
  requireView,
  withVersionMeta,
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
    currency_code: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: codeLengthMax,
        description: 'with profile `default`: whose currency default applies (absent: the global default only)',
      }),
    ),
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

// ---------------------------------------------------------------------------------------------
// Values and checks

const valueMessage = `must be a finite number within ±${amountAbsMax}`

function checkPathCode(code: string): void {
  const problem = itemProblem(Code, code)
  if (problem !== null) throw validationError([{ path: '/code', message: problem }])
  if (code === defaultProfileName) {
    throw validationError([{ path: '/code', message: `"${defaultProfileName}" is reserved for default resolution` }])
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
  return withVersionMeta(
    {
      code,
      currency_code: profile.currency_code,
      default_for_currency: profile.default_for_currency,
      default_global: profile.default_global,
      tier_rules: profile.tier_rules.map(renderTierRule),
    },
    view,
  )
}

// ---------------------------------------------------------------------------------------------
// Handlers

async function createOrReplace(context: TenantContext<CreateBody>) {
  checkPathCode(context.body.code)
  acceptedOrThrow(await writeRoundingProfiles(context.tenant, context, [context.body]))
  return accepted
}

/** PUT merges the given fields onto the stored profile; `tier_rules`, when given, replaces all tiers. */
async function update(context: TenantContext<UpdateBody>) {
  const code = context.params['code']!
  const body = context.body
  if (body.code !== undefined && body.code !== code) {
    throw validationError([{ path: '/code', message: 'must equal the code in the path' }])
  }
  acceptedOrThrow(await updateRoundingProfiles(context.tenant, context, [{ ...body, code }]))
  return accepted
}

/** The profile an apply request names: stored (by code or `default`) or inline; null: none applies. */
function applyProfile(context: TenantContext<ApplyBodyType>): CompiledProfile | null {
  const { profile, currency_code: currency, as_of: asOf } = context.body
  if (typeof profile !== 'string') {
    const fields = { currency_code: profile.currency_code ?? null, default_for_currency: false, default_global: false }
    const checked = checkedProfile(fields, tierRules(profile.tier_rules, '/profile'), '/profile')
    if (checked instanceof Refusal) throw refusalError(checked)
    return compileProfile(checked)
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
    if (!isAmountInRange(result))
      details.push({ path: `/values/${index}`, message: `rounds to beyond ±${amountAbsMax}` })
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
        const input = { key: context.params['code']!, when: context.query.when }
        acceptedOrThrow(await deleteRoundingProfiles(context.tenant, context, [input]))
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
