/**
 * Pricelists.
 * @module
 */
import type { TenantRoute } from '../api.js'

export function pricelistRoutes(): TenantRoute[] {
  return []
}
