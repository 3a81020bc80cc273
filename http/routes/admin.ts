/**
 * The operator API (API.md §2), behind the `PRICING_ADMIN_TOKEN` bearer token; off (404) when unset.
 * @module
 */
import { HttpError } from '../error-status.js'
import { parseJsonBody } from '../request-body.js'
import { timingSafeEqual } from 'node:crypto'
import { Type } from '@sinclair/typebox'
import type { Reply, RootContext, RootRoute } from '../contracts.js'
import { ApiError } from '../../platform/errors.js'
import { KeyedBuckets } from '../../accounts/credential-limits.js'
import { plans } from '../../tenant/plans.js'
import {
  createKey,
  provisionTenant,
  publicKey,
  publicTenant,
  revokeKey,
  updateTenantRecord,
  withRecentUse,
} from '../../accounts/provision.js'
import { validate } from '../validate.js'
import type { TenantRuntime } from '../../tenant/runtime.js'
import { takeBackup } from '../../tenant/backups/take.js'
import { publicRestoreStatus, startRestore } from '../../tenant/backups/restore.js'
import { retentionPolicy, retentionRunning, runRetentionPass } from '../../tenant/retention/pass.js'
import { Backup as BackupAnswer, CreateBackupBody, publicBackup, RestoreBody, RestoreStatus } from './management.js'

export const Tier = Type.Union(Object.keys(plans).map((tier) => Type.Literal(tier)))
const Limit = Type.Union([Type.Integer({ minimum: 0 }), Type.Null()])
const LimitsSchema = Type.Object(
  {
    articles: Type.Optional(Limit),
    pricelists: Type.Optional(Limit),
    prices: Type.Optional(Limit),
    changelog_capacity: Type.Optional(Limit),
    query_rate: Type.Optional(Limit),
    query_burst: Type.Optional(Limit),
    ingest_rate: Type.Optional(Limit),
    ingest_burst: Type.Optional(Limit),
    max_items_per_request: Type.Optional(Limit),
    webhooks: Type.Optional(Type.Boolean()),
    retention: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
)
export const CreateTenantBody = Type.Object(
  {
    slug: Type.String({ minLength: 1, maxLength: 63 }),
    tier: Tier,
    region: Type.String({ minLength: 1, maxLength: 64 }),
    owner_email: Type.Optional(
      Type.Union([Type.String({ maxLength: 254, pattern: '^[^@\\s]+@[^@\\s]+$' }), Type.Null()]),
    ),
    limits: Type.Optional(LimitsSchema),
  },
  { additionalProperties: false },
)
export const PatchTenantBody = Type.Object(
  {
    tier: Type.Optional(Tier),
    limits: Type.Optional(LimitsSchema),
    status: Type.Optional(Type.Union([Type.Literal('active'), Type.Literal('suspended')])),
  },
  { additionalProperties: false },
)
export const CreateKeyBody = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 128 }) },
  { additionalProperties: false },
)
export const AccessLogBody = Type.Object(
  {
    enabled: Type.Boolean({ description: 'on or off' }),
    sample: Type.Optional(
      Type.Number({
        minimum: 0,
        maximum: 1,
        description: 'fraction of successful answers recorded (4xx and 5xx always are); unchanged when absent',
      }),
    ),
  },
  { additionalProperties: false },
)
const AccessLogAnswer = Type.Object({ enabled: Type.Boolean(), sample: Type.Number({ minimum: 0, maximum: 1 }) })
const Instant = Type.String({ format: 'date-time' })
const TenantAnswer = Type.Object({
  slug: Type.String(),
  tier: Tier,
  region: Type.String(),
  status: Type.Union(
    ['requested', 'provisioning', 'active', 'suspended', 'rejected'].map((status) => Type.Literal(status)),
  ),
  owner_email: Type.Union([Type.String(), Type.Null()]),
  limits: LimitsSchema,
  created_at: Instant,
  updated_at: Instant,
})
const KeyAnswer = Type.Object({
  name: Type.String(),
  client_id: Type.String(),
  created_at: Instant,
  revoked_at: Type.Union([Instant, Type.Null()]),
  last_used_at: Type.Union([Instant, Type.Null()]),
})
const NewKeyAnswer = Type.Object({
  name: Type.String(),
  client_id: Type.String(),
  client_secret: Type.String({ description: 'shown only in this answer' }),
  created_at: Instant,
})

