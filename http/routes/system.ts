/**
 * Root routes: health, readiness, metrics, the OpenAPI description, the token endpoint and JWKS.
 * @module
 */
import { randomBytes } from 'node:crypto'
import { Type } from '@sinclair/typebox'
import type { AppDeps, Reply, RootContext, RootRoute } from '../contracts.js'
import { degradedReasons, type ClusterStatus } from '../../platform/cluster-status.js'
import { hashSecret, isUsableKey, readClientCredentials, tokenLifetimeS, verifySecret } from '../../accounts/auth.js'
import type { Incoming } from '../adapter.js'
import { buildOpenApi } from '../openapi.js'
import { KeyedBuckets } from '../../accounts/credential-limits.js'
import { recordKeyUse } from '../../accounts/provision.js'
import { buildInfo } from '../../platform/version.js'

let openApiText: string | null = null

const HealthAnswer = Type.Object({
  status: Type.Literal('ok'),
  version: Type.String({ description: "the build running: package.json's version (pricing-service --version)" }),
  commit: Type.Union([Type.String(), Type.Null()], {
    description: 'the git commit it was built from, 12 hex digits; null when not known',
  }),
})
const ClusterDetails = Type.Object(
  {
    node_id: Type.String(),
    degraded: Type.Boolean(),
    reasons: Type.Array(Type.String()),
    redis: Type.Union([Type.Literal('up'), Type.Literal('down')]),
    home_regions: Type.Array(Type.String()),
    directory_unpublished: Type.Integer(),
    queued_commits: Type.Integer(),
    replicas: Type.Array(
      Type.Object({
        tenant: Type.String(),
        lag_sequences: Type.Integer(),
        lag_ms: Type.Number(),
        stopped: Type.Boolean(),
      }),
    ),
  },
  { description: 'cluster mode only (docs/cluster.md): a degraded node still serves and still answers 200' },
)
const StorageDetails = Type.Object(
  {
    nearly_full: Type.Boolean({ description: 'true while writes answer 503 storage_full (reads go on)' }),
    free_bytes: Type.Integer({ description: "the data directory's file system at the last sample (once a second)" }),
    reserve_bytes: Type.Integer({ description: 'PRICING_STORAGE_RESERVE_MB in bytes: writes are refused below it' }),
  },
  {
    description:
      "the data directory's free space (tenant/storage-guard.ts); nearly full, the node still answers 200: reads go on",
  },
)
const WorkerDetails = Type.Object(
  {
    threads: Type.Integer({ description: 'price-query worker threads' }),
    warmed: Type.Integer({
      description:
        "workers that hold every loaded tenant's replica and have run a query on it (the fewest over the tenants)",
    }),
  },
  { description: 'the query workers, warmed before the first 200 (tenant/runtime.ts `warm`); absent without workers' },
)
const ReadyAnswer = Type.Object({
  status: Type.Literal('ready'),
  storage: Type.Optional(StorageDetails),
  cluster: Type.Optional(ClusterDetails),
  query_workers: Type.Optional(WorkerDetails),
})
const LoadingAnswer = Type.Object({ status: Type.Literal('loading') })
/** The OpenAPI document itself: its own schema is the OpenAPI 3.1 specification's, not repeated here. */
const OpenApiDocument = Type.Object({ openapi: Type.String() }, { additionalProperties: true })
const Jwk = Type.Object(
  {
    kty: Type.String(),
    crv: Type.Optional(Type.String()),
    x: Type.Optional(Type.String()),
    kid: Type.String(),
    alg: Type.String(),
    use: Type.Literal('sig'),
  },
  { description: 'a public key (RFC 7517); key types other than OKP carry their own members' },
)
const JwkSet = Type.Object({ keys: Type.Array(Jwk) })
export const TokenForm = Type.Object({
  grant_type: Type.Literal('client_credentials'),
  client_id: Type.Optional(Type.String({ description: 'with client_secret, unless sent as HTTP Basic' })),
  client_secret: Type.Optional(Type.String()),
  scope: Type.Optional(Type.String({ description: "accepted and ignored: a token grants the key's tenant" })),
})
export const TokenAnswer = Type.Object({
  access_token: Type.String(),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer({ description: 'seconds' }),
})
/** RFC 6749 section 5.2 error body of the token endpoint. */
export const OAuthErrorBody = Type.Object({
  error: Type.Union(['invalid_request', 'invalid_client', 'unsupported_grant_type'].map((code) => Type.Literal(code))),
  error_description: Type.String(),
})

function clusterDetails(status: ClusterStatus): Record<string, unknown> {
  const reasons = degradedReasons(status)
  return {
    node_id: status.nodeId,
    degraded: reasons.length > 0,
    reasons,
    redis: status.redisUp ? 'up' : 'down',
    home_regions: status.homeRegions,
    directory_unpublished: status.directoryUnpublished,
    queued_commits: status.queuedCommits,
    replicas: status.replicas.map((replica) => ({
      tenant: replica.tenant,
      lag_sequences: replica.sequences,
      lag_ms: replica.ms,
      stopped: replica.broken,
    })),
  }
}

