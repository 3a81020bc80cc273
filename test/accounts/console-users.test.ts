/**
 * A tenant's users and API keys through the console endpoints (issue 9), against the real server:
 * invitations by magic link (the invited person signs in with their own link), the role table of
 * docs/api.md per action (a viewer may manage keys but neither back up nor restore nor invite; an
 * editor backs up but does not restore; an admin manages users but not owners), the last owner kept,
 * a removed user locked out, and keys: created with the secret once, a token fetched with it and a
 * price written, last-used time, revoked (no new token). A user of one tenant reaches nothing of
 * another.
 */
import t from 'tap'
import { consoleHeaders, outboxLink, signIn, spendLink } from '../helpers/console.js'
import { suiteServer } from '../helpers/suite.js'

const as: Record<string, Record<string, string>> = {}

const { server } = await suiteServer()

t.before(async () => {
  await server.admin('POST', '/admin/tenants', {
    slug: 'team',
    tier: 'standard',
    region: 'local',
    owner_email: 'owner@team.example',
  })
  await server.admin('POST', '/admin/tenants', {
    slug: 'rival',
    tier: 'standard',
    region: 'local',
    owner_email: 'boss@rival.example',
  })
  as['owner'] = await consoleHeaders(server, 'owner@team.example', 'team')
})

const call = (who: string, method: string, path: string, body?: unknown) =>
  server.request(method, `/t/team/management${path}`, { headers: as[who], body })

t.test('invitations: a magic link per person, who signs in with it', async (t) => {
  for (const role of ['admin', 'editor', 'viewer']) {
    const invited = await call('owner', 'POST', '/users', { email: `${role}@team.example`, role })
    t.equal(invited.status, 201, `${role} invited`)
    t.same([invited.body.email, invited.body.role], [`${role}@team.example`, role])
  }
  const link = outboxLink(server, 'editor@team.example')
  const verified = await spendLink(server, link)
  t.equal(verified.status, 303, "the invited person's own link signs them in")
  for (const role of ['admin', 'editor', 'viewer'])
    as[role] = await consoleHeaders(server, `${role}@team.example`, 'team')
  t.equal(
    (await call('owner', 'POST', '/users', { email: 'Editor@Team.example', role: 'viewer' })).status,
    409,
    'a user already: 409',
  )
  t.equal((await call('owner', 'POST', '/users', { email: 'nope', role: 'viewer' })).status, 400)
  t.equal((await call('owner', 'POST', '/users', { email: 'x@team.example', role: 'king' })).status, 400)
  const users = await call('viewer', 'GET', '/users')
  t.same(
    users.body.map((user: { email: string; role: string }) => `${user.email} ${user.role}`),
    [
      'owner@team.example owner',
      'admin@team.example admin',
      'editor@team.example editor',
      'viewer@team.example viewer',
    ],
    'everyone sees the users',
  )
})

t.test('the role table, action by action', async (t) => {
  const statuses = async (who: string) => ({
    invite: (await call(who, 'POST', '/users', { email: `new-by-${who}@team.example`, role: 'viewer' })).status,
    key: (await call(who, 'POST', '/keys', { name: `by ${who}` })).status,
    backup: (await call(who, 'POST', '/backups', {})).status,
    restore: (await call(who, 'POST', '/restore', { backup_id: 'team-none' })).status,
  })
  t.same(await statuses('viewer'), { invite: 403, key: 201, backup: 403, restore: 403 }, 'viewer: keys only')
  t.same(
    await statuses('editor'),
    { invite: 403, key: 201, backup: 201, restore: 403 },
    'editor: keys and backups, no restore',
  )
  t.same(
    await statuses('admin'),
    { invite: 201, key: 201, backup: 201, restore: 404 },
    'admin: users, keys, backups, restore (404: past the role check, no such backup)',
  )
  t.equal(
    (await call('admin', 'POST', '/users', { email: 'second-owner@team.example', role: 'owner' })).status,
    403,
    'an admin makes no owner',
  )
  t.equal((await call('admin', 'PUT', '/users/owner@team.example', { role: 'viewer' })).status, 403, 'nor demotes one')
  t.equal((await call('admin', 'DELETE', '/users/owner@team.example')).status, 403, 'nor removes one')
  t.equal(
    (await call('admin', 'PUT', `/users/${encodeURIComponent('new-by-admin@team.example')}`, { role: 'editor' }))
      .status,
    200,
    'an admin changes an editor',
  )
})

