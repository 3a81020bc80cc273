/**
 * A person in the console, for tests: the magic link of the newest outbox mail, spent with its
 * page's button, a signed-in session cookie, and a console token (`POST /portal/console-token`) for the `/management` endpoints.
 */
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import type { TestServer } from './server.js'

/** A quoted-printable body as text (RFC 2045: soft line breaks, =XX bytes). */
export function unquote(text: string): string {
  return text
    .replace(/=\r?\n/g, '')
    .replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)))
}

/** The link of the newest outbox mail to `email`. */
export function outboxLink(server: TestServer, email: string): string {
  const outbox = path.join(server.dataDir, 'outbox')
  const files = readdirSync(outbox).sort()
  for (const file of files.reverse()) {
    const text = readFileSync(path.join(outbox, file), 'utf8')
    if (!text.includes(`To: ${email}`)) continue
    const match = /(http:\/\/\S+\/portal\/verify\?token=[A-Za-z0-9_-]+)/.exec(unquote(text))
    if (match !== null) return match[1]!
  }
  throw new Error(`no mail to ${email} in ${outbox}`)
}

/**
 * Spends a mailed link as its page's Sign in button does: the token posted as a form from the
 * service's own origin (opening the link spends nothing). Answers the 303 (or the refusal).
 */
export function spendLink(server: Pick<TestServer, 'url'>, link: string): Promise<Response> {
  const token = new URL(link).searchParams.get('token') ?? ''
  return fetch(`${server.url}/portal/verify`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: server.url },
    body: new URLSearchParams({ token }).toString(),
    redirect: 'manual',
  })
}

/** Signs `email` in through the outbox: the session cookie's value. */
export async function signIn(server: TestServer, email: string): Promise<string> {
  const asked = await server.request('POST', '/portal/sign-in', { body: { email } })
  if (asked.status !== 202) throw new Error(`sign-in: ${asked.status} ${asked.text}`)
  const verified = await spendLink(server, outboxLink(server, email.toLowerCase()))
  if (verified.status !== 303) throw new Error(`verify: ${verified.status}`)
  const cookie = verified.headers.get('set-cookie') ?? ''
  return /pricing_session=([^;]+)/.exec(cookie)![1]!
}

/** Headers that authenticate `email` for `/t/{slug}/management/*` by a console token. */
export async function consoleHeaders(server: TestServer, email: string, slug: string): Promise<Record<string, string>> {
  const cookie = await signIn(server, email)
  const token = await server.request('POST', '/portal/console-token', {
    headers: { cookie: `pricing_session=${cookie}`, origin: server.url },
    body: { tenant: slug },
  })
  if (token.status !== 200) throw new Error(`console token: ${token.status} ${token.text}`)
  return { authorization: `Bearer ${token.body.access_token}` }
}

const entities: Readonly<Record<string, string>> = {
  '&lt;': '<',
  '&gt;': '>',
  '&quot;': '"',
  '&#39;': "'",
  '&amp;': '&',
}

/** Text of a page's markup as a person reads it: without tags, entities decoded, spaces collapsed. */
export function plain(markup: string): string {
  return markup
    .replace(/<[^>]+>/g, ' ')
    .replace(/&(lt|gt|quot|#39|amp);/g, (entity) => entities[entity]!)
    .replace(/\s+/g, ' ')
    .trim()
}

/** The rows of the page's first data table, as plain text per cell (rows and cells may span lines). */
export function tableRows(text: string): string[][] {
  const body = /<tbody>([\s\S]*?)<\/tbody>/.exec(text)
  if (body === null) return []
  return [...body[1]!.matchAll(/<tr>([\s\S]*?)<\/tr>/g)].map(([, row]) =>
    [...row!.matchAll(/<t[hd][^>]*>([\s\S]*?)<\/t[hd]>/g)].map(([, cell]) => plain(cell!)),
  )
}
