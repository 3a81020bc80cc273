/**
 * Restore under load against the real server (SPEC "Backup and restore rules" 3; issue 8):
 * - a round trip: a backup, then changes of every kind (an article renamed, one deleted, one new, all
 *   prices rewritten, a new pricelist with a price, a setting), then `POST /management/restore`:
 *   every read (main-thread and worker queries, the answer cache, strong ETags, lists, settings)
 *   answers the backup's content again; the changelog keeps rising with one entry per differing
 *   entity, of the right change type, by the restoring person; the webhook receives those entries;
 * - while a restore of 40,000 differing prices runs: writes answer 503 with `Retry-After: 15`,
 *   reads answer, and every 100-SKU query sees all old prices or all restored ones (one swap);
 *   another tenant writes on;
 * - the refusals: unknown backup 404, a second restore 409, bad bodies 400, an API key 403; the
 *   operator's route and its status.
 */
import t from 'tap'
import { entriesAfter, lastSequence, waitForSequences, type ChangelogEntry } from '../helpers/changelog.js'
import { consoleHeaders } from '../helpers/console.js'
import { startHttpsReceiver, testCertificate, type HttpsReceiver } from '../helpers/https-receiver.js'
import { expectStatus, query } from '../helpers/price-fixtures.js'
import { retailReference, writeRetailPrices } from '../helpers/retail-fixtures.js'
import { startServer, TenantClient, type TestServer } from '../helpers/server.js'

let server: TestServer
let receiver: HttpsReceiver

t.before(async () => {
  const { caPath } = await testCertificate()
  receiver = await startHttpsReceiver()
  server = await startServer({
    env: {
      NODE_EXTRA_CA_CERTS: caPath,
      PRICING_WEBHOOK_ALLOW_PRIVATE: 'true',
      PRICING_WEBHOOK_BATCH_MS: '100',
      // 100-SKU queries on the two workers, 10-SKU ones on the main thread.
      PRICING_WORKERS: '2',
      PRICING_WORKER_THRESHOLD_SKUS: '50',
    },
  })
})
t.teardown(async () => {
  await server.dispose()
  await receiver.close()
})

/** A tenant owned by `email`, with an API key. */
async function ownedTenant(slug: string, email: string, tier = 'standard'): Promise<TenantClient> {
  await expectStatus(
    server.admin('POST', '/admin/tenants', { slug, tier, region: 'local', owner_email: email }),
    201,
    'tenant',
  )
  const key = await expectStatus(server.admin('POST', `/admin/tenants/${slug}/keys`, { name: 'test' }), 201, 'key')
  const client = new TenantClient(server, slug, key.body.client_id, key.body.client_secret)
  await client.refreshToken()
  return client
}

