/**
 * Generates the OpenAPI 3.1 description from the route tables and the same TypeBox schemas that
 * validate requests and describe answers (TypeBox schemas are JSON Schema 2020-12, the dialect of
 * OpenAPI 3.1). Every operation gets its route's stable operationId, its security (public, the
 * operator's admin token, client credentials, or a tenant's bearer token), its success answer and
 * every error status it can answer: those of its pipeline (http/app.ts: 404 unknown tenant, 503
 * loading, restoring or storage nearly full, 401, 403, 413, 415, 429, 400) and those its handler
 * declares (`errors`).
 * test/http/openapi-contract.test.ts checks the document against the real answers of every operation.
 * @module
 */
import type { TSchema } from '@sinclair/typebox'
import type { OtherAnswers, TenantRoute, RootRoute } from './contracts.js'
import { errorStatus, reasonPhrases } from './error-status.js'
import { ErrorBody } from './schemas.js'
import { refusedWhenNearlyFull } from '../tenant/storage-guard.js'
import { assert } from '../engine/assert.js'

const jsonType = 'application/json'
const operationIdPattern = /^[a-z][A-Za-z0-9]*$/

/** Statuses every tenant route answers: unknown tenant, auth, suspended tenant, rate limit, loading. */
const tenantStatuses = [401, 403, 404, 429, 503]
/** Statuses of a route with a body: refused (validation, malformed JSON), too large; and for JSON, not JSON. */
const bodyStatuses = [400, 413]
const jsonBodyStatuses = [...bodyStatuses, 415]
/** Statuses every admin route answers: a missing or wrong admin token, the admin API off. */
const adminStatuses = [401, 404]

/** Headers that come with some error answers (components.headers). */
const errorHeaders: Readonly<Record<number, readonly string[]>> = {
  401: ['WWW-Authenticate'],
  429: ['Retry-After'],
  503: ['Retry-After'],
}

/** What each tag (the `tag` of the routes) groups; a tag without an entry is listed without one. */
const tagDescriptions: Readonly<Record<string, string>> = {
  system: 'Health, readiness, metrics and this document',
  auth: 'Access tokens (OAuth 2.0 client credentials) and the keys that verify them',
  admin: 'The operator API: tenants and their API keys',
  articles: 'Articles (SKUs), versioned by start date',
  pricelists: 'Pricelists: currency, VAT mode, parent, activity window and price rules',
  currencies: 'Currencies registered for a tenant',
  'tax areas': 'Tax areas, the places prices are taxed for',
  vat: 'VAT classes, VAT rates and the VAT class of each article per tax area',
  settings: 'Tenant settings, time-dependent',
  'rounding profiles': 'Rounding profiles and applying them to values',
  changelog: 'Every change, in order, by opaque cursor',
  prices: 'Price writes, the price query and single price reads',
  fx: 'Exchange rates: daily EUR rates and the feed',
  bundles: 'Bundle pricing rules',
  webhooks: 'Webhooks that receive change events',
  portal: "People's sign-in: magic links, the session cookie, console tokens",
  management:
    'Backups and restores of a tenant: console sign-in only (a session cookie or a console token; API keys get 403)',
}

/** components/responses names: the reason phrase without spaces (`ContentTooLarge`). */
function responseName(status: number): string {
  return (reasonPhrases[status] ?? `Status${status}`).replace(/[^A-Za-z]/g, '')
}

function openApiPath(path: string): string {
  return path.replace(/:([A-Za-z_]+)/g, '{$1}')
}

function plain(schema: TSchema): Record<string, unknown> {
  return JSON.parse(JSON.stringify(schema)) as Record<string, unknown>
}

function parameters(path: string, query: TSchema | undefined): unknown[] {
  const result: unknown[] = []
  for (const match of path.matchAll(/:([A-Za-z_]+)/g)) {
    result.push({ name: match[1], in: 'path', required: true, schema: { type: 'string' } })
  }
  const properties = (query as { properties?: Record<string, TSchema> } | undefined)?.properties ?? {}
  const required = new Set((query as { required?: string[] } | undefined)?.required ?? [])
  for (const [name, schema] of Object.entries(properties)) {
    result.push({ name, in: 'query', required: required.has(name), schema: plain(schema) })
  }
  return result
}

