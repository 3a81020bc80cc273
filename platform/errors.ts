/**
 * The error registry: every coded error the API answers, with its HTTP status. Bodies are the
 * spec's `{timestamp, status, error, message}` plus `code`, `request_id`, `details` for validation, and the extra
 * fields the spec gives some statuses (`retry_after`, `max_items_per_request`, ...).
 * docs/errors.md documents each code.
 * @module
 */
import { formatInstant } from '../engine/time.js'

/** RFC 9110 reason phrases (API.md §9). */
export const reasonPhrases: Readonly<Record<number, string>> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  410: 'Gone',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  507: 'Insufficient Storage',
}

export const errorCodes = {
  validation_failed: 400,
  malformed_json: 400,
  malformed_request: 400,
  currency_unknown: 400,
  currency_inactive: 400,
  rule_invalid: 400,
  pricelist_cycle: 400,
  setting_unknown: 400,
  webhook_url_forbidden: 400,
  unauthorized: 401,
  forbidden: 403,
  plan_forbidden: 403,
  tenant_suspended: 403,
  not_found: 404,
  route_not_found: 404,
  tenant_not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  cursor_expired: 410,
  body_too_large: 413,
  too_many_items: 413,
  unsupported_media_type: 415,
  quota_exceeded: 422,
  rate_limited: 429,
  internal_error: 500,
  fx_feed_unavailable: 502,
  not_ready: 503,
  backup_failed: 503,
  restoring: 503,
  region_unavailable: 503,
  storage_full: 503,
  insufficient_storage: 507,
} as const
export type ErrorCode = keyof typeof errorCodes

export interface ErrorDetail {
  path: string
  message: string
}

export class ApiError extends Error {
  override name = 'ApiError'
  readonly status: number
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly extra: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message)
    this.status = errorCodes[code]
  }
}

/** The error body; `requestId` is the request's id (also in the `x-request-id` header). */
export function errorBody(
  status: number,
  code: string,
  message: string,
  nowMs: number,
  requestId: string,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    timestamp: formatInstant(nowMs),
    status,
    error: reasonPhrases[status] ?? 'Error',
    message,
    code,
    request_id: requestId,
    ...extra,
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
