/**
 * Every tenant route, in one list: the dispatcher's route table and the OpenAPI source.
 * @module
 */
import type { TenantRoute } from '../api.js'
import { articleRoutes } from './articles.js'
import { changelogRoutes } from './changelog.js'
import { pricelistRoutes } from './pricelists.js'
import { referenceRoutes } from './reference.js'
import { settingsRoutes } from './settings.js'

export function tenantRoutes(): TenantRoute[] {
  return [...articleRoutes(), ...pricelistRoutes(), ...referenceRoutes(), ...settingsRoutes(), ...changelogRoutes()]
}
