/**
 * SIGKILL during a restore (issue 8): the server is killed at a different moment of a restore of
 * 20,000 differing prices in each round, placed by the phases of an uncut restore (at once, while
 * the two stores are compared, while its transactions are written, around the swap, after it). A restore writes in transactions of 2,000 and its marker last, so a kill may leave part of
 * it on disk: the next start finishes it before the tenant serves. After each restart the status is
 * `completed`, never `in_progress`; every one of the 20,000 prices reads back as the backup's
 * (never a mix); the changelog's head moved by exactly one entry per restored price, however the
 * restore was cut (no entry lost, none twice); writes work again. Where the timed kills land varies
 * with the machine, so a last kill is placed for certain: as soon as the restore's first
 * transaction is durable (its debug log line), and the start must then write the rest.
 */
import t from 'tap'
import { lastSequence } from '../helpers/changelog.js'
import { expectStatus } from '../helpers/price-fixtures.js'
import { retailBase, retailReference, writeRetailPrices } from '../helpers/retail-fixtures.js'
import { startServer } from '../helpers/server.js'

/**
 * Ten of the restore's transactions of 2,000: enough for timed kills to land before, inside and
 * after the writing. (40,000 took 240 s with coverage on an idle machine, past tap's 300 s under
 * load; the large tenant's restore has its own suite, kill-during-large-restore.)
 */
const skuCount = 20_000
const backupBase = 1_000_000
/**
 * When the kill lands, one round each: [phase, fraction of it] of an uncut restore's comparison,
 * its writing, or its whole duration (twice it: after the end). Five rounds and the certain kill
 * below: each round costs about 9 s here, and the writing's middle is covered by the last kill.
 */
const killMoments: [phase: 'compare' | 'write' | 'whole', fraction: number][] = [
  ['compare', 0],
  ['compare', 0.5],
  ['write', 0.25],
  ['write', 0.75],
  ['whole', 2],
]

t.test('a restore cut by SIGKILL is finished by the next start: the backup, whole, once', async (t) => {
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
  await expectStatus(
    server.admin('POST', '/admin/tenants/victim/restore', { backup_id: backup.body.id }),
    202,
    'uncut restore',
  )
  let uncut = await server.admin('GET', '/admin/tenants/victim/restore/status')
  while (uncut.body.status === 'in_progress') uncut = await server.admin('GET', '/admin/tenants/victim/restore/status')
  t.equal(uncut.body.status, 'completed')
  const phases = /"compareMs":(\d+),"applyMs":(\d+),"writeMs":(\d+)/.exec(server.stdout)
  t.ok(phases !== null, 'the restore logs how long it compared and wrote')
  const compareMs = Number(phases![1])
  const writeMs = Number(phases![3])
  const durationMs = compareMs + Number(phases![2])
  t.ok(writeMs > 0, `an uncut restore of ${skuCount} prices compared for ${compareMs} ms and wrote for ${writeMs} ms`)
  t.equal(await stateOf(), backupBase)

  /** What the restart wrote: nothing (the restore had finished), all of it, or the part the kill cut off. */
  const resumes: Record<string, number> = { none: 0, all: 0, part: 0 }
  for (const [round, [phase, fraction]] of killMoments.entries()) {
    const delayMs = Math.round(
      phase === 'compare'
        ? compareMs * fraction
        : phase === 'write'
          ? compareMs + writeMs * fraction
          : durationMs * fraction,
    )
    const oldBase = 3_000_000 + round * 100_000
    await writePrices(oldBase)
    const head = await lastSequence(client)
    const started = await server.admin('POST', '/admin/tenants/victim/restore', { backup_id: backup.body.id })
    t.equal(started.status, 202, `round ${round}: the restore started`)
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs))
    await server.kill()
    await server.start()
    await client.refreshToken()
    const finished = /"entries":(\d+)[^\n]*"msg":"interrupted restore finished at start"/.exec(server.stdout)
    const resumed = finished === null ? 'none' : Number(finished[1]) === skuCount ? 'all' : 'part'
    resumes[resumed]++
    const status = await server.admin('GET', '/admin/tenants/victim/restore/status')
    t.equal(
      status.body.status,
      'completed',
      `round ${round} (kill after ${delayMs} ms): completed, at the latest by the restart`,
    )
    t.equal(status.body.error, null)
    t.equal(await stateOf(), backupBase, "every price is the backup's")
    t.equal(
      await lastSequence(client),
      head + skuCount,
      'one changelog entry per restored price, none lost, none twice',
    )
    t.equal(
      (await client.call('PUT', `/price/${skus[0]}/RETAIL`, { price: oldBase })).status,
      202,
      'writes work after the restart',
    )
  }
  t.ok(
    resumes['none']! + resumes['all']! + resumes['part']! === killMoments.length,
    `what the restarts wrote: ${JSON.stringify(resumes)}`,
  )

  // And one kill placed for certain inside the writing: as soon as the first transaction of the
  // restore is durable (its debug log line), while the others are still to come.
  await server.stop()
  server.env['PRICING_LOG_LEVEL'] = 'debug'
  await server.start()
  await client.refreshToken()
  const oldBase = 9_000_000
  await writePrices(oldBase)
  const head = await lastSequence(client)
  await expectStatus(
    server.admin('POST', '/admin/tenants/victim/restore', { backup_id: backup.body.id }),
    202,
    'restore',
  )
  const deadline = Date.now() + 30_000
  while (!server.stdout.includes('"msg":"restore changes durable"') && Date.now() < deadline)
    await new Promise((resolve) => setImmediate(resolve))
  await server.kill()
  server.env['PRICING_LOG_LEVEL'] = 'info'
  await server.start()
  await client.refreshToken()
  const finished = /"entries":(\d+)[^\n]*"msg":"interrupted restore finished at start"/.exec(server.stdout)
  t.ok(
    finished !== null && Number(finished[1]) > 0 && Number(finished[1]) < skuCount,
    `killed after the first transaction: the start wrote the rest (${finished?.[1]} of ${skuCount})`,
  )
  t.equal((await server.admin('GET', '/admin/tenants/victim/restore/status')).body.status, 'completed')
  t.equal(await stateOf(), backupBase, "every price is the backup's")
  t.equal(await lastSequence(client), head + skuCount, 'one changelog entry per restored price, none lost, none twice')
})
