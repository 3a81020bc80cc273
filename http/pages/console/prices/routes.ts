/**
 * The console's price pages, `/console/{slug}/why` and `/console/{slug}/changes`: GET forms whose
 * answer runs the same engine calls as `POST /price/query` with explain and `POST /price/diff`; and
 * `/console/{slug}/corrections`, a price's own versions with their marks as errors (its two form
 * posts are actions of http/pages/console/routes.ts). A
 * page that computes a price costs the tenant's query rate like the JSON call it stands for (a
 * person in a browser must not get around the plan's limits); bad input, an unknown code and an
 * exhausted rate are shown in the form with the error's status, never as a 500.
 * @module
 */
import type { RootRoute } from '../../../contracts.js'
import { pageRoute } from '../page-route.js'
import { changesPage } from './changes-page.js'
import { correctionsPage } from './corrections-page.js'
import { whyPage } from './why-page.js'

export function priceConsoleRoutes(): RootRoute[] {
  return [
    pageRoute(
      '/console/:slug/why',
      'consoleWhyThisPrice',
      'Why this price: the explained price of a SKU as a waterfall, with the candidates that lost',
      'prices.read',
      whyPage,
    ),
    pageRoute(
      '/console/:slug/changes',
      'consoleWhatChanges',
      'What changes: the prices that differ between now and a chosen moment, paged',
      'prices.read',
      changesPage,
    ),
    pageRoute(
      '/console/:slug/corrections',
      'consoleCorrections',
      "Corrections: a price's own versions, newest first, with a form to mark one as an error or take the mark back",
      'prices.read',
      correctionsPage,
    ),
  ]
}
