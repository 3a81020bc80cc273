/**
 * TenantStore gives its map's pages back (storage/map-release.ts): after `dueBytes` written, writes
 * wait while the environment is reopened, and after a quiet `idleMs` it reopens by itself. Writes
 * from many concurrent callers keep their order and all land; reads in every turn of the event
 * loop never meet a closed environment; the mapping's resident pages drop after a reopen. A load in
 * chunks (startup) that outlasts the quiet time after writes (a restore finished at start) is never
 * cut by a reopen.
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { articleEntries, temporaryDir } from '../helpers/store-fixtures.js'
import { Catalog, type Change } from '../../engine/catalog.js'
import { TenantStore } from '../../storage/tenant-store.js'

/** Resident KiB of this process's mappings of the environment's data file. */
function mappedResidentKib(directory: string): number {
  const file = path.join(directory, 'data.mdb')
  let inFile = false
  let total = 0
  for (const line of readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    const header = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line)
    if (header !== null) {
      inFile = header[1] === file
      continue
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line)
    if (rss !== null && inFile) total += Number(rss[1])
  }
  return total
}

t.test('concurrent writes across many reopens all land, in order, and reads never fail', async (t) => {
  const directory = temporaryDir(t, 'map-release')
  const store = new TenantStore(directory, { dueBytes: 256 * 1024, idleBytes: 1, idleMs: 10 })
  let reads = 0
  let readFailures = 0
  let reading = true
  // A reader in every turn of the event loop, as request handlers would be.
  const reader = (): void => {
    if (!reading) return
    try {
      const page = store.readLog(1, 5, null)
      if (store.durableSequence > 0 && page.length === 0) readFailures++
      reads++
    } catch {
      readFailures++
    }
    setImmediate(reader)
  }
  reader()
  const writes: Promise<number[]>[] = []
  for (let round = 0; round < 40; round++) {
    // Eight writers at a time, as concurrent requests: the due reopen waits for them to drain.
    for (let writer = 0; writer < 8; writer++)
      writes.push(
        store
          .commit([], articleEntries(50, `r${round}w${writer}`, 200))
          .then((done) => done.map((entry) => entry.sequence)),
      )
    await new Promise((resolve) => setImmediate(resolve))
  }
  const sequences = (await Promise.all(writes)).flat()
  reading = false
  t.ok(store.mapRelease.count >= 5, `reopened ${store.mapRelease.count} times (256 KiB due, 40 x 8 x ~15 KiB written)`)
  t.same(
    sequences,
    Array.from({ length: 40 * 8 * 50 }, (_, index) => index + 1),
    'every write landed, sequences in call order',
  )
  t.equal(readFailures, 0, `${reads} reads in between, none failed`)
  const log = store.readLog(1, 100_000, null)
  t.equal(log.length, 16_000)
  t.equal(log[15_999]!.entityCode, `r39w7-49-${'x'.repeat(200)}`)
  await store.close()
  const reopened = new TenantStore(directory)
  t.equal(reopened.sequence, 16_000, 'the tail survives a reopen of the store')
  await reopened.close()
})

t.test('a quiet store reopens by itself, and its mapping holds fewer pages afterwards', async (t) => {
  const directory = temporaryDir(t, 'map-release')
  const store = new TenantStore(directory, { dueBytes: Number.POSITIVE_INFINITY, idleBytes: 1024 * 1024, idleMs: 50 })
  for (let round = 0; round < 40; round++) await store.commit([], articleEntries(200, `q${round}`, 200))
  // Read everything once, so that the whole file is mapped in.
  t.equal(store.readLog(1, 100_000, null).length, 8_000)
  const before = mappedResidentKib(directory)
  t.equal(store.mapRelease.count, 0, 'not reopened while writes went on (due is never reached)')
  await new Promise((resolve) => setTimeout(resolve, 300))
  t.equal(store.mapRelease.count, 1, 'reopened once after 50 ms without writes')
  const after = mappedResidentKib(directory)
  t.ok(before > 1024, `the mapping held ${before} KiB before`)
  t.ok(after < before / 4, `and ${after} KiB after`)
  t.equal(store.readLog(7_999, 10, null).length, 2, 'reads go on after the reopen')
  await new Promise((resolve) => setTimeout(resolve, 200))
  t.equal(store.mapRelease.count, 1, 'no reopen without new writes')
  await store.close()
})

t.test('a load in chunks that outlasts the quiet time after writes is not cut by a reopen', async (t) => {
  // The start after a SIGKILL during a restore writes the rest of the restore, then loads the
  // tenant in chunks with the event loop free between them; with a large tenant the load outlasts
  // `idleMs`, and the reopen closed the environment under it ("Can not renew a transaction from
  // a closed database").
  const directory = temporaryDir(t, 'map-release-load')
  const store = new TenantStore(directory, { dueBytes: Number.POSITIVE_INFINITY, idleBytes: 1, idleMs: 1 })
  const source = new Catalog()
  const changes: Change[] = []
  for (let index = 0; index < 400; index++) {
    const change = source.plan(
      'article',
      `A-${index}`,
      { name: `a${index}`, type: null, metadata: {} } as never,
      1_000,
      1_000,
      'test',
    )!
    source.apply('article', `A-${index}`, change.versions)
    changes.push(change)
  }
  await store.commit(changes)
  // One key per chunk: 400 turns of the event loop, far longer than the 1 ms quiet time.
  const loaded = new Catalog()
  const started = performance.now()
  t.equal(await store.loadIntoGradually(loaded, 1), 400, 'every key loaded')
  t.ok(performance.now() - started > 1, 'the load outlasted the quiet time')
  t.equal(loaded.liveCount('article'), 400)
  await new Promise((resolve) => setTimeout(resolve, 50))
  t.ok(store.mapRelease.count >= 1, `the quiet reopen still happens, after the load (${store.mapRelease.count})`)
  t.equal(store.readLog(400, 1, null).length, 1, 'reads go on after it')
  await store.close()
})
