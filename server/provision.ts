/**
 * Provisioning shared by the operator API and the command line: tenants and API keys.
 * @module
 */
import type { LimitOverrides, SystemStore, TenantRecord, TenantStatus, Tier, ApiKeyRecord } from '../storage/system-store.js'
import { hashSecret, newKeyCredentials } from './auth.js'
import { ApiError } from './errors.js'
import { slugPattern } from './tenants.js'

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

export async function createTenantRecord(system: SystemStore, input: TenantInput, nowMs: number): Promise<TenantRecord> {
  if (!slugPattern.test(input.slug)) {
    throw new ApiError('validation_failed', 'slug must be lowercase letters, digits and hyphens (1-63, no leading or trailing hyphen)', {
      details: [{ path: '/slug', message: 'invalid slug' }],
    })
  }
  if (system.tenants.get(input.slug) !== undefined) {
    throw new ApiError('conflict', `Tenant ${input.slug} already exists`)
  }
  const record: TenantRecord = {
    slug: input.slug,
    tier: input.tier,
    region: input.region,
    status: 'active',
    owner_email: input.owner_email ?? null,
    limits: input.limits ?? {},
    created_at: nowMs,
    updated_at: nowMs,
  }
  await system.put(system.tenants, record.slug, record)
  return record
}

export async function updateTenantRecord(
  system: SystemStore,
  slug: string,
  patch: { tier?: Tier; limits?: LimitOverrides; status?: TenantStatus },
  nowMs: number,
): Promise<TenantRecord> {
  const existing = system.tenants.get(slug)
  if (existing === undefined) throw new ApiError('not_found', `Tenant ${slug} not found`)
  const record: TenantRecord = {
    ...existing,
    tier: patch.tier ?? existing.tier,
    limits: patch.limits === undefined ? existing.limits : { ...existing.limits, ...patch.limits },
    status: patch.status ?? existing.status,
    updated_at: nowMs,
  }
  await system.put(system.tenants, slug, record)
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

export async function revokeKey(system: SystemStore, tenant: string, clientId: string, nowMs: number): Promise<ApiKeyRecord> {
  const record = system.keys.get(clientId)
  if (record === undefined || record.tenant !== tenant) throw new ApiError('not_found', `Key ${clientId} not found`)
  const revoked = { ...record, revoked_at: record.revoked_at ?? nowMs }
  await system.put(system.keys, clientId, revoked)
  return revoked
}