t.test('owners: the last one stays; a removed user is locked out', async (t) => {
  t.equal(
    (await call('owner', 'PUT', '/users/owner@team.example', { role: 'admin' })).status,
    409,
    'the last owner cannot step down',
  )
  t.equal((await call('owner', 'DELETE', '/users/owner@team.example')).status, 409, 'nor be removed')
  t.equal(
    (await call('owner', 'PUT', '/users/admin@team.example', { role: 'owner' })).status,
    200,
    'an owner makes another',
  )
  t.equal(
    (await call('owner', 'PUT', '/users/owner@team.example', { role: 'admin' })).status,
    200,
    'now the first may step down',
  )
  t.equal((await call('owner', 'GET', '/users')).status, 200, 'and stays a user, as admin')
  t.equal((await call('admin', 'DELETE', '/users/viewer@team.example')).status, 204, 'the new owner removes the viewer')
  t.equal((await call('viewer', 'GET', '/users')).status, 403, "the removed viewer's console token reaches nothing")
  const cookie = `pricing_session=${await signIn(server, 'viewer@team.example')}`
  t.equal(
    (await server.request('GET', '/t/team/management/users', { headers: { cookie } })).status,
    403,
    'nor does a fresh session',
  )
  t.equal((await call('admin', 'DELETE', '/users/nobody@team.example')).status, 404)
})

t.test('keys: the secret once, a token and a write with it, last use, revocation', async (t) => {
  const created = await call('editor', 'POST', '/keys', { name: 'erp' })
  t.equal(created.status, 201)
  t.match(created.body.client_id, /^[0-9a-f]{24}$/)
  t.match(created.body.client_secret, /^[0-9a-f]{64}$/)
  const form = new URLSearchParams({
    grant_type: 'client_credentials',
    client_id: created.body.client_id,
    client_secret: created.body.client_secret,
  })
  const token = await fetch(`${server.url}/oauth2/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: form.toString(),
  })
  t.equal(token.status, 200)
  const { access_token: accessToken } = (await token.json()) as { access_token: string }
  t.equal(
    (
      await server.request('PUT', '/t/team/currency/EUR', {
        token: accessToken,
        body: { is_active: true, vat_precision: 2 },
      })
    ).status,
    202,
    'the key writes',
  )
  const listed = await call('viewer', 'GET', '/keys')
  t.equal(listed.status, 403, '(the removed viewer cannot list keys)')
  const keys = await call('editor', 'GET', '/keys')
  const erp = keys.body.find((key: { client_id: string }) => key.client_id === created.body.client_id)
  t.equal(erp.client_secret, undefined, 'no secret in the list')
  t.ok(erp.last_used_at !== null, 'its last use is shown')
  t.equal((await call('editor', 'DELETE', `/keys/${created.body.client_id}`)).status, 204)
  const again = await fetch(`${server.url}/oauth2/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: form.toString(),
  })
  t.equal(again.status, 401, 'a revoked key gets no token')
  t.equal(
    (
      await server.request('PUT', '/t/team/currency/SEK', {
        token: accessToken,
        body: { is_active: true, vat_precision: 2 },
      })
    ).status,
    202,
    'a token issued before lives until it expires',
  )
  t.equal((await call('editor', 'DELETE', '/keys/000000000000000000000000')).status, 404)
})

t.test("a user of one tenant reaches nothing of another's", async (t) => {
  const boss = await consoleHeaders(server, 'boss@rival.example', 'rival')
  t.equal(
    (await server.request('GET', '/t/team/management/users', { headers: boss })).status,
    401,
    "another tenant's console token",
  )
  const cookie = `pricing_session=${await signIn(server, 'boss@rival.example')}`
  for (const path of ['/users', '/keys', '/backups']) {
    t.equal(
      (await server.request('GET', `/t/team/management${path}`, { headers: { cookie } })).status,
      403,
      `${path}: not a user of team`,
    )
  }
  t.equal(
    (
      await server.request('POST', '/t/team/management/keys', {
        headers: { cookie, origin: server.url },
        body: { name: 'x' },
      })
    ).status,
    403,
  )
})

t.test(
  'an e-mail address in the path is decoded once: a malformed escape answers 400, never a 500 (found by the fuzzer)',
  async (t) => {
    // Not percent-encoded UTF-8: refused by the router (400) rather than looked up as literal text.
    for (const path of ['/users/%ff', '/users/%', '/users/%E0%80%AF']) {
      t.equal((await call('owner', 'PUT', path, { role: 'viewer' })).status, 400, `PUT ${path}`)
      t.equal((await call('owner', 'DELETE', path)).status, 400, `DELETE ${path}`)
    }
    // Decoded once: 'a%40b.example', which is nobody.
    t.equal((await call('owner', 'PUT', '/users/a%2540b.example', { role: 'viewer' })).status, 404)
    t.equal((await call('owner', 'DELETE', '/users/a%2540b.example')).status, 404)
    t.equal((await call('owner', 'POST', '/users', { email: 'escaped@team.example', role: 'viewer' })).status, 201)
    t.equal(
      (await call('owner', 'PUT', `/users/${encodeURIComponent('escaped@team.example')}`, { role: 'editor' })).status,
      200,
      'an encoded address still names its user',
    )
    t.equal((await call('owner', 'DELETE', '/users/escaped%40team.example')).status, 204)
  },
)
