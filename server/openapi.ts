/**
 * Generates the OpenAPI 3.1 description from the route table and the same TypeBox schemas that
 * validate requests (TypeBox schemas are JSON Schema).
 * @module
 */
import type { TSchema } from '@sinclair/typebox'
import type { TenantRoute } from './api.js'
import { ErrorBody } from './schemas.js'
import type { RootRoute } from './routes/system.js'

function openApiPath(path: string): string {
  return path.replace(/:([A-Za-z_]+)/g, '{$1}')
}

function plain(schema: TSchema): unknown {
  return JSON.parse(JSON.stringify(schema))
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

function operation(
  summary: string,
  tag: string,
  path: string,
  query: TSchema | undefined,
  body: TSchema | undefined,
  response: TSchema | undefined,
  status: number,
  secured: boolean,
): Record<string, unknown> {
  const responses: Record<string, unknown> = {
    [String(status)]: response === undefined
      ? { description: status === 202 ? 'Accepted' : 'OK' }
      : { description: 'OK', content: { 'application/json': { schema: plain(response) } } },
    default: { description: 'Error', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
  }
  const op: Record<string, unknown> = { summary, tags: [tag], parameters: parameters(path, query), responses }
  if (body !== undefined) op['requestBody'] = { required: true, content: { 'application/json': { schema: plain(body) } } }
  if (secured) op['security'] = [{ bearer: [] }]
  return op
}

export function buildOpenApi(tenant: readonly TenantRoute[], root: readonly RootRoute[], serverUrl: string): unknown {
  const paths: Record<string, Record<string, unknown>> = {}
  const add = (path: string, method: string, op: Record<string, unknown>): void => {
    paths[path] ??= {}
    paths[path][method.toLowerCase()] = op
  }
  for (const route of root) {
    add(openApiPath(route.path), route.method, operation(route.summary, route.tag, route.path, undefined, route.body, route.response, route.responseStatus ?? 200, route.tag === 'admin'))
  }
  for (const route of tenant) {
    const path = `/t/{slug}${openApiPath(route.path)}`
    const op = operation(route.summary, route.tag, route.path, route.query, route.body, route.response, route.responseStatus ?? 200, true)
    ;(op['parameters'] as unknown[]).unshift({ name: 'slug', in: 'path', required: true, schema: { type: 'string' } })
    add(path, route.method, op)
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Pricing service',
      version: '1.0.0',
      description: 'Multi-tenant pricing API. Tenant paths are also served under /t/{slug}/api/v1 and at {slug}.{PRICING_DOMAIN}.',
    },
    servers: [{ url: serverUrl }],
    paths,
    components: {
      schemas: { Error: plain(ErrorBody) },
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
      },
    },
  }
}
