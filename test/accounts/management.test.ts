/**
 * People's sign-in and the management endpoints against the real server: magic links through the
 * outbox and through a real SMTP server on loopback (smtp-server), single use, the session cookie's
 * attributes, the 401/403 matrix of `/management/backups` (no credentials, a key token, another
 * tenant's user, another tenant's console token, the owner by cookie and by console token), the
 * Origin check on cookie-authenticated writes, backups created and listed newest first, sign-out.
 */
import { SMTPServer } from 'smtp-server'
import t from 'tap'
import { outboxLink as outboxLinkOf, signIn as signInAs, spendLink, unquote } from '../helpers/console.js'
import { startServer } from '../helpers/server.js'
import { suiteServer } from '../helpers/suite.js'

const {
  server,
  tenants: { acme: client },
} = await suiteServer({ tenants: { acme: {} } })

t.before(async () => {
  // The owner of acme, and someone who owns another tenant only.
  t.equal(
    (
      await server.admin('POST', '/admin/tenants', {
        slug: 'shop',
        tier: 'standard',
        region: 'local',
        owner_email: 'Owner@Example.com',
      })
    ).status,
    201,
  )
  t.equal(
    (
      await server.admin('POST', '/admin/tenants', {
        slug: 'other',
        tier: 'standard',
        region: 'local',
        owner_email: 'stranger@example.com',
      })
    ).status,
    201,
  )
})

function outboxLink(email: string): string {
  return outboxLinkOf(server, email)
}

async function signIn(email: string): Promise<string> {
  return signInAs(server, email)
}

function management(method: string, slug: string, headers: Record<string, string>, body?: unknown) {
  return server.request(method, `/t/${slug}/management/backups`, { headers, body })
}

t.test('a magic link through the outbox signs in once; the answer never tells who is known', async (t) => {
  const known = await server.request('POST', '/portal/sign-in', { body: { email: 'owner@example.com' } })
  const unknown = await server.request('POST', '/portal/sign-in', { body: { email: 'nobody@example.com' } })
  t.equal(known.status, 202)
  t.same(known.body, { status: 'sent' })
  t.same(unknown.body, known.body, 'the same answer for an address nobody uses')
  const bad = await server.request('POST', '/portal/sign-in', { body: { email: 'not-an-address' } })
  t.equal(bad.status, 400)
  const link = outboxLink('owner@example.com')
  const first = await spendLink(server, link)
  t.equal(first.status, 303)
  t.equal(first.headers.get('location'), '/console')
  const cookie = first.headers.get('set-cookie') ?? ''
  t.match(
    cookie,
    /^pricing_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax; Max-Age=43200$/,
    'HttpOnly, SameSite=Lax, no Secure over plain HTTP',
  )
  const again = await spendLink(server, link)
  t.equal(again.status, 401, 'a used link gives no session')
  t.equal(again.headers.get('set-cookie'), null)
  const forged = await spendLink(server, `${server.url}/portal/verify?token=${'A'.repeat(43)}`)
  t.equal(forged.status, 401, 'a forged link neither')
  t.equal((await spendLink(server, `${server.url}/portal/verify`)).status, 401, 'nor none')
  t.equal(
    (await fetch(`${server.url}/portal/verify`, { redirect: 'manual' })).status,
    401,
    'nor opening a link without a token',
  )
})

t.test('who may reach /management: the 401/403 matrix', async (t) => {
  const owner = `pricing_session=${await signIn('owner@example.com')}`
  const stranger = `pricing_session=${await signIn('stranger@example.com')}`
  t.equal((await management('GET', 'shop', {})).status, 401, 'no credentials: 401')
  t.equal(
    (await management('GET', 'shop', { cookie: 'pricing_session=forged' })).status,
    401,
    'an unknown session: 401',
  )
  t.equal(
    (await management('GET', 'acme', { authorization: `Bearer ${client.token}` })).status,
    403,
    "a key's token: 403",
  )
  t.equal((await management('GET', 'shop', { cookie: stranger })).status, 403, 'a user of another tenant: 403')
  const own = await management('GET', 'shop', { cookie: owner })
  t.equal(own.status, 200, 'the owner by cookie: 200')
  t.ok(Array.isArray(own.body))
  // Console tokens: from the session, for one of the person's tenants.
  const origin = { cookie: owner, origin: server.url }
  const token = await server.request('POST', '/portal/console-token', { headers: origin, body: { tenant: 'shop' } })
  t.equal(token.status, 200)
  t.equal(token.body.token_type, 'Bearer')
  t.equal(
    (await server.request('POST', '/portal/console-token', { headers: origin, body: { tenant: 'other' } })).status,
    403,
    'no token for a tenant one is not a user of',
  )
  t.equal(
    (await management('GET', 'shop', { authorization: `Bearer ${token.body.access_token}` })).status,
    200,
    'the owner by console token: 200',
  )
  const strangerToken = await server.request('POST', '/portal/console-token', {
    headers: { cookie: stranger, origin: server.url },
    body: { tenant: 'other' },
  })
  t.equal(
    (await management('GET', 'shop', { authorization: `Bearer ${strangerToken.body.access_token}` })).status,
    401,
    "another tenant's console token: 401",
  )
})