/**
 * Wrong admin tokens per client address (`PRICING_TOKEN_FAILURES_BURST` at once, then
 * `PRICING_TOKEN_FAILURES_PER_MINUTE`), made from the configuration at the first admin request.
 * While an address is over it, even the right token waits: otherwise the one 200 among the 429s
 * would still answer the guess.
 */
let adminFailures: KeyedBuckets | null = null

function authorize(context: RootContext): void {
  const expected = context.deps.config.adminToken
  if (expected === '') throw new ApiError('route_not_found', 'The admin API is not enabled')
  const { config } = context.deps
  adminFailures ??= new KeyedBuckets(
    config.tokenFailuresPerMinute / 60,
    config.tokenFailuresBurst,
    config.tokenFailuresKeysMax,
  )
  const address = context.incoming.remoteAddress ?? ''
  if (!adminFailures.allows(address, context.nowMs)) {
    const retryAfterS = adminFailures.retryAfterS(address, context.nowMs)
    throw new ApiError(
      'rate_limited',
      `Too many wrong admin tokens from this address; retry in ${retryAfterS} s`,
      { retry_after: retryAfterS },
      retryAfterS,
    )
  }
  const authorization = context.incoming.authorization
  // The scheme name is case-insensitive (RFC 9110 §11.1).
  const given = authorization.slice(0, 7).toLowerCase() === 'bearer ' ? authorization.slice(7).trim() : ''
  const left = Buffer.from(given)
  const right = Buffer.from(expected)
  if (left.length !== right.length || !timingSafeEqual(left, right)) {
    adminFailures.bucket(address, context.nowMs).take(1, context.nowMs)
    throw new HttpError('unauthorized', 'A valid admin token is required', {}, { 'www-authenticate': 'Bearer' })
  }
}

export function adminOnly(route: Omit<RootRoute, 'tag' | 'access'>): RootRoute {
  return {
    ...route,
    tag: 'admin',
    access: 'admin',
    handler: (context) => {
      authorize(context)
      return route.handler(context)
    },
  }
}

function tenantOf(context: RootContext) {
  const record = context.deps.system.tenants.get(context.params['slug']!)
  if (record === undefined) throw new ApiError('not_found', `Tenant ${context.params['slug']} not found`)
  return record
}

const RetentionAnswer = Type.Object({
  pairs: Type.Integer({ description: '(pricelist, SKU) pairs looked at' }),
  versions_before: Type.Integer(),
  versions_removed: Type.Integer(),
  steps: Type.Integer({ description: 'bounded steps, each its own small transaction' }),
  ms: Type.Integer(),
  stopped: Type.Union([Type.String(), Type.Null()], { description: 'why the pass ended early, or null' }),
  price_bytes_before: Type.Integer({ description: "bytes of the tenant's price columns in memory before the pass" }),
  price_bytes_after: Type.Integer({ description: 'and after it (the columns are compacted at its end)' }),
})

