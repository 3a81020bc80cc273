/**
 * Builds the HTTP application from already-opened dependencies; never listens (main.ts and the
 * tests do). The dispatcher resolves the tenant (path `/t/{slug}`, or the Host subdomain), then runs
 * the tenant pipeline: 404 unknown tenant → 503 loading → 401 auth → 403 suspended → 503 restoring
 * or storage nearly full (writes) → JSON body → 413 item cost → 429 rate limit → 400 validation →
 * handler. Every tenant answer carries the X-RateLimit-* headers of the route's dimension.
 * @module
 */
import type { TSchema } from '@sinclair/typebox'
import type * as Uws from 'uWebSockets.js'
import {
  paramNames,
  type Reply,
  type TenantContext,
  type TenantRoute,
  type RootContext,
  type RootRoute,
  type AppDeps,
} from './contracts.js'
import { AccessLog } from './access-log.js'
import { ApiError } from '../platform/errors.js'
import { errorBody, errorHeaders, HttpError, statusOf } from './error-status.js'
import { serve, type HttpTraffic, type Incoming, type Outgoing } from './adapter.js'
import { loadNativeUws } from './uws/load.js'
import { batchItemsMax, requestBodyBytesMax } from '../engine/limits.js'
import { parseJsonBody } from './request-body.js'
import type { RouteSeries } from '../platform/metrics.js'
import { Router } from './router.js'
import { rootRoutes } from './routes/system.js'
import { adminRoutes } from './routes/admin.js'
import { signingKeyRoutes } from './routes/signing-keys.js'
import { oauthMetadataRoutes } from './routes/oauth-metadata.js'
import { tenantRoutes } from './routes/index.js'
import type { TakeResult } from '../tenant/rate-limits.js'
import { forward } from './forward.js'
import { minSequenceOf, placedError } from '../tenant/placement.js'
import { restoringError, slugPattern, type TenantRuntime } from '../tenant/runtime.js'
import { isValid, precompile, validate, validateQuery } from './validate.js'
import { streamOf } from '../platform/log.js'
import { plentyOfRoom, refusedWhenNearlyFull, storageFullError, type StorageState } from '../tenant/storage-guard.js'
import { bearerToken, type TokenClaims } from '../accounts/auth.js'
import { NewKeySecrets } from './pages/console/new-key-secrets.js'
import { consoleRoutes } from './pages/console/routes.js'
import { operatorRoutes } from './pages/operator/routes.js'
import { consoleSubject } from './console-auth.js'
import { requirePermission } from '../accounts/people/roles.js'
import { cookieValue, sessionCookie } from '../accounts/people/sign-in.js'
import { errorAnswerPage, wantsHtml } from './pages/shared/error-page.js'
import { portalRoutes } from './routes/portal.js'
import { tenantRequestRoutes } from './routes/tenant-requests.js'
import { portalPageRoutes } from './pages/portal/routes.js'
import { clusterRoutes } from './routes/cluster.js'

interface CompiledTenantRoute {
  readonly route: TenantRoute
  readonly names: string[]
  readonly label: string
  /** Metrics of the route's own method (HEAD on a GET route looks its series up). */
  readonly series: RouteSeries
  /** The route has no query schema, or `{}` passes it: an empty query string needs no validation. */
  readonly emptyQueryValid: boolean
}

type RateHeaders = { headers(nowMs: number): Readonly<Record<string, string>> }

interface CompiledRootRoute {
  readonly route: RootRoute
  readonly names: string[]
}

const jsonHeaders = { 'content-type': 'application/json' }

