/**
 * Provisioning shared by the operator API and the command line: tenants and API keys.
 * @module
 */
import type {
  LimitOverrides,
  SystemStore,
  TenantRecord,
  TenantStatus,
  Tier,
  ApiKeyRecord,
} from '../storage/system-store.js'
import { hashSecret, newKeyCredentials } from './auth.js'
import { ApiError, validationError } from '../platform/errors.js'
import { normalEmail } from './people/sign-in.js'
import { applyStoredFeed } from '../tenant/fx-feed.js'
import { slugPattern, type TenantRegistry } from '../tenant/runtime.js'

export interface TenantInput {
  slug: string
  tier: Tier
  region: string
  owner_email?: string | null
  limits?: LimitOverrides
}

export function publicTenant(record: TenantRecord): Record<string, unknown> {
  return {
    slug: record.slug,
    tier: record.tier,
    region: record.region,
    status: record.status,
    owner_email: record.owner_email,
    limits: record.limits,
    created_at: new Date(record.created_at).toISOString(),
    updated_at: new Date(record.updated_at).toISOString(),
  }
}

export function publicKey(record: ApiKeyRecord): Record<string, unknown> {
  return {
    name: record.name,
    client_id: record.client_id,
    created_at: new Date(record.created_at).toISOString(),
    revoked_at: record.revoked_at === null ? null : new Date(record.revoked_at).toISOString(),
    last_used_at: record.last_used_at === null ? null : new Date(record.last_used_at).toISOString(),
  }
}

/** A key with its last use since the last flush to the system store (`usage`: client id -> epoch ms). */
export function withRecentUse(key: ApiKeyRecord, usage: ReadonlyMap<string, number>): ApiKeyRecord {
  const used = usage.get(key.client_id)
  return used !== undefined && (key.last_used_at === null || used > key.last_used_at)
    ? { ...key, last_used_at: used }
    : key
}

export async function createTenantRecord(
  system: SystemStore,
  input: TenantInput,
  nowMs: number,
): Promise<TenantRecord> {
  if (!slugPattern.test(input.slug)) {
    throw new ApiError(
      'validation_failed',
      'slug must be lowercase letters, digits and hyphens (1-63, no leading or trailing hyphen)',
      {
        details: [{ path: '/slug', message: 'invalid slug' }],
      },
    )
  }
  const ownerEmail =
    input.owner_email === undefined || input.owner_email === null ? null : normalEmail(input.owner_email)
  if (input.owner_email !== undefined && input.owner_email !== null && ownerEmail === null) {
    throw validationError(
      [{ path: '/owner_email', message: 'must be an e-mail address' }],
      'owner_email must be an e-mail address',
    )
  }
  const record: TenantRecord = {
    slug: input.slug,
    tier: input.tier,
    region: input.region,
    status: 'active',
    owner_email: ownerEmail,
    limits: input.limits ?? {},
    created_at: nowMs,
    updated_at: nowMs,
  }
  // Check and insert in one transaction: of concurrent creates of one slug exactly one wins.
  const created = await system.update(system.tenants, record.slug, (existing) =>
    existing === undefined ? record : undefined,
  )
  if (created === undefined) throw new ApiError('conflict', `Tenant ${input.slug} already exists`)
  // The owner is the tenant's first user: signed in by magic link, they reach /management.
  if (ownerEmail !== null)
    await system.put(system.members, `${record.slug} ${ownerEmail}`, {
      tenant: record.slug,
      email: ownerEmail,
      role: 'owner',
      created_at: nowMs,
    })
  return record
}

/**
 * Creates a tenant (record, owner membership) and opens it on this node, loaded, with the latest
 * fetched exchange rates: the admin API's and an approved portal request's way to a tenant.
 */
export async function provisionTenant(
  system: SystemStore,
  tenants: TenantRegistry,
  input: TenantInput,
  nowMs: number,
): Promise<TenantRecord> {
  const record = await createTenantRecord(system, input, nowMs)
  const runtime = tenants.open(record, nowMs)
  runtime.load()
  await applyStoredFeed(system, runtime, nowMs)
  return record
}

export async function updateTenantRecord(
  system: SystemStore,
  slug: string,
  patch: { tier?: Tier; limits?: LimitOverrides; status?: TenantStatus },
  nowMs: number,
): Promise<TenantRecord> {
  const record = await system.update(system.tenants, slug, (existing) =>
    existing === undefined
      ? undefined
      : {
          ...existing,
          tier: patch.tier ?? existing.tier,
          limits: patch.limits === undefined ? existing.limits : { ...existing.limits, ...patch.limits },
          status: patch.status ?? existing.status,
          updated_at: nowMs,
        },
  )
  if (record === undefined) throw new ApiError('not_found', `Tenant ${slug} not found`)
  return record
}

export async function createKey(
  system: SystemStore,
  tenant: string,
  name: string,
  nowMs: number,
): Promise<{ record: ApiKeyRecord; clientSecret: string }> {
  if (system.tenants.get(tenant) === undefined) throw new ApiError('not_found', `Tenant ${tenant} not found`)
  const { clientId, clientSecret } = newKeyCredentials()
  const record: ApiKeyRecord = {
    client_id: clientId,
    tenant,
    name,
    secret_hash: await hashSecret(clientSecret),
    created_at: nowMs,
    revoked_at: null,
    last_used_at: null,
  }
  await system.put(system.keys, clientId, record)
  return { record, clientSecret }
}

export async function revokeKey(
  system: SystemStore,
  tenant: string,
  clientId: string,
  nowMs: number,
): Promise<ApiKeyRecord> {
  const revoked = await system.update(system.keys, clientId, (record) =>
    record === undefined || record.tenant !== tenant
      ? undefined
      : { ...record, revoked_at: record.revoked_at ?? nowMs },
  )
  if (revoked === undefined) throw new ApiError('not_found', `Key ${clientId} not found`)
  return revoked
}

/** Records that a key was used at `usedMs` (a token request, or API calls flushed later). */
export async function recordKeyUse(system: SystemStore, clientId: string, usedMs: number): Promise<void> {
  await system.update(system.keys, clientId, (key) =>
    key === undefined || (key.last_used_at !== null && key.last_used_at >= usedMs)
      ? undefined
      : { ...key, last_used_at: usedMs },
  )
}
