/**
 * The account portal's web page over HTTP (issue 9): the security headers of a page (CSP without
 * inline script, no framing, nosniff), the sign-in form posted as a browser does, the signed-in
 * view, a tenant request made through the form with its token (refused without it, with another
 * session's, or from another origin), what a page shows escaped (an operator's reason with markup),
 * that a made-up message in the query is not shown, the stylesheet, and the sign-out form.
 */
import t from 'tap'
import { outboxLink, spendLink } from '../../helpers/console.js'
import { suiteServer } from '../../helpers/suite.js'

const { server } = await suiteServer({ env: { PRICING_REGION: 'eu-north,us-east' } })

const formHeaders = (extra: Record<string, string> = {}) => ({
  'content-type': 'application/x-www-form-urlencoded',
  origin: server.url,
  ...extra,
})

async function page(cookie = ''): Promise<{ status: number; headers: Headers; text: string }> {
  const answer = await fetch(`${server.url}/portal`, { headers: cookie === '' ? {} : { cookie } })
  return { status: answer.status, headers: answer.headers, text: await answer.text() }
}

/** Signs in through the page's form and the mailed link: the cookie header. */
async function signInByForm(email: string): Promise<string> {
  const posted = await server.request('POST', '/portal/sign-in', {
    raw: new URLSearchParams({ email }).toString(),
    headers: formHeaders(),
    redirect: 'manual',
  })
  if (posted.status !== 303) throw new Error(`sign-in form: ${posted.status}`)
  const verified = await spendLink(server, outboxLink(server, email))
  return /pricing_session=[^;]+/.exec(verified.headers.get('set-cookie') ?? '')![0]
}

function formToken(html: string): string {
  return /name="_csrf" value="([^"]+)"/.exec(html)![1]!
}

t.test('the signed-out page: a sign-in form, with the security headers', async (t) => {
  const signedOut = await page()
  t.equal(signedOut.status, 200)
  t.equal(signedOut.headers.get('content-type'), 'text/html; charset=utf-8')
  t.match(signedOut.headers.get('content-security-policy') ?? '', /script-src 'self'/)
  t.match(signedOut.headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/)
  t.equal(signedOut.headers.get('x-content-type-options'), 'nosniff')
  t.equal(signedOut.headers.get('x-frame-options'), 'DENY')
  t.match(signedOut.text, /<form method="post" action="\/portal\/sign-in">/)
  t.match(signedOut.text, /<label for="email">/, 'the field has a label')
  t.notMatch(signedOut.text, /<script|style=|onclick/i, 'no inline script or style')
  const css = await fetch(`${server.url}/assets/app.css`)
  t.equal(css.status, 200)
  t.equal(css.headers.get('content-type'), 'text/css; charset=utf-8')
  t.match(await css.text(), /:focus-visible/, 'focus stays visible')
  t.equal((await fetch(`${server.url}/assets/nope.js`)).status, 404)
})

t.test('sign in by the form; request a tenant by the form, with its token', async (t) => {
  const bad = await server.request('POST', '/portal/sign-in', {
    raw: 'email=not-an-address',
    headers: formHeaders(),
    redirect: 'manual',
  })
  t.equal(bad.status, 303)
  t.match(bad.headers.get('location'), /^\/portal\?error=/)
  const cookie = await signInByForm('eve@example.com')
  const signedIn = await page(cookie)
  t.match(signedIn.text, /Signed in as <strong>eve@example.com<\/strong>/)
  t.match(
    signedIn.text,
    /<option value="eu-north">eu-north<\/option><option value="us-east">us-east<\/option>/,
    "the deployment's regions",
  )
  const token = formToken(signedIn.text)
  const fields = (extra: Record<string, string>) =>
    new URLSearchParams({ slug: 'eves-shop', tier: 'starter', region: 'us-east', ...extra }).toString()
  t.equal(
    (
      await server.request('POST', '/portal/tenant-requests', {
        raw: fields({}),
        headers: formHeaders({ cookie }),
        redirect: 'manual',
      })
    ).status,
    403,
    'no form token: 403',
  )
  const other = await signInByForm('mallory@example.com')
  const otherToken = formToken((await page(other)).text)
  t.equal(
    (
      await server.request('POST', '/portal/tenant-requests', {
        raw: fields({ _csrf: otherToken }),
        headers: formHeaders({ cookie }),
        redirect: 'manual',
      })
    ).status,
    403,
    "another session's token: 403",
  )
  t.equal(
    (
      await server.request('POST', '/portal/tenant-requests', {
        raw: fields({ _csrf: token }),
        headers: formHeaders({ cookie, origin: 'https://evil.example' }),
        redirect: 'manual',
      })
    ).status,
    403,
    'another origin: 403',
  )
  t.same((await server.admin('GET', '/admin/tenant-requests')).body, [], 'nothing was requested by the refused posts')
  const made = await server.request('POST', '/portal/tenant-requests', {
    raw: fields({ _csrf: token }),
    headers: formHeaders({ cookie }),
    redirect: 'manual',
  })
  t.equal(made.status, 303)
  t.match(decodeURIComponent(made.headers.get('location')!.replaceAll('+', ' ')), /waiting for approval/)
  const taken = await server.request('POST', '/portal/tenant-requests', {
    raw: fields({ _csrf: token }),
    headers: formHeaders({ cookie }),
    redirect: 'manual',
  })
  t.match(
    decodeURIComponent(taken.headers.get('location')!.replaceAll('+', ' ')),
    /error=.*taken/,
    'a refusal comes back as a message on the page',
  )
  const requests = await server.admin('GET', '/admin/tenant-requests')
  await server.admin('POST', `/admin/tenant-requests/${requests.body[0].id}/reject`, {
    reason: '<script>alert(1)</script> sorry',
  })
  const after = await page(cookie)
  t.match(after.text, /eves-shop/)
  t.match(after.text, /rejected: &lt;script&gt;alert\(1\)&lt;\/script&gt; sorry/, "the operator's reason, escaped")
  t.notMatch(after.text, /<script>alert/)
})

t.test('a made-up message in the query is not shown; the sign-out form ends the session', async (t) => {
  // A text in the query that this service did not sign is not shown at all (test/http/pages/flash.test.ts).
  const shown = await fetch(`${server.url}/portal?error=${encodeURIComponent('<img src=x onerror=alert(1)>')}`)
  const text = await shown.text()
  t.notMatch(text, /<img|&lt;img/)
  const cookie = await signInByForm('fay@example.com')
  const token = formToken((await page(cookie)).text)
  const out = await server.request('POST', '/portal/sign-out', {
    raw: `_csrf=${encodeURIComponent(token)}`,
    headers: formHeaders({ cookie }),
    redirect: 'manual',
  })
  t.equal(out.status, 303)
  t.match(out.headers.get('set-cookie'), /pricing_session=;/)
  t.match((await page(cookie)).text, /action="\/portal\/sign-in"/, 'the old cookie shows the sign-in form again')
  t.equal((await fetch(`${server.url}/console`, { redirect: 'manual' })).headers.get('location'), '/portal')
})
