/**
 * Setting writes and soft deletes as use cases (./core.ts): a value takes effect from its
 * `updated_at` (a past or absent one means now), each key's value is checked by its definition
 * (engine/settings.ts), and a value that turns on a feature the tenant's plan lacks is refused;
 * turning it off is always allowed.
 * @module
 */
import { settingDefinition } from '../../engine/settings.js'
import { deleteKeys, unlimitedWriter, type DeleteInput } from './catalog.js'
import {
  applyBatch,
  invalid,
  Refusal,
  writeInstant,
  type ItemOutcome,
  type WriteContext,
  type WriteTarget,
} from './core.js'

/** One setting write: a known key, its value as text, and when it takes effect. */
export interface SettingInput {
  readonly key: string
  readonly value: string
  readonly updated_at?: string
}

/** A key no definition has (the edge asks first: this refusal answers before body checks). */
export function unknownSetting(key: string): Refusal | null {
  if (settingDefinition(key) !== undefined) return null
  return new Refusal({
    status: 'setting_unknown',
    message: `Unknown setting ${key}; GET /settings/definitions lists them`,
  })
}

/** Writes settings; an outcome per item. */
export function writeSettings(
  tenant: WriteTarget,
  context: WriteContext,
  items: readonly (SettingInput | Refusal)[],
): Promise<ItemOutcome[]> {
  const { nowMs, actor } = context
  return applyBatch(
    tenant,
    items,
    unlimitedWriter<SettingInput>(tenant, ({ key, value, updated_at: updatedAt }) => {
      const definition = settingDefinition(key)
      if (definition === undefined) return unknownSetting(key)
      const problem = definition.check(value)
      if (problem !== null) return invalid('/value', `${key} ${problem}`)
      const feature = definition.planFeature
      if (feature !== null && value === 'true' && !tenant.limits[feature]) {
        const message = `Setting ${key} needs a plan that includes ${feature}`
        return new Refusal({ status: 'plan_forbidden', message, fields: { setting: key, feature } })
      }
      return tenant.catalog.plan('settings', key, { value }, writeInstant(updatedAt, nowMs), nowMs, actor)
    }),
  )
}

/** Soft-deletes settings at their instant (they then take their default); one not written then is not_found. */
export function deleteSettings(
  tenant: WriteTarget,
  context: WriteContext,
  items: readonly (DeleteInput | Refusal)[],
): Promise<ItemOutcome[]> {
  return deleteKeys(tenant, context, { type: 'settings', what: (key) => `Setting ${key}`, items })
}
