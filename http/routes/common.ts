/**
 * Helpers shared by the catalogue routes: instants from requests, pages, rendering versioned
 * records with their update and deletion times, and the write layer's outcomes as answers (a
 * batch's `failed` entries, a single write's error).
 * @module
 */
import { pageSizeDefault } from '../../engine/limits.js'
import { amountUnit, parseAmount, toNumber } from '../../engine/money.js'
import type { View } from '../../engine/temporal.js'
import { formatInstant, parseInstant } from '../../engine/time.js'
import { Refusal, type ItemOutcome } from '../../tenant/writes/core.js'
import type { Reply, TenantContext } from '../contracts.js'
import { ApiError, notFound, validationError, type ErrorDetail } from '../../platform/errors.js'
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
export function page<T>(
  items: readonly T[],
  query: PageQuery,
): { items: T[]; page: number; size: number; total: number } {
  const pageNumber = query.page ?? 1
  const size = query.size ?? pageSizeDefault
  const start = (pageNumber - 1) * size
  return { items: items.slice(start, start + size), page: pageNumber, size, total: items.length }
}

/**
 * A single write's refused item as the error it answers: the refusal's code (400 validation_failed,
 * 404 not_found, 422 quota_exceeded, ...) with the refused part's path in the details when it names
 * one (a refusal of the whole item has none).
 */
export function refusalError(refusal: Refusal): ApiError {
  if (refusal.status === 'validation_failed') {
    const details = refusal.details.length > 0 ? refusal.details : [{ path: refusal.path, message: refusal.problem }]
    return validationError(
      details.map((detail) => ({ ...detail })),
      refusal.message,
    )
  }
  if (refusal.details.length === 0) return new ApiError(refusal.status, refusal.message, { ...refusal.fields })
  return new ApiError(refusal.status, refusal.message, { details: refusal.details.map((detail) => ({ ...detail })) })
}

/** A single write's one outcome: nothing when accepted, its error thrown when refused. */
export function acceptedOrThrow(outcomes: readonly ItemOutcome[]): void {
  const outcome = outcomes[0]!
  if (outcome instanceof Refusal) throw refusalError(outcome)
}

/**
 * A batch's answer: how many items were accepted, and each refused one as `{...keysOf(index),
 * message}` (the keys the route names its items by).
 */
export function batchAnswer(
  outcomes: readonly ItemOutcome[],
  keysOf: (index: number) => Record<string, unknown>,
): BatchOutcome {
  const answer: BatchOutcome = { accepted: 0, failed: [] }
  for (let index = 0; index < outcomes.length; index++) {
    const outcome = outcomes[index]!
    if (outcome instanceof Refusal) answer.failed.push({ ...keysOf(index), message: outcome.message })
    else answer.accepted++
  }
  return answer
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

/**
 * A batch's items for its use case: each one `schema` refuses as a refusal (shapeRefusal), each
 * valid one as `input(item)` (by default the item itself).
 */
export function checkedItems<Input>(
  schema: TSchema,
  items: readonly unknown[],
  input: (item: unknown) => Input = (item) => item as Input,
): (Input | Refusal)[] {
  return items.map((item) => {
    const problem = itemProblem(schema, item)
    return problem === null ? input(item) : shapeRefusal(schema, item, problem)
  })
}

/** A batch item whose shape `schema` refuses, handed to a use case as refused (its problem as the message). */
export function shapeRefusal(schema: TSchema, item: unknown, problem = itemProblem(schema, item)): Refusal {
  return new Refusal({ status: 'validation_failed', message: problem ?? 'item: invalid' })
}
