/**
 * The tenant console's pages and forms over HTTP (issue 9), against the real server: a signed-out
 * visitor is sent to sign in; a tenant one is not a user of does not exist (404, as an unknown one);
 * every page is HTML with the security headers and shows markup from names and e-mails as text;
 * form posts without the session's token, with another session's or from another origin are
 * refused and change nothing; each action per role as docs/api.md's table says; the last owner
 * stays; a user of tenant A changes nothing of tenant B; sessions end by time and by sign-out.
 */
import t from 'tap'
import { consoleHeaders, signIn } from '../../helpers/console.js'
import { startServer, type Answer } from '../../helpers/server.js'
import { suiteServer } from '../../helpers/suite.js'

/** Session cookies by person. */
const cookies: Record<string, string> = {}

async function session(email: string): Promise<string> {
  cookies[email] ??= `pricing_session=${await signIn(server, email)}`
  return cookies[email]!
}

function page(email: string | null, path: string): Promise<Answer> {
  return server.request('GET', path, { headers: email === null ? {} : { cookie: cookies[email]! }, redirect: 'manual' })
}

/** The form token of a page the person sees. */
async function formToken(email: string, path = '/console/alpha'): Promise<string> {
  const answer = await page(email, path)
  const match = /name="_csrf" value="([^"]+)"/.exec(answer.text)
  if (match === null) throw new Error(`no form token on ${path}: ${answer.status}`)
  return match[1]!
}

interface PostOptions {
  csrf?: string | null
  origin?: string | null
  contentType?: string
}

/** A form post as a browser sends it: the cookie, same-origin Origin and the form token, unless told otherwise. */
async function post(
  email: string,
  path: string,
  fields: Record<string, string> = {},
  options: PostOptions = {},
): Promise<Answer> {
  const csrf = options.csrf === undefined ? await formToken(email) : options.csrf
  const body = new URLSearchParams({ ...fields, ...(csrf === null ? {} : { _csrf: csrf }) }).toString()
  const headers: Record<string, string> = {
    cookie: cookies[email]!,
    'content-type': options.contentType ?? 'application/x-www-form-urlencoded',
  }
  const origin = options.origin === undefined ? server.url : options.origin
  if (origin !== null) headers['origin'] = origin
  return server.request('POST', path, { raw: body, headers, redirect: 'manual' })
}

/** The message a 303 back to a page carries. */
function message(answer: Answer): { page: string; notice: string | null; error: string | null } {
  const location = new URL(answer.headers.get('location') ?? '', server.url)
  return {
    page: location.pathname,
    notice: location.searchParams.get('notice'),
    error: location.searchParams.get('error'),
  }
}

const keysOf = async (tenant: string) =>
  (await server.admin('GET', `/admin/tenants/${tenant}/keys`)).body as {
    client_id: string
    name: string
    revoked_at: string | null
  }[]

const { server } = await suiteServer({ env: { PRICING_BACKUP_INTERVAL_S: '0' } })

t.before(async () => {
  await server.admin('POST', '/admin/tenants', {
    slug: 'alpha',
    tier: 'standard',
    region: 'local',
    owner_email: 'owner@alpha.example',
  })
  await server.admin('POST', '/admin/tenants', {
    slug: 'beta',
    tier: 'standard',
    region: 'local',
    owner_email: 'owner@beta.example',
  })
  const owner = await consoleHeaders(server, 'owner@alpha.example', 'alpha')
  for (const role of ['admin', 'editor', 'viewer']) {
    const invited = await server.request('POST', '/t/alpha/management/users', {
      headers: owner,
      body: { email: `${role}@alpha.example`, role },
    })
    if (invited.status !== 201) throw new Error(`invite ${role}: ${invited.status}`)
  }
  for (const email of [
    'owner@alpha.example',
    'admin@alpha.example',
    'editor@alpha.example',
    'viewer@alpha.example',
    'owner@beta.example',
  ])
    await session(email)
})

