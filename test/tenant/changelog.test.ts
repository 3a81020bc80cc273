import t from 'tap'
import { readChangelog, type ChangelogEntry } from '../helpers/changelog.js'
import { suiteServer } from '../helpers/suite.js'

const rfc3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/

const {
  server,
  tenants: { shop },
} = await suiteServer({ tenants: { shop: {} } })

function summary(entries: ChangelogEntry[]): string[] {
  return entries.map((entry) => `${entry.entity_type} ${entry.change_type} ${entry.entity_code}`)
}

t.test('an empty changelog answers no items, has_more false and a cursor to poll from', async (t) => {
  const answer = await shop.get('/changelog')
  t.equal(answer.status, 200)
  t.same(answer.body.items, [])
  t.equal(answer.body.has_more, false)
  t.type(answer.body.next_cursor, 'string')
  t.ok(answer.body.next_cursor.length > 0)
})

t.test('writes of articles and settings appear in order with created, updated and deleted', async (t) => {
  t.equal((await shop.call('PUT', '/article/A1', { name: 'first' })).status, 202)
  t.equal((await shop.call('PUT', '/article/A1', { name: 'first' })).status, 202, 'identical rewrite')
  t.equal((await shop.call('PUT', '/article/A1', { name: 'second' })).status, 202)
  const batch = await shop.call('POST', '/article/batch', [
    { sku: 'A2', name: 'two' },
    { sku: 'A3', name: 'three' },
  ])
  t.same(batch.body, { accepted: 2, failed: [] })
  t.equal((await shop.call('DELETE', '/article/A2')).status, 202)
  t.equal((await shop.call('PUT', '/settings/default.tax.area', { value: 'NO' })).status, 202)
  t.equal((await shop.call('PUT', '/article/A1', { name: 'first' })).status, 202, 'back to the first content')

  const entries = await readChangelog(shop)
  t.same(summary(entries), [
    'article created A1',
    'article updated A1',
    'article created A2',
    'article created A3',
    'article deleted A2',
    'settings created default.tax.area',
    'article updated A1',
  ])
  for (let index = 1; index < entries.length; index++) {
    t.ok(entries[index]!.sequence > entries[index - 1]!.sequence, 'sequence increases')
  }
  for (const entry of entries) {
    t.equal(entry.changed_by, shop.clientId)
    t.equal(entry.composite_key, null)
    t.match(entry.changed_at, rfc3339)
    t.same(Object.keys(entry).sort(), [
      'change_type',
      'changed_at',
      'changed_by',
      'composite_key',
      'content_hash',
      'entity_code',
      'entity_type',
      'sequence',
    ])
  }
  t.equal(entries[0]!.content_hash, entries[6]!.content_hash, 'same content, same hash')
  t.not(entries[0]!.content_hash, entries[1]!.content_hash, 'different content, different hash')
  t.match(entries[0]!.content_hash, /^[0-9a-f]{32}$/)
})

t.test('an identical rewrite records nothing', async (t) => {
  const before = (await readChangelog(shop)).length
  t.equal((await shop.call('PUT', '/article/A3', { name: 'three' })).status, 202)
  t.equal((await shop.call('PUT', '/settings/default.tax.area', { value: 'NO' })).status, 202)
  t.equal((await readChangelog(shop)).length, before)
})

t.test('pages of limit 2 walk every entry via next_cursor, has_more false at the end', async (t) => {
  const all = await readChangelog(shop)
  t.ok(all.length >= 5)
  const walked: ChangelogEntry[] = []
  let answer = await shop.get('/changelog?limit=2')
  let pages = 1
  while (answer.body.has_more) {
    t.equal(answer.body.items.length, 2, 'a page before the last is full')
    walked.push(...answer.body.items)
    answer = await shop.get(`/changelog?limit=2&cursor=${answer.body.next_cursor}`)
    pages++
    if (pages > 50) break
  }
  walked.push(...answer.body.items)
  t.same(walked, all)
  t.equal(pages, Math.ceil(all.length / 2))

  const finalCursor = answer.body.next_cursor
  const empty = await shop.get(`/changelog?limit=2&cursor=${finalCursor}`)
  t.equal(empty.status, 200)
  t.same(empty.body.items, [])
  t.equal(empty.body.has_more, false)
  t.equal(empty.body.next_cursor, finalCursor, 'an empty page keeps the polling position')

  t.equal((await shop.call('PUT', '/article/A4', { name: 'four' })).status, 202)
  const fresh = await shop.get(`/changelog?limit=2&cursor=${finalCursor}`)
  t.same(summary(fresh.body.items), ['article created A4'])
  t.equal(fresh.body.items[0].sequence, all[all.length - 1]!.sequence + 1)
  t.equal(fresh.body.has_more, false)
  t.not(fresh.body.next_cursor, finalCursor)
  t.same((await shop.get(`/changelog?cursor=${fresh.body.next_cursor}`)).body.items, [])
})

