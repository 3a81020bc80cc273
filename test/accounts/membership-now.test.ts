/**
 * A console token speaks for a person, and a person's membership can end or change while the token
 * (15 minutes) still verifies: the removal or the role change must stop them at their next request,
 * on the tenant API as on the management endpoints, against the real server.
 */
import t from 'tap'
import { consoleHeaders } from '../helpers/console.js'
import { suiteServer } from '../helpers/suite.js'

const { server } = await suiteServer()

t.before(async () => {
  await server.admin('POST', '/admin/tenants', {
    slug: 'team',
    tier: 'standard',
    region: 'local',
    owner_email: 'owner@team.example',
  })
})

t.test("a removed user's console token stops at the next request on the tenant API", async (t) => {
  const owner = await consoleHeaders(server, 'owner@team.example', 'team')
  t.equal(
    (
      await server.request('POST', '/t/team/management/users', {
        headers: owner,
        body: { email: 'gone@team.example', role: 'editor' },
      })
    ).status,
    201,
  )
  const gone = await consoleHeaders(server, 'gone@team.example', 'team')
  const write = (code: string) =>
    server.request('PUT', `/t/team/currency/${code}`, { headers: gone, body: { is_active: true, vat_precision: 2 } })
  t.equal((await write('EUR')).status, 202, 'a user writes with the console token')
  t.equal((await server.request('GET', '/t/team/currency/EUR', { headers: gone })).status, 200, 'and reads')
  t.equal(
    (await server.request('DELETE', '/t/team/management/users/gone@team.example', { headers: owner })).status,
    204,
    'removed',
  )
  const read = await server.request('GET', '/t/team/currency/EUR', { headers: gone })
  t.equal(read.status, 403, 'the same token reads nothing at the next request')
  t.equal(read.body.error?.code ?? read.body.code, 'forbidden')
  t.equal((await write('SEK')).status, 403, 'nor writes')
  t.equal(
    (await server.request('GET', '/t/team/currency/SEK', { headers: owner })).status,
    404,
    'and the refused write stored nothing',
  )
  // Invited again: the same token works again, since what counts is the membership now.
  t.equal(
    (
      await server.request('POST', '/t/team/management/users', {
        headers: owner,
        body: { email: 'gone@team.example', role: 'viewer' },
      })
    ).status,
    201,
  )
  t.equal(
    (await server.request('GET', '/t/team/currency/EUR', { headers: gone })).status,
    200,
    'a user again: the token reads again',
  )
})

t.test('a role change takes effect at the next request of the same token', async (t) => {
  const owner = await consoleHeaders(server, 'owner@team.example', 'team')
  t.equal(
    (
      await server.request('POST', '/t/team/management/users', {
        headers: owner,
        body: { email: 'boss@team.example', role: 'admin' },
      })
    ).status,
    201,
  )
  const boss = await consoleHeaders(server, 'boss@team.example', 'team')
  const invite = (email: string) =>
    server.request('POST', '/t/team/management/users', { headers: boss, body: { email, role: 'viewer' } })
  t.equal((await invite('first@team.example')).status, 201, 'an admin invites')
  t.equal(
    (
      await server.request('PUT', '/t/team/management/users/boss@team.example', {
        headers: owner,
        body: { role: 'viewer' },
      })
    ).status,
    200,
    'demoted to viewer',
  )
  t.equal((await invite('second@team.example')).status, 403, 'the same token invites no more')
  t.equal(
    (await server.request('GET', '/t/team/management/users', { headers: boss })).status,
    200,
    'a viewer still reads the users',
  )
})
