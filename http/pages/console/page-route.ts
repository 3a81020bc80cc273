/**
 * A console page's GET route: the person must be signed in (else back to the portal) and a user of
 * the tenant with the page's permission (http/pages/console/access.ts); what the page renders, or
 * the 4xx it throws as an error page, is the reply. The one skeleton of every console page, those
 * that answer plain HTML and the price pages that answer a status and a Retry-After with theirs.
 * @module
 */
import type { Permission } from '../../../accounts/people/roles.js'
import type { Reply, RootContext, RootRoute } from '../../contracts.js'
import { errorPage } from '../shared/error-page.js'
import { backTo } from '../shared/form.js'
import { pageHeaders } from '../shared/security-headers.js'
import { pageVisit, signedInPerson, type ConsoleVisit } from './access.js'

/** A page's answer: its HTML (200), or its HTML with a status and, for a 429, a Retry-After. */
export type PageAnswer = string | { readonly status: number; readonly body: string; readonly retryAfterS?: number }

function pageReply(answer: PageAnswer): Reply {
  if (typeof answer === 'string') return { status: 200, headers: pageHeaders, body: answer }
  const retry: Record<string, string> =
    answer.retryAfterS === undefined ? {} : { 'retry-after': String(answer.retryAfterS) }
  return { status: answer.status, headers: { ...pageHeaders, ...retry }, body: answer.body }
}

export function pageRoute(
  path: string,
  operationId: string,
  summary: string,
  permission: Permission,
  render: (context: RootContext, visit: ConsoleVisit) => PageAnswer | Promise<PageAnswer>,
): RootRoute {
  return {
    method: 'GET',
    path,
    operationId,
    summary,
    tag: 'console',
    page: true,
    handler: async (context) => {
      const person = signedInPerson(context)
      if (person === null) return backTo('/portal', { error: 'sign-in-first' })
      try {
        return pageReply(await render(context, pageVisit(context, person, permission)))
      } catch (error) {
        return errorPage(error, person.email)
      }
    },
  }
}
