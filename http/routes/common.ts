/**
 * Helpers shared by the catalogue routes: instants from requests, pages, rendering versioned
 * records with their update and deletion times, quotas, and batch outcomes.
 * @module
 */
import { statusOf } from '../error-status.js'
import type { CatalogType, Change } from '../../engine/catalog.js'
import { pageSizeDefault } from '../../engine/limits.js'
import { amountUnit, parseAmount, toNumber } from '../../engine/money.js'
import type { View } from '../../engine/temporal.js'
import { formatInstant, parseInstant } from '../../engine/time.js'
import type { Reply, TenantContext } from '../contracts.js'
import { ApiError, notFound, validationError, type ErrorDetail } from '../../platform/errors.js'
import type { Limits } from '../../tenant/plans.js'
import type { TenantRuntime } from '../../tenant/runtime.js'
import { detailsOf } from '../validate.js'
import type { TSchema } from '@sinclair/typebox'

export const accepted: Reply = { status: 202 }

/**
 * A Quantity (../schemas.ts) as a number the engine scales exactly (engine/money.ts scaleQuantity):
 * a number as it is (its shortest text is what the client wrote), a text rounded half-up to
 * 4 decimals first. 400 naming `path` when the text is not above 0 or is above `maximum`.
 */
export function quantityValue(input: number | string, path: string, maximum = Number.POSITIVE_INFINITY): number {
  if (typeof input === 'number') return input
  const scaled = parseAmount(input)
  if (scaled === null || !(Number(input) > 0) || scaled > maximum * amountUnit) {
    const bound = Number.isFinite(maximum) ? ` up to ${maximum}` : ''
    throw validationError([{ path, message: `must be a decimal number above 0${bound}` }])
  }
  return toNumber(scaled)
}

/** The read instant: `asOf` (or `as_of`) from the query, else now. */
export function readInstant(context: TenantContext<unknown, { asOf?: string; as_of?: string }>): number {
  const text = context.query.asOf ?? context.query.as_of
  return text === undefined ? context.nowMs : parseInstant(text)
}

/** A write's effective instant: a past or absent start means now (history is append-only). */
export function writeInstant(text: string | undefined | null, nowMs: number): number {
  if (text === undefined || text === null) return nowMs
  return Math.max(parseInstant(text), nowMs)
}

/** Instant of a delete: `when`, default now; a past `when` means now. */
export function deleteInstant(context: TenantContext<unknown, { when?: string }>): number {
  return writeInstant(context.query.when, context.nowMs)
}

export function optionalInstant(text: string | undefined | null): number | null {
  return text === undefined || text === null ? null : parseInstant(text)
}

export function formatOptional(ms: number | null): string | null {
  return ms === null ? null : formatInstant(ms)
}

/** Adds the response-only fields of a versioned record. */
export function withVersionMeta<T extends object>(fields: T, view: View<unknown>): T & Record<string, unknown> {
  const record: Record<string, unknown> = {
    ...fields,
    updated_at: formatInstant(view.version.writtenAt),
    updated_by: view.version.writtenBy,
  }
  if (view.deletedAt !== null) record['deleted_at'] = formatInstant(view.deletedAt)
  return record as T & Record<string, unknown>
}

export interface PageQuery {
  page?: number
  size?: number
}

/** A numbered page of `items` (page from 1, size default 100). */
export function page<T>(items: readonly T[], query: PageQuery): { items: T[]; page: number; size: number; total: number } {
  const pageNumber = query.page ?? 1
  const size = query.size ?? pageSizeDefault
  const start = (pageNumber - 1) * size
  return { items: items.slice(start, start + size), page: pageNumber, size, total: items.length }
}

/** 422 when creating one more live key of `type` would pass the plan's quota. */
export function checkQuota(tenant: TenantRuntime, type: CatalogType, limitName: keyof Limits, creating: number): void {
  const limit = tenant.limits[limitName]
  if (typeof limit !== 'number' || creating === 0) return
  const count = tenant.catalog.liveCount(type)
  if (count + creating > limit) {
    // The body is the documented error shape only (docs/errors.md); the message names the numbers.
    throw new ApiError('quota_exceeded', `The plan allows ${limit} ${limitName}; ${count} exist`)
  }
}

/** Does this change create a key that is not live in its latest version yet (counts for quotas)? */
export function createsLiveKey(tenant: TenantRuntime, change: Change): boolean {
  return !tenant.catalog.isLiveLatest(change.type, change.key) && change.versions[change.versions.length - 1]!.value !== null
}

export function requireView<T>(view: View<T> | null, what: string): View<T> {
  if (view === null) throw notFound(what)
  return view
}

/** Validates one batch item; answers its problem as text or null when valid. */
export function itemProblem(schema: TSchema, item: unknown): string | null {
  const details: ErrorDetail[] = detailsOf(schema, item)
  if (details.length === 0) return null
  const first = details[0]!
  return `${first.path || 'item'}: ${first.message}`
}

export interface BatchOutcome {
  accepted: number
  failed: Record<string, unknown>[]
}

/** Turns an ApiError thrown for one batch item into its `failed` entry; rethrows others. */
export function failedEntry(keys: Record<string, unknown>, error: unknown): Record<string, unknown> {
  if (error instanceof ApiError && statusOf(error) < 500) return { ...keys, message: error.message }
  throw error
}