t.test('signed out, a console page sends you to sign in; another tenant does not exist for you', async (t) => {
  const signedOut = await page(null, '/console/alpha/keys')
  t.equal(signedOut.status, 303)
  t.same(message(signedOut), { page: '/portal', notice: null, error: 'sign-in-first' })
  const foreign = await page('owner@beta.example', '/console/alpha')
  const unknown = await page('owner@beta.example', '/console/gamma')
  t.equal(foreign.status, 404, 'a tenant you are not a user of: 404')
  t.equal(unknown.status, 404, 'as a tenant that does not exist')
  t.equal(foreign.text.replace('alpha', 'gamma'), unknown.text, 'with the same page: nothing tells the two apart')
  t.match(foreign.headers.get('content-type'), /^text\/html/, 'a page, not a JSON body')
  t.equal((await page('owner@beta.example', '/console/alpha/users')).status, 404)
  t.equal((await page('owner@beta.example', '/console/Bad_Slug')).status, 404)
})

t.test('pages: HTML with the security headers; names and e-mails with markup stay text', async (t) => {
  for (const path of ['/console/alpha', '/console/alpha/users', '/console/alpha/keys', '/console/alpha/backups']) {
    const answer = await page('owner@alpha.example', path)
    t.equal(answer.status, 200, path)
    t.match(answer.headers.get('content-type'), /^text\/html; charset=utf-8/)
    t.match(
      answer.headers.get('content-security-policy'),
      /default-src 'self'.*script-src 'self'.*frame-ancestors 'none'/,
    )
    t.equal(answer.headers.get('x-frame-options'), 'DENY')
    t.equal(answer.headers.get('x-content-type-options'), 'nosniff')
    t.equal(answer.headers.get('referrer-policy'), 'same-origin')
    t.equal(answer.headers.get('cache-control'), 'no-store')
    t.notMatch(answer.text, /<script>|\sstyle="|\son[a-z]+="/, `${path}: no inline script, style or handler`)
    t.match(answer.text, /<script src="\/assets\/console.js" defer><\/script>/)
  }
  const invited = await post('owner@alpha.example', '/console/alpha/users', {
    email: '<script>alert(1)</script>@evil.example',
    role: 'viewer',
  })
  t.equal(invited.status, 303)
  t.match(message(invited).notice, /^Invited <script>alert\(1\)<\/script>@evil.example as viewer/)
  const location = invited.headers.get('location')!
  const users = await page('owner@alpha.example', location.slice(location.indexOf('/console')))
  t.match(users.text, /&lt;script&gt;alert\(1\)&lt;\/script&gt;@evil\.example/, 'the e-mail is escaped')
  t.notMatch(users.text, /<script>alert/, 'and never markup')
  t.match(
    users.text,
    /role="status">Invited &lt;script&gt;alert\(1\)&lt;\/script&gt;@evil.example as viewer/,
    'the message is escaped too',
  )
  const posted = await post('owner@alpha.example', '/console/alpha/keys', { name: '<img src=x onerror=alert(1)>' })
  t.equal(posted.status, 303, 'a new key: POST-redirect-GET (test/http/pages/console-new-key.test.ts)')
  const created = await page('owner@alpha.example', posted.headers.get('location')!)
  t.match(created.text, /Your new key "&lt;img src=x onerror=alert\(1\)&gt;"/)
  t.notMatch(created.text, /<img/)
  const secret = /id="new-client-secret" type="text" readonly value="([0-9a-f]{64})"/.exec(created.text)
  t.ok(secret, 'the 64-hex secret is on the page')
  const clientId = /id="new-client-id" type="text" readonly value="([0-9a-f]{24})"/.exec(created.text)![1]!
  t.match(
    created.text,
    new RegExp(
      `curl -s -X POST ${server.url}/oauth2/token -d grant_type=client_credentials -d client_id=${clientId} -d client_secret=${secret![1]}`,
    ),
    'and the curl line',
  )
  const keys = await page('owner@alpha.example', '/console/alpha/keys')
  t.notMatch(keys.text, new RegExp(secret![1]!), 'the keys page never shows the secret again')
  t.match(keys.text, new RegExp(clientId))
})