t.test('backups: cookie writes need a same-origin Origin; created and listed newest first', async (t) => {
  const cookie = `pricing_session=${await signIn('owner@example.com')}`
  t.equal((await management('POST', 'shop', { cookie }, {})).status, 403, 'no Origin: refused')
  t.equal(
    (await management('POST', 'shop', { cookie, origin: 'https://evil.example' }, {})).status,
    403,
    'a foreign Origin: refused',
  )
  t.same((await management('GET', 'shop', { cookie })).body, [], 'nothing was written by the refused requests')
  const first = await management('POST', 'shop', { cookie, origin: server.url }, { retain: true })
  t.equal(first.status, 201)
  t.match(first.body.id, /^shop-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{6}Z$/)
  t.equal(first.body.type, 'manual')
  t.equal(first.body.retain, true)
  const second = await management('POST', 'shop', { cookie, origin: server.url })
  t.equal(second.status, 201, 'the body is optional')
  t.equal(second.body.retain, false)
  const listed = await management('GET', 'shop', { cookie })
  t.same(
    listed.body.map((backup: { id: string }) => backup.id),
    [second.body.id, first.body.id],
    'newest first',
  )
  t.same(Object.keys(listed.body[0]).sort(), ['created', 'id', 'retain', 'type'])
  t.equal(
    (await management('POST', 'shop', { cookie, origin: server.url }, { retain: 'yes' })).status,
    400,
    'a wrong type: 400',
  )
})

t.test('sign-out ends the session', async (t) => {
  const cookie = `pricing_session=${await signIn('owner@example.com')}`
  t.equal(
    (await server.request('POST', '/portal/sign-out', { headers: { cookie } })).status,
    403,
    'a cookie write without Origin is refused',
  )
  const out = await server.request('POST', '/portal/sign-out', { headers: { cookie, origin: server.url } })
  t.equal(out.status, 204)
  t.match(out.headers.get('set-cookie') ?? '', /^pricing_session=; .*Max-Age=0/)
  t.equal((await management('GET', 'shop', { cookie })).status, 401, 'the cookie no longer signs in')
})

t.test('with PRICING_SMTP_URL the link goes over SMTP to a real server', async (t) => {
  const received: string[] = []
  const smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    onData(stream, _session, callback) {
      let text = ''
      stream.on('data', (chunk: Buffer) => (text += chunk.toString()))
      stream.on('end', () => {
        received.push(text)
        callback()
      })
    },
  })
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => smtp.close(() => resolve())))
  const port = (smtp.server.address() as { port: number }).port
  const mailed = await startServer({
    env: { PRICING_SMTP_URL: `smtp://127.0.0.1:${port}`, PRICING_MAIL_FROM: 'pricing@example.com' },
  })
  t.teardown(() => mailed.dispose())
  t.equal(
    (
      await mailed.admin('POST', '/admin/tenants', {
        slug: 'mailed',
        tier: 'standard',
        region: 'local',
        owner_email: 'person@example.com',
      })
    ).status,
    201,
  )
  t.equal((await mailed.request('POST', '/portal/sign-in', { body: { email: 'person@example.com' } })).status, 202)
  t.equal(received.length, 1, 'one mail reached the SMTP server')
  const mail = unquote(received[0]!)
  t.match(mail, /From: pricing@example.com/)
  t.match(mail, /To: person@example.com/)
  const link = /(http:\/\/\S+\/portal\/verify\?token=[A-Za-z0-9_-]+)/.exec(mail)![1]!
  const verified = await spendLink(mailed, link)
  t.equal(verified.status, 303)
  const cookie = /pricing_session=[^;]+/.exec(verified.headers.get('set-cookie') ?? '')![0]
  t.equal(
    (await mailed.request('GET', '/t/mailed/management/backups', { headers: { cookie } })).status,
    200,
    'and the session reaches the management endpoints',
  )
})
