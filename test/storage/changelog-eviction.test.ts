/**
 * Changelog capacity on TenantStore directly (no server): the commit that passes the capacity
 * evicts exactly the oldest entries and their type-index runs in its own transaction; a batch
 * larger than the capacity keeps only its newest entries; a lowered capacity shrinks by at most
 * `evictPerCommitMax` per commit; the oldest sequence survives a reopen; sequences are not reused.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { open } from 'lmdb'
import t, { type Test } from 'tap'
import type { EntryContent } from '../../storage/log-entry.js'
import { environmentOptions } from '../../storage/options.js'
import { evictPerCommitMax, TenantStore } from '../../storage/tenant-store.js'

function temporaryDir(t: Test): string {
  const directory = mkdtempSync(path.join(tmpdir(), 'pricing-evict-'))
  t.teardown(() => rmSync(directory, { recursive: true, force: true }))
  return directory
}

function entries(count: number, type: EntryContent['entityType'] = 'article', prefix = 'A'): EntryContent[] {
  return Array.from({ length: count }, (_, index) => ({
    entityType: type,
    changeType: 'created' as const,
    entityCode: `${prefix}${index}`,
    compositeKey: null,
    changedAt: 1_000 + index,
    changedBy: 'tester',
    contentHash: `${index}`.padStart(32, '0'),
  }))
}

function sequences(store: TenantStore, from: number, type: string | null = null): number[] {
  return store.readLog(from, 100_000, type).map((entry) => entry.sequence)
}

/** Keys of the type index, read straight from the environment. */
async function typeRuns(directory: string): Promise<[string, number][]> {
  const root = open(environmentOptions(directory, 1 << 20))
  const runs = [...root.openDB<number | null, [string, number]>({ name: 'log_type' }).getKeys()] as [string, number][]
  await root.close()
  return runs
}

const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, index) => from + index)

t.test('the commit that passes the capacity evicts exactly the oldest entries', async (t) => {
  const directory = temporaryDir(t)
  const store = new TenantStore(directory)
  store.capacity = 10
  for (let index = 0; index < 15; index++)
    await store.commit([], entries(1, index % 2 === 0 ? 'article' : 'pricelist', `K${index}`))
  t.equal(store.oldestSequence(), 6)
  t.same(sequences(store, 6), range(6, 15))
  t.same(sequences(store, 1), range(6, 15), 'nothing older is left to read')
  t.same(sequences(store, 1, 'pricelist'), [6, 8, 10, 12, 14], 'the type index holds only held entries')
  await store.close()
  const runs = await typeRuns(directory)
  t.ok(
    runs.every(([, last]) => last >= 6),
    `no run ends before the oldest entry: ${JSON.stringify(runs)}`,
  )
  t.equal(runs.length, 10)
})

t.test('a batch larger than the capacity keeps its newest entries and the sequence continues', async (t) => {
  const directory = temporaryDir(t)
  const store = new TenantStore(directory)
  store.capacity = 10
  await store.commit([], entries(3))
  await store.commit([], entries(25, 'price', 'P'))
  t.equal(store.sequence, 28)
  t.equal(store.oldestSequence(), 19)
  t.same(sequences(store, 19), range(19, 28))
  t.same(sequences(store, 1, 'article'), [], 'the earlier articles are gone')
  t.same(sequences(store, 1, 'price'), range(19, 28), 'a run straddling the oldest entry reads its held part')
  await store.close()

  const reopened = new TenantStore(directory)
  t.equal(reopened.oldestSequence(), 19, 'the oldest sequence is read back at start')
  reopened.capacity = 10
  const [next] = await reopened.commit([], entries(1))
  t.equal(next!.sequence, 29, 'sequences are never reused')
  t.equal(reopened.oldestSequence(), 20)
  t.same(sequences(reopened, 1), range(20, 29))
  await reopened.close()
})

t.test('capacity null holds everything; capacity 0 holds nothing', async (t) => {
  const store = new TenantStore(temporaryDir(t))
  await store.commit([], entries(50))
  t.equal(store.oldestSequence(), 1)
  t.equal(sequences(store, 1).length, 50)
  store.capacity = 0
  await store.commit([], entries(2))
  t.equal(store.oldestSequence(), 53)
  t.same(sequences(store, 1), [])
  await store.close()
})

t.test('a lowered capacity evicts at most evictPerCommitMax entries per commit', async (t) => {
  const store = new TenantStore(temporaryDir(t))
  const total = evictPerCommitMax + 30_000
  for (let written = 0; written < total; written += 50_000)
    await store.commit([], entries(Math.min(50_000, total - written)))
  store.capacity = 5
  await store.commit([], entries(1))
  t.equal(store.oldestSequence(), 1 + evictPerCommitMax)
  t.equal(sequences(store, 1)[0], 1 + evictPerCommitMax)
  await store.commit([], entries(1))
  t.equal(store.oldestSequence(), total + 2 - 5 + 1, 'the next commit reaches the capacity')
  t.same(sequences(store, 1), range(total - 2, total + 2))
  await store.close()
})
