/**
 * The settings catalogue (SPEC.md "Setting"): every changeable key with its default, its type and
 * the rule its values follow, plus `settingValue`, the read every consumer (price engine, webhooks,
 * retention) uses. Settings are versioned like any entity: catalogue type `settings`, key = setting
 * key, value `{value}` as a string. A key never written (or deleted) answers its default.
 * Non-goal: plan checks. A definition names the plan feature that enabling it needs; the server
 * decides against the tenant's plan.
 * @module
 */
import { assert } from './assert.js'
import type { Catalog } from './catalog.js'
import { codeLengthMax } from './limits.js'

/** How a value is written: JSON-schema-like words, refined by each key's rule. */
export type SettingType = 'boolean' | 'integer' | 'string'

/** A plan feature a setting needs before it may be turned on (tenant/plans.ts `Limits`). */
export type PlanFeature = 'webhooks' | 'retention'

export interface SettingDefinition {
  readonly key: string
  readonly default: string
  readonly description: string
  readonly type: SettingType
  /** Writing 'true' needs this plan feature; writing 'false' is always allowed. */
  readonly planFeature: PlanFeature | null
  /** Answers what is wrong with `value`, or null when it is valid. */
  readonly check: (value: string) => string | null
}

const booleanText = /^(true|false)$/
/** Canonical decimal digits: no sign, no leading zeros, so stored strings compare equal. */
const integerText = /^(0|[1-9][0-9]*)$/
const controlCharacter = /[\u0000-\u001f\u007f]/

function checkBoolean(value: string): string | null {
  return booleanText.test(value) ? null : "must be 'true' or 'false'"
}

function checkInteger(value: string, minimum: number): string | null {
  const valid = integerText.test(value) && Number.isSafeInteger(Number(value)) && Number(value) >= minimum
  if (valid) return null
  return minimum === 0 ? 'must be a non-negative integer (digits only)' : 'must be a positive integer (digits only)'
}

function checkCode(value: string): string | null {
  if (value.length < 1 || value.length > codeLengthMax || controlCharacter.test(value)) {
    return `must be a code of 1-${codeLengthMax} characters without control characters`
  }
  return null
}

function checkBaseCurrency(value: string): string | null {
  // Rates are stored as EUR -> X (units of X per 1 EUR); another base would need a re-based store.
  return value === 'EUR' ? null : "must be 'EUR': exchange rates are stored EUR-based (EUR -> X)"
}

function flag(
  key: string,
  description: string,
  defaultValue: string,
  planFeature: PlanFeature | null = null,
): SettingDefinition {
  return { key, default: defaultValue, description, type: 'boolean', planFeature, check: checkBoolean }
}

/** The spec's catalogue, in its order. */
export const settingDefinitions: readonly SettingDefinition[] = Object.freeze([
  flag(
    'require.homogeneous.currency',
    'When true, a price query whose pricelists have different currencies, or whose currency_code differs from the pricelist currency, answers 400.',
    'false',
  ),
  // The spec leaves this default open; off matches require.homogeneous.currency.
  flag(
    'require.homogeneous.vat_mode',
    'When true, a price query mixing NET and GROSS pricelists answers 400.',
    'false',
  ),
  flag(
    'strict.article.validation',
    'When true, a price is accepted only if its SKU has a live article in force at the price start.',
    'false',
  ),
  flag(
    'strict.pricelist.validation',
    'When true, a price is accepted only if a pricelist with that code has ever been created.',
    'false',
  ),
  flag(
    'ingest.skip.dedup',
    'Bulk-load mode: when true, every price is written (and records a change) even when identical to the current one.',
    'false',
  ),
  {
    key: 'default.tax.area',
    default: 'SE',
    description:
      'Tax area used where a request may leave it out (a price query always needs one). A code of 1-64 characters.',
    type: 'string',
    planFeature: null,
    check: checkCode,
  },
  flag(
    'fx.rate.auto.update',
    'When true, exchange rates are fetched from the daily euro reference-rate feed every 24 hours.',
    'true',
  ),
  {
    key: 'fx.base.currency',
    default: 'EUR',
    description: 'Reference currency for rate storage and cross rates. Only EUR: rates are stored EUR-based.',
    type: 'string',
    planFeature: null,
    check: checkBaseCurrency,
  },
  flag(
    'change.events.enabled',
    'When true, changes are delivered to webhooks (needs a plan with webhooks). The changelog records changes regardless.',
    'false',
    'webhooks',
  ),
  flag(
    'effective_price.events.enabled',
    'When true, the changelog records an effective_price event whenever the price a single read answers changes (a write, a scheduled start, a parent, rule, VAT, FX or window change), at its moment. Each write then also costs its events.',
    'false',
    null,
  ),
  flag(
    'retention.enabled',
    'When true, price history is thinned per SKU and pricelist (needs a plan with history retention).',
    'false',
    'retention',
  ),
  {
    key: 'retention.max.versions',
    default: '0',
    description: 'Keep at most this many versions; 0 means no limit. A non-negative integer.',
    type: 'integer',
    planFeature: null,
    check: (value) => checkInteger(value, 0),
  },
  {
    key: 'retention.history.ms',
    default: '2592000000',
    description: 'Keep versions from the last N milliseconds (default 30 days). A positive integer.',
    type: 'integer',
    planFeature: null,
    check: (value) => checkInteger(value, 1),
  },
  // Not in the spec's catalogue: issue 30's prior price (docs/api.md, "Prior price").
  {
    key: 'omnibus.days',
    default: '30',
    description:
      'The days before a price reduction over which its prior price (the lowest price applied) is taken (EU Directive 98/6/EC, Article 6a: at least 30). A positive integer.',
    type: 'integer',
    planFeature: null,
    check: (value) => checkInteger(value, 1),
  },
])

const definitionsByKey: ReadonlyMap<string, SettingDefinition> = new Map(
  settingDefinitions.map((definition) => [definition.key, definition]),
)

assert(definitionsByKey.size === settingDefinitions.length, 'setting keys are unique')
for (const definition of settingDefinitions) {
  assert(definition.check(definition.default) === null, 'every default passes its own check')
}

/** The definition of `key`, or undefined when it is not a setting. */
export function settingDefinition(key: string): SettingDefinition | undefined {
  return definitionsByKey.get(key)
}

/** What is wrong with writing `value` to `key` (a known key), or null when it is valid. */
export function settingProblem(key: string, value: string): string | null {
  const definition = definitionsByKey.get(key)
  assert(definition !== undefined, 'settingProblem needs a known key')
  return definition.check(value)
}

/** The value written for `key` and in force at `at`; the default when none is (never, later, deleted). */
export function settingValue(catalog: Catalog, key: string, at: number): string {
  const definition = definitionsByKey.get(key)
  assert(definition !== undefined, 'settingValue needs a known key')
  return catalog.get('settings', key, at)?.value ?? definition.default
}

/** A boolean setting in force at `at`. Plan features are the caller's to check as well. */
export function settingEnabled(catalog: Catalog, key: string, at: number): boolean {
  assert(definitionsByKey.get(key)?.type === 'boolean', 'settingEnabled needs a boolean key')
  return settingValue(catalog, key, at) === 'true'
}
