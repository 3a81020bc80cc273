/**
 * Request plans: for one operation, what to send, as data drawn by fast-check. A plan is valid
 * (from the schemas, on the seeded world), or valid with something broken: the body's tree
 * (mutate.ts), its bytes, its content type, its absence, the path parameters, the query, the
 * method, the credentials, or the transfer itself (a body cut short by the client). The driver
 * turns a plan into bytes when it sends it (driver.ts), resolving `Ref`s against the running server.
 * @module
 */
import fc from 'fast-check'
import { Ref, toTree, type JValue, type RefKind } from './json.js'
import {
  byteMutation,
  numericStrings,
  oddDates,
  oddStrings,
  protoKeys,
  treeMutation,
  type ByteMutation,
  type TreeMutation,
} from './mutate.js'
import type { Operation, QueryParameter } from './operations.js'
import { dateTime, decoySlug, mainSlug, meaningful, pools, valueOf, type Schema } from './schema.js'

export type Kind =
  | 'valid'
  | 'mutated'
  | 'garbage'
  | 'bytes'
  | 'contentType'
  | 'noBody'
  | 'path'
  | 'query'
  | 'method'
  | 'auth'
  | 'cutTransfer'

/** A path segment: text to percent-encode, or text sent as it is (already encoded, or deliberately broken). */
export type Segment = { readonly value: JValue; readonly raw: boolean }

export type BodyPlan =
  | { readonly type: 'none' }
  | {
      readonly type: 'json'
      readonly tree: JValue
      readonly mutations: readonly TreeMutation[]
      readonly bytes: ByteMutation | null
    }
  | {
      readonly type: 'form'
      readonly fields: readonly (readonly [string, JValue])[]
      readonly csrf: 'valid' | 'missing' | 'wrong'
      readonly bytes: ByteMutation | null
    }

/** Credentials: the operation's own (`right`), or one of the wrong ones. */
export type Auth =
  | 'right'
  | 'none'
  | 'garbage'
  | 'long'
  | 'basic'
  | 'admin'
  | 'key'
  | 'console'
  | 'decoy'
  | 'lowercase'
  | 'jwtShape'
  | 'cookieNoOrigin'

export interface RequestPlan {
  readonly op: number
  readonly kind: Kind
  readonly method: string
  /** The tenant in the path: the fuzzer's, or an unknown or malformed slug. */
  readonly slug: string
  readonly params: readonly Segment[]
  /** Query as name/value pairs, each value encoded; or a raw query string. */
  readonly query: readonly (readonly [string, JValue])[] | string
  readonly body: BodyPlan
  /** null: the operation's own content type. */
  readonly contentType: string | null
  readonly auth: Auth
  readonly pathStyle: PathStyle
}

export type PathStyle = 'plain' | 'trailingSlash' | 'legacyPrefix' | 'upperCase'

/** Path segments that are not what a route expects (sent as they are: already percent-encoded). */
const oddSegments = [
  '%00',
  '%ff',
  '%zz',
  '%',
  '%C3%A9',
  '%F0%9F%98%80',
  '%E2%80%AE',
  'a'.repeat(65),
  'a'.repeat(1500),
  '..',
  '%2e%2e',
  '%2F',
  'a%2Fb',
  '__proto__',
  'constructor',
  'toString',
  'hasOwnProperty',
  'prototype',
  'null',
  '-1',
  '0',
  '1e400',
  '9'.repeat(30),
  '1.5',
  '%20',
  '+',
  '%20SKU-1',
  'SKU-1%00',
  'UPPER',
  '*',
  '~',
  '%3Cx%3E',
]
const oddSlugs = [
  'nope',
  'UPPER',
  'a'.repeat(64),
  '-x',
  'x-',
  '%00',
  '%ff',
  '__proto__',
  'constructor',
  'a_b',
  'fuzz%20',
]
const contentTypes = [
  'text/plain',
  'application/xml',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/json; charset=utf-16',
  'APPLICATION/JSON',
  'application/json-patch+json',
  'text/json',
  'application/jsonl',
  '*/*',
  'application/json, text/plain',
  'a'.repeat(300),
  'application/octet-stream',
  'json',
]
const otherMethods = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS', 'TRACE', 'FOO']
const wrongAuth: Auth[] = [
  'none',
  'garbage',
  'long',
  'basic',
  'admin',
  'key',
  'console',
  'decoy',
  'lowercase',
  'jwtShape',
  'cookieNoOrigin',
]

