/**
 * People's sign-in (API.md §4; accounts/people/sign-in.ts): ask for a magic link, spend it for a
 * session cookie, sign out, and exchange the session for a console bearer token of one tenant.
 * @module
 */
import { parseJsonBody } from '../request-body.js'
import { Type } from '@sinclair/typebox'
import { tokenLifetimeS } from '../../accounts/auth.js'
import { ApiError, validationError } from '../../platform/errors.js'
import type { Reply, RootContext, RootRoute } from '../contracts.js'
import { cookieSession, sameOrigin } from '../console-auth.js'
import { normalEmail, sessionClearCookie, sessionSetCookie } from '../../accounts/people/sign-in.js'
import { validate } from '../validate.js'
import { requireFormToken } from '../pages/shared/csrf.js'
import { wantsHtml } from '../pages/shared/error-page.js'
import { backTo, formFields } from '../pages/shared/form.js'
import { pageHeaders } from '../pages/shared/security-headers.js'
import { signInLinkPage, spentLinkPage } from '../pages/shared/sign-in-link-page.js'

const SignInBody = Type.Object(
  { email: Type.String({ minLength: 3, maxLength: 254 }) },
  { additionalProperties: false },
)
const SignInAnswer = Type.Object({ status: Type.Literal('sent') })
const ConsoleTokenBody = Type.Object(
  { tenant: Type.String({ minLength: 1, maxLength: 63 }) },
  { additionalProperties: false },
)
const ConsoleTokenAnswer = Type.Object({
  access_token: Type.String(),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer(),
})

const VerifyBody = Type.Object(
  { token: Type.String({ minLength: 1, maxLength: 128 }) },
  { additionalProperties: false },
)
const spentLinkMessage = 'This sign-in link is unknown, used or expired: ask for a new one'

/** A link's token is 43 base64url characters; anything far from that is not looked up. */
function wellFormed(token: string): boolean {
  return token.length > 0 && token.length <= 128
}

/** A link that signs nobody in: 401, as a page with the form for a new link when a browser asks. */
function spentLink(context: RootContext): Reply {
  if (!wantsHtml(context.incoming)) throw new ApiError('unauthorized', spentLinkMessage)
  return { status: 401, headers: pageHeaders, body: spentLinkPage(spentLinkMessage) }
}

/** Where a fresh session lands (the console's pages come with the console issue). */
const afterSignIn = '/console'

function secure(context: RootContext): boolean {
  return context.deps.publicUrl.startsWith('https://')
}

/** The session's person, for the cookie-authenticated portal calls (all writes: a same-origin Origin). */
function signedIn(context: RootContext): { email: string; secret: string } {
  return cookieSession(context.deps, context.incoming, context.nowMs)
}

/** Mails a sign-in link unless a limit holds it back (logged without the address); the answer is the same. */
async function mailLink(context: RootContext, email: string): Promise<void> {
  const sent = await context.deps.signIn.requestFromPortal(email, context.incoming.remoteAddress ?? '', context.nowMs)
  if (!sent)
    context.deps.logger.info(
      { request_id: context.incoming.requestId },
      'sign-in mail held back: too many asked for this address or from this client',
    )
}

