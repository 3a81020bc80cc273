/**
 * TenantStore gives its map's pages back (storage/map-release.ts): after `dueBytes` written, writes
 * wait while the environment is reopened, and after a quiet `idleMs` it reopens by itself. Writes
 * from many concurrent callers keep their order and all land; reads in every turn of the event
 * loop never meet a closed environment; the mapping's resident pages drop after a reopen.
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { articleEntries, temporaryDir } from './helpers/store-fixtures.js'
import { TenantStore } from '../storage/tenant-store.js'

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
    for (let writer = 0; writer < 8; writer++) writes.push(store.commit([], articleEntries(50, `r${round}w${writer}`, 200)).then((done) => done.map((entry) => entry.sequence)))
    await new Promise((resolve) => setImmediate(resolve))
  }
  const sequences = (await Promise.all(writes)).flat()
  reading = false
  t.ok(store.mapRelease.count >= 5, `reopened ${store.mapRelease.count} times (256 KiB due, 40 x 8 x ~15 KiB written)`)
  t.same(sequences, Array.from({ length: 40 * 8 * 50 }, (_, index) => index + 1), 'every write landed, sequences in call order')
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
