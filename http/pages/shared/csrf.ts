/**
 * CSRF protection of the portal and console forms (issue 9), on top of SameSite=Lax cookies and the
 * Origin check of cookie writes (http/console-auth.ts): each form carries a token derived
 * from the session's secret (HMAC-SHA256), which only a page of this service, rendered for that
 * session, can know (the cookie is HttpOnly). A form post without the session's token is refused.
 * @module
 */
import { createHmac, timingSafeEqual } from 'node:crypto'
import { ApiError } from '../../../platform/errors.js'

/** The name of the hidden form field. */
export const csrfField = '_csrf'

/** The form token of a session (its cookie's secret). */
export function csrfToken(sessionSecret: string): string {
  return createHmac('sha256', sessionSecret).update('pricing-service form').digest('base64url')
}

/** Does a submitted token belong to the session? Compared in constant time. */
export function csrfValid(sessionSecret: string, submitted: string | null | undefined): boolean {
  if (sessionSecret === '' || typeof submitted !== 'string') return false
  const expected = Buffer.from(csrfToken(sessionSecret))
  const given = Buffer.from(submitted)
  return given.length === expected.length && timingSafeEqual(given, expected)
}

/** Refuses (403) a form post whose token is not the session's. */
export function requireFormToken(sessionSecret: string, form: URLSearchParams): void {
  if (!csrfValid(sessionSecret, form.get(csrfField)))
    throw new ApiError(
      'forbidden',
      'This form has expired or did not come from this service: reload the page and try again',
    )
}
