/**
 * The pages a mailed sign-in link opens. Opening the link (a GET) spends nothing: mail scanners
 * and link previews open links, and used to use them up. The page has a "Sign in" button that
 * posts the link's token (POST /portal/verify, http/routes/portal.ts), which spends it. A link
 * that is used, expired or unknown opens a page that says so and mails a new one on request.
 * @module
 */
import { html } from './html.js'
import { page } from './layout.js'

/** The page of a good link: one button. The token is in a hidden field, never in the form's URL. */
export function signInLinkPage(token: string): string {
  return page({
    title: 'Sign in',
    person: null,
    body: html`<p>This link signs you in to the pricing service. It works once, within 15 minutes of being mailed.</p>
<form method="post" action="/portal/verify">
<input type="hidden" name="token" value="${token}">
<button type="submit">Sign in</button>
</form>`,
  })
}

/** The page of a link that no longer signs anyone in, with the form that mails a new one. */
export function spentLinkPage(message: string): string {
  return page({
    title: 'This sign-in link no longer works',
    person: null,
    body: html`<p>${message}</p>
<form method="post" action="/portal/sign-in">
<label for="email">E-mail address</label>
<input id="email" name="email" type="email" autocomplete="email" required maxlength="254">
<button type="submit">Send me a new link</button>
</form>`,
  })
}
