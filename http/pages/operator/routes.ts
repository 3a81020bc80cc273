/**
 * The operators' page and its forms (issue 9): `GET /operator`, and the approve and reject posts.
 * An operator is a person signed in to the portal whose address is in `PRICING_OPERATOR_EMAILS`;
 * for anyone else the page does not exist (404). The forms need the session's form token and a
 * same-origin `Origin`, and call the same functions as the admin API and the CLI
 * (accounts/tenant-requests.ts).
 * @module
 */
import { statusOf } from '../../error-status.js'
import type { Reply, RootContext, RootRoute } from '../../contracts.js'
import { ApiError } from '../../../platform/errors.js'
import { sameOrigin, sessionPerson } from '../../console-auth.js'
import { normalEmail } from '../../../accounts/people/sign-in.js'
import { approveTenantRequest, rejectTenantRequest } from '../../../accounts/tenant-requests.js'
import { csrfToken, requireFormToken } from '../shared/csrf.js'
import { errorPage } from '../shared/error-page.js'
import { flashOf } from '../shared/flash.js'
import { backTo, backToSession, formFields } from '../shared/form.js'
import { pageHeaders } from '../shared/security-headers.js'
import { operatorPage } from './page.js'

/** The operators' addresses of the configuration, normalised. */
export function operatorEmails(setting: string): Set<string> {
  return new Set(
    setting
      .split(',')
      .map((part) => normalEmail(part))
      .filter((email): email is string => email !== null),
  )
}

/** The signed-in operator, or an ApiError: 404 for anyone who is not one (the page does not exist for them). */
function operator(context: RootContext): { email: string; secret: string } | null {
  const person = sessionPerson(context.deps, context.incoming, context.nowMs)
  if (person === null) return null
  if (!operatorEmails(context.deps.config.operatorEmails).has(person.email))
    throw new ApiError('not_found', 'No such page')
  return person
}

function decision(
  path: string,
  operationId: string,
  summary: string,
  decide: (context: RootContext, id: string, form: URLSearchParams) => Promise<string>,
): RootRoute {
  return {
    method: 'POST',
    path,
    operationId,
    summary,
    tag: 'operator',
    page: true,
    handler: async (context): Promise<Reply> => {
      let person: { email: string; secret: string } | null = null
      try {
        person = operator(context)
        if (person === null) return backTo('/portal', { error: 'sign-in-first' })
        if (!sameOrigin(context.incoming, context.deps.publicUrl))
          throw new ApiError('forbidden', 'Cross-site request refused')
        const form = formFields(context.incoming) ?? new URLSearchParams()
        requireFormToken(person.secret, form)
        try {
          return backToSession('/operator', person.secret, {
            notice: await decide(context, context.params['id']!, form),
          })
        } catch (error) {
          if (error instanceof ApiError && statusOf(error) !== 403)
            return backToSession('/operator', person.secret, { error: error.message })
          throw error
        }
      } catch (error) {
        return errorPage(error, person?.email ?? null)
      }
    },
  }
}

export function operatorRoutes(): RootRoute[] {
  return [
    {
      method: 'GET',
      path: '/operator',
      operationId: 'operatorPage',
      summary: "The operators' page: tenant requests to approve or reject, and the tenants",
      tag: 'operator',
      page: true,
      handler: (context) => {
        try {
          const person = operator(context)
          if (person === null) return backTo('/portal', { error: 'sign-in-first' })
          const body = operatorPage({
            person: person.email,
            csrf: csrfToken(person.secret),
            flash: flashOf(context.query, person.secret),
            system: context.deps.system,
          })
          return { status: 200, headers: pageHeaders, body }
        } catch (error) {
          return errorPage(error, sessionPerson(context.deps, context.incoming, context.nowMs)?.email ?? null)
        }
      },
    },
    decision(
      '/operator/tenant-requests/:id/approve',
      'operatorApprove',
      'Approve a tenant request (form)',
      async (context, id) => {
        const record = await approveTenantRequest(context.deps, id, context.nowMs)
        return `Approved ${record.slug}: ${record.email} is its owner and has a mail.`
      },
    ),
    decision(
      '/operator/tenant-requests/:id/reject',
      'operatorReject',
      'Reject a tenant request (form)',
      async (context, id, form) => {
        const reason = (form.get('reason') ?? '').trim().slice(0, 500)
        const record = await rejectTenantRequest(context.deps.system, id, reason === '' ? null : reason, context.nowMs)
        return `Rejected ${record.slug}.`
      },
    ),
  ]
}
