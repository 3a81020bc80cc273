/**
 * Who sees a console page and who may post its forms (issue 9). A page needs a live session
 * (accounts/people/sign-in.ts: without one, a redirect to the portal's sign-in) of a user of the tenant;
 * a tenant the person is not a user of answers 404 exactly like one that does not exist, so a page
 * tells nobody which tenants exist. A form post also needs a same-origin `Origin` and the session's
 * form token (http/pages/shared/csrf.ts), and the action's permission from the roles table
 * (accounts/people/roles.ts) is checked before anything changes.
 * @module
 */
import type { RootContext } from '../../contracts.js'
import { ApiError } from '../../../platform/errors.js'
import { sameOrigin, sessionPerson } from '../../console-auth.js'
import { requirePermission, type Permission } from '../../../accounts/people/roles.js'
import { slugPattern, type TenantRuntime } from '../../../tenant/runtime.js'
import { csrfToken, requireFormToken } from '../shared/csrf.js'
import type { Role } from '../../../storage/system-store.js'

export interface ConsoleVisit {
  readonly email: string
  readonly role: Role
  /** The session's form token, for the page's forms. */
  readonly csrf: string
  /** The session's secret: signs the messages of the page's redirects (http/pages/shared/flash.ts). */
  readonly session: string
  readonly tenant: TenantRuntime
  readonly slug: string
}

/** The signed-in person of the request and their session's secret, or null. */
export function signedInPerson(context: RootContext): { email: string; secret: string } | null {
  return sessionPerson(context.deps, context.incoming, context.nowMs)
}

/** The tenant of the path as the person may see it: 404 unless they are a user of it, 503 while it loads. */
function visibleTenant(context: RootContext, email: string): { tenant: TenantRuntime; role: Role } {
  const slug = context.params['slug']!
  const tenant = slugPattern.test(slug) ? context.deps.tenants.get(slug) : undefined
  const role = tenant === undefined ? undefined : context.deps.system.member(slug, email)?.role
  if (tenant === undefined || role === undefined)
    throw new ApiError('not_found', `You are not a user of a tenant ${slug}`)
  if (!tenant.loaded) throw new ApiError('not_ready', 'The tenant is loading: try again in a moment', {}, 1)
  return { tenant, role }
}

/** A page's visit: the person's role must allow `permission`. */
export function pageVisit(
  context: RootContext,
  person: { email: string; secret: string },
  permission: Permission,
): ConsoleVisit {
  const { tenant, role } = visibleTenant(context, person.email)
  requirePermission(context.deps.system, tenant.record.slug, person.email, permission)
  return {
    email: person.email,
    role,
    csrf: csrfToken(person.secret),
    session: person.secret,
    tenant,
    slug: tenant.record.slug,
  }
}

/**
 * A form post's visit: same origin, the session's form token, the permission, and an active tenant
 * (a suspended one shows its pages but changes nothing).
 */
export function formVisit(
  context: RootContext,
  person: { email: string; secret: string },
  form: URLSearchParams,
  permission: Permission,
): ConsoleVisit {
  if (!sameOrigin(context.incoming, context.deps.publicUrl)) {
    throw new ApiError('forbidden', 'Cross-site request refused: a console form must come from a page of this service')
  }
  requireFormToken(person.secret, form)
  const visit = pageVisit(context, person, permission)
  if (visit.tenant.record.status !== 'active')
    throw new ApiError(
      'tenant_suspended',
      `Tenant ${visit.slug} is ${visit.tenant.record.status}: nothing can be changed`,
    )
  return visit
}
