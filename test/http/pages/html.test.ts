/**
 * The page-building blocks of the portal and console (http/pages/shared/): the HTML template escapes what
 * it is given (a name or e-mail with markup stays text, in text and in quoted attributes), the
 * page headers carry a CSP without inline script, and form tokens belong to one session.
 */
import t from 'tap'
import { csrfToken, csrfValid } from '../../../http/pages/shared/csrf.js'
import { escapeHtml, html, trusted } from '../../../http/pages/shared/html.js'
import { contentSecurityPolicy, pageHeaders } from '../../../http/pages/shared/security-headers.js'

t.test('the template escapes interpolated values, not its own markup', async (t) => {
  const name = `<script>alert("x")</script> & 'co'`
  const page = html`<p title="${name}">${name}</p>`.text
  t.equal(
    page,
    '<p title="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;co&#39;">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;co&#39;</p>',
  )
  t.notMatch(page, /<script>/, 'no markup gets through')
  t.equal(
    html`<ul>${['a<b', 'c'].map((item) => html`<li>${item}</li>`)}</ul>`.text,
    '<ul><li>a&lt;b</li><li>c</li></ul>',
    'nested fragments stay markup, their values escaped',
  )
  t.equal(html`${null}${undefined}${false}${0}`.text, '0', 'absent values leave nothing; zero stays')
  t.equal(html`${trusted('<br>')}`.text, '<br>', 'trusted constants pass')
  t.equal(escapeHtml('`x`'), '&#96;x&#96;')
})

t.test('page headers: a CSP without inline script, no framing, no sniffing', async (t) => {
  t.match(contentSecurityPolicy, /script-src 'self'(;|$)/)
  t.notMatch(contentSecurityPolicy, /unsafe-inline|unsafe-eval/)
  t.match(contentSecurityPolicy, /frame-ancestors 'none'/)
  t.equal(pageHeaders['x-content-type-options'], 'nosniff')
  t.equal(pageHeaders['referrer-policy'], 'same-origin')
  t.equal(pageHeaders['content-type'], 'text/html; charset=utf-8')
})

t.test('form tokens belong to one session', async (t) => {
  const token = csrfToken('session-a')
  t.match(token, /^[A-Za-z0-9_-]{43}$/)
  t.ok(csrfValid('session-a', token))
  t.notOk(csrfValid('session-b', token), "another session's token is refused")
  t.notOk(csrfValid('session-a', undefined), 'none is refused')
  t.notOk(csrfValid('session-a', `${token}x`), 'a longer one is refused')
  t.notOk(csrfValid('', csrfToken('')), 'no session, no token')
})
