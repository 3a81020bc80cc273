/**
 * Changelog capacity against the real server (docs/api.md "Changelog", Capacity): with the
 * operator's `limits.changelog_capacity` set small, the commit that takes the log past it evicts the
 * oldest entries, so the log holds exactly the newest `capacity` entries; reads without a cursor
 * (filtered or not) start at the oldest held entry; a cursor older than it answers 410
 * cursor_expired with `oldest_available_sequence`; eviction survives a restart and a SIGKILL;
 * sequences are never reused; an operator PATCH raises, lowers or removes (null) the capacity; the
 * plans' capacities are 1M / 10M / 100M. Cursors are built here from their documented form
 * (base64url of `v1:<sequence>`), independently of the code under test.
 */
import t, { type Test } from 'tap'
import { effectiveLimits } from '../../tenant/plans.js'
import { expectStatus, walkChangelog, type ChangelogEntry, type ChangelogWalk } from '../helpers/changelog.js'
import type { Answer, TenantClient } from '../helpers/server.js'
import { suiteServer } from '../helpers/suite.js'

const rfc3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/

const { server } = await suiteServer()

const cursorAt = (sequence: number): string => Buffer.from(`v1:${sequence}`, 'utf8').toString('base64url')

/** One PUT per article, so each is its own commit and its own entry. */
async function writeArticles(client: TenantClient, prefix: string, first: number, count: number): Promise<void> {
  for (let index = first; index < first + count; index++) {
    await expectStatus(
      client.call('PUT', `/article/${prefix}-${String(index).padStart(3, '0')}`, { name: `n${index}` }),
      202,
      `article ${index}`,
    )
  }
}

/** Every entry from `cursor` (or from the start), walking pages of `limit`. */
async function walk(
  client: TenantClient,
  options: { limit?: number; cursor?: string; entityType?: string } = {},
): Promise<ChangelogWalk> {
  const query = new URLSearchParams({ limit: String(options.limit ?? 1000) })
  if (options.entityType !== undefined) query.set('entity_type', options.entityType)
  return walkChangelog(client, query.toString(), options.cursor)
}

const sequences = (entries: readonly ChangelogEntry[]): number[] => entries.map((entry) => entry.sequence)
const range = (first: number, last: number): number[] =>
  Array.from({ length: last - first + 1 }, (_, index) => first + index)

/** The log holds exactly sequences first..last: no-cursor read, paged walk, and the 410 below first. */
async function expectHeld(
  t: Test,
  client: TenantClient,
  first: number,
  last: number,
  what: string,
): Promise<ChangelogEntry[]> {
  const read = await client.get('/changelog?limit=1000')
  t.equal(read.status, 200, `${what}: read`)
  t.same(sequences(read.body.items), range(first, last), `${what}: a read without a cursor answers ${first}..${last}`)
  const paged = await walk(client, { limit: 3 })
  t.same(
    sequences(paged.entries),
    range(first, last),
    `${what}: walking pages of 3 gives the same ${last - first + 1} entries`,
  )
  if (first > 1) {
    const expired = await client.get(`/changelog?cursor=${cursorAt(first - 1)}`)
    t.equal(expired.status, 410, `${what}: a cursor just below the oldest answers 410`)
    t.equal(expired.body?.oldest_available_sequence, first, `${what}: oldest_available_sequence ${first}`)
  }
  const atOldest = await client.get(`/changelog?cursor=${cursorAt(first)}&limit=1`)
  t.equal(atOldest.status, 200, `${what}: a cursor at the oldest answers 200`)
  t.same(sequences(atOldest.body.items ?? []), first <= last ? [first] : [], `${what}: and starts there`)
  return read.body.items
}

