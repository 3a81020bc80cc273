/**
 * A page's error answer (issue 9): the status of the ApiError, and the message as an HTML page
 * with a way back, so a person in a browser never lands on a JSON body.
 * @module
 */
import { ApiError } from '../errors.js'
import type { Reply } from '../api.js'
import { html } from './html.js'
import { page } from './layout.js'
import { pageHeaders } from './security-headers.js'

const titles: Readonly<Record<number, string>> = {
  400: 'That did not work',
  401: 'Please sign in',
  403: 'Not allowed',
  404: 'Not found',
  409: 'That conflicts with what is there',
  503: 'Not available just now',
}

/** The page of an error; anything that is not an ApiError is rethrown (a 500 with the usual body). */
export function errorPage(error: unknown, person: string | null): Reply {
  if (!(error instanceof ApiError)) throw error
  const body = html`<p>${error.message}</p>
<p><a href="/portal">Back to your account</a></p>`
  const retry = error.headers['retry-after']
  return {
    status: error.status,
    headers: { ...pageHeaders, ...(retry === undefined ? {} : { 'retry-after': retry }) },
    body: page({ title: titles[error.status] ?? 'Something went wrong', person, body }),
  }
}
