/**
 * The tenant runtime's state changes only through its methods (docs/architecture.md, "Tenant
 * runtime"): a restore's begin and end refuse and then admit writes, becoming a replica and the
 * home again refuses and then admits them, and what the runtime is built with (storage state,
 * durability listener, clock) comes in one options object rather than being patched afterwards.
 * A real runtime on a temporary directory, no server.
 */
import path from 'node:path'
import { pino } from 'pino'
import t, { type Test } from 'tap'
import type { Change } from '../../engine/catalog.js'
import { SystemStore, type TenantRecord } from '../../storage/system-store.js'
import type { StorageState } from '../../tenant/storage-guard.js'
import {
  TenantRegistry,
  type CommittedBatch,
  type ReplicationSink,
  type TenantRegistryOptions,
  type TenantRuntime,
} from '../../tenant/runtime.js'
import { temporaryDir } from '../helpers/store-fixtures.js'

const clockMs = Date.parse('2026-01-05T10:00:00Z')

function record(slug: string): TenantRecord {
  return {
    slug,
    tier: 'starter',
    region: 'local',
    status: 'active',
    owner_email: null,
    limits: {},
    created_at: clockMs,
    updated_at: clockMs,
  }
}

/** One catalogue change: a tax area, enough for a log entry. */
function taxArea(code: string): Change {
  const value = { code, name: `Area ${code}` }
  const version = { from: 0, value, hash: `h-${code}`, writtenAt: clockMs, writtenBy: 'test' }
  const hash = `h-${code}`
  return { type: 'tax_area', key: code, versions: [version], changeType: 'created', hash, at: clockMs, by: 'test' }
}

/** A registry on a fresh directory with one tenant opened and loaded; removed at the test's end. */
function openTenant(
  t: Test,
  options: Partial<TenantRegistryOptions> = {},
): { tenant: TenantRuntime; registry: TenantRegistry } {
  const dataDir = temporaryDir(t, 'runtime-state')
  const system = new SystemStore(path.join(dataDir, 'system'))
  const logger = pino({ level: 'silent' })
  const registry = new TenantRegistry({ system, dataDir, logger, now: () => clockMs, ...options })
  const tenant = registry.open(record('acme'), clockMs)
  tenant.load()
  // Either order with the directory's removal is fine: open files outlive their unlinking.
  t.teardown(async () => {
    await registry.close()
    await system.close()
  })
  return { tenant, registry }
}

t.test('a restore refuses writes from its begin to its end', async (t) => {
  const { tenant } = openTenant(t)
  t.equal(tenant.restoring, null)
  tenant.beginRestore('backup-1')
  t.equal(tenant.restoring, 'backup-1')
  await t.rejects(tenant.commit([taxArea('A')]), { code: 'restoring' })
  t.throws(() => tenant.beginRestore('backup-2'), /a restore of backup-1 is running/)
  tenant.endRestore()
  t.equal(tenant.restoring, null)
  const entries = await tenant.commit([taxArea('B')])
  t.equal(entries.length, 1)
})

t.test('a replica writes nothing; the home writes and hands its commits to its replication sink', async (t) => {
  const { tenant } = openTenant(t)
  t.equal(tenant.role, 'home')
  t.equal(tenant.replication, null)
  tenant.becomeReplica()
  t.equal(tenant.role, 'replica')
  await t.rejects(tenant.commit([taxArea('A')]), /is a replica here/)
  const published: CommittedBatch[] = []
  const sink: ReplicationSink = {
    committed: async (_tenant, durable) => {
      published.push(await durable)
    },
  }
  tenant.becomeHome(sink)
  t.equal(tenant.role, 'home')
  t.equal(tenant.replication, sink)
  const entries = await tenant.commit([taxArea('B')])
  t.equal(published.length, 1)
  t.same(published[0]!.entries, entries)
  // Becoming a replica again drops the sink: a replica publishes nothing.
  tenant.becomeReplica()
  t.equal(tenant.replication, null)
})

t.test('state is read-only from outside: assignments throw', async (t) => {
  const { tenant } = openTenant(t)
  const writable = tenant as unknown as Record<string, unknown>
  for (const field of ['restoring', 'role', 'replication', 'record', 'limits', 'loaded', 'warmed']) {
    t.throws(() => (writable[field] = null), TypeError, field)
  }
  t.equal(tenant.loaded, true)
})

t.test('the storage state, the durability listener and the clock come with the options', async (t) => {
  const storage: { nearlyFull: boolean } = { nearlyFull: false }
  const durableBytes: number[] = []
  const { tenant, registry } = openTenant(t, {
    storage: storage as StorageState,
    onDurable: (bytes) => durableBytes.push(bytes),
  })
  t.equal(registry.storage, storage)
  t.equal(tenant.storage, storage)
  t.equal(tenant.now(), clockMs)
  await tenant.commit([taxArea('A')])
  t.ok(durableBytes.length > 0 && durableBytes.every((bytes) => bytes > 0), 'told of the durable bytes')
  storage.nearlyFull = true
  await t.rejects(tenant.commit([taxArea('B')]), { code: 'storage_full' })
})

t.test('a tenant opened later is told to the listener given with whenOpened', async (t) => {
  const { registry } = openTenant(t)
  const opened: string[] = []
  registry.whenOpened((runtime) => opened.push(runtime.slug))
  registry.open(record('beta'), clockMs).load()
  t.same(opened, ['beta'])
})