async function waitForRestore(path: string, headers: Record<string, string>): Promise<any> {
  const deadline = Date.now() + 60_000
  for (;;) {
    const status = await server.request('GET', path, { headers })
    if (status.status !== 200) throw new Error(`restore status: ${status.status} ${status.text}`)
    if (status.body.status !== 'in_progress') return status.body
    if (Date.now() > deadline) throw new Error('restore did not end within a minute')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** Everything a client can read of the round-trip tenant, for before/after comparison. */
async function readAll(client: TenantClient, skus: readonly string[]): Promise<Record<string, unknown>> {
  const get = async (path: string) => (await expectStatus(client.get(path), 200, path)).body
  return {
    articles: await get('/article?page=1&size=1000'),
    pricelists: await get('/pricelist?page=1&size=1000'),
    prices: await get('/price?page=1&size=1000'),
    settings: await get('/settings'),
    workerQuery: (
      await expectStatus(client.call('POST', '/price/query', query([...skus.slice(0, 100)], ['RETAIL'])), 200, 'query')
    ).body,
    mainQuery: (
      await expectStatus(client.call('POST', '/price/query', query([...skus.slice(0, 10)], ['RETAIL'])), 200, 'query')
    ).body,
    single: (await expectStatus(client.get(`/price/${skus[5]}/RETAIL/SE`), 200, 'single')).body,
  }
}

t.test('a restore round trip: the backup content everywhere, the changelog rising, webhooks told', async (t) => {
  const owner = 'owner@shop.example'
  const client = await ownedTenant('shop', owner)
  const skus = Array.from({ length: 200 }, (_, index) => `A-${index}`)
  await retailReference(client, skus)
  await expectStatus(client.call('PUT', '/settings/change.events.enabled', { value: 'true' }), 202, 'events on')
  await expectStatus(
    client.call(
      'POST',
      '/article/batch',
      skus.map((sku) => ({ sku, name: `article ${sku}` })),
    ),
    202,
    'articles',
  )
  await writeRetailPrices(client, skus, 10)
  const webhook = await expectStatus(client.call('POST', '/webhooks', { url: `${receiver.url}/shop` }), 201, 'webhook')
  const headers = await consoleHeaders(server, owner, 'shop')

  const beforeBackup = await readAll(client, skus)
  const singleBefore = await client.get(`/price/${skus[5]}/RETAIL/SE`)
  const backup = await expectStatus(
    server.request('POST', '/t/shop/management/backups', { headers, body: {} }),
    201,
    'backup',
  )
  const articleEntry = (await entriesAfter(client, 0)).find(
    (entry) => entry.entity_type === 'article' && entry.entity_code === 'A-0',
  )!

  // Changes of every kind after the backup.
  await expectStatus(client.call('PUT', '/article/A-0', { name: 'renamed' }), 202, 'rename')
  await expectStatus(client.call('DELETE', '/article/A-1'), 202, 'delete')
  await expectStatus(client.call('PUT', '/article/NEW-1', { name: 'new' }), 202, 'new article')
  await writeRetailPrices(client, skus, 500)
  await expectStatus(
    client.call('PUT', '/pricelist/EXTRA', { currency_code: 'EUR', vat_mode: 'GROSS' }),
    202,
    'new pricelist',
  )
  await expectStatus(client.call('PUT', '/price/A-2/EXTRA', { price: 99 }), 202, 'price on the new pricelist')
  await expectStatus(client.call('PUT', '/settings/strict.pricelist.validation', { value: 'true' }), 202, 'setting')
  const changed = await readAll(client, skus)
  t.not(JSON.stringify(changed), JSON.stringify(beforeBackup), 'the changes show before the restore')
  const staleTag = (await client.get(`/price/${skus[5]}/RETAIL/SE`)).headers.get('etag')!
  const head = await lastSequence(client)
  receiver.requests.length = 0

  const started = await server.request('POST', '/t/shop/management/restore', {
    headers,
    body: { backup_id: backup.body.id },
  })
  t.equal(started.status, 202)
  t.equal(started.body.status, 'in_progress')
  t.equal(started.body.backup_id, backup.body.id)
  t.match(started.body.started_at, /^\d{4}-\d\d-\d\dT/)
  t.equal(started.body.completed_at, null)
  t.equal(started.body.error, null)
  const final = await waitForRestore('/t/shop/management/restore/status', headers)
  t.equal(final.status, 'completed')
  t.equal(final.backup_id, backup.body.id)
  t.equal(final.started_at, started.body.started_at)
  t.ok(final.completed_at >= final.started_at, 'completed after it started')
  t.equal(final.error, null)

  t.same(
    await readAll(client, skus),
    beforeBackup,
    'every read answers the backup content: lists, settings, worker and main-thread queries, the single read',
  )
  const single = await client.call('GET', `/price/${skus[5]}/RETAIL/SE`, undefined, { 'if-none-match': staleTag })
  t.equal(single.status, 200, 'the ETag of the state before the restore no longer matches')
  t.equal(single.headers.get('etag'), singleBefore.headers.get('etag'), "the ETag is the backup state's again")
  t.equal((await client.get('/article/NEW-1')).status, 404, 'an article created after the backup is gone')
  t.equal((await client.get('/article/A-1')).status, 200, 'the deleted one is back')

  const entries = await entriesAfter(client, head)
  const described = (entry: ChangelogEntry) =>
    `${entry.entity_type} ${entry.entity_code}${entry.composite_key === null ? '' : `/${entry.composite_key}`} ${entry.change_type}`
  const expected = [
    'article A-0 updated',
    'article A-1 created',
    'article NEW-1 deleted',
    'pricelist EXTRA deleted',
    'settings strict.pricelist.validation deleted',
    'price A-2/EXTRA deleted',
    ...skus.map((sku) => `price ${sku}/RETAIL updated`),
  ]
  t.same(
    entries.map(described).sort(),
    expected.sort(),
    'one entry per entity whose content differs, of the right change type',
  )
  t.same(
    entries.map((entry) => entry.sequence),
    entries.map((_, index) => head + 1 + index),
    'the sequence keeps rising, without a gap',
  )
  t.ok(
    entries.every((entry) => entry.changed_by === owner),
    'changed by the person who restored',
  )
  t.equal(
    entries.find((entry) => entry.entity_code === 'A-0')!.content_hash,
    articleEntry.content_hash,
    "the restored article's content hash is its backed-up content's",
  )
  const delivered = await waitForSequences(
    receiver,
    entries.map((entry) => entry.sequence),
    20_000,
  )
  t.ok(
    delivered.every((request) => request.path === '/shop'),
    `the webhook (${webhook.body.id}) received every restore entry`,
  )
})

t.test(
  'during a restore: writes 503 with Retry-After 15, reads answer, one swap, other tenants write on',
  async (t) => {
    const owner = 'owner@big.example'
    const client = await ownedTenant('big', owner, 'enterprise')
    const other = await ownedTenant('neighbour', 'someone@neighbour.example')
    await retailReference(other, ['N-1'])
    const skus = Array.from({ length: 40_000 }, (_, index) => `B-${index}`)
    await retailReference(client, skus)
    await writeRetailPrices(client, skus, 1_000_000)
    const headers = await consoleHeaders(server, owner, 'big')
    const backup = await expectStatus(
      server.request('POST', '/t/big/management/backups', { headers, body: { retain: true } }),
      201,
      'backup',
    )
    await writeRetailPrices(client, skus, 2_000_000)

    const probe = skus.filter((_, index) => index % 400 === 0)
    t.equal(probe.length, 100)
    /** 'old' / 'restored' when every price of the 100-SKU answer is of one state; 'mixed' otherwise. */
    const state = async (): Promise<string> => {
      const answer = await expectStatus(
        client.call('POST', '/price/query', query(probe, ['RETAIL'])),
        200,
        'query during restore',
      )
      const bases = new Set(
        answer.body.items.map((item: { sku: string; net: number }) => item.net - Number(item.sku.slice(2))),
      )
      if (bases.size !== 1) return 'mixed'
      return bases.has(2_000_000) ? 'old' : bases.has(1_000_000) ? 'restored' : 'unknown'
    }
    t.equal(await state(), 'old')

    const started = await server.request('POST', '/t/big/management/restore', {
      headers,
      body: { backup_id: backup.body.id },
    })
    t.equal(started.status, 202)
    const second = await server.request('POST', '/t/big/management/restore', {
      headers,
      body: { backup_id: backup.body.id },
    })
    t.equal(second.status, 409, 'a second restore while one runs: 409')
    t.equal(second.body.code, 'conflict')

    const refused = await client.call('PUT', `/price/${skus[0]}/RETAIL`, { price: 1 })
    t.equal(refused.status, 503, 'a write during the restore: 503')
    t.equal(refused.headers.get('retry-after'), '15')
    t.equal(refused.body.code, 'restoring')
    t.same(Object.keys(refused.body).slice(0, 4), ['timestamp', 'status', 'error', 'message'], "the spec's error body")
    t.equal((await client.call('POST', '/article/batch', [{ sku: 'X', name: 'x' }])).status, 503, 'a batch write too')
    t.equal(
      (await client.call('POST', '/webhooks', { url: `${receiver.url}/big` })).status,
      503,
      'and a webhook registration',
    )
    t.equal((await other.call('PUT', '/price/N-1/RETAIL', { price: 5 })).status, 202, 'another tenant writes on')

    const seen: string[] = []
    let writesRefused = 0
    for (;;) {
      const status = await server.request('GET', '/t/big/management/restore/status', { headers })
      seen.push(await state())
      if (status.body.status !== 'in_progress') {
        t.equal(status.body.status, 'completed')
        break
      }
      const write = await client.call('PUT', `/price/${skus[1]}/RETAIL`, { price: 1 })
      if (write.status === 503) writesRefused++
      else t.equal(write.status, 202, 'the only other answer: accepted, once the restore ended')
      t.equal((await client.get('/pricelist/RETAIL')).status, 200, 'a read answers')
    }
    t.notOk(
      seen.includes('mixed') || seen.includes('unknown'),
      `every 100-SKU answer was one state or the other (${seen.length} reads, ${writesRefused} more writes refused)`,
    )
    t.equal(seen[0], 'old', 'the first read during the restore answered the state before it')
    const firstRestored = seen.indexOf('restored')
    t.ok(
      seen.slice(0, firstRestored === -1 ? seen.length : firstRestored).every((value) => value === 'old') &&
        seen.slice(firstRestored).every((value) => value === 'restored'),
      'old until one swap, restored after',
    )
    t.equal(await state(), 'restored')
    t.equal((await client.call('PUT', `/price/${skus[0]}/RETAIL`, { price: 1 })).status, 202, 'writes resume')
  },
)

t.test('refusals: unknown backup, bad bodies, API keys; the operator restores through the admin API', async (t) => {
  const owner = 'owner@tiny.example'
  const client = await ownedTenant('tiny', owner)
  await expectStatus(client.call('PUT', '/currency/EUR', { is_active: true, vat_precision: 2 }), 202, 'currency')
  const headers = await consoleHeaders(server, owner, 'tiny')
  const idle = await server.request('GET', '/t/tiny/management/restore/status', { headers })
  t.same(
    idle.body,
    { status: 'idle', backup_id: null, started_at: null, completed_at: null, error: null },
    'idle before any restore',
  )
  const unknown = await server.request('POST', '/t/tiny/management/restore', {
    headers,
    body: { backup_id: 'tiny-2020-01-01T00-00-00.000000Z' },
  })
  t.equal(unknown.status, 404)
  t.equal(unknown.body.code, 'not_found')
  t.equal(
    (await server.request('POST', '/t/tiny/management/restore', { headers, body: {} })).status,
    400,
    'backup_id missing: 400',
  )
  t.equal(
    (await server.request('POST', '/t/tiny/management/restore', { headers, body: { backup_id: 7 } })).status,
    400,
    'not a string: 400',
  )
  t.equal(
    (await server.request('POST', '/t/tiny/management/restore', { headers, body: { backup_id: 'x'.repeat(201) } }))
      .status,
    400,
    'too long: 400',
  )
  t.equal(
    (await server.request('POST', '/t/tiny/management/restore', { headers, body: { backup_id: 'a', more: 1 } })).status,
    400,
    'an unknown field: 400',
  )
  const byKey = await client.call('POST', '/management/restore', { backup_id: 'a' })
  t.equal(byKey.status, 403, 'an API key never restores')
  t.equal((await client.get('/management/restore/status')).status, 403, 'nor reads the status')
  t.equal((await server.request('GET', '/t/tiny/management/restore/status')).status, 401, 'no credentials: 401')

  const backup = await expectStatus(server.admin('POST', '/admin/tenants/tiny/backups', {}), 201, 'operator backup')
  await expectStatus(
    client.call('PUT', '/currency/SEK', { is_active: true, vat_precision: 2 }),
    202,
    'a currency after the backup',
  )
  const started = await server.admin('POST', '/admin/tenants/tiny/restore', { backup_id: backup.body.id })
  t.equal(started.status, 202)
  t.equal(started.body.status, 'in_progress')
  const deadline = Date.now() + 30_000
  let status = await server.admin('GET', '/admin/tenants/tiny/restore/status')
  while (status.body.status === 'in_progress' && Date.now() < deadline)
    status = await server.admin('GET', '/admin/tenants/tiny/restore/status')
  t.equal(status.body.status, 'completed')
  t.same(
    await server.request('GET', '/t/tiny/management/restore/status', { headers }).then((answer) => answer.body),
    status.body,
    'the console sees the same status',
  )
  t.equal((await client.get('/currency/SEK')).status, 404, 'the currency written after the backup is gone')
  t.equal((await client.get('/currency/EUR')).status, 200, 'the one before it stays')
  t.equal((await server.admin('POST', '/admin/tenants/tiny/restore', { backup_id: 'nope' })).status, 404)
  t.equal(
    (await server.admin('POST', '/admin/tenants/nobody/restore', { backup_id: 'nope' })).status,
    404,
    'an unknown tenant: 404',
  )
})