export function portalRoutes(): RootRoute[] {
  return [
    {
      method: 'POST',
      path: '/portal/sign-in',
      operationId: 'requestSignInLink',
      summary: 'Mail a single-use sign-in link (valid 15 minutes); the answer is the same for every address',
      tag: 'portal',
      body: SignInBody,
      response: SignInAnswer,
      responseStatus: 202,
      handler: async (context) => {
        const form = formFields(context.incoming)
        if (form !== null) {
          // The portal page's form: back to the page with a message.
          const address = normalEmail(form.get('email') ?? '')
          if (address === null) return backTo('/portal', { error: 'not-an-email' })
          await mailLink(context, address)
          return backTo('/portal', { notice: 'sign-in-link-sent' })
        }
        const body = validate<typeof SignInBody.static>(SignInBody, parseJsonBody(context.incoming) ?? {})
        const email = normalEmail(body.email)
        if (email === null)
          throw validationError(
            [{ path: '/email', message: 'must be an e-mail address' }],
            'email must be an e-mail address',
          )
        await mailLink(context, email)
        return { status: 202, headers: { 'cache-control': 'no-store' }, body: { status: 'sent' } }
      },
    },
    {
      method: 'GET',
      path: '/portal/verify',
      operationId: 'signInLinkPage',
      summary: "A mailed link's page: a Sign in button that posts the link (opening it spends nothing)",
      tag: 'portal',
      page: true,
      response: Type.String({ description: 'an HTML page' }),
      responseType: 'text/html',
      errors: [401],
      handler: (context) => {
        const token = context.query.get('token') ?? ''
        if (!wellFormed(token) || !context.deps.signIn.usable(token, context.nowMs)) return spentLink(context)
        return { status: 200, headers: pageHeaders, body: signInLinkPage(token) }
      },
    },
    {
      method: 'POST',
      path: '/portal/verify',
      operationId: 'verifySignInLink',
      summary: 'Spend a sign-in link: a session cookie (HttpOnly, SameSite=Lax) and a redirect to the console',
      tag: 'portal',
      body: VerifyBody,
      responseStatus: 303,
      errors: [401, 403],
      handler: async (context) => {
        const form = formFields(context.incoming)
        // Login CSRF: a page elsewhere must not sign a browser in as the holder of its own link.
        // The JSON form needs no check: a cross-site page cannot send a JSON body without CORS.
        if (form !== null && !sameOrigin(context.incoming, context.deps.publicUrl)) {
          throw new ApiError(
            'forbidden',
            "Cross-site sign-in refused: use the Sign in button of this service's own page",
          )
        }
        const token =
          form !== null
            ? (form.get('token') ?? '')
            : validate<typeof VerifyBody.static>(VerifyBody, parseJsonBody(context.incoming) ?? {}).token
        const verified = wellFormed(token) ? await context.deps.signIn.verify(token, context.nowMs) : null
        if (verified === null) return spentLink(context)
        return {
          status: 303,
          headers: {
            location: verified.next ?? afterSignIn,
            'set-cookie': sessionSetCookie(verified.session, secure(context), context.deps.signIn.sessionLifetimeMs),
            'cache-control': 'no-store',
          },
        }
      },
    },
    {
      method: 'POST',
      path: '/portal/sign-out',
      operationId: 'signOut',
      summary: 'End the session of the cookie',
      tag: 'portal',
      // Signing out must always work (it removes one small record): served while storage is nearly full.
      whenStorageNearlyFull: 'serve',
      responseStatus: 204,
      errors: [401, 403],
      handler: async (context) => {
        const { secret } = signedIn(context)
        const form = formFields(context.incoming)
        if (form !== null) requireFormToken(secret, form)
        await context.deps.signIn.signOut(secret)
        const clear = { 'set-cookie': sessionClearCookie(secure(context)) }
        if (form !== null) return backTo('/portal', { notice: 'signed-out' }, clear)
        return { status: 204, headers: { ...clear, 'cache-control': 'no-store' } }
      },
    },
    {
      method: 'POST',
      path: '/portal/console-token',
      operationId: 'issueConsoleToken',
      summary: "A console bearer token (15 minutes) for one of the signed-in person's tenants",
      tag: 'portal',
      // Stores nothing (a signed token), and the console's reads need it: served while storage is nearly full.
      whenStorageNearlyFull: 'serve',
      errors: [401, 403],
      body: ConsoleTokenBody,
      response: ConsoleTokenAnswer,
      handler: async (context) => {
        const { email } = signedIn(context)
        const body = validate<typeof ConsoleTokenBody.static>(ConsoleTokenBody, parseJsonBody(context.incoming) ?? {})
        if (context.deps.system.member(body.tenant, email) === undefined)
          throw new ApiError('forbidden', `${email} is not a user of tenant ${body.tenant}`)
        const accessToken = await context.deps.tokens.issue(body.tenant, email, 'console', context.nowMs)
        return {
          status: 200,
          headers: { 'cache-control': 'no-store' },
          body: { access_token: accessToken, token_type: 'Bearer', expires_in: tokenLifetimeS },
        }
      },
    },
  ]
}
