/**
 * SIGKILL during a restore of a large tenant: the start that finishes the restore must serve. The
 * start writes the rest of the restore (here all of it, some megabytes of price records) and then
 * loads the tenant in chunks; with hundreds of thousands of price versions the load outlasted the
 * quiet time after which the store reopens its environment to give back its map's pages, the
 * reopen closed the environment under the load, and the start exited 1 with "Can not renew a
 * transaction from a closed database" (every kill inside a restore of a 1M-version tenant). Here
 * 20,000 SKUs hold 41 versions each (820,000; at 420,000 the load outlasted the quiet time in one
 * run of two); the restored state must read back whole.
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import t from 'tap'
import { expectStatus } from '../helpers/price-fixtures.js'
import { retailBase, retailReference, writeRetailPrices } from '../helpers/retail-fixtures.js'
import { TestServer } from '../helpers/server.js'

const skuCount = 20_000
/** Future versions per SKU besides the one in force: the load's size without more SKUs to compare. */
const futureVersions = 40
const backupBase = 1_000_000

t.test('the start that finishes a restore cut by SIGKILL serves a large tenant, whole', async (t) => {
  // Everything the server writes, stderr included: a failed start says why there.
  let output = ''
  const server = new TestServer(mkdtempSync(path.join(tmpdir(), 'pricing-test-')), {}, (text) => (output += text))
  await server.start()
  t.teardown(() => server.dispose())
  // No rate limits: on a quiet machine the 820,000 versions come faster than the tier's ingest rate.
  const limits = { ingest_rate: null, ingest_burst: null, query_rate: null, query_burst: null, prices: null }
  const client = await server.tenant('large', { tier: 'enterprise', limits })
  const skus = Array.from({ length: skuCount }, (_, index) => `L-${index}`)
  await retailReference(client, skus)
  await writeRetailPrices(client, skus, backupBase)
  for (let round = 1; round <= futureVersions; round++) {
    await writeRetailPrices(client, skus, backupBase + round * 100_000, {
      start_date: new Date(Date.UTC(2040, 0, round)).toISOString().replace('.000Z', 'Z'),
    })
  }
  const backup = await expectStatus(server.admin('POST', '/admin/tenants/large/backups', {}), 201, 'backup')
  // Every pair differs from the backup: the restore rewrites all 20,000 price records.
  await writeRetailPrices(client, skus, 2_000_000)
  await expectStatus(
    server.admin('POST', '/admin/tenants/large/restore', { backup_id: backup.body.id }),
    202,
    'restore',
  )
  // At once: the comparison has begun and nothing is written; the start writes the whole restore.
  await server.kill()
  output = ''
  const failed = await server.start().then(
    () => null,
    () =>
      output
        .split('\n')
        .filter((line) => !line.startsWith('{'))
        .join('\n'),
  )
  t.equal(failed, null, 'the start after the kill serves')
  t.match(server.stdout, /"msg":"interrupted restore finished at start"/, 'the start finished the restore')
  await client.refreshToken()
  t.equal((await server.admin('GET', '/admin/tenants/large/restore/status')).body.status, 'completed')
  t.equal(await retailBase(client, skus, 'L-'), backupBase, "every price in force is the backup's")
  t.equal(
    (await client.call('PUT', `/price/${skus[0]}/RETAIL`, { price: 5 })).status,
    202,
    'writes work after the start',
  )
})
