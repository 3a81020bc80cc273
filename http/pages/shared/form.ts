/**
 * HTML form posts (issue 9): the portal's and console's forms post
 * `application/x-www-form-urlencoded` to the same endpoints as the JSON API; those answer a form
 * with a redirect back to the page, carrying a short message in the query: a fixed message's code,
 * or for a signed-in person a text signed for their session (http/pages/shared/flash.ts says why).
 * @module
 */
import type { Incoming } from '../../adapter.js'
import { flashSignature, flashSignatureField, type ErrorCode, type NoticeCode } from './flash.js'

/** How long a message text may be in a redirect. */
const messageLengthMax = 300

/** The form's fields when the request is a form post, else null (a JSON call). */
export function formFields(incoming: Incoming): URLSearchParams | null {
  if (!incoming.contentType.toLowerCase().startsWith('application/x-www-form-urlencoded')) return null
  return new URLSearchParams(incoming.body === null ? '' : incoming.body.toString('utf8'))
}

type Redirect = { status: number; headers: Record<string, string> }

function redirect(page: string, query: URLSearchParams, headers: Record<string, string>): Redirect {
  const search = query.toString()
  const location = search === '' ? page : `${page}?${search}`
  return { status: 303, headers: { ...headers, location, 'cache-control': 'no-store' } }
}

/** A 303 back to `page` with one of the fixed messages (http/pages/shared/flash.ts), for anyone. */
export function backTo(
  page: string,
  message: { notice?: NoticeCode; error?: ErrorCode },
  headers: Record<string, string> = {},
): Redirect {
  const query = new URLSearchParams()
  if (message.notice !== undefined) query.set('notice', message.notice)
  if (message.error !== undefined) query.set('error', message.error)
  return redirect(page, query, headers)
}

/**
 * A 303 back to `page` with a notice or an error for the signed-in person whose session's secret is
 * `sessionSecret` (at most 300 characters): signed, so that only that session's pages show it.
 */
export function backToSession(
  page: string,
  sessionSecret: string,
  message: { notice: string } | { error: string },
): Redirect {
  const kind = 'error' in message ? 'error' : 'notice'
  // Cut by code points: half a surrogate pair would not survive the URL, and the signature with it.
  const text = [...('error' in message ? message.error : message.notice)].slice(0, messageLengthMax).join('')
  const query = new URLSearchParams({ [kind]: text, [flashSignatureField]: flashSignature(sessionSecret, kind, text) })
  return redirect(page, query, {})
}
