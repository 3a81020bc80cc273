/**
 * SIGKILL in the middle of a backup (the server is killed the moment a `.partial` copy appears):
 * after the restart no partial copy is left or listed, every listed backup opens and verifies
 * (log tail and checksum chain), and the tenant's data is whole. Three rounds; the tenant is big
 * enough (~30 MB) that a copy takes tens of milliseconds, so the kill lands inside one in nearly
 * every round (a copy that finished first must then be listed and verify like the others).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { TenantStore } from '../../storage/tenant-store.js'
import { startServer } from '../helpers/server.js'

const articles = 60_000

t.test('a backup cut by SIGKILL is never listed and leaves the data whole', async (t) => {
  const server = await startServer({ env: { PRICING_BACKUP_INTERVAL_S: '1' } })
  t.teardown(() => server.dispose())
  const client = await server.tenant('killed', { tier: 'enterprise' })
  for (let batch = 0; batch < articles / 2_500; batch++) {
    const items = Array.from({ length: 2_500 }, (_, index) => ({
      sku: `K-${batch}-${index}`,
      name: `article ${batch} ${index} ${'x'.repeat(300)}`,
    }))
    t.equal((await client.call('POST', '/article/batch', items)).status, 202)
  }
  const backupsDir = path.join(server.dataDir, 'backups', 'killed')
  let cut = 0
  for (let round = 0; round < 3; round++) {
    // Wait for the next copy to start, then kill at once.
    let partial: string | undefined
    const deadline = Date.now() + 20_000
    while (partial === undefined && Date.now() < deadline) {
      partial = existsSync(backupsDir) ? readdirSync(backupsDir).find((name) => name.endsWith('.partial')) : undefined
      if (partial === undefined) await new Promise((resolve) => setImmediate(resolve))
    }
    t.ok(partial !== undefined, `round ${round}: a copy was under way`)
    await server.kill()
    const whole = partial!.replace(/\.partial$/, '')
    const wasCut = existsSync(path.join(backupsDir, partial!))
    if (wasCut) cut++
    await server.start()
    await client.refreshToken()
    t.notOk(existsSync(path.join(backupsDir, partial!)), 'no partial copy after the restart')
    const listed = readdirSync(backupsDir).filter((name) => !name.endsWith('.partial'))
    if (wasCut) t.notOk(listed.includes(whole), 'the cut copy was never listed')
    else t.ok(listed.includes(whole), 'the copy finished before the kill landed: listed, and verified below')
    for (const id of listed) {
      if (!existsSync(path.join(backupsDir, id, 'backup.json'))) continue
      // Opening checks the log tail and the checksum chain; the copy holds what its record says.
      // (On a loaded machine the scheduler's first copy may come before any article: sequence 0.)
      const record = JSON.parse(readFileSync(path.join(backupsDir, id, 'backup.json'), 'utf8')) as { sequence: number }
      const copy = new TenantStore(path.join(backupsDir, id))
      t.equal(
        copy.sequence,
        record.sequence,
        `${id} opens and verifies at the sequence its record names (${record.sequence})`,
      )
      await copy.close()
    }
    const list = await client.get('/article?page=1&size=1')
    t.equal(list.status, 200)
    t.equal(list.body.total, articles, 'every article is there')
  }
  t.ok(cut >= 1, `the kill landed inside a copy in ${cut} of 3 rounds`)
})
