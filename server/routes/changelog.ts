/**
 * The changelog.
 * @module
 */
import type { TenantRoute } from '../api.js'

export function changelogRoutes(): TenantRoute[] {
  return []
}