t.test(
  "CSRF: without the form token, with another session's, or from another origin: 403 and nothing changes",
  async (t) => {
    const before = (await keysOf('alpha')).length
    const attempts: [string, PostOptions][] = [
      ['no form token', { csrf: null }],
      ['a made-up form token', { csrf: 'x'.repeat(43) }],
      ["another session's token", { csrf: await formToken('admin@alpha.example') }],
      ['no Origin header', { origin: null }],
      ['another origin', { origin: 'https://evil.example' }],
      ['a JSON body', { contentType: 'application/json' }],
    ]
    for (const [what, options] of attempts) {
      const answer = await post('owner@alpha.example', '/console/alpha/keys', { name: 'sneaky' }, options)
      t.equal(answer.status, 403, what)
      t.match(answer.headers.get('content-type'), /^text\/html/, `${what}: an error page`)
    }
    const invite = await post(
      'owner@alpha.example',
      '/console/alpha/users',
      { email: 'sneaky@evil.example', role: 'owner' },
      { csrf: null },
    )
    t.equal(invite.status, 403)
    t.equal((await keysOf('alpha')).length, before, 'no key was created')
    const users = await page('owner@alpha.example', '/console/alpha/users')
    t.notMatch(users.text, /sneaky@evil/, 'nobody was invited')
  },
)

