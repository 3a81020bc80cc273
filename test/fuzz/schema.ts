/**
 * Valid values from the JSON Schemas of the server's OpenAPI document (TypeBox output: `type`,
 * `properties`/`required`, `patternProperties` for records, `anyOf` for unions, `const`, `enum`,
 * `pattern`, `format`, bounds), as fast-check arbitraries. A value that only the schema knows
 * would rarely name anything that exists (a SKU, a pricelist, a currency), so fields and path
 * parameters with a known meaning draw from the world the driver seeds (`pools`): valid writes
 * then update real entities and valid reads find them.
 * @module
 */
import fc from 'fast-check'
import { Ref, type RefKind } from './json.js'

export type Schema = Record<string, unknown>

/** The tenant the fuzzer writes and checks, a second one the operator routes may change, and the first one's owner. */
export const mainSlug = 'fuzz'
export const decoySlug = 'fuzz-decoy'
export const ownerEmail = 'owner@fuzz.example'

/** Codes and values the driver seeds before fuzzing (driver.ts), so valid requests meet real data. */
export const pools = {
  skus: ['SKU-1', 'SKU-2', 'SKU-3', 'BUNDLE-1'],
  pricelists: ['PL-EU', 'PL-SE', 'PL-CHILD'],
  currencies: ['EUR', 'SEK', 'USD', 'NOK'],
  areas: ['SE', 'DE', 'NO'],
  classes: ['standard', 'reduced', 'zero'],
  profiles: ['R-99', 'R-05'],
  settingKeys: [
    'require.homogeneous.currency',
    'require.homogeneous.vat_mode',
    'strict.article.validation',
    'strict.pricelist.validation',
    'ingest.skip.dedup',
    'default.tax.area',
    'fx.rate.auto.update',
    'change.events.enabled',
    'retention.enabled',
    'retention.max.versions',
    'retention.history.ms',
    'omnibus.days',
  ],
  settingValues: ['true', 'false', '0', '3', 'SE', '2592000000'],
  emails: ['fz-user1@example.com', 'fz-user2@example.com'],
  /** Tenants the fuzzer may create (admin API, portal requests): few, so that creating stays bounded. */
  newSlugs: ['fz-alpha', 'fz-beta', 'fz-gamma'],
  urls: ['https://127.0.0.1:9/hook', 'https://[::1]:9/hook'],
  expressions: ['sales * 0.9', 'sales + 1', 'sales', 'fields.cost * 1.25'],
  filters: ['', 'article.type == "shoe"', 'article.sku.startsWith("SKU")', 'true'],
  texts: ['a name', 'Åsa ☃ 名前', 'x', 'shoe'],
  entityTypes: ['article', 'pricelist', 'price', null],
  assets: ['app.css', 'console.js', 'portal.js'],
} as const

/** Instants far from the run's own time, so that nothing written becomes due while the fuzzer runs. */
const instants = [
  '2020-01-01T00:00:00Z',
  '2024-06-30T12:00:00+02:00',
  '2023-03-01',
  '2150-01-01T00:00:00Z',
  '2100-07-01T00:00:00.5-05:00',
  '2101-01-01',
]
const dayMs = 86_400_000

export function dateTime(): fc.Arbitrary<string> {
  const now = Date.now()
  const random = fc
    .date({ min: new Date('1971-01-01T00:00:00Z'), max: new Date('2199-12-31T00:00:00Z'), noInvalidDate: true })
    .filter((date) => Math.abs(date.getTime() - now) > dayMs)
    .map((date) => date.toISOString())
  return fc.oneof(fc.constantFrom(...instants), random)
}

function date(): fc.Arbitrary<string> {
  return fc.constantFrom('2020-01-01', '2024-02-29', '2150-06-01', '2023-12-31')
}

const ref = (kind: RefKind): fc.Arbitrary<Ref> => fc.nat(1000).map((index) => new Ref(kind, index))

/**
 * Values with a meaning, by field or parameter name, within the operation's tag (a `code` is a
 * pricelist code under pricelists, a currency under currencies...). Null when the name has none.
 */