t.test(
  'past the capacity the log holds exactly the newest entries; older cursors answer 410 cursor_expired',
  async (t) => {
    const client = await server.tenant('cap', { limits: { changelog_capacity: 10 } })
    await writeArticles(client, 'A', 1, 2)
    const early = await client.get('/changelog?limit=1')
    t.equal(early.status, 200)
    const heldCursor: string = early.body.next_cursor
    await writeArticles(client, 'A', 3, 13)

    const items = await expectHeld(t, client, 6, 15, '15 entries, capacity 10')
    t.same(
      items.map((entry) => entry.entity_code),
      range(6, 15).map((index) => `A-${String(index).padStart(3, '0')}`),
      'the newest ten articles',
    )

    const expired = await client.get(`/changelog?cursor=${cursorAt(3)}`)
    t.equal(expired.status, 410)
    t.same(
      Object.keys(expired.body).sort(),
      ['code', 'error', 'message', 'oldest_available_sequence', 'request_id', 'status', 'timestamp'],
      'the documented fields',
    )
    t.equal(expired.body.error, 'cursor_expired')
    t.equal(expired.body.code, 'cursor_expired')
    t.equal(expired.body.status, 410)
    t.equal(expired.body.oldest_available_sequence, 6)
    t.type(expired.body.message, 'string')
    t.ok(expired.body.message.length > 0, 'a message')
    t.match(expired.body.timestamp, rfc3339)

    const stale = await client.get(`/changelog?cursor=${heldCursor}`)
    t.equal(stale.status, 410, 'a next_cursor handed out before the eviction answers 410')
    t.equal(stale.body.oldest_available_sequence, 6)
    const filteredStale = await client.get(`/changelog?entity_type=article&cursor=${cursorAt(1)}`)
    t.equal(filteredStale.status, 410, 'also with entity_type')
    t.equal(filteredStale.body.oldest_available_sequence, 6)

    const end = await client.get(`/changelog?cursor=${cursorAt(16)}`)
    t.equal(end.status, 200, 'the cursor after the last entry answers 200')
    t.same(end.body.items, [])
    t.equal(
      (await client.get(`/changelog?cursor=${cursorAt(17)}`)).status,
      400,
      'a cursor ahead of the log still answers 400',
    )
  },
)

t.test('sequences are never reused: new entries continue the sequence and push the oldest on', async (t) => {
  const client = await server.tenant('cap2', { limits: { changelog_capacity: 10 } })
  await writeArticles(client, 'A', 1, 15)
  await writeArticles(client, 'B', 1, 1)
  const items = await expectHeld(t, client, 7, 16, 'one more write')
  t.equal(items[items.length - 1]?.entity_code, 'B-001', 'the newest entry is the last write')
  await expectStatus(client.call('DELETE', '/article/A-015'), 202, 'delete')
  const after = await expectHeld(t, client, 8, 17, 'a delete too')
  t.same([after[9]?.change_type, after[9]?.entity_code], ['deleted', 'A-015'])
})

t.test('an entity_type read after eviction starts at the oldest held entry of that type', async (t) => {
  const client = await server.tenant('mix', { limits: { changelog_capacity: 10 } })
  await expectStatus(client.call('PUT', '/settings/default.tax.area', { value: 'AA' }), 202, 'setting 1') // 1
  await expectStatus(client.call('PUT', '/settings/default.tax.area', { value: 'BB' }), 202, 'setting 2') // 2
  const firstBatch = [1, 2, 3, 4, 5].map((index) => ({ sku: `M-${index}` }))
  await expectStatus(client.call('POST', '/article/batch', firstBatch), 202, 'batch 1') // 3..7, one run
  await expectStatus(client.call('PUT', '/settings/default.tax.area', { value: 'CC' }), 202, 'setting 3') // 8
  const secondBatch = [6, 7, 8, 9, 10, 11, 12].map((index) => ({ sku: `M-${index}` }))
  await expectStatus(client.call('POST', '/article/batch', secondBatch), 202, 'batch 2') // 9..15

  await expectHeld(t, client, 6, 15, 'mixed types')
  const articles = await walk(client, { entityType: 'article' })
  t.same(
    sequences(articles.entries),
    [6, 7, 9, 10, 11, 12, 13, 14, 15],
    'articles from 6: the evicted part of a batch is skipped',
  )
  t.same(articles.entries.map((entry) => entry.entity_code).slice(0, 2), ['M-4', 'M-5'])
  const articlePages = await walk(client, { entityType: 'article', limit: 2 })
  t.same(sequences(articlePages.entries), [6, 7, 9, 10, 11, 12, 13, 14, 15], 'the same in pages of 2')
  const settings = await walk(client, { entityType: 'settings' })
  t.same(sequences(settings.entries), [8], 'settings: only the held entry 8')
  const fromOldest = await walk(client, { entityType: 'settings', cursor: cursorAt(6) })
  t.same(sequences(fromOldest.entries), [8], 'a filtered read from the oldest cursor')
  const gone = await walk(client, { entityType: 'price' })
  t.same(gone.entries, [], 'a type with no entry answers none')
})