t.test('each action per role, as the table of docs/api.md says', async (t) => {
  const backup = await post('owner@alpha.example', '/console/alpha/backups', { retain: 'true' })
  t.equal(backup.status, 303)
  const backupId = /Took the backup (alpha-\S+)\./.exec(message(backup).notice ?? '')![1]!
  // [action, path, fields, roles allowed]
  const actions: [string, string, Record<string, string>, string[]][] = [
    ['create a key', '/console/alpha/keys', { name: 'k' }, ['owner', 'admin', 'editor', 'viewer']],
    ['take a backup', '/console/alpha/backups', {}, ['owner', 'admin', 'editor']],
    [
      'invite an editor',
      '/console/alpha/users',
      { email: 'new-ROLE@alpha.example', role: 'editor' },
      ['owner', 'admin'],
    ],
    ['invite an owner', '/console/alpha/users', { email: 'boss-ROLE@alpha.example', role: 'owner' }, ['owner']],
  ]
  for (const [what, path, fields, allowed] of actions) {
    for (const role of ['owner', 'admin', 'editor', 'viewer']) {
      const filled = Object.fromEntries(
        Object.entries(fields).map(([name, value]) => [name, value.replace('ROLE', role)]),
      )
      const answer = await post(`${role}@alpha.example`, path, filled)
      const expected = allowed.includes(role) ? [201, 303] : [403]
      t.ok(expected.includes(answer.status), `${role}: ${what} -> ${answer.status}`)
      if (answer.status === 303) t.equal(message(answer).error, null, `${role}: ${what} without an error`)
      if (answer.status === 403) t.match(answer.text, /does not allow/, `${role}: the page names the refusal`)
    }
  }
  const ownerRemoved = await post('owner@alpha.example', '/console/alpha/users/boss-owner%40alpha.example/remove')
  t.equal(message(ownerRemoved).notice, 'Removed boss-owner@alpha.example.', 'an owner removes another owner')
  t.equal(
    (await page('editor@alpha.example', `/console/alpha/backups/${backupId}/restore`)).status,
    403,
    'an editor gets no restore confirmation',
  )
  t.equal(
    (await post('editor@alpha.example', `/console/alpha/backups/${backupId}/restore`)).status,
    403,
    'nor restores',
  )
  t.equal((await post('viewer@alpha.example', `/console/alpha/backups/${backupId}/restore`)).status, 403)
  t.equal(
    (await page('admin@alpha.example', `/console/alpha/backups/${backupId}/restore`)).status,
    200,
    'an admin sees the confirmation',
  )
  const restore = await post('admin@alpha.example', `/console/alpha/backups/${backupId}/restore`)
  t.equal(restore.status, 303)
  t.equal(message(restore).notice, `Restoring ${backupId}: this page shows when it is done.`)
  const owner = await consoleHeaders(server, 'owner@alpha.example', 'alpha')
  for (
    let tries = 0;
    (await server.request('GET', '/t/alpha/management/restore/status', { headers: owner })).body.status ===
    'in_progress';
    tries++
  ) {
    if (tries > 200) throw new Error('restore did not end')
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  const backups = await page('viewer@alpha.example', '/console/alpha/backups')
  t.match(
    backups.text,
    new RegExp(`data-status="completed"[^>]*>Restored ${backupId} at`),
    'the backups page shows the restore done',
  )
  t.notMatch(backups.text, /Take a backup now/, 'a viewer sees no backup form')
  t.notMatch(backups.text, /\/restore"/, 'nor restore links')
  // Role changes and removals: an admin may not touch an owner.
  t.equal(
    (await post('admin@alpha.example', '/console/alpha/users/owner%40alpha.example/role', { role: 'viewer' })).status,
    403,
    'an admin cannot demote an owner',
  )
  t.equal(
    (await post('admin@alpha.example', '/console/alpha/users/owner%40alpha.example/remove')).status,
    403,
    'nor remove one',
  )
  const changed = await post('admin@alpha.example', '/console/alpha/users/viewer%40alpha.example/role', {
    role: 'editor',
  })
  t.same(message(changed), { page: '/console/alpha/users', notice: 'viewer@alpha.example is now editor.', error: null })
  const back = await post('admin@alpha.example', '/console/alpha/users/viewer%40alpha.example/role', { role: 'viewer' })
  t.equal(message(back).notice, 'viewer@alpha.example is now viewer.')
  const bad = await post('admin@alpha.example', '/console/alpha/users/viewer%40alpha.example/role', { role: 'king' })
  t.equal(
    message(bad).error,
    'The role must be one of owner, admin, editor, viewer',
    'a role not in the table goes back with the reason',
  )
})

t.test('the last owner can be neither demoted nor removed', async (t) => {
  const demote = await post('owner@alpha.example', '/console/alpha/users/owner%40alpha.example/role', { role: 'admin' })
  t.same(message(demote), {
    page: '/console/alpha/users',
    notice: null,
    error: 'The last owner cannot be demoted: make someone else owner first',
  })
  const remove = await post('owner@alpha.example', '/console/alpha/users/owner%40alpha.example/remove')
  t.equal(message(remove).error, 'The last owner cannot be removed')
  const users = await page('owner@alpha.example', '/console/alpha/users')
  t.match(
    users.text,
    /owner@alpha\.example <span class="hint">\(you\)<\/span><\/td><td data-label="Role">[^]*?<option value="owner" selected>/,
    'still an owner',
  )
  // Removing someone goes through a confirmation page.
  const confirm = await page('owner@alpha.example', '/console/alpha/users/editor%40alpha.example/remove')
  t.equal(confirm.status, 200)
  t.match(confirm.text, /<h1>Remove editor@alpha\.example\?<\/h1>/)
  const removed = await post('owner@alpha.example', '/console/alpha/users/editor%40alpha.example/remove')
  t.equal(message(removed).notice, 'Removed editor@alpha.example.')
  t.equal(
    (await page('editor@alpha.example', '/console/alpha')).status,
    404,
    'the removed user no longer reaches the tenant',
  )
})

t.test('a user of one tenant changes nothing of another', async (t) => {
  const betaKeys = await server.admin('POST', '/admin/tenants/beta/keys', { name: 'beta-key' })
  const betaKey = betaKeys.body.client_id as string
  const before = await keysOf('beta')
  const ownCsrf = await formToken('owner@alpha.example')
  t.equal(
    (await post('owner@alpha.example', '/console/beta/keys', { name: 'intruder' }, { csrf: ownCsrf })).status,
    404,
    "another tenant's form: 404",
  )
  t.equal(
    (await post('owner@alpha.example', `/console/beta/keys/${betaKey}/revoke`, {}, { csrf: ownCsrf })).status,
    404,
  )
  t.equal((await post('owner@alpha.example', '/console/beta/backups', {}, { csrf: ownCsrf })).status, 404)
  t.equal(
    (await page('owner@alpha.example', `/console/alpha/keys/${betaKey}/revoke`)).status,
    404,
    "another tenant's key through one's own console: 404",
  )
  const through = await post('owner@alpha.example', `/console/alpha/keys/${betaKey}/revoke`, {}, { csrf: ownCsrf })
  t.same(message(through), { page: '/console/alpha/keys', notice: null, error: `Key ${betaKey} not found` })
  t.same(await keysOf('beta'), before, "beta's keys are as they were")
  const alphaKeys = await page('owner@alpha.example', '/console/alpha/keys')
  t.notMatch(alphaKeys.text, new RegExp(betaKey), "alpha's page shows nothing of beta")
})

t.test('a suspended tenant shows its pages and changes nothing', async (t) => {
  await server.admin('PATCH', '/admin/tenants/beta', { status: 'suspended' })
  t.teardown(() => server.admin('PATCH', '/admin/tenants/beta', { status: 'active' }))
  const overview = await page('owner@beta.example', '/console/beta')
  t.match(overview.text, /<dd class="status-suspended">suspended<\/dd>/)
  const refused = await post(
    'owner@beta.example',
    '/console/beta/keys',
    { name: 'x' },
    { csrf: await formToken('owner@beta.example', '/console/beta') },
  )
  t.equal(refused.status, 403)
  t.match(refused.text, /Tenant beta is suspended: nothing can be changed/)
})

t.test('sessions end by time and by sign-out', async (t) => {
  const short = await startServer({ env: { PRICING_SESSION_LIFETIME_S: '1' } })
  t.teardown(() => short.dispose())
  await short.admin('POST', '/admin/tenants', {
    slug: 'brief',
    tier: 'standard',
    region: 'local',
    owner_email: 'me@brief.example',
  })
  const asked = await short.request('POST', '/portal/sign-in', { body: { email: 'me@brief.example' } })
  t.equal(asked.status, 202)
  const cookie = `pricing_session=${await signIn(short, 'me@brief.example')}`
  const live = await short.request('GET', '/console/brief', { headers: { cookie }, redirect: 'manual' })
  t.equal(live.status, 200)
  const csrf = /name="_csrf" value="([^"]+)"/.exec(live.text)![1]!
  await new Promise((resolve) => setTimeout(resolve, 1_100))
  const ended = await short.request('GET', '/console/brief', { headers: { cookie }, redirect: 'manual' })
  t.equal(ended.status, 303, 'after its lifetime the session no longer opens the console')
  t.equal(new URL(ended.headers.get('location')!, short.url).pathname, '/portal')
  const late = await short.request('POST', '/console/brief/keys', {
    raw: new URLSearchParams({ name: 'late', _csrf: csrf }).toString(),
    headers: { cookie, origin: short.url, 'content-type': 'application/x-www-form-urlencoded' },
    redirect: 'manual',
  })
  t.equal(late.status, 303, 'a form of an ended session is sent to sign in')
  t.same((await short.admin('GET', '/admin/tenants/brief/keys')).body, [], 'and changes nothing')

  // Sign-out: the form ends the session.
  const signOut = await post(
    'viewer@alpha.example',
    '/portal/sign-out',
    {},
    { csrf: await formToken('viewer@alpha.example') },
  )
  t.equal(signOut.status, 303)
  t.match(signOut.headers.get('set-cookie'), /^pricing_session=; .*Max-Age=0/)
  t.equal((await page('viewer@alpha.example', '/console/alpha')).status, 303, 'signed out: sent to sign in')
})