export class PricingApp {
  readonly uws: Uws.TemplatedApp
  readonly native: typeof Uws
  /** Requests in flight, and the shutdown's `Connection: close` (server/main.ts). */
  readonly traffic: HttpTraffic
  readonly #deps: AppDeps
  readonly #tenantRouter = new Router<CompiledTenantRoute>()
  readonly #rootRouter = new Router<CompiledRootRoute>()
  readonly tenantRoutes: readonly TenantRoute[]
  readonly rootRoutes: readonly RootRoute[]
  /** client_id -> last time a token of that key was used; flushed to the system store. */
  readonly keyUsage = new Map<string, number>()
  /** New API keys' secrets waiting for the console page that shows them once. */
  readonly newKeySecrets = new NewKeySecrets()
  /** The access log, on or off (configuration, or PUT /admin/access-log); main.ts flushes it at close. */
  readonly accessLog: AccessLog
  /**
   * The last Authorization header that verified, and its claims: comparing a header with it costs
   * less than hashing the token for the token cache, and a client usually repeats its token.
   */
  #lastAuthorization = ''
  #lastClaims: TokenClaims | null = null
  /** Read by every write: one field of the guard (tenant/storage-guard.ts). */
  readonly #storage: StorageState

  constructor(deps: AppDeps) {
    this.#deps = deps
    this.#storage = deps.storage ?? plentyOfRoom
    this.accessLog = new AccessLog(streamOf(deps.logger), {
      enabled: deps.config.accessLog,
      sample: deps.config.accessLogSample,
    })
    this.tenantRoutes = tenantRoutes()
    this.rootRoutes = [
      ...rootRoutes(),
      ...oauthMetadataRoutes(),
      ...adminRoutes(),
      ...signingKeyRoutes(),
      ...portalRoutes(),
      ...tenantRequestRoutes(),
      ...portalPageRoutes(),
      ...consoleRoutes(),
      ...operatorRoutes(),
      ...clusterRoutes(),
    ]
    for (const route of this.tenantRoutes) {
      precompile(route.query)
      precompile(route.body)
      this.#tenantRouter.add(route.method, route.path, {
        route,
        names: paramNames(route.path),
        label: route.path,
        series: deps.metrics.route(route.path, route.method),
        emptyQueryValid: route.query === undefined || isValid(route.query, {}),
      })
    }
    for (const route of this.rootRoutes) {
      precompile(route.body as TSchema | undefined)
      this.#rootRouter.add(route.method, route.path, { route, names: paramNames(route.path) })
    }
    this.native = loadNativeUws()
    this.uws = this.native.App()
    this.traffic = serve(this.uws, (incoming) => this.dispatch(incoming), {
      bodyBytesMax: requestBodyBytesMax,
      bodyTimeoutMs: deps.config.bodyTimeoutMs,
      onTooLarge: (incoming) =>
        this.#finish(
          incoming,
          'body',
          this.#error(incoming, new ApiError('body_too_large', `Request body exceeds ${requestBodyBytesMax} bytes`)),
        ),
      onError: (error, incoming) => this.#finish(incoming, 'error', this.#error(incoming, error), error),
      onMalformed: (incoming, message) =>
        this.#finish(incoming, 'framing', this.#error(incoming, new ApiError('malformed_request', message))),
      // The price query reads only: it may run as soon as its body is in (http/adapter.ts, runReadOnly).
      readOnly: (incoming) => incoming.method === 'POST' && incoming.path.endsWith('/price/query'),
    })
  }

  get deps(): AppDeps {
    return this.#deps
  }

  dispatch(incoming: Incoming): Outgoing | Promise<Outgoing> {
    const segments = incoming.path.split('/')
    let start = 1
    let slug: string | null = null
    const domain = this.#deps.config.domain
    if (domain !== '') {
      const host = incoming.host.replace(/:\d+$/, '').toLowerCase()
      if (host.endsWith(`.${domain}`)) slug = host.slice(0, host.length - domain.length - 1)
    }
    if (slug === null && segments[1] === 't' && segments.length > 2) {
      slug = segments[2]!
      start = 3
    }
    if (slug === null) return this.#dispatchRoot(incoming, segments)
    if (segments[start] === 'api' && segments[start + 1] === 'v1') start += 2
    if (segments[segments.length - 1] === '' && segments.length > start) segments.pop()
    return this.#dispatchTenant(incoming, slug, segments, start)
  }

  #dispatchRoot(incoming: Incoming, segments: string[]): Outgoing | Promise<Outgoing> {
    if (segments[segments.length - 1] === '' && segments.length > 1) segments.pop()
    const match = this.#rootRouter.match(incoming.method, segments, 1)
    if (match.route === null) {
      const error =
        match.allowed.length > 0
          ? new HttpError(
              'method_not_allowed',
              `Method ${incoming.method} is not allowed here`,
              {},
              { allow: match.allowed.join(', ') },
            )
          : new ApiError('route_not_found', `No route for ${incoming.method} ${incoming.path}`)
      return this.#finish(incoming, 'unmatched', this.#error(incoming, error))
    }
    const { route, names } = match.route
    // Storage nearly full (tenant/storage-guard.ts): the operator, portal and console writes wait too.
    if (this.#storage.nearlyFull && refusedWhenNearlyFull(route))
      return this.#finish(incoming, route.path, this.#error(incoming, storageFullError()))
    const context: RootContext = {
      app: this,
      deps: this.#deps,
      incoming,
      params: namedParams(names, match.params),
      query: new URLSearchParams(incoming.query),
      nowMs: this.#deps.now(),
      tenantSlug: null,
    }
    return this.#settle(incoming, route.path, () => route.handler(context))
  }

  #dispatchTenant(incoming: Incoming, slug: string, segments: string[], start: number): Outgoing | Promise<Outgoing> {
    const tenant = slugPattern.test(slug) ? this.#deps.tenants.get(slug) : undefined
    if (tenant === undefined) {
      return this.#finish(
        incoming,
        'tenant',
        this.#error(incoming, new ApiError('tenant_not_found', `Tenant ${slug} not found`)),
      )
    }
    incoming.tenantSlug = tenant.record.slug
    if (
      incoming.method === 'POST' &&
      segments.length === start + 2 &&
      segments[start] === 'oauth2' &&
      segments[start + 1] === 'token'
    ) {
      const token = this.rootRoutes.find((candidate) => candidate.path === '/oauth2/token')!
      const context: RootContext = {
        app: this,
        deps: this.#deps,
        incoming,
        params: {},
        query: new URLSearchParams(incoming.query),
        nowMs: this.#deps.now(),
        tenantSlug: slug,
      }
      return this.#settle(incoming, '/t/{slug}/oauth2/token', () => token.handler(context))
    }
    const match = this.#tenantRouter.match(incoming.method, segments, start)
    if (match.route === null) {
      const error =
        match.allowed.length > 0
          ? new HttpError(
              'method_not_allowed',
              `Method ${incoming.method} is not allowed here`,
              {},
              { allow: match.allowed.join(', ') },
            )
          : new ApiError('route_not_found', `No route for ${incoming.method} ${incoming.path}`)
      return this.#finish(incoming, 'unmatched', this.#error(incoming, error))
    }
    const compiled = match.route
    if (!tenant.loaded) {
      // Expected while tenants load after a start: answered and counted, not logged as a failure.
      return this.#finish(
        incoming,
        compiled.label,
        this.#error(incoming, new ApiError('not_ready', 'Tenant is loading', {}, 1)),
      )
    }
    const nowMs = this.#deps.now()
    if (compiled.route.access === 'console')
      return this.#dispatchConsole(incoming, tenant, compiled, match.params, nowMs)
    const last = this.#lastClaims
    if (last !== null && incoming.authorization === this.#lastAuthorization && last.expiresAtMs > nowMs) {
      return this.#holder(incoming, tenant, compiled, match.params, last, nowMs)
    }
    const bucket = tenant.buckets[compiled.route.dimension]
    const token = bearerToken(incoming.authorization)
    if (token === null) return this.#reject(incoming, compiled, bucket, nowMs, 'Missing bearer token')
    const cached = this.#deps.tokens.cached(token, nowMs)
    if (cached !== undefined) {
      if (cached === null) return this.#reject(incoming, compiled, bucket, nowMs, 'Token expired')
      this.#remember(incoming.authorization, cached)
      return this.#holder(incoming, tenant, compiled, match.params, cached, nowMs)
    }
    return this.#deps.tokens.verify(token, nowMs).then((claims) => {
      if (claims === null) return this.#reject(incoming, compiled, bucket, nowMs, 'Invalid or expired token')
      this.#remember(incoming.authorization, claims)
      return this.#holder(incoming, tenant, compiled, match.params, claims, nowMs)
    })
  }

  /**
   * A verified token on a tenant route. A console token speaks for a person, whose membership may
   * have ended since it was issued: it is looked up in the system store at each request (one LMDB
   * read; a cluster's directory applies other nodes' removals to the same store), so a removed
   * user's token stops at their next request, not when it expires.
   */
  #holder(
    incoming: Incoming,
    tenant: TenantRuntime,
    compiled: CompiledTenantRoute,
    params: string[],
    claims: TokenClaims,
    nowMs: number,
  ): Outgoing | Promise<Outgoing> {
    const { tenant: claimed, subject } = claims
    if (claims.kind === 'key') return this.#authorized(incoming, tenant, compiled, params, claimed, subject, nowMs)
    if (claimed === tenant.record.slug && this.#deps.system.member(claimed, subject) === undefined) {
      const route = compiled.route
      const series =
        incoming.method === route.method ? compiled.series : this.#deps.metrics.route(compiled.label, incoming.method)
      const error = new ApiError('forbidden', `${subject} is no longer a user of tenant ${claimed}`)
      return this.#failed(incoming, series, error, tenant.buckets[route.dimension])
    }
    return this.#authorized(incoming, tenant, compiled, params, claimed, subject, nowMs, false)
  }

  /** A console route: the signed-in person (http/console-auth.ts), then the tenant pipeline. */
  #dispatchConsole(
    incoming: Incoming,
    tenant: TenantRuntime,
    compiled: CompiledTenantRoute,
    params: string[],
    nowMs: number,
  ): Outgoing | Promise<Outgoing> {
    const series =
      incoming.method === compiled.route.method
        ? compiled.series
        : this.#deps.metrics.route(compiled.label, incoming.method)
    let subject: string | Promise<string>
    try {
      subject = consoleSubject(this.#deps, incoming, tenant.record.slug, nowMs)
    } catch (error) {
      return this.#failed(incoming, series, error, null)
    }
    const permitted = (email: string): string => {
      const permission = compiled.route.permission
      if (permission !== undefined) requirePermission(this.#deps.system, tenant.record.slug, email, permission)
      return email
    }
    if (typeof subject === 'string') {
      try {
        return this.#authorized(
          incoming,
          tenant,
          compiled,
          params,
          tenant.record.slug,
          permitted(subject),
          nowMs,
          false,
        )
      } catch (error) {
        return this.#failed(incoming, series, error, null)
      }
    }
    return subject.then(
      (email) =>
        this.#authorized(
          incoming,
          tenant,
          compiled,
          params,
          tenant.record.slug,
          permitted(email),
          this.#deps.now(),
          false,
        ),
      (error: unknown) => this.#failed(incoming, series, error, null),
    )
  }

  #remember(authorization: string, claims: TokenClaims): void {
    this.#lastAuthorization = authorization
    this.#lastClaims = claims
  }

  #reject(
    incoming: Incoming,
    compiled: CompiledTenantRoute,
    bucket: RateHeaders,
    nowMs: number,
    message: string,
  ): Outgoing {
    const error = new HttpError('unauthorized', message, {}, { 'www-authenticate': 'Bearer', ...bucket.headers(nowMs) })
    return this.#finish(incoming, compiled.label, this.#error(incoming, error))
  }

  #authorized(
    incoming: Incoming,
    tenant: TenantRuntime,
    compiled: CompiledTenantRoute,
    params: string[],
    claimedTenant: string,
    subject: string,
    nowMs: number,
    keyUse = true,
  ): Outgoing | Promise<Outgoing> {
    const route = compiled.route
    const bucket = tenant.buckets[route.dimension]
    if (claimedTenant !== tenant.record.slug) {
      return this.#reject(incoming, compiled, bucket, nowMs, 'Token belongs to another tenant')
    }
    if (keyUse) this.keyUsage.set(subject, nowMs)
    const series =
      incoming.method === route.method ? compiled.series : this.#deps.metrics.route(compiled.label, incoming.method)
    let reply: Reply | Promise<Reply>
    try {
      reply = this.#invoke(incoming, tenant, compiled, params, subject, nowMs)
    } catch (error) {
      return this.#failed(incoming, series, error, bucket)
    }
    if (reply instanceof Promise) {
      return reply.then(
        (value) => this.#answered(incoming, series, value, bucket, this.#deps.now()),
        (error: unknown) => this.#failed(incoming, series, error, bucket),
      )
    }
    return this.#answered(incoming, series, reply, bucket, nowMs)
  }

  /** Tenant pipeline after authentication: status, body, item cost, rate limit, validation, handler. */
  #invoke(
    incoming: Incoming,
    tenant: TenantRuntime,
    compiled: CompiledTenantRoute,
    params: string[],
    subject: string,
    nowMs: number,
  ): Reply | Promise<Reply> {
    const route = compiled.route
    const bucket = tenant.buckets[route.dimension]
    if (tenant.record.status !== 'active') {
      throw new ApiError('tenant_suspended', `Tenant ${tenant.record.slug} is ${tenant.record.status}`)
    }
    // Cluster mode: a write goes to the region's home node, a read to a ready replica or the home.
    const placement = this.#deps.placement
    if (placement !== undefined && placement !== null) {
      const placed = placement.place(tenant, route.dimension === 'ingest', minSequenceOf(incoming.minSequence ?? ''))
      if (placed.kind === 'elsewhere' && (incoming.forwarded ?? '') === '')
        return forward(placed, incoming, placement.nodeId)
      if (placed.kind !== 'here') throw placedError(placed)
    }
    // SPEC Backup and restore rule 3: writes on non-management endpoints wait for the restore.
    if (tenant.restoring !== null && route.dimension === 'ingest' && route.access !== 'console')
      throw restoringError(tenant.restoring)
    // SPEC errors table, 503 "(for a write) storage nearly full": every route spending the ingest
    // budget, console ones included (tenant/storage-guard.ts); reads go on.
    if (route.dimension === 'ingest' && this.#storage.nearlyFull) throw storageFullError()
    const json = parseJsonBody(incoming)
    const cost = route.cost === undefined ? 1 : route.cost(json, incoming.query)
    // A plan or override may lower the engine's maximum, never lift it (null: the engine's).
    const itemsMax = Math.min(tenant.limits.max_items_per_request ?? batchItemsMax, batchItemsMax)
    const burst = bucket.burst
    if (cost > itemsMax || (burst !== null && cost > burst)) {
      const max = Math.min(itemsMax, burst ?? Number.POSITIVE_INFINITY)
      throw new ApiError('too_many_items', `Request costs ${cost} items; the maximum per request is ${max}`, {
        max_items_per_request: max,
      })
    }
    const taken = bucket.take(cost, nowMs)
    // Cluster mode: a shared bucket may wait for a lease of tokens from Redis (cluster/rate-limits.ts).
    if (taken instanceof Promise)
      return taken.then((result) =>
        this.#admitted(result, incoming, tenant, compiled, params, subject, nowMs, json, cost),
      )
    return this.#admitted(taken, incoming, tenant, compiled, params, subject, nowMs, json, cost)
  }

  /** The rest of the tenant pipeline once the rate limit has answered: refusal, or validation and handler. */
  #admitted(
    taken: TakeResult,
    incoming: Incoming,
    tenant: TenantRuntime,
    compiled: CompiledTenantRoute,
    params: string[],
    subject: string,
    nowMs: number,
    json: unknown,
    cost: number,
  ): Reply | Promise<Reply> {
    const route = compiled.route
    if (!taken.allowed) {
      throw new ApiError(
        'rate_limited',
        `Rate limit for ${route.dimension} exceeded; retry in ${taken.retryAfterS} s`,
        { retry_after: taken.retryAfterS },
        taken.retryAfterS,
      )
    }
    tenant.activity.record(route.dimension, cost, nowMs)
    const context: TenantContext = {
      tenant,
      params: namedParams(compiled.names, params),
      query:
        route.query === undefined || (incoming.query === '' && compiled.emptyQueryValid)
          ? {}
          : validateQuery(route.query, queryRecord(incoming.query)),
      body:
        route.body === undefined
          ? json
          : validate(route.body, json === undefined && route.bodyOptional === true ? {} : json, ''),
      actor: subject,
      nowMs,
      incoming,
      signIn: this.#deps.signIn,
      keyUsage: this.keyUsage,
    }
    return route.handler(context)
  }

  /** Runs a root handler, turning its reply or error into an answer, and records metrics. */
  #settle(incoming: Incoming, label: string, handler: () => Reply | Promise<Reply>): Outgoing | Promise<Outgoing> {
    const series = this.#deps.metrics.route(label, incoming.method)
    let reply: Reply | Promise<Reply>
    try {
      reply = handler()
    } catch (error) {
      return this.#failed(incoming, series, error, null)
    }
    if (reply instanceof Promise) {
      return reply.then(
        (value) => this.#answered(incoming, series, value, null, 0),
        (error: unknown) => this.#failed(incoming, series, error, null),
      )
    }
    return this.#answered(incoming, series, reply, null, 0)
  }

  /** A handler's reply as an answer, with the route's rate-limit headers as they stand at `nowMs`. */
  #answered(
    incoming: Incoming,
    series: RouteSeries,
    reply: Reply,
    bucket: RateHeaders | null,
    nowMs: number,
  ): Outgoing {
    const outgoing = toOutgoing(reply)
    if (reply.forwarded === true) return this.#observed(incoming, series, outgoing)
    if (bucket !== null) outgoing.extraHeaders = bucket.headers(nowMs)
    const placement = this.#deps.placement
    if (placement !== undefined && placement !== null && incoming.tenantSlug !== null) {
      const tenant = this.#deps.tenants.get(incoming.tenantSlug)
      if (tenant !== undefined) outgoing.extraHeaders = { ...outgoing.extraHeaders, ...placement.answerHeaders(tenant) }
    }
    return this.#observed(incoming, series, outgoing)
  }

  #failed(incoming: Incoming, series: RouteSeries, error: unknown, bucket: RateHeaders | null): Outgoing {
    const outgoing = this.#error(incoming, error)
    if (bucket !== null) outgoing.headers = { ...bucket.headers(this.#deps.now()), ...outgoing.headers }
    return this.#observed(incoming, series, outgoing, error)
  }

  /**
   * The error's answer: its coded body, or 500 internal_error for anything but an ApiError. A
   * browser asking for HTML outside the tenant API (the portal, console and operator pages, an
   * unknown page) gets the same status and headers with the message as a page.
   */
  #error(incoming: Incoming, error: unknown): Outgoing {
    if (incoming.tenantSlug === null && wantsHtml(incoming)) {
      const person = this.#deps.signIn.session(cookieValue(incoming.cookie, sessionCookie), this.#deps.now())
      return errorAnswerPage(error, person)
    }
    const nowMs = this.#deps.now()
    if (error instanceof ApiError) {
      const status = statusOf(error)
      const body = errorBody(status, error.code, error.message, nowMs, incoming.requestId, error.extra)
      return { status, headers: { ...jsonHeaders, ...errorHeaders(error) }, body: JSON.stringify(body) }
    }
    const body = errorBody(500, 'internal_error', 'Internal server error', nowMs, incoming.requestId)
    return { status: 500, headers: { ...jsonHeaders }, body: JSON.stringify(body) }
  }

  #finish(incoming: Incoming, label: string, outgoing: Outgoing, error?: unknown): Outgoing {
    return this.#observed(incoming, this.#deps.metrics.route(label, incoming.method), outgoing, error)
  }

  /**
   * Every answer passes here: metrics, the access log, and for a 5xx caused by an error one error
   * record. (A deliberate 503 while loading, from /readyz or a tenant route, is no failure:
   * metrics and the access log only.)
   */
  #observed(incoming: Incoming, series: RouteSeries, outgoing: Outgoing, error?: unknown): Outgoing {
    const durationMs = performance.now() - incoming.startedAt
    series.observe(outgoing.status, durationMs / 1000)
    if (incoming.tenantSlug !== null) this.#deps.metrics.tenantRequest(incoming.tenantSlug, outgoing.status)
    // A refusal while storage is nearly full is an operating state, logged once when it begins
    // (tenant/storage-guard.ts): one line per refused write would fill a disk that shares the log.
    if (outgoing.status >= 500 && error !== undefined && !(error instanceof ApiError && error.code === 'storage_full'))
      this.#logFailure(incoming, series.route, outgoing.status, error)
    this.accessLog.record(incoming, series.route, outgoing.status, durationMs, outgoing.body)
    return outgoing
  }

  /** One record per failed request: an ApiError by its code; anything else with its stack (`err`). */
  #logFailure(incoming: Incoming, route: string, status: number, error: unknown): void {
    const record: Record<string, unknown> = {
      request_id: incoming.requestId,
      method: incoming.method,
      route,
      status,
      tenant: incoming.tenantSlug,
    }
    if (error instanceof ApiError) record['code'] = error.code
    else record['err'] = error
    this.#deps.logger.error(record, 'request failed')
  }
}