export function rootRoutes(): RootRoute[] {
  return [
    {
      method: 'GET',
      path: '/healthz',
      operationId: 'getHealth',
      summary: 'Process is alive',
      tag: 'system',
      response: HealthAnswer,
      handler: () => ({
        status: 200,
        body: { status: 'ok', version: buildInfo().version, commit: buildInfo().commit },
      }),
    },
    {
      method: 'GET',
      path: '/readyz',
      operationId: 'getReadiness',
      summary: 'Every tenant is loaded and warmed on the query workers (503 with Retry-After until then)',
      tag: 'system',
      response: ReadyAnswer,
      otherAnswers: { 503: LoadingAnswer },
      handler: ({ deps }) => {
        // Loaded and warmed: a worker answers the first large query without building anything first.
        if (!deps.tenants.allReady) return { status: 503, headers: { 'retry-after': '1' }, body: { status: 'loading' } }
        const status = deps.clusterStatus?.()
        const storage = deps.storage?.state
        const body: Record<string, unknown> = { status: 'ready' }
        if (storage !== undefined)
          body['storage'] = {
            nearly_full: storage.nearlyFull,
            free_bytes: storage.freeBytes,
            reserve_bytes: storage.reserveBytes,
          }
        if (status !== undefined) body['cluster'] = clusterDetails(status)
        const workers = deps.tenants.warmedWorkers()
        if (workers !== null) body['query_workers'] = workers
        return { status: 200, body }
      },
    },
    {
      method: 'GET',
      path: '/metrics',
      operationId: 'getMetrics',
      summary: 'Prometheus metrics',
      tag: 'system',
      response: Type.String({ description: 'Prometheus text exposition format 0.0.4' }),
      responseType: 'text/plain',
      handler: async ({ deps }) => ({
        status: 200,
        headers: { 'content-type': deps.metrics.registry.contentType },
        body: await deps.metrics.text(),
      }),
    },
    {
      method: 'GET',
      path: '/openapi.json',
      operationId: 'getOpenApi',
      summary: 'OpenAPI 3.1 description generated from the route tables and their schemas',
      tag: 'system',
      response: OpenApiDocument,
      handler: ({ app, deps }) => {
        openApiText ??= JSON.stringify(buildOpenApi(app.tenantRoutes, app.rootRoutes, deps.publicUrl))
        return { status: 200, headers: { 'content-type': 'application/json' }, body: openApiText }
      },
    },
    {
      method: 'GET',
      path: '/.well-known/jwks.json',
      operationId: 'getJwks',
      summary: 'Public keys that verify access tokens',
      tag: 'auth',
      response: JwkSet,
      handler: ({ deps }) => ({ status: 200, headers: { 'cache-control': 'max-age=300' }, body: deps.tokens.jwks }),
    },
    {
      method: 'POST',
      path: '/oauth2/token',
      operationId: 'issueToken',
      summary: 'OAuth2 client credentials grant (form fields, HTTP Basic, or client_id=id:secret)',
      tag: 'auth',
      access: 'client',
      // Reads need tokens: served while storage is nearly full, the key's last use kept in memory meanwhile.
      whenStorageNearlyFull: 'serve',
      body: TokenForm,
      bodyType: 'application/x-www-form-urlencoded',
      response: TokenAnswer,
      otherAnswers: { 400: OAuthErrorBody, 401: OAuthErrorBody, 429: OAuthErrorBody },
      handler: issueToken,
    },
  ]
}

function oauthError(status: number, error: string, description: string): Reply {
  return { status, headers: { 'cache-control': 'no-store' }, body: { error, error_description: description } }
}

/**
 * 401 invalid_client. RFC 6749 section 5.2: a client that authenticated with the Authorization
 * header gets a challenge for the scheme it used; one that sent its secret in the body gets none.
 */
function invalidClient(incoming: Incoming, description: string): Reply {
  const reply = oauthError(401, 'invalid_client', description)
  if (incoming.authorization.toLowerCase().startsWith('basic ')) {
    reply.headers = { ...reply.headers, 'www-authenticate': 'Basic realm="token"' }
  }
  return reply
}

function readForm(incoming: Incoming): URLSearchParams | null {
  const text = incoming.body === null ? '' : incoming.body.toString('utf8')
  const type = incoming.contentType.toLowerCase()
  if (type.includes('application/json')) {
    try {
      const json = JSON.parse(text) as unknown
      if (json === null || typeof json !== 'object' || Array.isArray(json)) return null
      const form = new URLSearchParams()
      for (const [key, value] of Object.entries(json)) if (typeof value === 'string') form.set(key, value)
      return form
    } catch {
      return null
    }
  }
  return new URLSearchParams(text)
}

/** Client ids are 24 hexadecimal characters; this bounds what is looked up and what keys a bucket. */
const clientIdLengthMax = 256
/** Token requests per client id: 20 at once, then 5 per second (a client should cache its token). */
const tokenRequestRate = 5
const tokenRequestBurst = 20

