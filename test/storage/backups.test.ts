/**
 * Tenant backups on disk (storage/backup/backups.ts) on a real TenantStore: a backup taken while
 * writes go on is a consistent copy (it opens, its log tail and chain verify, it holds at least
 * what was durable when it started and nothing torn); ids have the spec's shape; listing is
 * newest first and never shows a partial copy; the disk bound refuses before writing anything;
 * a partial copy left by a crash is removed at the next start.
 */
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { backupId, BackupRefused, isoMicros, TenantBackups } from '../../storage/backup/backups.js'
import { TenantStore } from '../../storage/tenant-store.js'
import { articleEntries, temporaryDir } from '../helpers/store-fixtures.js'

t.test('ids have the spec shape, with microseconds, colons as hyphens', async (t) => {
  const created = isoMicros(Date.UTC(2026, 10, 25, 18, 33, 12, 123) * 1000 + 456)
  t.equal(created, '2026-11-25T18:33:12.123456Z')
  t.equal(backupId('acme', created), 'acme-2026-11-25T18-33-12.123456Z')
})

t.test('a backup taken while writes go on is whole and verified; listing is newest first', async (t) => {
  const directory = temporaryDir(t, 'backup')
  const store = new TenantStore(path.join(directory, 'tenant'))
  for (let round = 0; round < 20; round++) await store.commit([], articleEntries(500, `before${round}`))
  const backups = new TenantBackups(path.join(directory, 'backups', 'acme'), 'acme', 0)
  // Writers keep going while the copy runs.
  let writing = true
  let during = 0
  const writer = (async () => {
    while (writing) await store.commit([], articleEntries(100, `during${during++}`))
  })()
  let first, second
  try {
    first = await backups.create(store, 'manual', true, Date.now())
    second = await backups.create(store, 'automatic', false, Date.now())
  } finally {
    writing = false
    await writer
  }
  t.ok(during > 0, `${during} commits ran while the backups were taken`)
  t.match(first.id, /^acme-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{6}Z$/)
  t.ok(first.sequence >= 10_000, `the first holds at least the 10,000 entries durable before it (${first.sequence})`)
  t.ok(second.sequence >= first.sequence, 'the second no fewer')
  t.same(
    backups.list().map((record) => record.id),
    [second.id, first.id],
    'newest first',
  )
  t.same(backups.list()[1], first, 'the record as created: type, retain, sequence, bytes')
  t.equal(first.type, 'manual')
  t.equal(first.retain, true)
  t.ok(first.bytes > 0)
  // The copy is a store of its own: its log ends exactly at its sequence, chain intact.
  const copy = new TenantStore(backups.environmentPath(first.id))
  t.equal(copy.sequence, first.sequence)
  const tail = copy.readLog(first.sequence, 10, null)
  t.equal(tail.length, 1, 'nothing past its sequence')
  t.equal(copy.readLog(1, 1, null)[0]!.entityCode, 'before0-0')
  await copy.close()
  await store.close()
})

t.test('the disk bound refuses a backup before anything is written', async (t) => {
  const directory = temporaryDir(t, 'backup')
  const store = new TenantStore(path.join(directory, 'tenant'))
  await store.commit([], articleEntries(2_000, 'x'))
  const backups = new TenantBackups(path.join(directory, 'backups', 'acme'), 'acme', 1)
  const refusal = await backups.create(store, 'manual', false, Date.now()).then(
    () => null,
    (error: unknown) => error,
  )
  t.ok(refusal instanceof BackupRefused, 'refused')
  t.equal((refusal as BackupRefused).reason, 'insufficient_storage')
  t.same(readdirSync(backups.directory), [], 'no directory left behind')
  t.same(backups.list(), [])
  await store.close()
})

t.test('a partial copy left by a crash is never listed and is removed at the next start', async (t) => {
  const directory = temporaryDir(t, 'backup')
  const root = path.join(directory, 'backups', 'acme')
  mkdirSync(path.join(root, 'acme-2026-01-01T00-00-00.000000Z.partial'), { recursive: true })
  writeFileSync(path.join(root, 'acme-2026-01-01T00-00-00.000000Z.partial', 'data.mdb'), 'torn')
  const backups = new TenantBackups(root, 'acme', 0)
  t.same(backups.list(), [])
  t.notOk(existsSync(path.join(root, 'acme-2026-01-01T00-00-00.000000Z.partial')))
})

t.test('delete unlists first, then removes the data', async (t) => {
  const directory = temporaryDir(t, 'backup')
  const store = new TenantStore(path.join(directory, 'tenant'))
  await store.commit([], articleEntries(10, 'x'))
  const backups = new TenantBackups(path.join(directory, 'backups', 'acme'), 'acme', 0)
  const record = await backups.create(store, 'automatic', false, Date.now())
  backups.delete(record.id)
  t.same(backups.list(), [])
  t.notOk(existsSync(backups.environmentPath(record.id)))
  await store.close()
})
