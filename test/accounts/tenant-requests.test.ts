/**
 * Tenant requests against the real server (issue 9, API.md §2 and §4): a signed-in person requests a
 * tenant; the slug is checked (pattern, taken by a tenant, taken by an open request), the region
 * must be one the deployment serves; without a session 401, a cookie write from another origin
 * 403. An operator lists, approves (the tenant is provisioned and active, the requester is its
 * owner and can reach /management, and gets a mail with the base URL) and rejects (with a reason
 * the requester sees). With PRICING_AUTO_APPROVE=true a request is active at once.
 */
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { consoleHeaders, signIn, unquote } from '../helpers/console.js'
import { startServer, type TestServer } from '../helpers/server.js'
import { suiteServer } from '../helpers/suite.js'

const { server } = await suiteServer({ env: { PRICING_REGION: 'eu-north,us-east' } })

async function asPerson(email: string): Promise<Record<string, string>> {
  return { cookie: `pricing_session=${await signIn(server, email)}`, origin: server.url }
}

/** The newest outbox mail to `email` whose subject contains `subject`, as text. */
function mailTo(target: TestServer, email: string, subject: string): string {
  const outbox = path.join(target.dataDir, 'outbox')
  for (const file of readdirSync(outbox).sort().reverse()) {
    const text = unquote(readFileSync(path.join(outbox, file), 'utf8'))
    if (text.includes(`To: ${email}`) && text.includes(subject)) return text
  }
  throw new Error(`no mail "${subject}" to ${email}`)
}

t.test('a request, checked, approved by an operator: the requester owns the tenant and is told', async (t) => {
  const ann = await asPerson('ann@example.com')
  const bad = await server.request('POST', '/portal/tenant-requests', {
    headers: ann,
    body: { slug: '-bad', tier: 'standard', region: 'eu-north' },
  })
  t.equal(bad.status, 400, 'a slug against the rule: 400')
  t.equal(bad.body.details[0].path, '/slug')
  const region = await server.request('POST', '/portal/tenant-requests', {
    headers: ann,
    body: { slug: 'anns-shop', tier: 'standard', region: 'mars' },
  })
  t.equal(region.status, 400, 'a region the deployment does not serve: 400')
  t.match(region.body.message, /eu-north, us-east/)
  t.equal(
    (
      await server.request('POST', '/portal/tenant-requests', {
        headers: ann,
        body: { slug: 'anns-shop', tier: 'gold', region: 'eu-north' },
      })
    ).status,
    400,
    'an unknown tier: 400',
  )
  t.equal(
    (
      await server.request('POST', '/portal/tenant-requests', {
        body: { slug: 'anns-shop', tier: 'standard', region: 'eu-north' },
      })
    ).status,
    401,
    'no session: 401',
  )
  t.equal(
    (
      await server.request('POST', '/portal/tenant-requests', {
        headers: { cookie: ann.cookie!, origin: 'https://evil.example' },
        body: { slug: 'anns-shop', tier: 'standard', region: 'eu-north' },
      })
    ).status,
    403,
    'another origin: 403',
  )

  const made = await server.request('POST', '/portal/tenant-requests', {
    headers: ann,
    body: { slug: 'anns-shop', tier: 'standard', region: 'eu-north' },
  })
  t.equal(made.status, 201)
  t.same(
    { ...made.body, id: 'x', created_at: 'x' },
    {
      id: 'x',
      email: 'ann@example.com',
      slug: 'anns-shop',
      tier: 'standard',
      region: 'eu-north',
      status: 'requested',
      created_at: 'x',
      decided_at: null,
      reason: null,
    },
  )
  const bob = await asPerson('bob@example.com')
  const taken = await server.request('POST', '/portal/tenant-requests', {
    headers: bob,
    body: { slug: 'anns-shop', tier: 'starter', region: 'us-east' },
  })
  t.equal(taken.status, 409, 'a slug an open request holds is taken')
  await server.admin('POST', '/admin/tenants', { slug: 'operators', tier: 'starter', region: 'local' })
  t.equal(
    (
      await server.request('POST', '/portal/tenant-requests', {
        headers: bob,
        body: { slug: 'operators', tier: 'starter', region: 'us-east' },
      })
    ).status,
    409,
    "a tenant's slug is taken",
  )
  t.equal((await server.admin('GET', '/admin/tenants/anns-shop')).status, 404, 'no tenant before approval')

  const mine = await server.request('GET', '/portal/tenant-requests', { headers: { cookie: ann.cookie! } })
  t.same(
    mine.body.map((request: { slug: string }) => request.slug),
    ['anns-shop'],
    'a person sees their own requests',
  )
  t.same(
    (await server.request('GET', '/portal/tenant-requests', { headers: { cookie: bob.cookie! } })).body,
    [],
    'and only theirs',
  )
  const all = await server.admin('GET', '/admin/tenant-requests')
  t.same(
    all.body.map((request: { id: string }) => request.id),
    [made.body.id],
    'the operator sees every request',
  )

  const approved = await server.admin('POST', `/admin/tenant-requests/${made.body.id}/approve`)
  t.equal(approved.status, 200)
  t.equal(approved.body.status, 'active')
  t.ok(approved.body.decided_at !== null)
  const tenant = await server.admin('GET', '/admin/tenants/anns-shop')
  t.same(
    [tenant.body.status, tenant.body.tier, tenant.body.region, tenant.body.owner_email],
    ['active', 'standard', 'eu-north', 'ann@example.com'],
    'provisioned with the requester as owner',
  )
  const management = await server.request('GET', '/t/anns-shop/management/backups', {
    headers: await consoleHeaders(server, 'ann@example.com', 'anns-shop'),
  })
  t.equal(management.status, 200, 'the owner reaches the console endpoints')
  const mail = mailTo(server, 'ann@example.com', 'Your tenant anns-shop is ready')
  t.match(mail, `${server.url}/t/anns-shop`, 'the mail gives the base URL')
  t.match(mail, `${server.url}/console/anns-shop`, 'and the console')
  t.equal(
    (await server.admin('POST', `/admin/tenant-requests/${made.body.id}/approve`)).status,
    409,
    'approved once only',
  )
  t.equal((await server.admin('POST', '/admin/tenant-requests/nope/approve')).status, 404)
})