/**
 * The reply's headers are sent as they are (never modified), unless a content type must be added.
 * A text body with a content type is sent as it is; anything else as JSON.
 */
function toOutgoing(reply: Reply): Outgoing {
  const headers = reply.headers
  const raw = reply.body
  if (raw === undefined) return { status: reply.status, headers }
  const typed = headers !== undefined && headers['content-type'] !== undefined
  if (typed && (typeof raw === 'string' || Buffer.isBuffer(raw)))
    return reply.release === undefined
      ? { status: reply.status, headers, body: raw }
      : { status: reply.status, headers, body: raw, release: reply.release }
  const body = JSON.stringify(reply.body)
  return { status: reply.status, headers: typed ? headers : { ...headers, 'content-type': 'application/json' }, body }
}

function namedParams(names: readonly string[], values: readonly string[]): Record<string, string> {
  const params: Record<string, string> = {}
  for (let index = 0; index < names.length; index++) params[names[index]!] = values[index]!
  return params
}

/**
 * The query string's parameters (the last of a repeated name wins). Without `%` or `+` nothing
 * needs decoding, so a split gives exactly what URLSearchParams would; otherwise it decodes.
 */
export function queryRecord(query: string): Record<string, string> {
  const record: Record<string, string> = {}
  if (query === '') return record
  if (query.indexOf('%') >= 0 || query.indexOf('+') >= 0) {
    for (const [key, value] of new URLSearchParams(query)) record[key] = value
    return record
  }
  let start = query.charCodeAt(0) === 0x3f ? 1 : 0 // a leading '?' is skipped, as URLSearchParams does
  while (start <= query.length) {
    let end = query.indexOf('&', start)
    if (end < 0) end = query.length
    if (end > start) {
      const equals = query.indexOf('=', start)
      if (equals >= 0 && equals < end) record[query.slice(start, equals)] = query.slice(equals + 1, end)
      else record[query.slice(start, end)] = ''
    }
    start = end + 1
  }
  return record
}