t.test('eviction survives a restart and a SIGKILL; the sequence goes on after both', async (t) => {
  const client = await server.tenant('durable', { limits: { changelog_capacity: 10 } })
  await writeArticles(client, 'A', 1, 15)
  await expectHeld(t, client, 6, 15, 'before the restart')

  await server.restart()
  await expectHeld(t, client, 6, 15, 'after a restart')
  await writeArticles(client, 'A', 16, 2)
  await expectHeld(t, client, 8, 17, 'a write after the restart continues the sequence')

  await server.kill()
  await server.restart()
  await expectHeld(t, client, 8, 17, 'after a SIGKILL')
  await writeArticles(client, 'A', 18, 1)
  const items = await expectHeld(t, client, 9, 18, 'a write after the SIGKILL')
  t.equal(items[9]?.entity_code, 'A-018')

  // Evicted in the last commit before the kill: the kill must not bring them back.
  await writeArticles(client, 'A', 19, 3)
  await server.kill()
  await server.restart()
  await expectHeld(t, client, 12, 21, 'the last acknowledged writes before a SIGKILL, and their eviction')
})

t.test('concurrent writes past the capacity leave exactly the newest entries, also after a restart', async (t) => {
  const client = await server.tenant('race', { limits: { changelog_capacity: 10 } })
  const writes: Promise<Answer>[] = []
  for (let index = 1; index <= 30; index++) writes.push(client.call('PUT', `/article/R-${index}`, { name: 'r' }))
  for (let index = 0; index < 4; index++) {
    writes.push(
      client.call(
        'POST',
        '/article/batch',
        [1, 2, 3].map((item) => ({ sku: `RB-${index}-${item}` })),
      ),
    )
  }
  const answers = await Promise.all(writes)
  t.same([...new Set(answers.map((answer) => answer.status))], [202], 'every write accepted')
  await expectHeld(t, client, 33, 42, '42 entries written concurrently')
  await server.restart()
  await expectHeld(t, client, 33, 42, 'after a restart: no evicted entry came back')
})

t.test('one batch larger than the capacity leaves exactly its newest entries', async (t) => {
  const client = await server.tenant('big', { limits: { changelog_capacity: 10 } })
  const batch = range(1, 25).map((index) => ({ sku: `G-${String(index).padStart(2, '0')}` }))
  const answer = await expectStatus(client.call('POST', '/article/batch', batch), 202, 'batch of 25')
  t.same(answer.body, { accepted: 25, failed: [] })
  const items = await expectHeld(t, client, 16, 25, 'a batch of 25')
  t.same(
    items.map((entry) => entry.entity_code),
    range(16, 25).map((index) => `G-${index}`),
    "the batch's last ten items",
  )
  const articles = await walk(client, { entityType: 'article' })
  t.same(sequences(articles.entries), range(16, 25), 'the filtered read too')
  const all = await client.get('/article')
  t.equal(all.body.length, 25, 'eviction drops log entries only: all 25 articles are stored')
})