t.test('a rejected request says why, and frees the slug', async (t) => {
  const cy = await asPerson('cy@example.com')
  const made = await server.request('POST', '/portal/tenant-requests', {
    headers: cy,
    body: { slug: 'cys-shop', tier: 'enterprise', region: 'us-east' },
  })
  t.equal(made.status, 201)
  const rejected = await server.admin('POST', `/admin/tenant-requests/${made.body.id}/reject`, {
    reason: 'enterprise needs a contract',
  })
  t.equal(rejected.status, 200)
  t.same([rejected.body.status, rejected.body.reason], ['rejected', 'enterprise needs a contract'])
  const mine = await server.request('GET', '/portal/tenant-requests', { headers: { cookie: cy.cookie! } })
  t.same(
    [mine.body[0].status, mine.body[0].reason],
    ['rejected', 'enterprise needs a contract'],
    'the requester sees it',
  )
  t.equal((await server.admin('GET', '/admin/tenants/cys-shop')).status, 404, 'no tenant')
  t.equal(
    (await server.admin('POST', `/admin/tenant-requests/${made.body.id}/reject`, {})).status,
    409,
    'rejected once only',
  )
  t.equal(
    (
      await server.request('POST', '/portal/tenant-requests', {
        headers: cy,
        body: { slug: 'cys-shop', tier: 'standard', region: 'us-east' },
      })
    ).status,
    201,
    'the slug is free again',
  )
})

t.test('PRICING_AUTO_APPROVE=true: active at once', async (t) => {
  const auto = await startServer({ env: { PRICING_AUTO_APPROVE: 'true' } })
  t.teardown(() => auto.dispose())
  const cookie = `pricing_session=${await signIn(auto, 'dee@example.com')}`
  const made = await auto.request('POST', '/portal/tenant-requests', {
    headers: { cookie, origin: auto.url },
    body: { slug: 'dees-shop', tier: 'starter', region: 'local' },
  })
  t.equal(made.status, 201)
  t.equal(made.body.status, 'active')
  t.equal((await auto.admin('GET', '/admin/tenants/dees-shop')).body.owner_email, 'dee@example.com')
  t.match(mailTo(auto, 'dee@example.com', 'Your tenant dees-shop is ready'), `${auto.url}/t/dees-shop`)
})