export function meaningful(name: string, tag: string): fc.Arbitrary<unknown> | null {
  const from = (values: readonly unknown[]): fc.Arbitrary<unknown> => fc.constantFrom(...values)
  switch (name) {
    case 'sku':
    case 'sku_code':
    case 'bundleSku':
      return from(pools.skus)
    case 'pricelist':
    case 'parent_code':
    case 'pricelistCode':
      return from(pools.pricelists)
    case 'currency_code':
    case 'base':
    case 'quote':
      return from(pools.currencies)
    case 'tax_area_code':
    case 'tax_area':
    case 'taxArea':
      return from(pools.areas)
    case 'vat_class_code':
    case 'vat_class':
    case 'vatClass':
      return from(pools.classes)
    case 'code':
      return codeOf(tag)
    case 'key':
      return tag === 'settings' ? from(pools.settingKeys) : null
    case 'value':
      return tag === 'settings' ? from(pools.settingValues) : null
    case 'email':
      return from(pools.emails)
    case 'url':
      return from(pools.urls)
    case 'expression':
      return from(pools.expressions)
    case 'filter':
      return tag === 'articles' || tag === 'pricelists' ? from(pools.filters) : null
    case 'entity_type_filter':
      return from(pools.entityTypes)
    case 'entity_type':
      return from(pools.entityTypes.filter((type) => type !== null))
    case 'region':
      return fc.constant('local')
    case 'slug':
      return tag === 'admin' || tag === 'portal' ? from(pools.newSlugs) : null
    case 'tenant':
      return fc.constantFrom(mainSlug, decoySlug)
    case 'backup_id':
      return ref('backup')
    case 'name':
      return tag === 'console' ? from(pools.assets) : null
    case 'sales':
    case 'fixed_price':
    case 'percent_of_base':
    case 'quantity_break':
    case 'discount_value':
    case 'offset':
    case 'increment':
    case 'from':
    case 'to':
      return amount()
    case 'rounding_profile':
      return from([...pools.profiles, 'default'])
    case 'pricelist_filter':
      return tag === 'prices' ? fc.record({ pricelists: fc.subarray([...pools.pricelists], { minLength: 1 }) }) : null
    case 'rates':
      return tag === 'fx'
        ? fc.dictionary(
            fc.constantFrom('SEK', 'USD', 'NOK'),
            fc.integer({ min: 1, max: 200_000 }).map((units) => units / 1000),
            { minKeys: 1, maxKeys: 3 },
          )
        : null
    case 'price':
      return tag === 'prices'
        ? fc.oneof(
            amount(),
            fc.record({ sales: amount(), fields: fc.constant({ cost: 4.5 }) }, { requiredKeys: ['sales'] }),
          )
        : null
    default:
      return null
  }
}

/** An amount as the price writes take it: a number with at most four decimals, or its text. */
function amount(): fc.Arbitrary<unknown> {
  const number = fc.oneof(
    fc.integer({ min: 0, max: 500 }),
    fc.integer({ min: 1, max: 10_000_000 }).map((units) => units / 10_000),
  )
  return fc.oneof({ weight: 3, arbitrary: number }, { weight: 1, arbitrary: number.map(String) })
}

function codeOf(tag: string): fc.Arbitrary<unknown> | null {
  switch (tag) {
    case 'pricelists':
      return fc.constantFrom(...pools.pricelists)
    case 'currencies':
      return fc.constantFrom(...pools.currencies)
    case 'tax areas':
      return fc.constantFrom(...pools.areas)
    case 'vat':
      return fc.constantFrom(...pools.classes)
    case 'rounding profiles':
      return fc.constantFrom(...pools.profiles)
    default:
      return null
  }
}

/** Amounts and other numbers: small, with at most four decimals, inside the schema's bounds. */
function numberIn(schema: Schema, integer: boolean): fc.Arbitrary<number> {
  const minimum =
    typeof schema['minimum'] === 'number'
      ? schema['minimum']
      : typeof schema['exclusiveMinimum'] === 'number'
        ? schema['exclusiveMinimum'] + 1
        : -1000
  const maximum =
    typeof schema['maximum'] === 'number'
      ? schema['maximum']
      : typeof schema['exclusiveMaximum'] === 'number'
        ? schema['exclusiveMaximum'] - 1
        : 10_000
  const low = Math.max(minimum, -1_000_000)
  const high = Math.min(maximum, 1_000_000)
  if (integer || high - low < 1)
    return fc.integer({ min: Math.ceil(low), max: Math.max(Math.ceil(low), Math.floor(high)) })
  return fc.oneof(
    fc.integer({ min: Math.ceil(low), max: Math.floor(high) }),
    fc
      .double({ min: low, max: high, noNaN: true, noDefaultInfinity: true })
      .map((value) => Math.min(high, Math.max(low, Math.round(value * 10_000) / 10_000))),
  )
}

