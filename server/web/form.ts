/**
 * HTML form posts (issue 9): the portal's and console's forms post
 * `application/x-www-form-urlencoded` to the same endpoints as the JSON API; those answer a form
 * with a redirect back to the page, carrying a short message in the query.
 * @module
 */
import type { Incoming } from '../http.js'

/** The form's fields when the request is a form post, else null (a JSON call). */
export function formFields(incoming: Incoming): URLSearchParams | null {
  if (!incoming.contentType.toLowerCase().startsWith('application/x-www-form-urlencoded')) return null
  return new URLSearchParams(incoming.body === null ? '' : incoming.body.toString('utf8'))
}

/** A 303 back to `page` with a notice or an error for the person (at most 300 characters). */
export function backTo(page: string, message: { notice?: string; error?: string }, headers: Record<string, string> = {}): { status: number; headers: Record<string, string> } {
  const query = new URLSearchParams()
  if (message.notice !== undefined) query.set('notice', message.notice.slice(0, 300))
  if (message.error !== undefined) query.set('error', message.error.slice(0, 300))
  const search = query.toString()
  return { status: 303, headers: { ...headers, location: search === '' ? page : `${page}?${search}`, 'cache-control': 'no-store' } }
}
