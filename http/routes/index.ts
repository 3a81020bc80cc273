/**
 * Every tenant route, in one list: the dispatcher's route table and the OpenAPI source.
 * @module
 */
import type { TenantRoute } from '../contracts.js'
import { articleRoutes } from './articles.js'
import { bundleRoutes } from './bundles.js'
import { changelogRoutes } from './changelog.js'
import { fxRoutes } from './fx.js'
import { managementRoutes } from './management.js'
import { peopleRoutes } from './people.js'
import { pricelistRoutes } from './pricelists.js'
import { priceCorrectionRoutes } from './price-corrections.js'
import { priceDiffRoutes } from './price-diff.js'
import { priceReadRoutes } from './price-reads.js'
import { priceSimulateRoutes } from './price-simulate.js'
import { priceWriteRoutes } from './price-writes.js'
import { referenceRoutes } from './reference.js'
import { roundingRoutes } from './rounding.js'
import { settingsRoutes } from './settings.js'
import { webhookRoutes } from './webhooks.js'

export function tenantRoutes(): TenantRoute[] {
  return [
    ...articleRoutes(),
    ...pricelistRoutes(),
    ...referenceRoutes(),
    ...settingsRoutes(),
    ...roundingRoutes(),
    ...changelogRoutes(),
    ...priceWriteRoutes(),
    ...priceCorrectionRoutes(),
    ...priceReadRoutes(),
    ...priceDiffRoutes(),
    ...priceSimulateRoutes(),
    ...fxRoutes(),
    ...bundleRoutes(),
    ...webhookRoutes(),
    ...managementRoutes(),
    ...peopleRoutes(),
  ]
}
