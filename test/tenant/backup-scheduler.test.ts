/**
 * Automatic backups on the real server (tenant/backups/scheduler.ts): with
 * `PRICING_BACKUP_INTERVAL_S=1` a tenant gets its first backup without being asked, then more as
 * the interval passes, all `automatic` and unretained, listed newest first; a restart does not
 * start over (the interval counts from the backups on disk).
 */
import t from 'tap'
import { spendLink } from '../helpers/console.js'
import { adminToken, startServer } from '../helpers/server.js'

async function automaticIds(server: Awaited<ReturnType<typeof startServer>>, cookie: string): Promise<string[]> {
  const answer = await server.request('GET', '/t/auto/management/backups', { headers: { cookie } })
  return (answer.body as { id: string; type: string; retain: boolean }[])
    .filter((backup) => backup.type === 'automatic' && !backup.retain)
    .map((backup) => backup.id)
}

async function signedIn(server: Awaited<ReturnType<typeof startServer>>, email: string): Promise<string> {
  await server.request('POST', '/portal/sign-in', { body: { email } })
  const { readdirSync, readFileSync } = await import('node:fs')
  const path = await import('node:path')
  const outbox = path.join(server.dataDir, 'outbox')
  const text = readFileSync(path.join(outbox, readdirSync(outbox).sort().at(-1)!), 'utf8')
    .replace(/=\r?\n/g, '')
    .replaceAll('=3D', '=')
  const link = /http:\/\/\S+\/portal\/verify\?token=[A-Za-z0-9_-]+/.exec(text)![0]
  const verified = await spendLink(server, link)
  return /pricing_session=[^;]+/.exec(verified.headers.get('set-cookie') ?? '')![0]
}

async function waitFor(condition: () => Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    if (await condition()) return true
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return false
}

t.test('a first backup without asking, then one per interval; a restart goes on from the disk', async (t) => {
  const server = await startServer({ env: { PRICING_BACKUP_INTERVAL_S: '1' } })
  t.teardown(() => server.dispose())
  t.equal(
    (
      await server.admin('POST', '/admin/tenants', {
        slug: 'auto',
        tier: 'standard',
        region: 'local',
        owner_email: 'ops@example.com',
      })
    ).status,
    201,
  )
  const cookie = await signedIn(server, 'ops@example.com')
  t.ok(
    await waitFor(async () => (await automaticIds(server, cookie)).length >= 1, 35_000),
    'the first automatic backup comes unasked',
  )
  t.ok(await waitFor(async () => (await automaticIds(server, cookie)).length >= 3, 10_000), 'and more, a second apart')
  const ids = await automaticIds(server, cookie)
  t.same(ids, [...ids].sort().reverse(), 'newest first')
  t.ok(ids.every((id) => /^auto-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{6}Z$/.test(id)))
  const metrics = await (
    await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${adminToken}` } })
  ).text()
  const written = Number(/pricing_backups_total\{type="automatic",outcome="written"\} (\d+)/.exec(metrics)?.[1])
  t.ok(written >= ids.length, `the metric counts them (${written})`)
  await server.restart()
  const after = await automaticIds(server, cookie)
  t.ok(after.length >= ids.length, 'the backups survive a restart')
})
