/**
 * The one-line message a page shows after a form. A form's 303 carries it in the query (`?notice=`
 * or `?error=`, http/pages/shared/form.ts), so a link can carry one too: a page must show only what this
 * service wrote, or `/portal?notice=Call us at ...` would be an official-looking message in a
 * phishing mail. So a message is one of two things:
 *
 * - a code of the fixed tables below (for people who are not signed in: sign-in, sign-out), shown
 *   as its fixed text; any other text without a signature shows nothing;
 * - for a signed-in person, a text with `sig`, an HMAC-SHA256 of it under the session's secret
 *   (as the CSRF token, http/pages/shared/csrf.ts). Only this service, for that session, can make one, so
 *   a link someone else made shows nothing; the texts name what changed (a key, a user, a backup).
 *   Nothing is kept on the server, so any node of a cluster shows it.
 * @module
 */
import { createHmac, timingSafeEqual } from 'node:crypto'

export interface Flash {
  readonly text: string
  readonly error: boolean
}

/** Notices anyone may be shown, by code. */
export const noticeTexts = {
  'sign-in-link-sent': 'We mailed you a sign-in link, if the address is right. It works once, within 15 minutes.',
  'signed-out': 'You are signed out.',
} as const

/** Errors anyone may be shown, by code. */
export const errorTexts = {
  'not-an-email': 'That is not an e-mail address.',
  'sign-in-first': 'Sign in to see this page.',
} as const

export type NoticeCode = keyof typeof noticeTexts
export type ErrorCode = keyof typeof errorTexts

/** The query field that signs a message's text for one session. */
export const flashSignatureField = 'sig'

/** The signature of a message for the session whose secret is `sessionSecret`. */
export function flashSignature(sessionSecret: string, kind: 'notice' | 'error', text: string): string {
  return createHmac('sha256', sessionSecret).update(`pricing-service flash\n${kind}\n${text}`).digest('base64url')
}

function signedBy(sessionSecret: string | null, kind: 'notice' | 'error', text: string, signature: string): boolean {
  if (sessionSecret === null || sessionSecret === '') return false
  const expected = Buffer.from(flashSignature(sessionSecret, kind, text))
  const given = Buffer.from(signature)
  return given.length === expected.length && timingSafeEqual(given, expected)
}

function fixedText(table: Readonly<Record<string, string>>, code: string): string | null {
  return Object.hasOwn(table, code) ? table[code]! : null
}

/**
 * The message the query carries, or null: a known code's text, or a text signed for this session
 * (`sessionSecret`: null when nobody is signed in). Anything else is not shown.
 */
export function flashOf(query: URLSearchParams, sessionSecret: string | null): Flash | null {
  const kind = query.has('error') ? 'error' : query.has('notice') ? 'notice' : null
  if (kind === null) return null
  const value = query.get(kind)!
  const signature = query.get(flashSignatureField)
  if (signature !== null) {
    return signedBy(sessionSecret, kind, value, signature) ? { text: value, error: kind === 'error' } : null
  }
  const text = fixedText(kind === 'error' ? errorTexts : noticeTexts, value)
  return text === null ? null : { text, error: kind === 'error' }
}
