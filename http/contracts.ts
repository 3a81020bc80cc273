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
import type { TenantRegistry, TenantRuntime } from '../tenant/runtime.js'
import type { Logger } from 'pino'
import type { SystemStore } from '../storage/system-store.js'
import type { TokenService } from '../accounts/auth.js'
import type { Config } from '../platform/config.js'
import type { ClusterStatus } from '../platform/cluster-status.js'
import type { Mailer } from '../platform/mailer.js'
import type { Metrics } from '../platform/metrics.js'
import type { TenantPlacement } from '../tenant/placement.js'
import type { StorageGuard } from '../tenant/storage-guard.js'
import type { AccessLog } from './access-log.js'
import type { NewKeySecrets } from './pages/console/new-key-secrets.js'

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
  /**
   * Items this request costs (spec's table); default 1. Runs before validation, on raw JSON and the
   * raw query string (a GET's `?explain=true` costs more).
   */
  readonly cost?: (body: unknown, query: string) => number
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

/** What the process hands the HTTP application (http/app.ts): the stores, services and clock. */
export interface AppDeps {
  readonly config: Config
  readonly system: SystemStore
  readonly signIn: SignIn
  /** Mail to people (sign-in links, tenant requests): SMTP or the outbox (platform/mailer.ts). */
  readonly mailer: Mailer
  readonly tenants: TenantRegistry
  readonly tokens: TokenService
  readonly logger: Logger
  readonly metrics: Metrics
  readonly publicUrl: string
  /** Clock, injectable for tests of time-dependent behaviour. */
  readonly now: () => number
  /** Where tenant requests are served in a cluster (cluster/placement.ts); absent on a node on its own. */
  readonly placement?: TenantPlacement | null
  /** The cluster's state for /readyz and /metrics (cluster/node.ts); absent on a node on its own. */
  readonly clusterStatus?: (() => ClusterStatus) | null
  /** The secret the cluster's nodes prove themselves with to each other (null: none yet, or no cluster). */
  readonly clusterSecret?: (() => string | null) | null
  /** Whether the data directory's file system is nearly full (tenant/storage-guard.ts); absent: always room. */
  readonly storage?: StorageGuard | null
}

/**
 * What root-route handlers read of the application: recent key use, the console's one-time key
 * secrets, the access log's settings and the route tables (for the OpenAPI document). Narrower
 * than PricingApp, so that route files need not import the application that lists them.
 */
export interface AppView {
  readonly keyUsage: Map<string, number>
  readonly newKeySecrets: NewKeySecrets
  readonly accessLog: AccessLog
  readonly tenantRoutes: readonly TenantRoute[]
  readonly rootRoutes: readonly RootRoute[]
}

export interface RootContext {
  readonly app: AppView
  readonly deps: AppDeps
  readonly incoming: Incoming
  readonly params: Record<string, string>
  readonly query: URLSearchParams
  readonly nowMs: number
  /** Set when the token endpoint is called under a tenant's base URL (legacy path). */
  readonly tenantSlug: string | null
}

export interface RootRoute extends RouteDocumentation {
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
  readonly path: string
  /** Who may call: anyone (default), the operator (admin token), or an API client (its credentials). */
  readonly access?: 'public' | 'admin' | 'client'
  readonly body?: TSchema
  /** The query parameters, for the OpenAPI document (the handler reads `context.query`). */
  readonly query?: TSchema
  /** Media type of the body; default application/json. */
  readonly bodyType?: string
  readonly response?: TSchema
  /** Media type of the answer; default application/json. */
  readonly responseType?: string
  readonly responseStatus?: number
  /** An HTML page or a page's form post: listed in docs/api.md ("Web pages"), not in the OpenAPI document. */
  readonly page?: true
  /** Between the nodes of a cluster (http/routes/cluster.ts): not in the OpenAPI document. */
  readonly internal?: true
  /**
   * A route other than GET that is still served while storage is nearly full
   * (tenant/storage-guard.ts): it stores nothing, or puts off what it stores. Without it such a
   * route answers 503 `storage_full` then.
   */
  readonly whenStorageNearlyFull?: 'serve'
  readonly handler: (context: RootContext) => Reply | Promise<Reply>
}
