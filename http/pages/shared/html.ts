/**
 * HTML for the portal and console pages (issue 9), built on the server: a tagged template that
 * escapes every interpolated value unless it is an `Html` fragment made by this module, so a tenant
 * name or an e-mail with `<script>` stays text. Attribute values are escaped the same way (quotes
 * included); pages put values only in quoted attributes and text.
 * @module
 */

/** Markup that is already safe (built by `html` or `trusted`). */
export class Html {
  constructor(readonly text: string) {}

  toString(): string {
    return this.text
  }
}

const replacements: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
  '`': '&#96;',
}

/** Text as HTML: `& < > " ' \`` as character references. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"'`]/g, (character) => replacements[character]!)
}

type Value = Html | string | number | boolean | null | undefined | readonly Value[]

function render(value: Value): string {
  if (value === null || value === undefined || value === false) return ''
  if (value instanceof Html) return value.text
  if (Array.isArray(value)) return value.map(render).join('')
  return escapeHtml(String(value))
}

/** `html\`<p>${name}</p>\``: the values escaped, arrays joined, null/undefined/false left out. */
export function html(strings: TemplateStringsArray, ...values: Value[]): Html {
  let text = strings[0]!
  for (let index = 0; index < values.length; index++) text += render(values[index]!) + strings[index + 1]!
  return new Html(text)
}

/** Markup from a constant of this code base (never from input). */
export function trusted(text: string): Html {
  return new Html(text)
}
