import t from 'tap'
import { indexAt, planWrite, viewAt, type Version } from '../../engine/temporal.js'
import { parseInstant, formatInstant } from '../../engine/time.js'
import { canonicalJson, contentHash } from '../../engine/hash.js'
import { Catalog, compositeKey, splitKey } from '../../engine/catalog.js'

function version(from: number, value: string | null): Version<string> {
  return { from, value, hash: value === null ? '' : contentHash(value), writtenAt: from, writtenBy: 'test' }
}

t.test('indexAt finds the last version starting at or before the instant', async (t) => {
  const versions = [version(10, 'a'), version(20, 'b'), version(30, 'c')]
  t.equal(indexAt(versions, 5), -1)
  t.equal(indexAt(versions, 10), 0)
  t.equal(indexAt(versions, 19), 0)
  t.equal(indexAt(versions, 20), 1)
  t.equal(indexAt(versions, 1000), 2)
  t.equal(indexAt([], 10), -1)
})

t.test('viewAt hides a deleted record and reports a scheduled deletion', async (t) => {
  const versions = [version(10, 'a'), version(20, null)]
  t.equal(viewAt(versions, 5), null, 'absent before it was written')
  const before = viewAt(versions, 15)
  t.equal(before?.value, 'a')
  t.equal(before?.deletedAt, 20, 'a deletion scheduled later is reported')
  t.equal(viewAt(versions, 20), null, 'absent at the deletion instant')
  const shown = viewAt(versions, 25, true)
  t.equal(shown?.value, 'a', 'include_deleted shows the last live version')
  t.equal(shown?.deletedAt, 20)
})

t.test('planWrite dedups identical content and classifies change types', async (t) => {
  const first = planWrite<string>(undefined, version(10, 'a'))
  t.equal(first?.changeType, 'created')
  t.equal(planWrite(first!.versions, version(15, 'a')), null, 'same content in force: no change')
  const second = planWrite(first!.versions, version(15, 'b'))
  t.equal(second?.changeType, 'updated')
  t.same(
    second!.versions.map((v) => v.from),
    [10, 15],
  )
  const replaced = planWrite(second!.versions, version(15, 'c'))
  t.same(
    replaced!.versions.map((v) => v.value),
    ['a', 'c'],
    'a write at the same instant replaces that version',
  )
  const deleted = planWrite(replaced!.versions, version(20, null))
  t.equal(deleted?.changeType, 'deleted')
  t.equal(planWrite(deleted!.versions, version(25, null)), null, 'deleting what is deleted changes nothing')
  const recreated = planWrite(deleted!.versions, version(30, 'd'))
  t.equal(recreated?.changeType, 'created', 'a write after a delete creates again')
  t.ok(planWrite(first!.versions, version(15, 'a'), { force: true }), 'force records an identical write')
})

t.test('planWrite keeps scheduled versions unless removeLater', async (t) => {
  const base = [version(10, 'a'), version(50, 'z')]
  const kept = planWrite(base, version(20, 'b'))
  t.same(
    kept!.versions.map((v) => v.value),
    ['a', 'b', 'z'],
  )
  const dropped = planWrite(base, version(20, 'b'), { removeLater: true })
  t.same(
    dropped!.versions.map((v) => v.value),
    ['a', 'b'],
  )
  const onlyDrop = planWrite(base, version(20, 'a'), { removeLater: true })
  t.ok(onlyDrop, 'same content but future versions to remove is still a change')
  t.same(
    onlyDrop!.versions.map((v) => v.value),
    ['a', 'a'],
  )
})

t.test('instants parse RFC 3339 with offsets and bare dates, and format as UTC', async (t) => {
  t.equal(parseInstant('2025-01-02'), Date.UTC(2025, 0, 2))
  t.equal(parseInstant('2025-01-02T10:00:00Z'), Date.UTC(2025, 0, 2, 10))
  t.equal(parseInstant('2025-01-02T10:00:00+01:00'), Date.UTC(2025, 0, 2, 9))
  t.equal(parseInstant('2025-01-02T10:00:00.123-02:30'), Date.UTC(2025, 0, 2, 12, 30, 0, 123))
  t.ok(Number.isNaN(parseInstant('2025-01-02T10:00:00')), 'a time without offset is refused')
  t.ok(Number.isNaN(parseInstant('2025-02-30')), 'an impossible date is refused')
  t.ok(Number.isNaN(parseInstant('yesterday')))
  t.equal(formatInstant(Date.UTC(2025, 0, 2, 9)), '2025-01-02T09:00:00Z', 'no milliseconds when zero')
  t.equal(formatInstant(Date.UTC(2025, 0, 2, 9, 0, 0, 5)), '2025-01-02T09:00:00.005Z')
})

t.test('content hashes ignore key order and differ on content', async (t) => {
  t.equal(canonicalJson({ b: 1, a: [2, { d: 1, c: 2 }] }), '{"a":[2,{"c":2,"d":1}],"b":1}')
  t.equal(contentHash({ a: 1, b: 2 }), contentHash({ b: 2, a: 1 }))
  t.not(contentHash({ a: 1 }), contentHash({ a: 2 }))
  t.match(contentHash('x'), /^[0-9a-f]{32}$/)
})

t.test('the catalogue counts live keys for quotas and keeps keys sorted', async (t) => {
  const catalog = new Catalog()
  const write = (sku: string, value: unknown, from: number) => {
    const change = catalog.plan('article', sku, value as never, from, from, 'test')
    if (change !== null) catalog.apply(change.type, change.key, change.versions)
    return change
  }
  write('b', { name: 'B', type: null, metadata: {} }, 10)
  write('a', { name: 'A', type: null, metadata: {} }, 10)
  t.equal(catalog.liveCount('article'), 2)
  t.same(catalog.keys('article'), ['a', 'b'])
  write('a', null, 20)
  t.equal(catalog.liveCount('article'), 1, 'a deleted key no longer counts')
  t.equal(write('a', null, 30), null, 'deleting again changes nothing')
  write('a', { name: 'A2', type: null, metadata: {} }, 40)
  t.equal(catalog.liveCount('article'), 2)
  t.same(splitKey(compositeKey('SE', 'standard')), ['SE', 'standard'])
  t.same(splitKey('plain'), ['plain', null])
})