/** Valid values of path parameters with no schema meaning of their own (ids of the running server). */
function paramValue(op: Operation, name: string): fc.Arbitrary<JValue> {
  const ref = (kind: RefKind): fc.Arbitrary<JValue> => fc.nat(1000).map((index) => new Ref(kind, index))
  if (name === 'slug') {
    // The operator's writes go to the decoy tenant (suspending the fuzzer's own tenant would end the run).
    if (op.access === 'admin')
      return op.method === 'GET' || op.method === 'POST'
        ? fc.constantFrom<JValue>(decoySlug, mainSlug, ...pools.newSlugs)
        : fc.constantFrom<JValue>(decoySlug, ...pools.newSlugs)
    return fc.constant(mainSlug)
  }
  if (name === 'clientId') return fc.oneof(ref('otherKey'), ref('decoyKey'))
  if (name === 'id') {
    if (op.template.includes('/webhooks/')) return ref('webhook')
    if (op.template.includes('tenant-requests')) return ref('tenantRequest')
    return ref('backup')
  }
  if (name === 'name') return fc.constantFrom(...pools.assets)
  if (name === 'code' && op.tag === 'prices') return fc.constantFrom(...pools.pricelists)
  const known = meaningful(name, op.tag)
  if (known !== null) return known as fc.Arbitrary<JValue>
  return fc.constantFrom(...pools.skus)
}

function validParams(op: Operation): fc.Arbitrary<Segment[]> {
  return fc.tuple(...op.params.map((name) => paramValue(op, name).map((value): Segment => ({ value, raw: false }))))
}

/** Path parameters with one of them odd. */
function oddParams(op: Operation): fc.Arbitrary<Segment[]> {
  return fc
    .tuple(validParams(op), fc.nat(Math.max(0, op.params.length - 1)), fc.constantFrom(...oddSegments))
    .map(([segments, index, odd]) =>
      segments.map((segment, position) => (position === index ? { value: odd, raw: true } : segment)),
    )
}

function queryText(value: unknown): JValue {
  return typeof value === 'string' || value instanceof Ref
    ? value
    : typeof value === 'number' || typeof value === 'boolean'
      ? String(value)
      : JSON.stringify(value)
}

/** Read instants: mostly left out, so that reads see what the fuzzer wrote (any instant is still valid). */
const readInstants = new Set(['asOf', 'as_of'])

function validQuery(op: Operation): fc.Arbitrary<[string, JValue][]> {
  const present = (parameter: QueryParameter): fc.Arbitrary<[string, JValue] | null> => {
    const value = valueOf(parameter.schema, op.tag, parameter.name).map((item): [string, JValue] => [
      parameter.name,
      queryText(item),
    ])
    if (parameter.required) return value
    // A read instant is present one time in five, any other optional parameter one time in two.
    return readInstants.has(parameter.name)
      ? fc.oneof({ weight: 1, arbitrary: value }, { weight: 4, arbitrary: fc.constant(null) })
      : fc.option(value, { freq: 2 })
  }
  return fc
    .tuple(...op.query.map(present))
    .map((pairs) => pairs.filter((pair): pair is [string, JValue] => pair !== null))
}

