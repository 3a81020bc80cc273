/**
 * The error registry: every coded error the service raises, without HTTP: the edge
 * (http/error-status.ts) gives each code its status, renders the spec's body
 * `{timestamp, status, error, message}` plus `code`, `request_id` and `extra` (`details` for
 * validation, `retry_after`, `max_items_per_request`, ...), and the headers. docs/errors.md
 * documents each code.
 * @module
 */

/**
 * Every error code the service answers with, grouped by the HTTP status the edge gives them
 * (http/error-status.ts maps each to its status; the compiler checks the map is complete).
 */
export const errorCodes = [
  'validation_failed',
  'malformed_json',
  'malformed_request',
  'currency_unknown',
  'currency_inactive',
  'rule_invalid',
  'pricelist_cycle',
  'setting_unknown',
  'webhook_url_forbidden',
  'unauthorized',
  'forbidden',
  'plan_forbidden',
  'tenant_suspended',
  'not_found',
  'route_not_found',
  'tenant_not_found',
  'method_not_allowed',
  'conflict',
  'cursor_expired',
  'body_too_large',
  'too_many_items',
  'unsupported_media_type',
  'quota_exceeded',
  'rate_limited',
  'internal_error',
  'fx_feed_unavailable',
  'not_ready',
  'backup_failed',
  'restoring',
  'region_unavailable',
  'storage_full',
  'insufficient_storage',
] as const
export type ErrorCode = (typeof errorCodes)[number]

export interface ErrorDetail {
  path: string
  message: string
}

/**
 * A coded failure of a request, raised anywhere above the engine and answered by the HTTP edge
 * (http/error-status.ts) with the status of its code. It carries only domain facts: the code, the
 * message, the fields the answer's body adds (`extra`) and, for a failure that passes, when to try
 * again (`retryAfterS`, which the edge turns into a Retry-After header).
 */
export class ApiError extends Error {
  override name = 'ApiError'
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly extra: Record<string, unknown> = {},
    readonly retryAfterS: number | null = null,
  ) {
    super(message)
  }
}

export function validationError(details: ErrorDetail[], message?: string): ApiError {
  const first = details[0]
  const text = message ?? (first === undefined ? 'Invalid request' : `${first.path || 'body'}: ${first.message}`)
  return new ApiError('validation_failed', text, { details })
}

export function notFound(what: string): ApiError {
  return new ApiError('not_found', `${what} not found`)
}
