/**
 * What the console says about backups and tokens, against the real server: only automatic backups
 * are thinned, so a backup taken by hand is labelled kept and its form offers no "keep it" box that
 * would do nothing; the revoke confirmation gives the tokens' real lifetime; the restore
 * confirmation offers a backup of the current state first (checked by default), which a restore then
 * leaves behind as a manual backup.
 */
import t from 'tap'
import { tokenLifetimeS } from '../../../accounts/auth.js'
import { consoleHeaders, signIn } from '../../helpers/console.js'
import type { Answer } from '../../helpers/server.js'
import { suiteServer } from '../../helpers/suite.js'

let cookie = ''
const owner = 'owner@backups.example'

function page(path: string): Promise<Answer> {
  return server.request('GET', path, { headers: { cookie }, redirect: 'manual' })
}

async function post(path: string, fields: Record<string, string> = {}): Promise<Answer> {
  const csrf = /name="_csrf" value="([^"]+)"/.exec((await page('/console/shop')).text)![1]!
  const body = new URLSearchParams({ ...fields, _csrf: csrf }).toString()
  return server.request('POST', path, {
    raw: body,
    headers: { cookie, origin: server.url, 'content-type': 'application/x-www-form-urlencoded' },
    redirect: 'manual',
  })
}

interface Backup {
  id: string
  type: string
  retain: boolean
}

async function backups(): Promise<Backup[]> {
  const headers = await consoleHeaders(server, owner, 'shop')
  return (await server.request('GET', '/t/shop/management/backups', { headers })).body as Backup[]
}

const manualBackups = async (): Promise<Backup[]> => (await backups()).filter((backup) => backup.type === 'manual')

async function restoreEnded(): Promise<void> {
  const headers = await consoleHeaders(server, owner, 'shop')
  for (
    let tries = 0;
    (await server.request('GET', '/t/shop/management/restore/status', { headers })).body.status === 'in_progress';
    tries++
  ) {
    if (tries > 200) throw new Error('the restore did not end')
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** The backups table's row of `id`, as text without tags. */
function rowOf(text: string, id: string): string {
  const row = new RegExp(`<tr><td data-label="Backup" class="mono">${id}</td>.*?</tr>`).exec(text)
  return row === null ? '' : row[0].replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ')
}

// Automatic backups every 5 s (the first within 5 s of the tenant's creation): the tests count manual ones.
const { server } = await suiteServer({ env: { PRICING_BACKUP_INTERVAL_S: '5' } })

t.before(async () => {
  await server.admin('POST', '/admin/tenants', { slug: 'shop', tier: 'standard', region: 'local', owner_email: owner })
  cookie = `pricing_session=${await signIn(server, owner)}`
})

t.test('a backup taken by hand is labelled kept; only automatic ones say thinned by age', async (t) => {
  const form = await page('/console/shop/backups')
  t.notMatch(
    form.text,
    /name="retain"|Keep it/,
    'the form has no "keep it" box: thinning never deletes a manual backup',
  )
  t.match(form.text, /never thinned: thinning by age removes only automatic backups/, 'and says why')
  const taken = await post('/console/shop/backups')
  t.equal(taken.status, 303)
  const manual = (await backups()).find((backup) => backup.type === 'manual')!
  t.ok(manual, 'a manual backup is listed')
  for (let tries = 0; !(await backups()).some((backup) => backup.type === 'automatic'); tries++) {
    if (tries > 300) throw new Error('no automatic backup was taken')
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  const automatic = (await backups()).find((backup) => backup.type === 'automatic')!
  const listed = await page('/console/shop/backups')
  t.equal(
    rowOf(listed.text, manual.id).includes('kept (taken by hand: never thinned)'),
    true,
    `the manual backup: ${rowOf(listed.text, manual.id)}`,
  )
  t.equal(rowOf(listed.text, manual.id).includes('thinned by age'), false, 'and not "thinned by age"')
  t.equal(
    rowOf(listed.text, automatic.id).includes('thinned by age'),
    true,
    `the automatic backup: ${rowOf(listed.text, automatic.id)}`,
  )
})

t.test("the revoke confirmation gives the tokens' real lifetime", async (t) => {
  const key = await server.admin('POST', '/admin/tenants/shop/keys', { name: 'erp' })
  const confirm = await page(`/console/shop/keys/${key.body.client_id as string}/revoke`)
  t.equal(confirm.status, 200)
  t.equal(tokenLifetimeS, 900, 'tokens live 15 minutes')
  t.match(confirm.text, /until they expire \(at most 15 minutes after they were issued\)/)
  t.notMatch(confirm.text, /an hour/)
})

t.test('a restore offers a backup of the current state first, checked, and takes it', async (t) => {
  const target = (await manualBackups())[0]!
  const confirm = await page(`/console/shop/backups/${target.id}/restore`)
  t.match(
    confirm.text,
    /<input id="backup_first" name="backup_first" type="checkbox" value="true" checked><label for="backup_first">Take a backup of the current state first<\/label>/,
    'checked by default',
  )
  const before = await manualBackups()
  const restored = await post(`/console/shop/backups/${target.id}/restore`, { backup_first: 'true' })
  t.equal(restored.status, 303)
  await restoreEnded()
  const after = await manualBackups()
  t.equal(after.length, before.length + 1, 'one manual backup more')
  const added = after.find((backup) => !before.some((old) => old.id === backup.id))!
  t.match(
    new URL(restored.headers.get('location')!, server.url).search,
    new RegExp(added.id.replace(/[.:+]/g, '.')),
    'the message names the new backup',
  )

  // Unchecked, the browser sends no field: no backup.
  const plain = await post(`/console/shop/backups/${target.id}/restore`)
  t.equal(plain.status, 303)
  await restoreEnded()
  t.equal((await manualBackups()).length, after.length, 'unchecked: no backup is taken')

  // A restore that cannot start takes no backup either.
  const unknown = await post('/console/shop/backups/shop-1999-01-01T00:00:00.000000Z/restore', { backup_first: 'true' })
  t.equal(unknown.status, 303)
  t.equal((await manualBackups()).length, after.length, 'an unknown backup: nothing is taken')
})