/** RFC 9110 phrases of the statuses that are not errors. */
const answerPhrases: Readonly<Record<number, string>> = {
  200: 'OK',
  201: 'Created',
  202: 'Accepted',
  204: 'No Content',
  304: 'Not Modified',
}

function phrase(status: number): string {
  return answerPhrases[status] ?? reasonPhrases[status] ?? String(status)
}

function success(status: number, response: TSchema | undefined, mediaType: string): Record<string, unknown> {
  const description = phrase(status)
  if (response === undefined) return { description }
  return { description, content: { [mediaType]: { schema: plain(response) } } }
}

/** The success answer, the error statuses (as references to components/responses) and other answers. */
function responses(
  status: number,
  response: TSchema | undefined,
  mediaType: string,
  errorStatuses: readonly number[],
  others: OtherAnswers,
): Record<string, unknown> {
  const result: Record<string, unknown> = { [String(status)]: success(status, response, mediaType) }
  for (const [code, schema] of Object.entries(others)) {
    const description = phrase(Number(code))
    result[code] =
      schema === null ? { description } : { description, content: { [jsonType]: { schema: plain(schema) } } }
  }
  for (const code of [...new Set(errorStatuses)].sort((left, right) => left - right)) {
    result[String(code)] ??= { $ref: `#/components/responses/${responseName(code)}` }
  }
  result['default'] = { $ref: '#/components/responses/Error' }
  return result
}

interface OperationParts {
  readonly path: string
  readonly query?: TSchema | undefined
  readonly body?: TSchema | undefined
  readonly bodyType?: string | undefined
  readonly response?: TSchema | undefined
  readonly responseType?: string | undefined
  readonly responseStatus?: number | undefined
  readonly operationId: string
  readonly summary: string
  readonly tag: string
  readonly errors?: readonly number[] | undefined
  readonly otherAnswers?: OtherAnswers | undefined
}

function operation(
  parts: OperationParts,
  security: unknown[],
  pipelineStatuses: readonly number[],
): Record<string, unknown> {
  const statuses = [...pipelineStatuses, ...(parts.errors ?? [])]
  if (parts.body !== undefined)
    statuses.push(...((parts.bodyType ?? jsonType) === jsonType ? jsonBodyStatuses : bodyStatuses))
  if (parts.query !== undefined) statuses.push(400)
  const op: Record<string, unknown> = {
    operationId: parts.operationId,
    summary: parts.summary,
    tags: [parts.tag],
    parameters: parameters(parts.path, parts.query),
    security,
    responses: responses(
      parts.responseStatus ?? 200,
      parts.response,
      parts.responseType ?? jsonType,
      statuses,
      parts.otherAnswers ?? {},
    ),
  }
  if (parts.body !== undefined) {
    op['requestBody'] = { required: true, content: { [parts.bodyType ?? jsonType]: { schema: plain(parts.body) } } }
  }
  return op
}

const slugParameter = {
  name: 'slug',
  in: 'path',
  required: true,
  description: 'the tenant',
  schema: { type: 'string' },
}

const rootSecurity = {
  public: [],
  admin: [{ adminToken: [] }],
  // HTTP Basic, or (the empty requirement) client_id and client_secret in the form body.
  client: [{ clientBasic: [] }, {}],
} as const

/**
 * components/responses: the error statuses the operations refer to, each with its codes from the
 * registry (platform/errors.ts) in the description.
 */
