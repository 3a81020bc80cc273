/**
 * What every answer must be, whatever was sent: never a 5xx, and an error (4xx) in the spec's body
 * (SPEC.md "Errors", platform/errors.ts): JSON `{timestamp, status, error, message}` plus `code` and
 * `request_id` (the `x-request-id` header); `error` is the status's reason phrase (410 names
 * `cursor_expired` itself). The token endpoint answers RFC 6749's `{error, error_description}`.
 * Web pages answer HTML, and a HEAD answer has no body: their shape is not checked.
 * @module
 */
import type { IncomingHttpHeaders } from 'node:http'
import { reasonPhrases } from '../../http/error-status.js'
import { parseInstant } from '../../engine/time.js'

const oauthErrors = new Set([
  'invalid_request',
  'invalid_client',
  'unsupported_grant_type',
  'invalid_grant',
  'unauthorized_client',
  'invalid_scope',
])

/** Statuses uWebSockets.js answers itself, before any handler (a request head over its limit). */
const transportStatuses = new Set([431])

/** The problem with an error answer's body, or null when it is the spec's. */
export function errorBodyProblem(
  status: number,
  headers: IncomingHttpHeaders,
  body: Buffer,
  tokenEndpoint: boolean,
): string | null {
  if (transportStatuses.has(status)) return null
  const type = String(headers['content-type'] ?? '')
  if (!type.startsWith('application/json')) return `content type ${JSON.stringify(type)}, not application/json`
  let json: Record<string, unknown>
  try {
    json = JSON.parse(body.toString('utf8')) as Record<string, unknown>
  } catch {
    return `not JSON: ${JSON.stringify(body.subarray(0, 120).toString('utf8'))}`
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json)) return 'not a JSON object'
  if (tokenEndpoint && typeof json['error_description'] === 'string') {
    return oauthErrors.has(String(json['error']))
      ? null
      : `OAuth error ${JSON.stringify(json['error'])} is not one of RFC 6749's`
  }
  const problems: string[] = []
  if (typeof json['timestamp'] !== 'string' || Number.isNaN(parseInstant(json['timestamp']))) problems.push('timestamp')
  if (json['status'] !== status) problems.push(`status ${JSON.stringify(json['status'])}`)
  const error = status === 410 ? 'cursor_expired' : reasonPhrases[status]
  if (json['error'] !== error)
    problems.push(`error ${JSON.stringify(json['error'])} (expected ${JSON.stringify(error)})`)
  if (typeof json['message'] !== 'string' || json['message'] === '') problems.push('message')
  if (typeof json['code'] !== 'string' || json['code'] === '') problems.push('code')
  if (typeof json['request_id'] !== 'string' || json['request_id'] !== headers['x-request-id'])
    problems.push('request_id')
  return problems.length === 0 ? null : `fields: ${problems.join(', ')}`
}