/**
 * The token endpoint's limits (accounts/credential-limits.ts), made from the configuration at the
 * first token request. Failures count per (client id, address) pair and per address, never per
 * client id alone: a stranger who knows a client id cannot lock its owner out from another address.
 * A secret is 256 random bits, so guessing from many addresses gains nothing; what those addresses
 * cost in hashing is bounded by the per-client-id request rate, charged for every attempt.
 */
interface TokenLimits {
  readonly requests: KeyedBuckets
  readonly pairs: KeyedBuckets
  readonly addresses: KeyedBuckets
}
let tokenLimits: TokenLimits | null = null

function tokenLimitsOf(config: AppDeps['config']): TokenLimits {
  const failureRate = config.tokenFailuresPerMinute / 60
  tokenLimits ??= {
    requests: new KeyedBuckets(tokenRequestRate, tokenRequestBurst, config.tokenFailuresKeysMax),
    pairs: new KeyedBuckets(failureRate, config.tokenFailuresBurst, config.tokenFailuresKeysMax),
    addresses: new KeyedBuckets(failureRate, config.tokenFailuresBurst, config.tokenFailuresKeysMax),
  }
  return tokenLimits
}

/**
 * A hash no secret matches, checked for an unknown client id so that it costs the slow hash a
 * known one does: the answer's time does not tell which client ids exist.
 */
let unknownClientHash: Promise<string> | null = null

function tooMany(message: string, retryAfterS: number): Reply {
  const reply = oauthError(429, 'invalid_request', message)
  reply.headers = { ...reply.headers, 'retry-after': String(retryAfterS) }
  return reply
}

async function issueToken(context: RootContext): Promise<Reply> {
  const { deps, incoming, nowMs } = context
  const form = readForm(incoming)
  if (form === null) return oauthError(400, 'invalid_request', 'The request body is not a valid form')
  const grantType = form.get('grant_type')
  if (grantType === null) return oauthError(400, 'invalid_request', 'grant_type is required')
  if (grantType !== 'client_credentials') {
    return oauthError(400, 'unsupported_grant_type', 'Only grant_type=client_credentials is supported')
  }
  const credentials = readClientCredentials(form, incoming.authorization)
  if (credentials === null) return oauthError(400, 'invalid_request', 'client_id and client_secret are required')
  // Longer than any client id: no lookup (LMDB refuses keys of a few KB) and no rate bucket keyed by it.
  if (credentials.clientId.length > clientIdLengthMax)
    return oauthError(400, 'invalid_request', `client_id is longer than ${clientIdLengthMax} characters`)
  // Failed attempts are limited per (client id, address) and per address; a request is charged as a
  // failure before its slow hash and given it back once the secret checks out, so parallel requests
  // cannot all pass the check while the first ones are still hashing.
  const limits = tokenLimitsOf(deps.config)
  const address = incoming.remoteAddress ?? ''
  const pair = `${credentials.clientId} ${address}`
  for (const [table, key] of [
    [limits.addresses, address],
    [limits.pairs, pair],
  ] as const) {
    if (!table.allows(key, nowMs))
      return tooMany('Too many failed token requests; retry later', table.retryAfterS(key, nowMs))
  }
  // Each check of a secret costs a slow hash; a client may not make the server spend unbounded CPU.
  const taken = limits.requests.bucket(credentials.clientId, nowMs).take(1, nowMs)
  if (!taken.allowed)
    return tooMany(`Too many token requests for this client; retry in ${taken.retryAfterS} s`, taken.retryAfterS)
  const charged = [limits.addresses.bucket(address, nowMs), limits.pairs.bucket(pair, nowMs)]
  for (const bucket of charged) bucket.take(1, nowMs)
  const key = deps.system.keys.get(credentials.clientId)
  unknownClientHash ??= hashSecret(randomBytes(32).toString('hex'))
  const valid =
    (await verifySecret(credentials.clientSecret, key?.secret_hash ?? (await unknownClientHash))) && key !== undefined
  if (!valid || !isUsableKey(key)) return invalidClient(incoming, 'Client authentication failed')
  for (const bucket of charged) bucket.give(1, nowMs)
  if (context.tenantSlug !== null && key.tenant !== context.tenantSlug) {
    return invalidClient(incoming, 'Client authentication failed')
  }
  const tenant = deps.tenants.get(key.tenant)
  if (tenant === undefined || tenant.record.status !== 'active') {
    return invalidClient(incoming, 'The tenant of this key is not active')
  }
  // Read again after the slow hash check: a revoke that completed meanwhile must win.
  if (!isUsableKey(deps.system.keys.get(key.client_id))) return invalidClient(incoming, 'Client authentication failed')
  const accessToken = await deps.tokens.issue(key.tenant, key.client_id, 'key', nowMs)
  // Storage nearly full: the last use waits in memory for the periodic flush (server/main.ts).
  if (deps.storage?.nearlyFull === true) context.app.keyUsage.set(key.client_id, nowMs)
  else await recordKeyUse(deps.system, key.client_id, nowMs)
  return {
    status: 200,
    headers: { 'cache-control': 'no-store', pragma: 'no-cache' },
    body: { access_token: accessToken, token_type: 'Bearer', expires_in: tokenLifetimeS },
  }
}
