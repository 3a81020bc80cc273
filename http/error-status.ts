/**
 * The HTTP side of the error registry (platform/errors.ts): each code's status, the reason phrases,
 * the spec's error body and the headers an error answer carries. Only the edge knows these; the
 * services raise coded errors.
 * @module
 */
import { formatInstant } from '../engine/time.js'
import { ApiError, type ErrorCode } from '../platform/errors.js'

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

/** The status of each code (a code's status never changes: clients branch on both). */
export const errorStatus: Readonly<Record<ErrorCode, number>> = {
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
}

/**
 * An error raised by the edge itself that carries headers of its own (`Allow` on a 405,
 * `WWW-Authenticate` on a 401, the rate-limit headers, `x-price-engine` on a price read).
 */
export class HttpError extends ApiError {
  constructor(
    code: ErrorCode,
    message: string,
    extra: Record<string, unknown> = {},
    readonly headers: Readonly<Record<string, string>> = {},
    retryAfterS: number | null = null,
  ) {
    super(code, message, extra, retryAfterS)
  }
}

/** The HTTP status an error answers with. */
export function statusOf(error: ApiError): number {
  return errorStatus[error.code]
}

/** The headers of an error's answer: Retry-After from `retryAfterS`, and an HttpError's own. */
export function errorHeaders(error: ApiError): Record<string, string> {
  const own = error instanceof HttpError ? error.headers : {}
  return error.retryAfterS === null ? { ...own } : { ...own, 'retry-after': String(error.retryAfterS) }
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
