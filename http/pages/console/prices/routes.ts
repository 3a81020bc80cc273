/**
 * The console's price pages, `/console/{slug}/why` and `/console/{slug}/changes`: GET forms whose
 * answer runs the same engine calls as `POST /price/query` with explain and `POST /price/diff`. A
 * page that computes a price costs the tenant's query rate like the JSON call it stands for (a
 * person in a browser must not get around the plan's limits); bad input, an unknown code and an
 * exhausted rate are shown in the form with the error's status, never as a 500.
 * @module
 */
import type { Reply, RootContext, RootRoute } from '../../../contracts.js'
import { errorPage } from '../../shared/error-page.js'
import { backTo } from '../../shared/form.js'
import { pageHeaders } from '../../shared/security-headers.js'
import { pageVisit, signedInPerson, type ConsoleVisit } from '../access.js'
import type { PriceAnswer } from './answer.js'
import { changesPage } from './changes-page.js'
import { whyPage } from './why-page.js'

function priceRoute(
  path: string,
  operationId: string,
  summary: string,
  render: (context: RootContext, visit: ConsoleVisit) => Promise<PriceAnswer>,
): RootRoute {
  return {
    method: 'GET',
    path,
    operationId,
    summary,
    tag: 'console',
    page: true,
    handler: async (context): Promise<Reply> => {
      const person = signedInPerson(context)
      if (person === null) return backTo('/portal', { error: 'sign-in-first' })
      try {
        const answer = await render(context, pageVisit(context, person, 'prices.read'))
        const retry: Record<string, string> =
          answer.retryAfterS === undefined ? {} : { 'retry-after': String(answer.retryAfterS) }
        return { status: answer.status, headers: { ...pageHeaders, ...retry }, body: answer.body }
      } catch (error) {
        return errorPage(error, person.email)
      }
    },
  }
}

export function priceConsoleRoutes(): RootRoute[] {
  return [
    priceRoute(
      '/console/:slug/why',
      'consoleWhyThisPrice',
      'Why this price: the explained price of a SKU as a waterfall, with the candidates that lost',
      whyPage,
    ),
    priceRoute(
      '/console/:slug/changes',
      'consoleWhatChanges',
      'What changes: the prices that differ between now and a chosen moment, paged',
      changesPage,
    ),
  ]
}
