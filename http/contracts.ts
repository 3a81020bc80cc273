/**
 * Route definitions shared by the route files, the dispatcher and the OpenAPI generator: a route
 * names its schemas once; they validate requests and describe the API.
 * @module
 */
import type { Permission } from '../accounts/people/roles.js'
import type { SignIn } from '../accounts/people/sign-in.js'
import type { TObject, TSchema } from '@sinclair/typebox'
import type { Incoming } from './adapter.js'
import type { Dimension } from '../tenant/rate-limits.js'
import type { TenantRuntime } from '../tenant/runtime.js'

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'

export interface Reply {
  status: number
  body?: unknown
  headers?: Record<string, string>
  /** Called once the body is written or dropped: the body borrows memory until then (a worker's answer arena). */
  release?: () => void
  /** Another node's answer passed on (http/forward.ts): its own rate-limit and sequence headers stand. */
  forwarded?: boolean
}

export interface TenantContext<Body = unknown, Query = Record<string, unknown>> {
  readonly tenant: TenantRuntime
  readonly params: Record<string, string>
  readonly query: Query
  readonly body: Body
  /** Who acts: the API key's client_id, or a console user's e-mail address. */
  readonly actor: string
  readonly nowMs: number
  readonly incoming: Incoming
  /** Magic links (console invitations: http/routes/people.ts). */
  readonly signIn: SignIn
  /** Keys used since the last flush to the system store: client id -> epoch ms. */
  readonly keyUsage: ReadonlyMap<string, number>
}

/**
 * Answers a route documents besides its success and the error statuses every route of its kind has
 * (http/openapi.ts): status -> body schema, or null for an answer without a body (a 304).
 */
export type OtherAnswers = Readonly<Record<number, TSchema | null>>

/** What /openapi.json says about a route beyond its request and response schemas. */
export interface RouteDocumentation {
  /** The stable OpenAPI operationId, a camelCase verb and noun (`getPrice`): generated clients name their methods after it. */
  readonly operationId: string
  readonly summary: string
  readonly tag: string
  /** Statuses the handler itself answers with the error body, beyond those of the pipeline. */
  readonly errors?: readonly number[]
  readonly otherAnswers?: OtherAnswers
}

export interface TenantRoute extends RouteDocumentation {
  readonly method: Method
  readonly path: string
  readonly query?: TObject
  readonly body?: TSchema
  /** The body may be left out entirely; it then counts as `{}`. */
  readonly bodyOptional?: boolean
  readonly response?: TSchema
  readonly responseStatus?: number
  readonly dimension: Dimension
  /**
   * `console`: only a person signed in to the console who is a user of the tenant (session cookie
   * or console token; http/console-auth.ts). Default: any token of the tenant.
   */
  readonly access?: 'console'
  /** For a console route: what the person's role must allow (accounts/people/roles.ts). */
  readonly permission?: Permission
  /** Items this request costs (spec's table); default 1. Runs before validation, on raw JSON. */
  readonly cost?: (body: unknown) => number
  readonly handler: (context: TenantContext<any, any>) => Reply | Promise<Reply>
}

/** Helper that keeps literal types while giving handlers typed contexts. */
export function route<Body = unknown, Query = Record<string, unknown>>(
  definition: Omit<TenantRoute, 'handler'> & {
    handler: (context: TenantContext<Body, Query>) => Reply | Promise<Reply>
  },
): TenantRoute {
  return definition as TenantRoute
}

/** Cost of a batch body: its element count (the spec counts items, not requests). */
export function arrayCost(body: unknown): number {
  return Array.isArray(body) ? Math.max(1, body.length) : 1
}

export function paramNames(path: string): string[] {
  return path
    .split('/')
    .filter((segment) => segment.startsWith(':'))
    .map((segment) => segment.slice(1))
}
