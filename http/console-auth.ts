/**
 * Who may call `/management/*` (SPEC Authentication 5, API.md §4): a person signed in to the
 * console who is a user of the tenant, by session cookie or by a console bearer token.
 *
 * | credentials | answer |
 * |---|---|
 * | none, or a session/token that is unknown or expired | 401 |
 * | an API key's token | 403 (keys never reach backups and restores) |
 * | a console token of another tenant | 401 (a token for another tenant, SPEC Authentication 8) |
 * | a session or console token of a person who is not a user of the tenant | 403 |
 * | a cookie-authenticated write without a same-origin `Origin` | 403 (cross-site request) |
 *
 * The session cookie is SameSite=Lax, so a cross-site POST carries no cookie in today's browsers;
 * the Origin check covers older ones and same-site attackers.
 * @module
 */
import { HttpError } from './error-status.js'
import { ApiError } from '../platform/errors.js'
import type { Incoming } from './adapter.js'
import { bearerToken, type TokenService } from '../accounts/auth.js'
import type { SystemStore } from '../storage/system-store.js'
import { cookieValue, sessionCookie, type SignIn } from '../accounts/people/sign-in.js'

const safeMethods = new Set(['GET', 'HEAD', 'OPTIONS'])

export interface ConsoleAuthDeps {
  readonly signIn: SignIn
  readonly tokens: TokenService
  readonly system: SystemStore
  readonly publicUrl: string
}

/** Does the request come from a page of this service (the Origin header, RFC 6454)? */
export function sameOrigin(incoming: Incoming, publicUrl: string): boolean {
  const origin = incoming.origin
  if (origin === '' || origin === 'null') return false
  if (publicUrl !== '' && origin === new URL(publicUrl).origin) return true
  return origin === `http://${incoming.host}` || origin === `https://${incoming.host}`
}

/** The person of the request's session cookie and the cookie's secret, or null without a live session. */
export function sessionPerson(
  deps: Pick<ConsoleAuthDeps, 'signIn'>,
  incoming: Incoming,
  nowMs: number,
): { email: string; secret: string } | null {
  const secret = cookieValue(incoming.cookie, sessionCookie)
  const email = deps.signIn.session(secret, nowMs)
  return email === null ? null : { email, secret }
}

/**
 * The person of the request's session cookie and the cookie's secret: 401 without a live session,
 * 403 for a write (any method but GET, HEAD, OPTIONS) without a same-origin `Origin`.
 */
export function cookieSession(
  deps: Pick<ConsoleAuthDeps, 'signIn' | 'publicUrl'>,
  incoming: Incoming,
  nowMs: number,
): { email: string; secret: string } {
  const person = sessionPerson(deps, incoming, nowMs)
  if (person === null)
    throw unauthorized('Sign in to the console: no session cookie or bearer token, or the session has ended')
  if (!safeMethods.has(incoming.method) && !sameOrigin(incoming, deps.publicUrl)) {
    throw new ApiError(
      'forbidden',
      'Cross-site request refused: a cookie-authenticated write needs a same-origin Origin header',
    )
  }
  return person
}

/** The signed-in person's e-mail address, or an ApiError (401/403) as the table says. */
export function consoleSubject(
  deps: ConsoleAuthDeps,
  incoming: Incoming,
  tenant: string,
  nowMs: number,
): string | Promise<string> {
  if (incoming.authorization === '') return member(deps, tenant, cookieSession(deps, incoming, nowMs).email)
  const token = bearerToken(incoming.authorization)
  if (token === null) throw unauthorized('Malformed Authorization header: expected Bearer <token>')
  return deps.tokens.verify(token, nowMs).then((claims) => {
    if (claims === null) throw unauthorized('Invalid or expired token')
    if (claims.kind === 'key')
      throw new ApiError(
        'forbidden',
        'The management endpoints need a person signed in to the console; API keys are refused',
      )
    if (claims.tenant !== tenant) throw unauthorized('Token belongs to another tenant')
    return member(deps, tenant, claims.subject)
  })
}

function member(deps: ConsoleAuthDeps, tenant: string, email: string): string {
  if (deps.system.member(tenant, email) === undefined)
    throw new ApiError('forbidden', `${email} is not a user of tenant ${tenant}`)
  return email
}

function unauthorized(message: string): ApiError {
  return new HttpError('unauthorized', message, {}, { 'www-authenticate': 'Bearer' })
}
