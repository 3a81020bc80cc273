/**
 * Currencies, tax areas, VAT classes, VAT rates and article-to-VAT-class mappings.
 * @module
 */
import type { TenantRoute } from '../api.js'

export function referenceRoutes(): TenantRoute[] {
  return []
}