t.test('entity_type filters the entries, and its cursor continues the filtered feed', async (t) => {
  const settings = await shop.get('/changelog?entity_type=settings')
  t.equal(settings.status, 200)
  t.same(summary(settings.body.items), ['settings created default.tax.area'])
  const articles = await readChangelog(shop, 'entity_type=article')
  t.ok(articles.length >= 6)
  t.ok(articles.every((entry) => entry.entity_type === 'article'))
  t.equal((await shop.get('/changelog?entity_type=pricelist')).body.items.length, 0)

  t.equal((await shop.call('PUT', '/article/A5', { name: 'five' })).status, 202)
  t.equal((await shop.call('PUT', '/settings/ingest.skip.dedup', { value: 'true' })).status, 202)
  const next = await shop.get(`/changelog?entity_type=settings&cursor=${settings.body.next_cursor}`)
  t.same(summary(next.body.items), ['settings created ingest.skip.dedup'])
})

t.test('an unknown entity_type answers 400', async (t) => {
  const answer = await shop.get('/changelog?entity_type=widget')
  t.equal(answer.status, 400)
  t.equal(answer.body.code, 'validation_failed')
  t.match(answer.body.message, /article/)
})

t.test('a limit outside 1-1000 or not an integer answers 400', async (t) => {
  for (const limit of ['0', '1001', 'abc', '1.5', '-1']) {
    const answer = await shop.get(`/changelog?limit=${limit}`)
    t.equal(answer.status, 400, `limit=${limit}`)
    t.equal(answer.body.code, 'validation_failed')
  }
  t.equal((await shop.get('/changelog?limit=1000')).status, 200)
  const one = await shop.get('/changelog?limit=1')
  t.equal(one.body.items.length, 1)
  t.equal(one.body.has_more, true)
})

t.test('a malformed cursor answers 400', async (t) => {
  const forged = [
    'not-a-cursor!!',
    'abc',
    Buffer.from('v2:1').toString('base64url'),
    Buffer.from('v1:abc').toString('base64url'),
    Buffer.from('v1:01').toString('base64url'),
    Buffer.from('v1:-3').toString('base64url'),
    `${Buffer.from('v1:1').toString('base64url')}==`,
    Buffer.from('v1:99999').toString('base64url'),
  ]
  for (const cursor of forged) {
    const answer = await shop.get(`/changelog?cursor=${encodeURIComponent(cursor)}`)
    t.equal(answer.status, 400, cursor)
    t.equal(answer.body.code, 'validation_failed')
  }
  t.equal((await shop.get('/changelog?cursor=')).status, 400, 'an empty cursor')
})

t.test('a cursor older than the oldest held entry answers 410 cursor_expired', async (t) => {
  // Cursors the service issues start at 1; position 0 lies before every held entry.
  const beforeStart = Buffer.from('v1:0').toString('base64url')
  const answer = await shop.get(`/changelog?cursor=${beforeStart}`)
  t.equal(answer.status, 410)
  t.equal(answer.body.status, 410)
  t.equal(answer.body.error, 'cursor_expired')
  t.equal(answer.body.code, 'cursor_expired')
  t.equal(answer.body.oldest_available_sequence, 1)
  t.type(answer.body.message, 'string')
  t.match(answer.body.timestamp, rfc3339)
})

t.test('a refused write records nothing', async (t) => {
  const before = (await readChangelog(shop)).length
  t.equal((await shop.call('PUT', '/settings/strict.article.validation', { value: 'maybe' })).status, 400)
  t.equal((await shop.call('PUT', '/article/A9', { name: 'x', colour: 'red' })).status, 400)
  t.equal((await readChangelog(shop)).length, before)
})

t.test('entries and cursors survive a restart', async (t) => {
  const before = await readChangelog(shop)
  const last = await shop.get('/changelog?limit=1000')
  await server.restart()
  await shop.refreshToken()
  t.same(await readChangelog(shop), before)
  const afterCursor = await shop.get(`/changelog?cursor=${last.body.next_cursor}`)
  t.equal(afterCursor.status, 200)
  t.same(afterCursor.body.items, [])
  t.equal((await shop.call('PUT', '/article/A6', { name: 'six' })).status, 202)
  const fresh = await shop.get(`/changelog?cursor=${last.body.next_cursor}`)
  t.same(summary(fresh.body.items), ['article created A6'])
  t.equal(
    fresh.body.items[0].sequence,
    before[before.length - 1]!.sequence + 1,
    'the sequence continues after a restart',
  )
})
