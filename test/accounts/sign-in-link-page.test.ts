/**
 * A mailed sign-in link opens a page; only its Sign in button (a same-origin form post) spends it,
 * so a mail scanner that opens links uses nothing up. A used, expired or unknown link opens a page
 * that mails a new one. Errors and unknown pages outside the tenant API are pages when a browser
 * asks for HTML, and the JSON error body otherwise. Against the real server.
 */
import t from 'tap'
import { outboxLink, spendLink } from '../helpers/console.js'
import { suiteServer } from '../helpers/suite.js'

const browser = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' }

const { server } = await suiteServer()

async function linkFor(email: string): Promise<string> {
  t.equal((await server.request('POST', '/portal/sign-in', { body: { email } })).status, 202)
  return outboxLink(server, email)
}

t.test('opening a link (as a mail scanner does) spends nothing: its page has a Sign in button', async (t) => {
  const link = await linkFor('scanned@example.com')
  for (let opened = 0; opened < 3; opened++) {
    const page = await fetch(link, { redirect: 'manual', headers: browser })
    t.equal(page.status, 200, `opened ${opened + 1}: the page`)
    t.equal(page.headers.get('set-cookie'), null, 'no session from opening it')
    const text = await page.text()
    t.match(text, /<form method="post" action="\/portal\/verify">/, 'a form that posts')
    t.match(text, /<button type="submit">Sign in<\/button>/, 'its Sign in button')
    t.match(text, new RegExp(`name="token" value="${new URL(link).searchParams.get('token')}"`), 'carrying the token')
    t.equal(
      page.headers.get('content-security-policy')?.includes("form-action 'self'"),
      true,
      "with the pages' headers",
    )
  }
  const plain = await fetch(link, { redirect: 'manual' })
  t.equal(plain.status, 200, 'without Accept the link still opens its page, and spends nothing')
  const signedIn = await spendLink(server, link)
  t.equal(signedIn.status, 303, 'the button signs in')
  t.match(signedIn.headers.get('set-cookie') ?? '', /^pricing_session=/)
})

t.test('the button is refused from another origin (login CSRF), and the link stays good', async (t) => {
  const link = await linkFor('csrf@example.com')
  const token = new URL(link).searchParams.get('token')!
  const post = (origin: string | null) =>
    fetch(`${server.url}/portal/verify`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...(origin === null ? {} : { origin }) },
      body: new URLSearchParams({ token }).toString(),
      redirect: 'manual',
    })
  t.equal((await post('https://evil.example')).status, 403, 'another origin: 403')
  t.equal((await post(null)).status, 403, 'no Origin: 403')
  t.equal((await spendLink(server, link)).status, 303, 'the link still signs in from its own page')
})

t.test('a used, expired or unknown link opens a page that sends a new link', async (t) => {
  const link = await linkFor('used@example.com')
  t.equal((await spendLink(server, link)).status, 303)
  for (const [what, url] of [
    ['used', link],
    ['unknown', `${server.url}/portal/verify?token=${'B'.repeat(43)}`],
  ] as const) {
    const page = await fetch(url, { redirect: 'manual', headers: browser })
    t.equal(page.status, 401, `${what}: 401`)
    t.match(page.headers.get('content-type') ?? '', /^text\/html/, `${what}: a page, not JSON`)
    const text = await page.text()
    t.match(text, /<form method="post" action="\/portal\/sign-in">/, `${what}: the form for a new link`)
    t.match(text, /Send me a new link/)
  }
  const used = await fetch(`${server.url}/portal/verify`, {
    method: 'POST',
    headers: { ...browser, 'content-type': 'application/x-www-form-urlencoded', origin: server.url },
    body: new URLSearchParams({ token: new URL(link).searchParams.get('token')! }).toString(),
    redirect: 'manual',
  })
  t.equal(used.status, 401, 'the button of a used link: 401')
  t.match(await used.text(), /Send me a new link/, 'as the same page')
  const json = await server.request('GET', `/portal/verify?token=${'B'.repeat(43)}`)
  t.equal(json.status, 401, 'an API client gets 401')
  t.equal(json.body.code, 'unauthorized', 'with the JSON error body')
  const posted = await server.request('POST', '/portal/verify', { body: { token: 'C'.repeat(43) } })
  t.same([posted.status, posted.body.code], [401, 'unauthorized'], 'and the JSON form of the button too')
})

t.test('errors and unknown pages are HTML for a browser, JSON otherwise', async (t) => {
  const unknown = await fetch(`${server.url}/no-such-page`, { headers: browser })
  t.equal(unknown.status, 404)
  t.match(unknown.headers.get('content-type') ?? '', /^text\/html/)
  t.match(await unknown.text(), /There is no page at this address/)
  const unknownJson = await server.request('GET', '/no-such-page')
  t.same([unknownJson.status, unknownJson.body.code], [404, 'route_not_found'], 'JSON without Accept: text/html')
  const wrongMethod = await fetch(`${server.url}/portal`, { method: 'DELETE', headers: browser })
  t.equal(wrongMethod.status, 405)
  t.match(wrongMethod.headers.get('content-type') ?? '', /^text\/html/)
  t.ok(wrongMethod.headers.get('allow'), 'the Allow header is kept')
  const signedOut = await fetch(`${server.url}/portal/tenant-requests`, { headers: browser })
  t.equal(signedOut.status, 401)
  t.match(await signedOut.text(), /<h1>Please sign in/)
  const api = await fetch(`${server.url}/t/nobody/article/x`, { headers: browser })
  t.match(
    api.headers.get('content-type') ?? '',
    /^application\/json/,
    'the tenant API answers JSON whatever Accept says',
  )
})

t.test("ten presses of one link's button at the same moment give exactly one session", async (t) => {
  const link = await linkFor('race@example.com')
  const answers = await Promise.all(Array.from({ length: 10 }, () => spendLink(server, link)))
  const statuses = answers.map((answer) => answer.status)
  t.equal(statuses.filter((status) => status === 303).length, 1, 'one 303 with a session')
  t.equal(statuses.filter((status) => status === 401).length, 9, 'nine refused')
  t.equal(
    answers.filter((answer) => (answer.headers.get('set-cookie') ?? '').startsWith('pricing_session=')).length,
    1,
    'one cookie set',
  )
})
