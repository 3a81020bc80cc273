/**
 * The frame of every portal and console page: language, title, the stylesheet, a header with who is
 * signed in, and an optional message (a flash carried in the redirect's query after a form).
 * @module
 */
import type { Flash } from './flash.js'
import { html, type Html } from './html.js'

export interface PageInput {
  readonly title: string
  /** The signed-in person's e-mail, or null. */
  readonly person: string | null
  readonly flash?: Flash | null
  readonly body: Html
  /** The header's sign-out form (needs the session's form token). */
  readonly signOut?: Html
  /** Navigation under the header (the console's tabs). */
  readonly nav?: Html
  /** Scripts of /assets/ (progressive: every page works without them). */
  readonly scripts?: readonly string[]
}

export function page(input: PageInput): string {
  const flash =
    input.flash === undefined || input.flash === null
      ? null
      : html`<p class="flash${input.flash.error ? ' error' : ''}" role="${input.flash.error ? 'alert' : 'status'}">${input.flash.text}</p>`
  return `<!doctype html>\n${
    html`<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${input.title} · Pricing service</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/assets/app.css">
${(input.scripts ?? []).map((name) => html`<script src="/assets/${name}" defer></script>`)}
</head>
<body>
<header><a href="/portal">Pricing service</a>${input.person === null ? null : html`<span>Signed in as <strong>${input.person}</strong> ${input.signOut}</span>`}</header>
${input.nav}
<main>
<h1>${input.title}</h1>
${flash}
${input.body}
</main>
</body>
</html>`.text
  }\n`
}
