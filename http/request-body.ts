/**
 * A request's body as JSON, for the routes that read it themselves (the root routes; the tenant
 * pipeline reads its routes' bodies in http/app.ts): 415 for another media type, 400
 * `malformed_json` or `validation_failed` (depth) for a body that does not parse.
 * @module
 */
import { jsonDepthMax } from '../engine/limits.js'
import { ApiError, validationError } from '../platform/errors.js'
import type { Incoming } from './adapter.js'
import { JsonBodyProblem, readJsonBody } from './json-body.js'

/** Parses a JSON body: undefined when empty; 415 for a non-JSON content type; 400 when malformed. */
export function parseJsonBody(incoming: Incoming): unknown {
  const body = incoming.body
  if (body === null || body.length === 0) return undefined
  const type = incoming.contentType.toLowerCase()
  if (type !== '' && !type.includes('json')) {
    throw new ApiError(
      'unsupported_media_type',
      `Content type ${incoming.contentType} is not supported; send application/json`,
    )
  }
  try {
    return readJsonBody(body, jsonDepthMax)
  } catch (error) {
    if (!(error instanceof JsonBodyProblem)) throw error
    if (error.kind === 'syntax' || error.kind === 'encoding')
      throw new ApiError('malformed_json', `Malformed JSON body: ${error.message}`)
    throw validationError([{ path: error.path, message: error.message }])
  }
}
