/**
 * The operations the fuzzer calls: every operation of the server's own OpenAPI document (tenant
 * API, management, admin, portal, token endpoint, system), and the web pages and form posts the
 * document leaves out (the console, the operators' page: http/pages/console/routes.ts), taken from the
 * server's own route tables, so that a route added later is fuzzed without a change here.
 * @module
 */
import type { Schema } from './schema.js'

/** Who an operation expects: a tenant's API token, a console person, the operator, client credentials, a browser session, anyone. */
export type Access = 'tenant' | 'console' | 'admin' | 'client' | 'session' | 'public'

export interface QueryParameter {
  readonly name: string
  readonly schema: Schema
  readonly required: boolean
}

export interface Operation {
  readonly id: string
  readonly method: string
  /** The path with `{name}` parameters, `/t/{slug}` first for tenant operations. */
  readonly template: string
  readonly tag: string
  readonly access: Access
  /** Path parameters in order, without the `slug` of `/t/{slug}`. */
  readonly params: readonly string[]
  readonly tenant: boolean
  readonly query: readonly QueryParameter[]
  /** The request body, or null; form posts of pages list their fields instead of a schema. */
  readonly body: { readonly schema: Schema; readonly mediaType: string } | null
  readonly formFields: readonly string[] | null
  /** An HTML page or its form post (not in the OpenAPI document). */
  readonly page: boolean
}

interface DocumentOperation {
  operationId: string
  tags?: string[]
  security?: Record<string, unknown>[]
  parameters?: { name: string; in: string; required?: boolean; schema?: Schema }[]
  requestBody?: { content: Record<string, { schema?: Schema }> }
}

function accessOf(template: string, tag: string, security: Record<string, unknown>[] | undefined): Access {
  if (template.startsWith('/t/{slug}')) return tag === 'management' ? 'console' : 'tenant'
  const schemes = (security ?? []).flatMap((requirement) => Object.keys(requirement))
  if (schemes.includes('adminToken')) return 'admin'
  if (schemes.includes('clientBasic')) return 'client'
  // The portal's JSON endpoints read the browser's session cookie.
  return tag === 'portal' ? 'session' : 'public'
}

/** The operations of an OpenAPI document. */
export function documentOperations(document: {
  paths: Record<string, Record<string, DocumentOperation>>
}): Operation[] {
  const operations: Operation[] = []
  for (const [template, item] of Object.entries(document.paths)) {
    for (const [method, op] of Object.entries(item)) {
      const tag = op.tags?.[0] ?? ''
      const parameters = op.parameters ?? []
      const content = op.requestBody?.content ?? {}
      const mediaType = Object.keys(content)[0]
      operations.push({
        id: op.operationId,
        method: method.toUpperCase(),
        template,
        tag,
        access: accessOf(template, tag, op.security),
        params: parameters
          .filter(
            (parameter) => parameter.in === 'path' && !(parameter.name === 'slug' && template.startsWith('/t/{slug}')),
          )
          .map((parameter) => parameter.name),
        tenant: template.startsWith('/t/{slug}'),
        query: parameters
          .filter((parameter) => parameter.in === 'query')
          .map((parameter) => ({
            name: parameter.name,
            schema: parameter.schema ?? {},
            required: parameter.required === true,
          })),
        body: mediaType === undefined ? null : { schema: content[mediaType]!.schema ?? {}, mediaType },
        formFields: null,
        page: false,
      })
    }
  }
  return operations
}

/** The fields each page form posts (http/pages/console/routes.ts, http/pages/operator/routes.ts); `_csrf` is added by the driver. */
const formFieldsByPath: Readonly<Record<string, readonly string[]>> = {
  '/console/:slug/users': ['email', 'role'],
  '/console/:slug/users/:email/role': ['role'],
  '/console/:slug/keys': ['name'],
  '/console/:slug/backups/:id/restore': ['backup_first'],
  '/operator/tenant-requests/:id/reject': ['reason'],
}

/** The pages and form posts of route tables (`page: true`), as operations. */
export function pageOperations(
  routes: readonly { method: string; path: string; operationId: string; tag: string; page?: true }[],
): Operation[] {
  return routes
    .filter((route) => route.page === true)
    .map((route) => ({
      id: route.operationId,
      method: route.method,
      template: route.path.replace(/:([A-Za-z_]+)/g, '{$1}'),
      tag: route.tag === 'operator' ? 'operator' : 'console',
      access: 'session' as const,
      params: [...route.path.matchAll(/:([A-Za-z_]+)/g)].map((match) => match[1]!),
      tenant: false,
      query: [],
      body: null,
      formFields: route.method === 'POST' ? (formFieldsByPath[route.path] ?? []) : null,
      page: true,
    }))
}
