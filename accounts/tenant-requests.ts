/**
 * Tenant requests (API.md §2, §4): a signed-in person asks for a tenant with a slug, a tier and a
 * region this deployment serves; it stays `requested` until an operator approves or rejects it, or
 * is approved at once with `PRICING_AUTO_APPROVE=true`. Approval provisions the tenant
 * (`provisioning`, then `active`) with the requester as its owner and mails them its base URL.
 * A slug is taken while a tenant has it or another request for it is open.
 * @module
 */
import { randomBytes } from 'node:crypto'
import type { SystemStore, TenantRequestRecord, Tier } from '../storage/system-store.js'
import type { Config } from '../platform/config.js'
import { ApiError, notFound, validationError } from '../platform/errors.js'
import type { Mailer } from '../platform/mailer.js'
import { provisionTenant } from './provision.js'
import { slugPattern, type TenantRegistry } from '../tenant/runtime.js'

export interface TenantRequestDeps {
  readonly config: Pick<Config, 'region' | 'autoApprove'>
  readonly system: SystemStore
  readonly tenants: TenantRegistry
  readonly mailer: Mailer
  readonly publicUrl: string
}

export interface TenantRequestInput {
  readonly slug: string
  readonly tier: Tier
  readonly region: string
}

/** The regions this deployment serves (`PRICING_REGION`, comma-separated). */
export function servedRegions(config: Pick<Config, 'region'>): string[] {
  return config.region
    .split(',')
    .map((region) => region.trim())
    .filter((region) => region.length > 0)
}

export function publicTenantRequest(record: TenantRequestRecord): Record<string, unknown> {
  return {
    id: record.id,
    email: record.email,
    slug: record.slug,
    tier: record.tier,
    region: record.region,
    status: record.status,
    created_at: new Date(record.created_at).toISOString(),
    decided_at: record.decided_at === null ? null : new Date(record.decided_at).toISOString(),
    reason: record.reason,
  }
}

/** Requests newest first; only `email`'s when given. */
export function listTenantRequests(system: SystemStore, email?: string): TenantRequestRecord[] {
  const records = [...system.tenantRequests.getRange({ snapshot: false })].map((entry) => entry.value)
  return records
    .filter((record) => email === undefined || record.email === email)
    .sort((left, right) => right.created_at - left.created_at)
}

/** Why `slug` cannot be requested now, or null. */
export function slugProblem(system: SystemStore, slug: string): string | null {
  if (!slugPattern.test(slug)) return 'lowercase letters, digits and hyphens, 1-63 characters, no hyphen first or last'
  if (system.tenants.get(slug) !== undefined) return 'taken'
  if (
    listTenantRequests(system).some(
      (record) => record.slug === slug && (record.status === 'requested' || record.status === 'provisioning'),
    )
  )
    return 'taken (requested)'
  return null
}

export async function requestTenant(
  deps: TenantRequestDeps,
  email: string,
  input: TenantRequestInput,
  nowMs: number,
): Promise<TenantRequestRecord> {
  const problem = slugProblem(deps.system, input.slug)
  if (problem !== null && problem.startsWith('taken'))
    throw new ApiError('conflict', `The slug ${input.slug} is ${problem}`)
  if (problem !== null) throw validationError([{ path: '/slug', message: problem }], `slug: ${problem}`)
  const regions = servedRegions(deps.config)
  if (!regions.includes(input.region))
    throw validationError(
      [{ path: '/region', message: `must be one of ${regions.join(', ')}` }],
      `region: this deployment serves ${regions.join(', ')}`,
    )
  const record: TenantRequestRecord = {
    id: randomBytes(8).toString('hex'),
    email,
    slug: input.slug,
    tier: input.tier,
    region: input.region,
    status: 'requested',
    created_at: nowMs,
    decided_at: null,
    reason: null,
  }
  await deps.system.put(deps.system.tenantRequests, record.id, record)
  return deps.config.autoApprove ? approveTenantRequest(deps, record.id, nowMs) : record
}

function openRequest(system: SystemStore, id: string): TenantRequestRecord {
  const record = system.tenantRequests.get(id)
  if (record === undefined) throw notFound(`Tenant request ${id}`)
  if (record.status !== 'requested')
    throw new ApiError('conflict', `Tenant request ${id} (${record.slug}) is ${record.status}`)
  return record
}

/** Provisions the tenant with the requester as its owner, and mails them. */
export async function approveTenantRequest(
  deps: TenantRequestDeps,
  id: string,
  nowMs: number,
): Promise<TenantRequestRecord> {
  const request = openRequest(deps.system, id)
  const provisioning: TenantRequestRecord = { ...request, status: 'provisioning', decided_at: nowMs }
  await deps.system.put(deps.system.tenantRequests, id, provisioning)
  try {
    await provisionTenant(
      deps.system,
      deps.tenants,
      { slug: request.slug, tier: request.tier, region: request.region, owner_email: request.email },
      nowMs,
    )
  } catch (error) {
    // The slug was taken by an operator's tenant meanwhile: the request cannot be met.
    const rejected: TenantRequestRecord = { ...provisioning, status: 'rejected', reason: (error as Error).message }
    await deps.system.put(deps.system.tenantRequests, id, rejected)
    throw error
  }
  const active: TenantRequestRecord = { ...provisioning, status: 'active' }
  await deps.system.put(deps.system.tenantRequests, id, active)
  const consoleUrl = `${deps.publicUrl}/console/${request.slug}`
  await deps.mailer.send({
    to: request.email,
    subject: `Your tenant ${request.slug} is ready`,
    text: `Your tenant ${request.slug} (${request.tier}, region ${request.region}) is ready.\n\nBase URL of its API: ${deps.publicUrl}/t/${request.slug}\nConsole (you are its owner): ${consoleUrl}\n`,
    link: consoleUrl,
  })
  return active
}

export async function rejectTenantRequest(
  system: SystemStore,
  id: string,
  reason: string | null,
  nowMs: number,
): Promise<TenantRequestRecord> {
  const rejected: TenantRequestRecord = { ...openRequest(system, id), status: 'rejected', decided_at: nowMs, reason }
  await system.put(system.tenantRequests, id, rejected)
  return rejected
}