function errorResponses(paths: Record<string, Record<string, unknown>>): Record<string, unknown> {
  const used = new Set<string>()
  for (const item of Object.values(paths)) {
    for (const op of Object.values(item)) {
      for (const answer of Object.values((op as { responses: Record<string, { $ref?: string }> }).responses)) {
        if (answer.$ref !== undefined) used.add(answer.$ref.slice('#/components/responses/'.length))
      }
    }
  }
  const codesByStatus = new Map<number, string[]>()
  for (const [code, status] of Object.entries(errorStatus)) {
    codesByStatus.set(status, [...(codesByStatus.get(status) ?? []), code])
  }
  const result: Record<string, unknown> = {}
  for (const [status, codes] of [...codesByStatus].sort(([left], [right]) => left - right)) {
    if (!used.has(responseName(status))) continue
    const headers: Record<string, unknown> = {}
    for (const name of errorHeaders[status] ?? []) headers[name] = { $ref: `#/components/headers/${name}` }
    result[responseName(status)] = {
      description: `${reasonPhrases[status]}: ${codes.join(', ')}`,
      ...(Object.keys(headers).length > 0 ? { headers } : {}),
      content: { [jsonType]: { schema: { $ref: '#/components/schemas/Error' } } },
    }
  }
  result['Error'] = {
    description: 'Any other error (500 internal_error)',
    content: { [jsonType]: { schema: { $ref: '#/components/schemas/Error' } } },
  }
  return result
}

export function buildOpenApi(tenant: readonly TenantRoute[], root: readonly RootRoute[], serverUrl: string): unknown {
  const paths: Record<string, Record<string, unknown>> = {}
  const operationIds = new Set<string>()
  const add = (path: string, method: string, op: Record<string, unknown>): void => {
    const id = op['operationId'] as string
    // A programmer error: generated clients would silently lose or misname a method.
    if (!operationIdPattern.test(id) || operationIds.has(id))
      assert(false, `operationId ${id} of ${method} ${path} is not a unique camelCase name`)
    operationIds.add(id)
    paths[path] ??= {}
    paths[path][method.toLowerCase()] = op
  }
  const documented = root.filter((route) => route.page !== true && route.internal !== true)
  for (const route of documented) {
    const access = route.access ?? 'public'
    // A write answers 503 storage_full while storage is nearly full (tenant/storage-guard.ts).
    const statuses = [...(access === 'admin' ? adminStatuses : []), ...(refusedWhenNearlyFull(route) ? [503] : [])]
    add(openApiPath(route.path), route.method, operation(route, [...rootSecurity[access]], statuses))
  }
  const tags = new Set<string>(documented.map((route) => route.tag))
  for (const route of tenant) {
    const op = operation(route, [{ bearer: [] }], tenantStatuses)
    ;(op['parameters'] as unknown[]).unshift(slugParameter)
    add(`/t/{slug}${openApiPath(route.path)}`, route.method, op)
    tags.add(route.tag)
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Pricing service',
      version: '1.0.0',
      description:
        'Multi-tenant pricing API. Tenant paths are also served under /t/{slug}/api/v1 and at {slug}.{PRICING_DOMAIN}. ' +
        'Every operationId is stable: generated clients may name their methods after it.',
    },
    servers: [{ url: serverUrl }],
    tags: [...tags].map((name) =>
      tagDescriptions[name] === undefined ? { name } : { name, description: tagDescriptions[name] },
    ),
    paths,
    components: {
      schemas: { Error: plain(ErrorBody) },
      responses: errorResponses(paths),
      headers: {
        'WWW-Authenticate': {
          description: 'the authentication scheme to use (RFC 9110 section 11.6.1)',
          schema: { type: 'string' },
        },
        'Retry-After': { description: 'seconds to wait before retrying', schema: { type: 'integer' } },
      },
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description: 'an access token from POST /oauth2/token',
        },
        adminToken: { type: 'http', scheme: 'bearer', description: 'the operator token (PRICING_ADMIN_TOKEN)' },
        clientBasic: {
          type: 'http',
          scheme: 'basic',
          description:
            'an API key: client_id and client_secret as HTTP Basic (RFC 6749 section 2.3.1), or as form fields',
        },
      },
    },
  }
}
