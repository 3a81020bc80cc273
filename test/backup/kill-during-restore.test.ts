/**
 * SIGKILL during a restore (issue 8): the server is killed at a different moment of a restore of
 * 40,000 differing prices in each round, as fractions of an uncut restore's duration (at once,
 * while the two stores are compared, around the one write transaction, after it). After each restart the restore status is `completed` or
 * `failed`, never `in_progress`, and the tenant is wholly the backup (completed) or wholly the state
 * before (failed): every one of the 40,000 prices is read back and checked. The changelog's head
 * moved by exactly one entry per restored price, or not at all; writes work again.
 */
import t from 'tap'
import { lastSequence } from '../helpers/changelog.js'
import { expectStatus } from '../helpers/price-fixtures.js'
import { retailBase, retailReference, writeRetailPrices } from '../helpers/retail-fixtures.js'
import { startServer } from '../helpers/server.js'

const skuCount = 40_000
const backupBase = 1_000_000
/** When the kill lands, as a fraction of an uncut restore's duration, one round each. */
const killFractions = [0, 0.3, 0.6, 0.8, 0.95, 1.1, 1.3, 1.6, 3]

t.test('a restore cut by SIGKILL leaves the old state or the backup, whole, and says which', async (t) => {
  const server = await startServer()
  t.teardown(() => server.dispose())
  const client = await server.tenant('victim', { tier: 'enterprise' })
  const skus = Array.from({ length: skuCount }, (_, index) => `V-${index}`)
  await retailReference(client, skus)
  const writePrices = (base: number) => writeRetailPrices(client, skus, base)
  const stateOf = () => retailBase(client, skus, 'V-')

  await writePrices(backupBase)
  const backup = await expectStatus(server.admin('POST', '/admin/tenants/victim/backups', {}), 201, 'backup')
  // An uncut restore first: how long one takes here.
  await writePrices(2_000_000)
  await expectStatus(server.admin('POST', '/admin/tenants/victim/restore', { backup_id: backup.body.id }), 202, 'uncut restore')
  let uncut = await server.admin('GET', '/admin/tenants/victim/restore/status')
  while (uncut.body.status === 'in_progress') uncut = await server.admin('GET', '/admin/tenants/victim/restore/status')
  t.equal(uncut.body.status, 'completed')
  const durationMs = Date.parse(uncut.body.completed_at) - Date.parse(uncut.body.started_at)
  t.ok(durationMs > 0, `an uncut restore of ${skuCount} prices took ${durationMs} ms`)
  t.equal(await stateOf(), backupBase)

  const outcomes: Record<string, number> = { completed: 0, failed: 0 }
  for (const [round, fraction] of killFractions.entries()) {
    const delayMs = Math.round(durationMs * fraction)
    const oldBase = 3_000_000 + round * 100_000
    await writePrices(oldBase)
    const head = await lastSequence(client)
    const started = await server.admin('POST', '/admin/tenants/victim/restore', { backup_id: backup.body.id })
    t.equal(started.status, 202, `round ${round}: the restore started`)
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs))
    await server.kill()
    await server.start()
    await client.refreshToken()
    const status = await server.admin('GET', '/admin/tenants/victim/restore/status')
    t.ok(status.body.status === 'completed' || status.body.status === 'failed', `round ${round} (kill after ${delayMs} ms): settled as ${status.body.status}`)
    outcomes[status.body.status]++
    const state = await stateOf()
    if (status.body.status === 'completed') {
      t.equal(state, backupBase, 'completed: every price is the backup\'s')
      t.equal(await lastSequence(client), head + skuCount, 'one changelog entry per restored price')
      t.equal(status.body.error, null)
    } else {
      t.equal(state, oldBase, 'failed: every price is the state before the restore')
      t.equal(await lastSequence(client), head, 'no changelog entry')
      t.match(status.body.error, /interrupted/, 'the error says the restore was interrupted')
    }
    t.equal((await client.call('PUT', `/price/${skus[0]}/RETAIL`, { price: oldBase })).status, 202, 'writes work after the restart')
  }
  t.ok(outcomes['failed']! >= 1 && outcomes['completed']! >= 1, `both outcomes were seen: ${JSON.stringify(outcomes)}`)
})