/** A query with something wrong: a value of another type, an unknown or repeated name, broken encoding. */
function oddQuery(op: Operation): fc.Arbitrary<[string, JValue][] | string> {
  const names = op.query.length > 0 ? op.query.map((parameter) => parameter.name) : ['x']
  const oddValue = fc.constantFrom<JValue>(
    ...numericStrings,
    ...oddStrings,
    ...oddDates,
    'abc',
    '1.5',
    '-1',
    '99999999999999999999',
    'a'.repeat(5000),
  )
  return fc.oneof(
    fc
      .tuple(validQuery(op), fc.constantFrom(...names), oddValue)
      .map(([pairs, name, value]): [string, JValue][] => [...pairs.filter(([key]) => key !== name), [name, value]]),
    fc
      .tuple(validQuery(op), fc.constantFrom('foo', ...protoKeys, 'asOf', 'page', 'size', 'limit'))
      .map(([pairs, name]): [string, JValue][] => [...pairs, [name, '1']]),
    fc
      .tuple(validQuery(op), fc.constantFrom(...names))
      .map(([pairs, name]): [string, JValue][] => [...pairs, [name, '1'], [name, 'two']]),
    fc.constantFrom(
      '%',
      '%zz',
      'a=%ff',
      `${names[0]}=%00`,
      `${names[0]}=%E0%80%AF`,
      '&&&',
      '=',
      '=x',
      `${names[0]}`,
      `${names[0]}[]=1`,
      `${names[0]}[a]=1`,
    ),
  )
}

/** The keys a batch item carries that the single write takes from its path. */
const batchKeys: Readonly<Record<string, Readonly<Record<string, readonly string[]>>>> = {
  article: { sku: pools.skus },
  pricelist: { code: pools.pricelists },
  price: { sku: pools.skus, pricelist: pools.pricelists },
  'article-taxclass': {},
}

/**
 * A valid batch body: the batch schema only says "array", so its items come from the single
 * write's schema with the keys of the path added (deletes: codes, or price keys).
 */
function batchBody(op: Operation, operations: readonly Operation[]): fc.Arbitrary<unknown> | null {
  if (!op.template.endsWith('/batch')) return null
  const family = op.template.slice(0, -'/batch'.length)
  const entity = family.slice(family.lastIndexOf('/') + 1)
  const keys = batchKeys[entity]
  if (keys === undefined) return null
  const items = (item: fc.Arbitrary<unknown>): fc.Arbitrary<unknown[]> => fc.array(item, { minLength: 1, maxLength: 4 })
  const keyRecord = fc.record(
    Object.fromEntries(Object.entries(keys).map(([name, values]) => [name, fc.constantFrom(...values)])),
  )
  if (op.method === 'DELETE') {
    const when = fc.option(dateTime(), { nil: undefined })
    if (entity === 'price')
      return items(
        fc.tuple(keyRecord, when).map(([record, at]) => (at === undefined ? record : { ...record, when: at })),
      )
    const codes = Object.values(keys)[0] ?? pools.skus
    return items(
      fc.oneof(
        fc.constantFrom(...codes),
        fc
          .tuple(fc.constantFrom(...codes), when)
          .map(([code, at]) => ({ [Object.keys(keys)[0]!]: code, ...(at === undefined ? {} : { when: at }) })),
      ),
    )
  }
  const single = operations.find(
    (candidate) =>
      candidate.body !== null &&
      candidate.method !== 'DELETE' &&
      (candidate.template === family || candidate.template.startsWith(`${family}/{`)),
  )
  if (single === undefined) return null
  return items(
    fc
      .tuple(valueOf(single.body!.schema, single.tag, null), keyRecord)
      .map(([value, record]) => ({ ...(value as object), ...record })),
  )
}

/**
 * The body schema without the optional fields that repeat a path parameter (`sku`, `code`, `key`...,
 * which must equal the path's): a valid body leaves them out rather than contradict the path.
 */