export function adminRoutes(): RootRoute[] {
  return [
    adminOnly({
      method: 'POST',
      path: '/admin/tenants',
      operationId: 'createTenant',
      response: TenantAnswer,
      errors: [409],
      summary: 'Create (provision and approve) a tenant',
      body: CreateTenantBody,
      responseStatus: 201,
      handler: async (context): Promise<Reply> => {
        const body = validate<typeof CreateTenantBody.static>(CreateTenantBody, parseJsonBody(context.incoming) ?? {})
        const record = await provisionTenant(context.deps.system, context.deps.tenants, body as never, context.nowMs)
        return { status: 201, body: publicTenant(record) }
      },
    }),
    adminOnly({
      method: 'GET',
      path: '/admin/tenants',
      operationId: 'listTenants',
      response: Type.Array(TenantAnswer),
      summary: 'List tenants',
      handler: (context) => ({ status: 200, body: context.deps.system.listTenants().map(publicTenant) }),
    }),
    adminOnly({
      method: 'GET',
      path: '/admin/tenants/:slug',
      operationId: 'getTenant',
      response: TenantAnswer,
      summary: 'One tenant',
      handler: (context) => ({ status: 200, body: publicTenant(tenantOf(context)) }),
    }),
    adminOnly({
      method: 'PATCH',
      path: '/admin/tenants/:slug',
      operationId: 'updateTenant',
      response: TenantAnswer,
      summary: 'Change tier, limit overrides or status',
      body: PatchTenantBody,
      handler: async (context) => {
        tenantOf(context)
        const body = validate<typeof PatchTenantBody.static>(PatchTenantBody, parseJsonBody(context.incoming) ?? {})
        const record = await updateTenantRecord(
          context.deps.system,
          context.params['slug']!,
          body as never,
          context.nowMs,
        )
        context.deps.tenants.get(record.slug)?.update(record, context.nowMs)
        return { status: 200, body: publicTenant(record) }
      },
    }),
    adminOnly({
      method: 'POST',
      path: '/admin/tenants/:slug/keys',
      operationId: 'createApiKey',
      response: NewKeyAnswer,
      summary: 'Create an API key (the secret is shown only in this answer)',
      body: CreateKeyBody,
      responseStatus: 201,
      handler: async (context) => {
        tenantOf(context)
        const body = validate<{ name: string }>(CreateKeyBody, parseJsonBody(context.incoming) ?? {})
        const { record, clientSecret } = await createKey(
          context.deps.system,
          context.params['slug']!,
          body.name,
          context.nowMs,
        )
        return {
          status: 201,
          body: {
            name: record.name,
            client_id: record.client_id,
            client_secret: clientSecret,
            created_at: new Date(record.created_at).toISOString(),
          },
        }
      },
    }),
    adminOnly({
      method: 'GET',
      path: '/admin/tenants/:slug/keys',
      operationId: 'listApiKeys',
      response: Type.Array(KeyAnswer),
      summary: 'List API keys without secrets, with last use',
      handler: (context) => {
        tenantOf(context)
        return {
          status: 200,
          body: context.deps.system
            .listKeys(context.params['slug']!)
            .map((key) => publicKey(withRecentUse(key, context.app.keyUsage))),
        }
      },
    }),
    adminOnly({
      method: 'DELETE',
      path: '/admin/tenants/:slug/keys/:clientId',
      operationId: 'revokeApiKey',
      summary: 'Revoke an API key (issued tokens stay valid until they expire)',
      responseStatus: 204,
      handler: async (context) => {
        tenantOf(context)
        await revokeKey(context.deps.system, context.params['slug']!, context.params['clientId']!, context.nowMs)
        return { status: 204 }
      },
    }),
    adminOnly({
      method: 'GET',
      path: '/admin/tenants/:slug/backups',
      operationId: 'listTenantBackups',
      response: Type.Array(BackupAnswer),
      summary: "A tenant's backups, newest first (the operator's view of GET /management/backups)",
      handler: (context) => ({ status: 200, body: runtimeOf(context).backups.list().map(publicBackup) }),
    }),
    adminOnly({
      method: 'POST',
      path: '/admin/tenants/:slug/backups',
      operationId: 'createTenantBackup',
      response: BackupAnswer,
      responseStatus: 201,
      errors: [503, 507],
      body: CreateBackupBody,
      summary: "Take a tenant's backup at once (the operator's POST /management/backups)",
      handler: async (context) => {
        const body = validate<typeof CreateBackupBody.static>(CreateBackupBody, parseJsonBody(context.incoming) ?? {})
        const record = await takeBackup(runtimeOf(context), 'manual', body.retain === true, context.nowMs)
        return { status: 201, body: publicBackup(record) }
      },
    }),
    adminOnly({
      method: 'POST',
      path: '/admin/tenants/:slug/restore',
      operationId: 'restoreTenant',
      response: RestoreStatus,
      responseStatus: 202,
      errors: [404, 409],
      body: RestoreBody,
      summary: "Restore one of a tenant's backups in the background (the operator's POST /management/restore)",
      handler: async (context) => {
        const body = validate<typeof RestoreBody.static>(RestoreBody, parseJsonBody(context.incoming))
        const run = await startRestore(
          context.deps.system,
          runtimeOf(context),
          body.backup_id,
          'operator',
          context.deps.now,
        )
        return { status: 202, body: publicRestoreStatus(run.record) }
      },
    }),
    adminOnly({
      method: 'GET',
      path: '/admin/tenants/:slug/restore/status',
      operationId: 'getTenantRestoreStatus',
      response: RestoreStatus,
      summary: "A tenant's latest restore (the operator's GET /management/restore/status)",
      handler: (context) => ({
        status: 200,
        body: publicRestoreStatus(context.deps.system.restores.get(runtimeOf(context).slug)),
      }),
    }),
    adminOnly({
      method: 'POST',
      path: '/admin/tenants/:slug/retention',
      operationId: 'runTenantRetention',
      response: RetentionAnswer,
      errors: [403, 404, 409],
      summary:
        'Run a history-retention pass over a tenant now and wait for it (403 without the plan feature, 409 with retention.enabled off, a pass or a restore running)',
      handler: async (context) => {
        const tenant = runtimeOf(context)
        const policy = retentionPolicy(tenant, context.deps.now())
        if (typeof policy === 'string')
          throw new ApiError(
            tenant.limits.retention ? 'conflict' : 'plan_forbidden',
            `No retention pass for ${tenant.slug}: ${policy}`,
          )
        if (tenant.restoring !== null) throw new ApiError('conflict', `${tenant.slug} is being restored`)
        if (retentionRunning(tenant)) throw new ApiError('conflict', `A retention pass of ${tenant.slug} is running`)
        const result = await runRetentionPass(tenant, context.deps.now)
        tenant.log.info({ ...result, ms: Math.round(result.ms) }, 'history retention pass (operator)')
        return {
          status: 200,
          body: {
            pairs: result.pairs,
            versions_before: result.versionsBefore,
            versions_removed: result.versionsRemoved,
            steps: result.steps,
            ms: Math.round(result.ms),
            stopped: result.stopped,
            price_bytes_before: result.priceBytesBefore,
            price_bytes_after: result.priceBytesAfter,
          },
        }
      },
    }),
    adminOnly({
      method: 'GET',
      path: '/admin/access-log',
      operationId: 'getAccessLog',
      response: AccessLogAnswer,
      summary: "This node's access log: on or off, and its sample",
      handler: (context) => ({ status: 200, body: context.app.accessLog.settings }),
    }),
    adminOnly({
      method: 'PUT',
      path: '/admin/access-log',
      operationId: 'setAccessLog',
      response: AccessLogAnswer,
      summary:
        "Turn this node's access log on or off, or change its sample, without a restart (until the next start, which reads the configuration again)",
      body: AccessLogBody,
      // It changes memory only (the log goes to stdout): served while storage is nearly full.
      whenStorageNearlyFull: 'serve',
      handler: (context) => {
        const body = validate<typeof AccessLogBody.static>(AccessLogBody, parseJsonBody(context.incoming) ?? {})
        const accessLog = context.app.accessLog
        accessLog.configure({ enabled: body.enabled, sample: body.sample ?? accessLog.settings.sample })
        context.deps.logger.info(
          { access_log: accessLog.settings, request_id: context.incoming.requestId },
          'access log changed',
        )
        return { status: 200, body: accessLog.settings }
      },
    }),
  ]
}

/** The tenant's runtime on this node (404 when unknown). */
function runtimeOf(context: RootContext): TenantRuntime {
  tenantOf(context)
  const runtime = context.deps.tenants.get(context.params['slug']!)
  if (runtime === undefined)
    throw new ApiError('not_found', `Tenant ${context.params['slug']} is not served by this node`)
  return runtime
}
