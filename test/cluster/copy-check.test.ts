/**
 * A replica's copy checked against its home's log in Redis before the node loads it
 * (cluster/bootstrap.ts `copyAgainstLog`), with a real Redis and a real tenant store: commits
 * published by the home's own code (cluster/replication.ts), then the four verdicts. A copy that
 * the log goes on from fits; one whose next commit Redis no longer has is a gap; one with commits
 * the log never had is ahead; one whose last commit another home wrote differently has diverged.
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pino } from 'pino'
import t from 'tap'
import { copyAgainstLog } from '../../cluster/bootstrap.js'
import { connectRedis } from '../../cluster/redis.js'
import { Replication } from '../../cluster/replication.js'
import type { TenantRegistry, TenantRuntime } from '../../tenant/runtime.js'
import type { EntryContent } from '../../storage/log-entry.js'
import { TenantStore } from '../../storage/tenant-store.js'
import { redisForTest } from '../helpers/redis.js'
import { until } from '../helpers/until.js'

const redis = await redisForTest(t)
if (redis !== null) {
  const client = connectRedis(redis.url)
  t.teardown(() => client.disconnect())
  await until(() => client.status === 'ready', 5_000, 'Redis connected')
  const logger = pino({ level: 'silent' })
  const replication = new Replication(client, {} as TenantRegistry, logger, Date.now)
  const entry = (code: string): EntryContent => ({
    entityType: 'test',
    changeType: 'created',
    entityCode: code,
    compositeKey: null,
    changedAt: 1_795_600_000_000,
    changedBy: 'test',
    contentHash: '',
  })

  /**
   * A store with one commit per code; `publishTo` a slug: the home's, each commit published to that
   * tenant's stream. The same codes give the same entries and checksums in every store, so a
   * shorter copy is a prefix of a home's log.
   */
  async function storeWith(codes: readonly string[], publishTo: string | null = null): Promise<string> {
    const directory = mkdtempSync(path.join(tmpdir(), 'pricing-copy-'))
    const store = new TenantStore(directory)
    const tenant = { slug: publishTo, log: logger } as unknown as TenantRuntime
    for (const code of codes) {
      const extra = [entry(code)]
      const entries = await store.commit([], extra)
      if (publishTo !== null)
        await replication.committed(tenant, Promise.resolve({ changes: [], extra, prices: [], entries }))
    }
    await store.close()
    return directory
  }
  const codes = (count: number): string[] => Array.from({ length: count }, (_, index) => `E-${index + 1}`)

  t.test('fits: the log goes on from the copy, or ends where it ends', async (t) => {
    await storeWith(codes(5), 'fits')
    t.equal(await copyAgainstLog(client, 'fits', await storeWith(codes(5))), 'fits', "at the log's end")
    t.equal(
      await copyAgainstLog(client, 'fits', await storeWith(codes(3))),
      'fits',
      'behind, with the next commit in the log',
    )
  })

  t.test('gap: the commit after the copy is no longer in the log', async (t) => {
    await storeWith(codes(6), 'gap')
    t.equal(await client.xtrim('pricing:log:gap', 'MAXLEN', 1), 5, 'Redis keeps the last commit only')
    t.equal(await copyAgainstLog(client, 'gap', await storeWith(codes(2))), 'gap')
    t.equal(
      await copyAgainstLog(client, 'gap', await storeWith(codes(5))),
      'fits',
      'a copy the kept commit goes on from still fits',
    )
  })

  t.test('ahead: the copy holds sequences beyond the log', async (t) => {
    await storeWith(codes(2), 'ahead')
    t.equal(await copyAgainstLog(client, 'ahead', await storeWith(codes(4))), 'ahead')
  })

  t.test("diverged: another home wrote the copy's last sequence differently", async (t) => {
    await storeWith(codes(3), 'split')
    t.equal(await copyAgainstLog(client, 'split', await storeWith(['E-1', 'E-2', 'OTHER-3'])), 'diverged')
  })
}
