/**
 * Tenant requests over HTTP (accounts/tenant-requests.ts): a signed-in person requests a
 * tenant and sees their requests (`/portal/tenant-requests`, session cookie; writes need a
 * same-origin Origin), and an operator lists, approves and rejects them
 * (`/admin/tenant-requests`, admin token). The portal's web pages post to the same functions.
 * @module
 */
import type { RootRoute } from '../contracts.js'
import { parseJsonBody } from '../request-body.js'
import { Type } from '@sinclair/typebox'
import { cookieSession } from '../console-auth.js'
import {
  approveTenantRequest,
  listTenantRequests,
  publicTenantRequest,
  rejectTenantRequest,
  requestTenant,
  slugProblem,
} from '../../accounts/tenant-requests.js'
import { ApiError, validationError } from '../../platform/errors.js'
import { validate } from '../validate.js'
import { requireFormToken } from '../pages/shared/csrf.js'
import { backToSession, formFields } from '../pages/shared/form.js'
import type { Tier as TierName } from '../../storage/system-store.js'
import { adminOnly, Tier } from './admin.js'

const RequestBody = Type.Object(
  {
    slug: Type.String({ minLength: 1, maxLength: 63 }),
    tier: Tier,
    region: Type.String({ minLength: 1, maxLength: 63 }),
  },
  { additionalProperties: false },
)
const SlugQuery = Type.Object({ slug: Type.String({ minLength: 1, maxLength: 100 }) })
const SlugAnswer = Type.Object({
  slug: Type.String(),
  available: Type.Boolean(),
  problem: Type.Union([Type.String(), Type.Null()], {
    description: 'why not: the rule, `taken`, or `taken (requested)`',
  }),
})
const RejectBody = Type.Object(
  { reason: Type.Optional(Type.String({ maxLength: 500 })) },
  { additionalProperties: false },
)
export const TenantRequestAnswer = Type.Object({
  id: Type.String(),
  email: Type.String(),
  slug: Type.String(),
  tier: Tier,
  region: Type.String(),
  status: Type.Union([
    Type.Literal('requested'),
    Type.Literal('provisioning'),
    Type.Literal('active'),
    Type.Literal('rejected'),
  ]),
  created_at: Type.String({ format: 'date-time' }),
  decided_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  reason: Type.Union([Type.String(), Type.Null()]),
})

export function tenantRequestRoutes(): RootRoute[] {
  return [
    {
      method: 'POST',
      path: '/portal/tenant-requests',
      operationId: 'requestTenant',
      summary: 'Request a tenant (slug, tier, region); approved by an operator, or at once with PRICING_AUTO_APPROVE',
      tag: 'portal',
      body: RequestBody,
      response: TenantRequestAnswer,
      responseStatus: 201,
      errors: [401, 403, 409],
      handler: async (context) => {
        const { email, secret } = cookieSession(context.deps, context.incoming, context.nowMs)
        const form = formFields(context.incoming)
        if (form !== null) {
          // The portal page's form: back to the page with what happened.
          requireFormToken(secret, form)
          try {
            const fields = validate<typeof RequestBody.static>(RequestBody, {
              slug: form.get('slug') ?? '',
              tier: form.get('tier') ?? '',
              region: form.get('region') ?? '',
            })
            const made = await requestTenant(
              context.deps,
              email,
              { ...fields, tier: fields.tier as TierName },
              context.nowMs,
            )
            return backToSession('/portal', secret, {
              notice:
                made.status === 'active'
                  ? `Your tenant ${made.slug} is ready.`
                  : `Your request for ${made.slug} is waiting for approval.`,
            })
          } catch (error) {
            if (error instanceof ApiError) return backToSession('/portal', secret, { error: error.message })
            throw error
          }
        }
        const body = validate<typeof RequestBody.static>(RequestBody, parseJsonBody(context.incoming) ?? {})
        const record = await requestTenant(context.deps, email, { ...body, tier: body.tier as TierName }, context.nowMs)
        return { status: 201, headers: { 'cache-control': 'no-store' }, body: publicTenantRequest(record) }
      },
    },
    {
      method: 'GET',
      path: '/portal/slug-check',
      operationId: 'checkSlug',
      summary:
        'Whether a slug may be requested now: the rule, and not taken by a tenant or an open request (the request form checks as you type)',
      tag: 'portal',
      query: SlugQuery,
      response: SlugAnswer,
      errors: [400, 401],
      handler: (context) => {
        cookieSession(context.deps, context.incoming, context.nowMs)
        const slug = context.query.get('slug') ?? ''
        if (slug.length === 0 || slug.length > 100)
          throw validationError(
            [{ path: 'query/slug', message: 'must be 1 to 100 characters' }],
            'slug must be 1 to 100 characters',
          )
        const problem = slugProblem(context.deps.system, slug)
        return {
          status: 200,
          headers: { 'cache-control': 'no-store' },
          body: { slug, available: problem === null, problem },
        }
      },
    },
    {
      method: 'GET',
      path: '/portal/tenant-requests',
      operationId: 'listMyTenantRequests',
      summary: "The signed-in person's tenant requests, newest first",
      tag: 'portal',
      response: Type.Array(TenantRequestAnswer),
      errors: [401],
      handler: (context) => {
        const { email } = cookieSession(context.deps, context.incoming, context.nowMs)
        return {
          status: 200,
          headers: { 'cache-control': 'no-store' },
          body: listTenantRequests(context.deps.system, email).map(publicTenantRequest),
        }
      },
    },
    adminOnly({
      method: 'GET',
      path: '/admin/tenant-requests',
      operationId: 'listTenantRequests',
      summary: 'Every tenant request, newest first',
      response: Type.Array(TenantRequestAnswer),
      handler: (context) => ({ status: 200, body: listTenantRequests(context.deps.system).map(publicTenantRequest) }),
    }),
    adminOnly({
      method: 'POST',
      path: '/admin/tenant-requests/:id/approve',
      operationId: 'approveTenantRequest',
      summary: 'Approve a request: the tenant is provisioned, the requester becomes its owner and gets a mail',
      response: TenantRequestAnswer,
      errors: [404, 409],
      handler: async (context) => ({
        status: 200,
        body: publicTenantRequest(await approveTenantRequest(context.deps, context.params['id']!, context.nowMs)),
      }),
    }),
    adminOnly({
      method: 'POST',
      path: '/admin/tenant-requests/:id/reject',
      operationId: 'rejectTenantRequest',
      summary: 'Reject a request, with an optional reason the requester sees',
      body: RejectBody,
      response: TenantRequestAnswer,
      errors: [404, 409],
      handler: async (context) => {
        const body = validate<typeof RejectBody.static>(RejectBody, parseJsonBody(context.incoming) ?? {})
        return {
          status: 200,
          body: publicTenantRequest(
            await rejectTenantRequest(context.deps.system, context.params['id']!, body.reason ?? null, context.nowMs),
          ),
        }
      },
    }),
  ]
}
