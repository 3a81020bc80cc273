/**
 * A page's error answer (issue 9): the status of the ApiError, and the message as an HTML page
 * with a way back, so a person in a browser never lands on a JSON body.
 * @module
 */
import { errorHeaders, statusOf } from '../../error-status.js'
import { ApiError } from '../../../platform/errors.js'
import type { Reply } from '../../contracts.js'
import type { Incoming } from '../../adapter.js'
import { html } from './html.js'
import { page } from './layout.js'
import { pageHeaders } from './security-headers.js'

const titles: Readonly<Record<number, string>> = {
  400: 'That did not work',
  401: 'Please sign in',
  403: 'Not allowed',
  404: 'Not found',
  405: 'Not here',
  409: 'That conflicts with what is there',
  429: 'Too many attempts',
  503: 'Not available just now',
}

/**
 * Does the request come from a browser that wants a page (`Accept` names text/html, as a
 * navigation's does)? API clients and the pages' own scripts send `*\/*` or JSON, and get JSON.
 */
export function wantsHtml(incoming: Pick<Incoming, 'accept'>): boolean {
  return (incoming.accept ?? '').includes('text/html')
}

/** The page of any error answer for a browser: the status and headers kept, the message as a page. */
export function errorAnswerPage(
  error: unknown,
  person: string | null,
): { status: number; headers: Record<string, string>; body: string } {
  const apiError = error instanceof ApiError ? error : null
  const status = apiError === null ? 500 : statusOf(apiError)
  const message =
    apiError === null
      ? 'Something went wrong on our side. Please try again in a moment.'
      : apiError.code === 'route_not_found'
        ? 'There is no page at this address.'
        : apiError.message
  const body = html`<p>${message}</p>
<p><a href="/portal">Back to your account</a></p>`
  return {
    status,
    headers: { ...(apiError === null ? {} : errorHeaders(apiError)), ...pageHeaders },
    body: page({ title: titles[status] ?? 'Something went wrong', person, body }),
  }
}

/** The page of an error; anything that is not an ApiError is rethrown (a 500 with the usual body). */
export function errorPage(error: unknown, person: string | null): Reply {
  if (!(error instanceof ApiError)) throw error
  const body = html`<p>${error.message}</p>
<p><a href="/portal">Back to your account</a></p>`
  const status = statusOf(error)
  return {
    status,
    headers: { ...pageHeaders, ...(error.retryAfterS === null ? {} : { 'retry-after': String(error.retryAfterS) }) },
    body: page({ title: titles[status] ?? 'Something went wrong', person, body }),
  }
}
