/**
 * The portal's web page and the pages' static files (issue 9): `GET /portal` (http/pages/shared/portal-page.ts),
 * `GET /assets/{name}`, and `GET /console`, which shows the portal until the console's own pages
 * list a person's tenants.
 * @module
 */
import type { RootRoute } from '../../contracts.js'
import { Type } from '@sinclair/typebox'
import { ApiError } from '../../../platform/errors.js'
import { cookieValue, sessionCookie } from '../../../accounts/people/sign-in.js'
import { listTenantRequests, servedRegions } from '../../../accounts/tenant-requests.js'
import { operatorEmails } from '../operator/routes.js'
import { asset } from '../shared/assets.js'
import { csrfToken } from '../shared/csrf.js'
import { flashOf } from '../shared/flash.js'
import { portalPage } from '../shared/portal-page.js'
import { pageHeaders } from '../shared/security-headers.js'

export function portalPageRoutes(): RootRoute[] {
  return [
    {
      method: 'GET',
      path: '/portal',
      operationId: 'portalPage',
      summary: 'The account portal (HTML): sign in; your tenants, your requests, request a tenant',
      tag: 'portal',
      page: true,
      response: Type.String({ description: 'an HTML page' }),
      responseType: 'text/html',
      handler: (context) => {
        const secret = cookieValue(context.incoming.cookie, sessionCookie)
        const person = context.deps.signIn.session(secret, context.nowMs)
        const body = portalPage({
          person,
          csrf: person === null ? '' : csrfToken(secret),
          flash: flashOf(context.query, person === null ? null : secret),
          regions: servedRegions(context.deps.config),
          system: context.deps.system,
          requests: person === null ? [] : listTenantRequests(context.deps.system, person),
          operator: person !== null && operatorEmails(context.deps.config.operatorEmails).has(person),
        })
        return { status: 200, headers: pageHeaders, body }
      },
    },
    {
      method: 'GET',
      path: '/console',
      operationId: 'consoleHome',
      summary: "Where a sign-in lands: the portal's list of the person's tenants, for now",
      tag: 'portal',
      page: true,
      responseStatus: 303,
      handler: () => ({ status: 303, headers: { location: '/portal', 'cache-control': 'no-store' } }),
    },
    {
      method: 'GET',
      path: '/assets/:name',
      operationId: 'pageAsset',
      summary: "The pages' stylesheet",
      tag: 'portal',
      page: true,
      response: Type.String({ description: 'CSS' }),
      responseType: 'text/css',
      errors: [404],
      handler: (context) => {
        const found = asset(context.params['name']!)
        if (found === undefined) throw new ApiError('not_found', `No asset ${context.params['name']}`)
        return {
          status: 200,
          headers: {
            'content-type': found.type,
            'cache-control': 'public, max-age=3600',
            'x-content-type-options': 'nosniff',
          },
          body: found.body,
        }
      },
    },
  ]
}