t.test(
  'PATCH /admin/tenants/{slug}: a larger capacity stops eviction, a smaller one evicts at the next write, null is unlimited',
  async (t) => {
    const client = await server.tenant('grow', { limits: { changelog_capacity: 10 } })
    await writeArticles(client, 'A', 1, 15)
    await expectHeld(t, client, 6, 15, 'capacity 10')

    const raised = await server.admin('PATCH', '/admin/tenants/grow', { limits: { changelog_capacity: 20 } })
    t.equal(raised.status, 200)
    t.equal(raised.body.limits.changelog_capacity, 20, 'the tenant answers the new capacity')
    await writeArticles(client, 'A', 16, 5)
    await expectHeld(t, client, 6, 20, 'capacity 20: nothing evicted up to 20 entries held')
    await writeArticles(client, 'A', 21, 6)
    await expectHeld(t, client, 7, 26, 'capacity 20: past it, the newest 20')

    const lowered = await server.admin('PATCH', '/admin/tenants/grow', { limits: { changelog_capacity: 5 } })
    t.equal(lowered.status, 200)
    await writeArticles(client, 'A', 27, 1)
    await expectHeld(t, client, 23, 27, 'capacity 5: the next write evicts down to 5')

    const unlimited = await server.admin('PATCH', '/admin/tenants/grow', { limits: { changelog_capacity: null } })
    t.equal(unlimited.status, 200)
    t.equal(unlimited.body.limits.changelog_capacity, null)
    await writeArticles(client, 'A', 28, 15)
    await expectHeld(t, client, 23, 42, 'null: nothing is evicted any more')

    await server.restart()
    await writeArticles(client, 'A', 43, 1)
    await expectHeld(t, client, 23, 43, 'the override outlives a restart')
  },
)

t.test('a tenant created with changelog_capacity null keeps every entry', async (t) => {
  const client = await server.tenant('open', { limits: { changelog_capacity: null } })
  await writeArticles(client, 'A', 1, 15)
  await expectHeld(t, client, 1, 15, 'unlimited')
})

t.test('a capacity of 0 holds no entry, and the sequence still goes on', async (t) => {
  const client = await server.tenant('zero', { limits: { changelog_capacity: 0 } })
  await writeArticles(client, 'A', 1, 3)
  const read = await client.get('/changelog')
  t.equal(read.status, 200)
  t.same(read.body.items, [], 'nothing is held')
  t.equal(read.body.next_cursor, cursorAt(4), 'the read starts after the last sequence')
  const expired = await client.get(`/changelog?cursor=${cursorAt(1)}`)
  t.equal(expired.status, 410)
  t.equal(expired.body.oldest_available_sequence, 4)
})

t.test('a refused capacity (negative, not an integer) answers 400 and changes nothing', async (t) => {
  for (const value of [-1, 2.5, '10']) {
    const answer = await server.admin('PATCH', '/admin/tenants/cap', { limits: { changelog_capacity: value } })
    t.equal(answer.status, 400, `changelog_capacity ${JSON.stringify(value)}`)
    t.equal(answer.body?.code, 'validation_failed')
  }
  const tenant = await server.admin('GET', '/admin/tenants/cap')
  t.equal(tenant.body.limits.changelog_capacity, 10, 'still 10')
})

t.test(
  'the plans hold 1M / 10M / 100M entries; a starter tenant without an override evicts nothing early',
  async (t) => {
    t.equal(effectiveLimits('starter', {}).changelog_capacity, 1_000_000)
    t.equal(effectiveLimits('standard', {}).changelog_capacity, 10_000_000)
    t.equal(effectiveLimits('enterprise', {}).changelog_capacity, 100_000_000)
    t.equal(effectiveLimits('starter', { changelog_capacity: 10 }).changelog_capacity, 10, 'the override wins')
    t.equal(effectiveLimits('starter', { changelog_capacity: null }).changelog_capacity, null, 'null is unlimited')

    const client = await server.tenant('small', { tier: 'starter' })
    const record = await server.admin('GET', '/admin/tenants/small')
    t.equal(record.body.tier, 'starter')
    // The operator read shows the overrides (none here); should it show effective limits, it is the plan's.
    t.ok(
      [undefined, 1_000_000].includes(record.body.limits?.changelog_capacity),
      `limits ${JSON.stringify(record.body.limits)}`,
    )
    await writeArticles(client, 'A', 1, 15)
    await expectHeld(t, client, 1, 15, 'starter, 15 entries')
  },
)