function withoutEchoes(op: Operation): Schema {
  const schema = op.body!.schema
  const properties = schema['properties'] as Record<string, Schema> | undefined
  if (properties === undefined || op.params.length === 0) return schema
  const echoed = new Set([
    ...op.params,
    ...op.params.map((name) => name.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`)),
  ])
  const required = new Set((schema['required'] ?? []) as string[])
  return {
    ...schema,
    properties: Object.fromEntries(
      Object.entries(properties).filter(([name]) => required.has(name) || !echoed.has(name)),
    ),
  }
}

function validBody(op: Operation, operations: readonly Operation[]): fc.Arbitrary<JValue> {
  return (batchBody(op, operations) ?? valueOf(withoutEchoes(op), op.tag, null)).map(toTree)
}

/** A body for an operation that has none, or junk where it has one. */
const garbage: fc.Arbitrary<JValue> = fc.oneof(
  fc.jsonValue({ maxDepth: 4 }).map(toTree),
  fc
    .anything({ maxDepth: 3, withNullPrototype: true })
    .map((value) => toTree(JSON.parse(JSON.stringify(value ?? null)))),
)

function formFields(op: Operation): fc.Arbitrary<[string, JValue][]> {
  const field = (name: string): fc.Arbitrary<[string, JValue]> => {
    const values: Record<string, fc.Arbitrary<JValue>> = {
      email: fc.constantFrom(...pools.emails),
      role: fc.constantFrom('viewer', 'editor', 'admin', 'owner'),
      name: fc.constantFrom(...pools.texts),
      retain: fc.constantFrom('true', 'false'),
      reason: fc.constantFrom(...pools.texts),
    }
    return (values[name] ?? fc.constant('x')).map((value): [string, JValue] => [name, value])
  }
  return fc.tuple(...(op.formFields ?? []).map(field))
}

/** The token endpoint's form: a real key's credentials (resolved when sent). */
const tokenForm: fc.Arbitrary<[string, JValue][]> = fc.boolean().map((own): [string, JValue][] => [
  ['grant_type', 'client_credentials'],
  ['client_id', new Ref(own ? 'clientId' : 'otherKey', 0)],
  ['client_secret', new Ref('clientSecret', own ? 0 : 1)],
])

function oddForm(valid: fc.Arbitrary<[string, JValue][]>): fc.Arbitrary<[string, JValue][]> {
  const oddValue = fc.constantFrom<JValue>(...oddStrings, ...numericStrings, 'a'.repeat(5000), 'a'.repeat(200_000))
  return fc
    .tuple(valid, fc.nat(10), oddValue, fc.constantFrom('drop', 'odd', 'repeat', 'extra'))
    .map(([fields, index, value, how]): [string, JValue][] => {
      const position = fields.length === 0 ? 0 : index % fields.length
      if (how === 'drop') return fields.filter((_, at) => at !== position)
      if (how === 'repeat' && fields.length > 0) return [...fields, [fields[position]![0], value]]
      if (how === 'odd' && fields.length > 0)
        return fields.map((field, at): [string, JValue] => (at === position ? [field[0], value] : field))
      return [...fields, [protoKeys[index % protoKeys.length]!, value]]
    })
}

function kindsOf(op: Operation): { weight: number; arbitrary: fc.Arbitrary<Kind> }[] {
  const weighted: [Kind, number][] =
    op.body !== null || op.formFields !== null || op.access === 'client'
      ? [
          ['valid', 14],
          ['mutated', 34],
          ['garbage', 6],
          ['bytes', 14],
          ['contentType', 6],
          ['noBody', 3],
          ['path', op.params.length > 0 || op.tenant ? 6 : 1],
          ['query', 3],
          ['method', 3],
          ['auth', 4],
          ['cutTransfer', 2],
        ]
      : [
          ['valid', 36],
          ['path', op.params.length > 0 || op.tenant ? 22 : 2],
          ['query', op.query.length > 0 ? 22 : 4],
          ['method', 6],
          ['auth', 8],
          ['garbage', 2],
        ]
  return weighted.map(([kind, weight]) => ({ weight, arbitrary: fc.constant(kind) }))
}

function bodyPlan(op: Operation, kind: Kind, operations: readonly Operation[]): fc.Arbitrary<BodyPlan> {
  const none = fc.constant<BodyPlan>({ type: 'none' })
  if (op.formFields !== null || op.access === 'client') {
    const valid = op.access === 'client' ? tokenForm : formFields(op)
    const csrf: fc.Arbitrary<'valid' | 'missing' | 'wrong'> = op.page
      ? kind === 'valid'
        ? fc.constant('valid' as const)
        : fc.constantFrom('valid' as const, 'valid' as const, 'missing' as const, 'wrong' as const)
      : fc.constant('missing' as const)
    const fields =
      kind === 'valid' || kind === 'path' || kind === 'query' || kind === 'method' || kind === 'auth'
        ? valid
        : oddForm(valid)
    const bytes =
      kind === 'bytes' || kind === 'cutTransfer'
        ? byteMutation.map((mutation): ByteMutation | null => mutation)
        : fc.constant(null)
    if (kind === 'noBody') return none
    return fc.record({ type: fc.constant('form' as const), fields, csrf, bytes })
  }
  if (op.body === null) {
    if (kind !== 'garbage') return none
    return garbage.map((tree): BodyPlan => ({ type: 'json', tree, mutations: [], bytes: null }))
  }
  if (kind === 'noBody') return none
  const tree = kind === 'garbage' ? garbage : validBody(op, operations)
  const mutations: fc.Arbitrary<TreeMutation[]> =
    kind === 'mutated' || kind === 'bytes'
      ? fc.array(treeMutation, { minLength: kind === 'mutated' ? 1 : 0, maxLength: 3 })
      : fc.constant([])
  const bytes =
    kind === 'bytes' || kind === 'cutTransfer'
      ? byteMutation.map((mutation): ByteMutation | null => mutation)
      : fc.constant(null)
  return fc.record({ type: fc.constant('json' as const), tree, mutations, bytes })
}

/** One request plan for operation `index`. */
export function requestPlan(operations: readonly Operation[], index: number): fc.Arbitrary<RequestPlan> {
  const op = operations[index]!
  return fc.oneof(...kindsOf(op)).chain((kind) =>
    fc.record({
      op: fc.constant(index),
      kind: fc.constant(kind),
      method:
        kind === 'method'
          ? fc.constantFrom<string>(...otherMethods.filter((method) => method !== op.method))
          : fc.constant<string>(op.method),
      slug:
        kind === 'path' && op.tenant
          ? fc.oneof(
              { weight: 3, arbitrary: fc.constant<string>(mainSlug) },
              { weight: 1, arbitrary: fc.constantFrom<string>(...oddSlugs) },
            )
          : fc.constant<string>(mainSlug),
      params: kind === 'path' && op.params.length > 0 ? oddParams(op) : validParams(op),
      query: kind === 'query' ? oddQuery(op) : (validQuery(op) as fc.Arbitrary<[string, JValue][] | string>),
      body: bodyPlan(op, kind, operations),
      contentType:
        kind === 'contentType' ? fc.constantFrom<string | null>(...contentTypes) : fc.constant<string | null>(null),
      auth: kind === 'auth' ? fc.constantFrom(...wrongAuth) : fc.constant<Auth>('right'),
      pathStyle:
        kind === 'path'
          ? fc.constantFrom<PathStyle>('plain', 'trailingSlash', 'legacyPrefix', 'upperCase')
          : op.tenant
            ? fc.oneof(
                { weight: 9, arbitrary: fc.constant<PathStyle>('plain') },
                { weight: 1, arbitrary: fc.constant<PathStyle>('legacyPrefix') },
              )
            : fc.constant<PathStyle>('plain'),
    }),
  )
}

/**
 * Operations that cost the server a slow hash (scrypt: a token, a new key), a copy of the tenant's
 * LMDB environment (a backup, a restore, a new tenant) or a scrape of every metric: drawn a fifth
 * as often as the others, so that a run's time goes to input handling, not to a few slow paths.
 */
const slowOperations = new Set([
  'issueToken',
  'getMetrics',
  'createApiKey',
  'createKey',
  'consoleCreateKey',
  'createTenant',
  'approveTenantRequest',
  'operatorApprove',
  'createBackup',
  'createTenantBackup',
  'consoleTakeBackup',
  'startRestore',
  'restoreTenant',
  'consoleRestore',
  'rotateSigningKey',
  'runTenantRetention',
])

/** Requests over all operations: each equally likely, the slow ones a fifth as likely. */
export function requestArbitrary(operations: readonly Operation[]): fc.Arbitrary<RequestPlan> {
  return fc.oneof(
    ...operations.map((op, index) => ({
      weight: slowOperations.has(op.id) ? 1 : 5,
      arbitrary: requestPlan(operations, index),
    })),
  )
}
