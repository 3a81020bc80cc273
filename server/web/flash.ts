/**
 * The one-line message a page shows after a form (issue 9): a form's 303 carries it in the query
 * (`?notice=` or `?error=`, server/web/form.ts `backTo`), and the page shows it escaped.
 * @module
 */
export interface Flash {
  readonly text: string
  readonly error: boolean
}

/** The message a form's redirect carried, or null. */
export function flashOf(query: URLSearchParams): Flash | null {
  const error = query.get('error')
  if (error !== null) return { text: error, error: true }
  const notice = query.get('notice')
  return notice === null ? null : { text: notice, error: false }
}
