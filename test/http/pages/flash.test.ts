/**
 * A page's message comes only from this service, against the real server: a link such as
 * `/portal?notice=<any text>` must not show its text as an official message (a phishing aid). The
 * portal, the console and the operators' page show a known code's fixed text, or a text their own
 * redirect signed for the session that follows it; any other text, a forged signature, or another
 * session's signed message shows nothing.
 */
import t from 'tap'
import { signIn } from '../../helpers/console.js'
import { startServer, type Answer, type TestServer } from '../../helpers/server.js'

let server: TestServer
const owner = 'owner@flash.example'
const operatorEmail = 'ops@flash.example'
const cookies: Record<string, string> = {}
const phish = 'Your account is locked: call +1 555 0100 and give the code from your mail'

function get(cookie: string | null, path: string): Promise<Answer> {
  return server.request('GET', path, { headers: cookie === null ? {} : { cookie }, redirect: 'manual' })
}

/** The page's message paragraph, or null when it shows none. */
function shownMessage(answer: Answer): string | null {
  const match = /<p class="flash[^"]*" role="(?:status|alert)">([^<]*)<\/p>/.exec(answer.text)
  return match === null ? null : match[1]!
}

const phishQueries = [
  `notice=${encodeURIComponent(phish)}`,
  `error=${encodeURIComponent(phish)}`,
  `notice=${encodeURIComponent(phish)}&sig=${'A'.repeat(43)}`,
  `notice=toString`,
  `notice=__proto__`,
]

t.before(async () => {
  server = await startServer({ env: { PRICING_OPERATOR_EMAILS: operatorEmail, PRICING_BACKUP_INTERVAL_S: '0' } })
  await server.admin('POST', '/admin/tenants', { slug: 'flash', tier: 'standard', region: 'local', owner_email: owner })
  for (const email of [owner, operatorEmail, 'other@flash.example'])
    cookies[email] = `pricing_session=${await signIn(server, email)}`
})
t.teardown(async () => server.dispose())

t.test('a made-up message in a link is shown nowhere, signed in or out', async (t) => {
  const pages: [string | null, string][] = [
    [null, '/portal'],
    [cookies[owner]!, '/portal'],
    [cookies[owner]!, '/console/flash'],
    [cookies[owner]!, '/console/flash/users'],
    [cookies[owner]!, '/console/flash/keys'],
    [cookies[owner]!, '/console/flash/backups'],
    [cookies[operatorEmail]!, '/operator'],
  ]
  for (const [cookie, path] of pages) {
    const plain = await get(cookie, path)
    t.equal(plain.status, 200, `${path} answers`)
    for (const query of phishQueries) {
      const answer = await get(cookie, `${path}?${query}`)
      t.equal(answer.status, 200)
      t.equal(
        shownMessage(answer),
        null,
        `${cookie === null ? 'signed out' : 'signed in'}: ${path}?${query.slice(0, 30)} shows no message`,
      )
      t.notMatch(answer.text, /call \+1 555/, 'nor its text anywhere')
    }
  }
})

t.test("known codes show their fixed text; a form's own message shows for its session only", async (t) => {
  t.equal(shownMessage(await get(null, '/portal?notice=signed-out')), 'You are signed out.')
  t.equal(shownMessage(await get(null, '/portal?error=not-an-email')), 'That is not an e-mail address.')
  const signedOut = await get(null, '/console/flash')
  t.equal(signedOut.status, 303)
  t.equal(
    shownMessage(await get(null, signedOut.headers.get('location')!)),
    'Sign in to see this page.',
    "the console's redirect to sign in says why",
  )

  const page = await get(cookies[owner]!, '/console/flash/keys')
  const csrf = /name="_csrf" value="([^"]+)"/.exec(page.text)![1]!
  const key = await server.admin('POST', '/admin/tenants/flash/keys', { name: '<b>erp</b>' })
  const revoked = await server.request('POST', `/console/flash/keys/${key.body.client_id as string}/revoke`, {
    raw: new URLSearchParams({ _csrf: csrf }).toString(),
    headers: { cookie: cookies[owner]!, origin: server.url, 'content-type': 'application/x-www-form-urlencoded' },
    redirect: 'manual',
  })
  t.equal(revoked.status, 303)
  const location = revoked.headers.get('location')!
  t.equal(
    shownMessage(await get(cookies[owner]!, location)),
    'Revoked the key &quot;&lt;b&gt;erp&lt;/b&gt;&quot;: it gets no new tokens.',
    'shown to its session, escaped',
  )
  t.equal(
    shownMessage(await get(cookies['other@flash.example']!, location.replace('/console/flash/keys', '/portal'))),
    null,
    "another person's session does not show it",
  )
  t.equal(
    shownMessage(await get(null, location.replace('/console/flash/keys', '/portal'))),
    null,
    'nor does a signed-out visit',
  )
  const changed = new URL(location, server.url)
  changed.searchParams.set('notice', phish)
  t.equal(
    shownMessage(await get(cookies[owner]!, `${changed.pathname}${changed.search}`)),
    null,
    'another text under the same signature: nothing',
  )
})
