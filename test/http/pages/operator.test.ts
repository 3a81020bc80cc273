/**
 * The operators' page over HTTP (issue 9): only people whose address is in PRICING_OPERATOR_EMAILS
 * see `/operator` (anyone else: 404, signed out: to sign in); it lists the requests waiting, and its
 * forms approve (the requester owns the tenant and gets a mail with its base URL) and reject (the
 * reason reaches the requester's portal); a form without the session's token changes nothing.
 */
import t from 'tap'
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { signIn, unquote } from '../../helpers/console.js'
import { startServer, type Answer, type TestServer } from '../../helpers/server.js'

let server: TestServer
let operator = ''
let asker = ''

t.before(async () => {
  server = await startServer({ env: { PRICING_OPERATOR_EMAILS: ' Ops@Example.com , second@example.com' } })
  operator = `pricing_session=${await signIn(server, 'ops@example.com')}`
  asker = `pricing_session=${await signIn(server, 'asker@example.com')}`
  for (const slug of ['good-shop', 'bad-shop', 'late-shop']) {
    const asked = await server.request('POST', '/portal/tenant-requests', {
      headers: { cookie: asker, origin: server.url },
      body: { slug, tier: 'standard', region: 'local' },
    })
    if (asked.status !== 201) throw new Error(`request ${slug}: ${asked.status}`)
  }
})
t.teardown(() => server.dispose())

const get = (cookie: string | null, urlPath: string): Promise<Answer> =>
  server.request('GET', urlPath, { headers: cookie === null ? {} : { cookie }, redirect: 'manual' })

async function decide(
  action: 'approve' | 'reject',
  id: string,
  fields: Record<string, string>,
  withToken = true,
): Promise<Answer> {
  const page = await get(operator, '/operator')
  const csrf = /name="_csrf" value="([^"]+)"/.exec(page.text)![1]!
  const body = new URLSearchParams({ ...fields, ...(withToken ? { _csrf: csrf } : {}) }).toString()
  return server.request('POST', `/operator/tenant-requests/${id}/${action}`, {
    raw: body,
    headers: { cookie: operator, origin: server.url, 'content-type': 'application/x-www-form-urlencoded' },
    redirect: 'manual',
  })
}

const requestId = async (slug: string): Promise<string> =>
  ((await server.admin('GET', '/admin/tenant-requests')).body as { id: string; slug: string }[]).find(
    (request) => request.slug === slug,
  )!.id

t.test('only operators see the page', async (t) => {
  const signedOut = await get(null, '/operator')
  t.equal(signedOut.status, 303)
  t.equal(new URL(signedOut.headers.get('location')!, server.url).pathname, '/portal')
  t.equal((await get(asker, '/operator')).status, 404, 'a person who is not an operator: no such page')
  const page = await get(operator, '/operator')
  t.equal(page.status, 200, 'the address matches whatever its case and spaces in the setting')
  t.match(page.headers.get('content-security-policy'), /frame-ancestors 'none'/)
  for (const slug of ['good-shop', 'bad-shop', 'late-shop'])
    t.match(
      page.text,
      new RegExp(
        `<td data-label="Slug">${slug}</td><td data-label="Tier">standard</td><td data-label="Region">local</td><td data-label="Requested by">asker@example.com</td>`,
      ),
      `${slug} waits`,
    )
  t.match(
    (await get(operator, '/portal')).text,
    /<a href="\/operator">Operator: tenant requests to decide<\/a>/,
    "the portal links an operator's page",
  )
  t.notMatch((await get(asker, '/portal')).text, /href="\/operator"/, "and nobody else's")
})

t.test('approve and reject by form; a form without the token changes nothing', async (t) => {
  const refused = await decide('approve', await requestId('late-shop'), {}, false)
  t.equal(refused.status, 403)
  t.equal((await server.admin('GET', '/admin/tenants/late-shop')).status, 404, 'no tenant was made')
  const notAnOperator = await server.request(
    'POST',
    `/operator/tenant-requests/${await requestId('late-shop')}/approve`,
    {
      raw: '',
      headers: { cookie: asker, origin: server.url, 'content-type': 'application/x-www-form-urlencoded' },
      redirect: 'manual',
    },
  )
  t.equal(notAnOperator.status, 404)

  const approved = await decide('approve', await requestId('good-shop'), {})
  t.equal(approved.status, 303)
  t.equal(
    new URL(approved.headers.get('location')!, server.url).searchParams.get('notice'),
    'Approved good-shop: asker@example.com is its owner and has a mail.',
  )
  const tenant = await server.admin('GET', '/admin/tenants/good-shop')
  t.match(tenant.body, { slug: 'good-shop', status: 'active', owner_email: 'asker@example.com' })
  const outbox = path.join(server.dataDir, 'outbox')
  const mails = readdirSync(outbox).map((file) => unquote(readFileSync(path.join(outbox, file), 'utf8')))
  t.ok(
    mails.some((mail) => mail.includes('To: asker@example.com') && mail.includes(`${server.url}/t/good-shop`)),
    'the requester has a mail with the base URL',
  )

  const rejected = await decide('reject', await requestId('bad-shop'), { reason: 'Not <b>today</b>' })
  t.equal(new URL(rejected.headers.get('location')!, server.url).searchParams.get('notice'), 'Rejected bad-shop.')
  const twice = await decide('reject', await requestId('bad-shop'), {})
  t.match(
    new URL(twice.headers.get('location')!, server.url).searchParams.get('error'),
    /bad-shop/,
    'a decided request goes back with the reason',
  )
  const portal = await get(asker, '/portal')
  t.match(portal.text, /rejected: Not &lt;b&gt;today&lt;\/b&gt;/, 'the requester sees the reason, escaped')
  t.match(
    portal.text,
    /<a href="\/console\/good-shop">good-shop<\/a><\/td><td data-label="Tier">standard<\/td><td data-label="Region">local<\/td><td data-label="Status" class="status-active">active<\/td><td data-label="Your role">owner<\/td>/,
    'and their new tenant',
  )
  const page = await get(operator, '/operator')
  t.match(
    page.text,
    /<td data-label="Slug">bad-shop<\/td><td data-label="Requested by">asker@example.com<\/td><td data-label="Status" class="status-rejected">rejected: Not &lt;b&gt;today&lt;\/b&gt;<\/td>/,
    'the decided list',
  )
})