function stringOf(schema: Schema): fc.Arbitrary<string> {
  const minLength = typeof schema['minLength'] === 'number' ? schema['minLength'] : 0
  const maxLength = Math.min(typeof schema['maxLength'] === 'number' ? schema['maxLength'] : 24, 24)
  if (schema['format'] === 'date-time') return dateTime()
  if (schema['format'] === 'date') return date()
  const fits = (text: string): boolean => text.length >= minLength && text.length <= Math.max(maxLength, minLength)
  if (typeof schema['pattern'] === 'string') {
    return fc.stringMatching(new RegExp(schema['pattern'])).filter(fits)
  }
  return fc.oneof(
    fc.string({ minLength, maxLength: Math.max(minLength, maxLength) }),
    fc.constantFrom(...pools.texts).filter(fits),
  )
}

function objectOf(schema: Schema, tag: string): fc.Arbitrary<unknown> {
  const properties = (schema['properties'] ?? {}) as Record<string, Schema>
  const required = new Set((schema['required'] ?? []) as string[])
  const patterns = schema['patternProperties'] as Record<string, Schema> | undefined
  if (patterns !== undefined && Object.keys(properties).length === 0) {
    const [keyPattern, valueSchema] = Object.entries(patterns)[0] ?? ['^(.*)$', {}]
    // Map keys (metadata, price fields) from a few names, as long as the key pattern admits them.
    const keyRegex = new RegExp(keyPattern)
    const names = ['colour', 'size', 'brand', 'cost'].filter((name) => keyRegex.test(name))
    const keys = names.length > 0 ? fc.constantFrom(...names) : fc.stringMatching(keyRegex)
    return fc.dictionary(keys, valueOf(valueSchema, tag, null), { maxKeys: 3 })
  }
  const model: Record<string, fc.Arbitrary<unknown>> = {}
  for (const [name, property] of Object.entries(properties)) {
    // Response-only fields a client may send back (updated_at...) are left out of valid writes.
    if (!required.has(name) && Object.keys(property).length === 0) continue
    model[name] = valueOf(property, tag, name)
  }
  return fc.record(model, { requiredKeys: [...required].filter((name) => name in model) })
}

/** A valid value of `schema`; `name` is the field's name (for meaningful values), null for items. */
export function valueOf(schema: Schema, tag: string, name: string | null): fc.Arbitrary<unknown> {
  const known = name === null ? null : meaningful(name, tag)
  const objectValued = name === 'rates' || name === 'pricelist_filter'
  if (known !== null && (accepts(schema, 'string') || (objectValued && accepts(schema, 'object')))) return known
  if ('const' in schema) return fc.constant(schema['const'])
  if (Array.isArray(schema['enum'])) return fc.constantFrom(...(schema['enum'] as unknown[]))
  const union = (schema['anyOf'] ?? schema['oneOf']) as Schema[] | undefined
  if (union !== undefined) return fc.oneof(...union.map((branch) => valueOf(branch, tag, name)))
  switch (schema['type']) {
    case 'string':
      return stringOf(schema)
    case 'integer':
      return numberIn(schema, true)
    case 'number':
      return numberIn(schema, false)
    case 'boolean':
      return fc.boolean()
    case 'null':
      return fc.constant(null)
    case 'array': {
      const minLength = typeof schema['minItems'] === 'number' ? schema['minItems'] : 0
      const maxLength = Math.max(
        minLength,
        Math.min(typeof schema['maxItems'] === 'number' ? schema['maxItems'] : 4, 4),
      )
      const singular = name === 'skus' ? 'sku' : name === 'pricelists' ? 'pricelist' : null
      return fc.array(valueOf((schema['items'] ?? {}) as Schema, tag, singular), { minLength, maxLength })
    }
    case 'object':
      return objectOf(schema, tag)
    default:
      // No type: anything (TypeBox's Unknown).
      return fc.jsonValue({ maxDepth: 2 })
  }
}

/** Does the schema (or one of its branches) admit a value of this JSON type? */
export function accepts(schema: Schema, type: string): boolean {
  if (schema['type'] === type) return true
  if ('const' in schema) return typeof schema['const'] === type
  if (Array.isArray(schema['enum'])) return (schema['enum'] as unknown[]).some((value) => typeof value === type)
  const union = (schema['anyOf'] ?? schema['oneOf']) as Schema[] | undefined
  return union !== undefined && union.some((branch) => accepts(branch, type))
}
