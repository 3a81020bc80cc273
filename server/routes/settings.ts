/**
 * Settings.
 * @module
 */
import type { TenantRoute } from '../api.js'

export function settingsRoutes(): TenantRoute[] {
  return []
}
