/**
 * Disk full (issue 13; SPEC errors table, 503 "(for a write) storage nearly full"): the server's
 * data directory on a small tmpfs mounted here (root only: CI runs as root; elsewhere the suite is
 * skipped, saying why). A filler file takes most of the space, then prices are written through the
 * API until the storage guard (tenant/storage-guard.ts) refuses: writes answer 503 `storage_full`
 * with `Retry-After` while the file system still has room, reads answer every acknowledged price
 * exactly, the process neither exits nor logs a fatal line; deleting the filler lets writes through
 * again within seconds, without a restart; after a restart everything acknowledged is there and
 * the changelog has no gap.
 *
 * Then the guard is turned off (reserve 0) and the file system filled to the last pages, so that
 * LMDB itself meets ENOSPC: what happens is checked and written down (docs/security.md): the failed
 * commit is never acknowledged, the process exits with 70 (tenant/runtime.ts), and it starts again
 * cleanly with every acknowledged write and a continuous changelog.
 */
import { spawnSync } from 'node:child_process'
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, statfsSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import t, { type Test } from 'tap'
import { readChangelog } from '../helpers/changelog.js'
import { expectStatus } from '../helpers/price-fixtures.js'
import { adminToken, TenantClient, TestServer, type Answer } from '../helpers/server.js'

const mebibyte = 1024 * 1024
const mountSizeMb = 96
/** The guard's reserve for the first part (PRICING_STORAGE_RESERVE_MB). */
const reserveMb = 16
const reserveBytes = reserveMb * mebibyte
/** Prices per batch: about 100 KB of log and records each, so that the guard trips within tens of them. */
const batchItems = 500
const slug = 'full'
const pricelist = 'PL'
const unlimited = {
  ingest_rate: null,
  ingest_burst: null,
  query_rate: null,
  query_burst: null,
  prices: null,
  changelog_capacity: null,
}

function freeBytes(directory: string): number {
  const stats = statfsSync(directory)
  return stats.bavail * stats.bsize
}

/** Mounts a tmpfs of `mountSizeMb` at `directory`; answers null, or why it cannot be done here. */
function mountTmpfs(directory: string): { skip: string } | { fail: string } | null {
  if (process.platform !== 'linux') return { skip: `tmpfs is Linux's; this is ${process.platform}` }
  if (process.getuid?.() !== 0) return { skip: 'mounting a tmpfs needs root (CI runs as root)' }
  const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${mountSizeMb}m,mode=0700`, 'tmpfs', directory], {
    encoding: 'utf8',
  })
  if (mounted.error !== undefined) return { skip: `mount could not run: ${mounted.error.message}` }
  if (mounted.status === 0) return null
  const reason = mounted.stderr.trim()
  // A container without CAP_SYS_ADMIN refuses mounts even to root.
  if (/permission denied|not permitted|only root|must be superuser/i.test(reason))
    return { skip: `mounting is not allowed here: ${reason}` }
  return { fail: `mount -t tmpfs failed: ${reason}` }
}

function unmount(directory: string): void {
  if (spawnSync('umount', [directory]).status !== 0) spawnSync('umount', ['-l', directory])
  rmSync(directory, { recursive: true, force: true })
}

/** Appends `bytes` to the filler file (1 MiB writes); answers the bytes written (less when the disk fills). */
function fill(file: string, bytes: number): number {
  const chunk = Buffer.alloc(mebibyte, 0x5a)
  const descriptor = openSync(file, 'a')
  let written = 0
  try {
    while (written < bytes) {
      try {
        written += writeSync(descriptor, chunk, 0, Math.min(chunk.length, bytes - written))
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOSPC') break
        throw error
      }
    }
  } finally {
    closeSync(descriptor)
  }
  return written
}

/** Writes the filler so that `leaveBytes` stay free. */
function fillLeaving(directory: string, file: string, leaveBytes: number): void {
  const surplus = freeBytes(directory) - leaveBytes
  if (surplus > 0) fill(file, surplus)
}

/** The batch's prices: sales amounts unique per SKU, so that a read can tell any two apart. */
function batchOf(batch: number): { sku: string; pricelist: string; price: number }[] {
  return Array.from({ length: batchItems }, (_, index) => ({
    sku: `S-${batch}-${index}`,
    pricelist,
    price: (batch * batchItems + index + 1) / 100,
  }))
}

/** Every stored price of the pricelist: SKU -> sales amount (GET /price, page by page). */
async function storedPrices(client: TenantClient): Promise<Map<string, number>> {
  const prices = new Map<string, number>()
  for (let page = 1; ; page++) {
    const answer = await expectStatus(
      client.get(`/price?pricelist=${pricelist}&page=${page}&size=1000`),
      200,
      'stored prices',
    )
    for (const item of answer.body.items as { sku: string; price: { sales: number } }[])
      prices.set(item.sku, item.price.sales)
    if (answer.body.items.length < 1000) return prices
  }
}

/** Acknowledged (SKU -> sales) and stored agree exactly: nothing missing, nothing other, nothing extra. */
async function checkAcknowledged(
  t: Test,
  client: TenantClient,
  acknowledged: ReadonlyMap<string, number>,
  what: string,
): Promise<void> {
  const stored = await storedPrices(client)
  t.equal(stored.size, acknowledged.size, `${what}: as many prices stored as acknowledged (${acknowledged.size})`)
  const differing = [...acknowledged].filter(([sku, sales]) => stored.get(sku) !== sales).map(([sku]) => sku)
  t.same(differing.slice(0, 5), [], `${what}: every acknowledged price reads back with its amount`)
}

/** The changelog from its start: sequences 1, 2, … N with no gap or repeat; answers N and the price entries' SKUs. */
async function checkChangelog(
  t: Test,
  client: TenantClient,
  what: string,
): Promise<{ last: number; priceSkus: Set<string> }> {
  const entries = await readChangelog(client, 'limit=1000')
  const gaps = entries.filter((entry, index) => entry.sequence !== index + 1).map((entry) => entry.sequence)
  t.same(gaps.slice(0, 5), [], `${what}: the changelog runs 1..${entries.length} without a gap`)
  return {
    last: entries.at(-1)?.sequence ?? 0,
    priceSkus: new Set(entries.filter((entry) => entry.entity_type === 'price').map((entry) => entry.entity_code)),
  }
}

function metric(text: string, name: string): number {
  return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN)
}

/** Log records of the server's stdout with their level and message. */
function logRecords(stdout: string): { level: number; msg: string; [field: string]: unknown }[] {
  return stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { level: number; msg: string })
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const root = mkdtempSync(path.join(tmpdir(), 'pricing-disk-full-'))
const refusal = mountTmpfs(root)

if (refusal !== null && 'skip' in refusal) {
  rmSync(root, { recursive: true, force: true })
  t.test(`disk full on a ${mountSizeMb} MB tmpfs`, { skip: refusal.skip }, async () => undefined)
} else if (refusal !== null) {
  rmSync(root, { recursive: true, force: true })
  t.fail(refusal.fail)
} else {
  t.teardown(() => unmount(root))
  const dataDir = path.join(root, 'data')
  const filler = path.join(root, 'filler')
  mkdirSync(dataDir)
  const acknowledged = new Map<string, number>()
  let clientId = ''
  let clientSecret = ''

  t.test(
    `writes answer 503 storage_full before a ${mountSizeMb} MB file system is full, reads go on, writes resume by themselves`,
    async (t) => {
      const server = new TestServer(dataDir, {
        PRICING_STORAGE_RESERVE_MB: String(reserveMb),
        PRICING_RETENTION_INTERVAL_S: '0',
      })
      await server.start()
      t.teardown(() => server.stop())
      const client = await server.tenant(slug, { limits: unlimited })
      clientId = client.clientId
      clientSecret = client.clientSecret
      await expectStatus(client.call('PUT', '/currency/EUR', { is_active: true, vat_precision: 2 }), 202, 'currency')
      await expectStatus(
        client.call('PUT', `/pricelist/${pricelist}`, { currency_code: 'EUR', vat_mode: 'NET' }),
        202,
        'pricelist',
      )

      const ready = await server.request('GET', '/readyz')
      t.equal(ready.status, 200)
      t.same(
        ready.body.storage,
        { nearly_full: false, free_bytes: ready.body.storage.free_bytes, reserve_bytes: reserveBytes },
        'readiness shows the reserve, not nearly full',
      )
      t.ok(
        ready.body.storage.free_bytes > reserveBytes && ready.body.storage.free_bytes <= mountSizeMb * mebibyte,
        `the guard samples the tmpfs (${ready.body.storage.free_bytes} bytes free)`,
      )

      // Most of the space goes to the filler: the reserve and 6 MiB stay, which prices fill.
      fillLeaving(root, filler, reserveBytes + 6 * mebibyte)
      let refused: Answer | null = null
      let freeAtRefusal = 0
      let batches = 0
      for (let batch = 0; batch < 400 && refused === null; batch++) {
        const items = batchOf(batch)
        const answer = await client.call('POST', '/price/batch', items)
        if (answer.status === 202) {
          if (answer.body.accepted !== batchItems) throw new Error(`batch ${batch}: ${answer.text}`)
          for (const item of items) acknowledged.set(item.sku, item.price)
          batches++
          continue
        }
        freeAtRefusal = freeBytes(root)
        refused = answer
        // The refused batch stored nothing.
        t.equal(
          (await client.get(`/price/${items[0]!.sku}/${pricelist}`)).status,
          404,
          'the refused batch stored nothing',
        )
      }
      t.ok(refused !== null, `writes were refused after ${batches} batches of ${batchItems}`)
      if (refused === null) return
      t.comment(
        `refused with ${freeAtRefusal} bytes (${(freeAtRefusal / mebibyte).toFixed(1)} MiB) free, after ${acknowledged.size} acknowledged prices`,
      )
      t.equal(refused.status, 503, '503 while storage is nearly full')
      t.equal(refused.headers.get('retry-after'), '30', 'with Retry-After: 30')
      t.same(
        Object.keys(refused.body).sort(),
        ['code', 'error', 'message', 'request_id', 'status', 'timestamp'],
        "the spec's error body",
      )
      t.equal(refused.body.code, 'storage_full')
      t.equal(refused.body.error, 'Service Unavailable')
      t.equal(refused.body.status, 503)
      t.ok(
        freeAtRefusal > reserveBytes / 2,
        `refused before the disk is full: ${freeAtRefusal} bytes free, more than half the reserve`,
      )
      t.ok(freeAtRefusal < reserveBytes + 6 * mebibyte, 'and only once the prices had used the room above the reserve')

      await t.test('every kind of write waits; reads, queries and tokens go on', async (t) => {
        const writes: [string, Promise<Answer>][] = [
          ['PUT /price', client.call('PUT', `/price/LATE/${pricelist}`, { price: 1 })],
          ['POST /article/batch', client.call('POST', '/article/batch', [{ sku: 'LATE', name: 'late' }])],
          ['PUT /settings', client.call('PUT', '/settings/fx.rate.auto.update', { value: 'false' })],
          ['POST /webhooks', client.call('POST', '/webhooks', { url: 'https://example.com/hook' })],
          [
            'POST /admin/tenants',
            server.request('POST', '/admin/tenants', {
              body: { slug: 'late', tier: 'starter', region: 'local' },
              token: adminToken,
            }),
          ],
          [
            'POST /admin/tenants/{slug}/keys',
            server.request('POST', `/admin/tenants/${slug}/keys`, { body: { name: 'late' }, token: adminToken }),
          ],
          [
            'POST /portal/sign-in',
            server.request('POST', '/portal/sign-in', { body: { email: 'someone@example.com' } }),
          ],
        ]
        for (const [what, pending] of writes) {
          const answer = await pending
          t.equal(answer.status, 503, `${what}: 503`)
          t.equal(answer.body?.code, 'storage_full', `${what}: storage_full`)
          t.equal(answer.headers.get('retry-after'), '30', `${what}: Retry-After`)
        }
        t.equal((await client.get(`/price/LATE/${pricelist}`)).status, 404, 'the refused price is not there')
        t.equal((await client.get('/article/LATE')).status, 404, 'nor the refused article')
        t.equal((await server.admin('GET', '/admin/tenants/late')).status, 404, 'nor the refused tenant')
        await checkAcknowledged(t, client, acknowledged, 'while nearly full')
        const [sku, sales] = [...acknowledged][acknowledged.size - 1]!
        const single = await client.get(`/price/${sku}/${pricelist}`)
        t.equal(single.status, 200, 'a single price reads')
        t.equal(single.body.price.sales, sales, `with its amount ${sales}`)
        const search = await client.call('POST', '/article/search', {
          metadata: { batch: ['none'] },
          page: 1,
          size: 10,
        })
        t.equal(search.status, 200, `a search (a POST that reads) answers: ${search.text.slice(0, 200)}`)
        await client.refreshToken()
        t.pass('a token is issued (reads need tokens)')
        t.equal((await server.request('GET', '/healthz')).status, 200, 'the process is alive')
        const ready = await server.request('GET', '/readyz')
        t.equal(ready.status, 200, 'ready: reads are served')
        t.equal(ready.body.storage.nearly_full, true)
        t.ok(
          ready.body.storage.free_bytes < reserveBytes,
          `readiness shows ${ready.body.storage.free_bytes} free, below the reserve`,
        )
        const metrics = (await server.request('GET', '/metrics')).text
        t.equal(metric(metrics, 'pricing_storage_nearly_full'), 1, 'pricing_storage_nearly_full 1')
        t.equal(metric(metrics, 'pricing_storage_reserve_bytes'), reserveBytes)
        t.ok(
          metric(metrics, 'pricing_storage_free_bytes') < reserveBytes &&
            metric(metrics, 'pricing_storage_free_bytes') > 0,
          'pricing_storage_free_bytes below the reserve',
        )
      })

      // Space returns: writes go through again by themselves, within seconds.
      rmSync(filler)
      const freedAt = performance.now()
      let resumedAfterS = Number.POSITIVE_INFINITY
      for (let attempt = 0; attempt < 100; attempt++) {
        const items = batchOf(1000 + attempt)
        const answer = await client.call('POST', '/price/batch', items)
        if (answer.status === 202) {
          for (const item of items) acknowledged.set(item.sku, item.price)
          resumedAfterS = (performance.now() - freedAt) / 1000
          break
        }
        t.equal(answer.body.code, 'storage_full', 'until then: storage_full')
        await pause(100)
      }
      t.comment(`writes resumed ${resumedAfterS.toFixed(2)} s after the filler was deleted`)
      t.ok(resumedAfterS < 5, `writes resume without a restart within 5 s (${resumedAfterS.toFixed(2)} s)`)
      const metrics = (await server.request('GET', '/metrics')).text
      t.equal(metric(metrics, 'pricing_storage_nearly_full'), 0, 'pricing_storage_nearly_full 0 again')
      await checkAcknowledged(t, client, acknowledged, 'after space returned')

      const records = logRecords(server.stdout)
      t.equal(
        records.filter((record) => record.msg.startsWith('storage nearly full')).length,
        1,
        'one log line on entering the state',
      )
      t.equal(
        records.filter((record) => record.msg.startsWith('storage has room again')).length,
        1,
        'one log line on leaving it',
      )
      t.same(
        records.filter((record) => record.level >= 50).map((record) => record.msg),
        [],
        'no error or fatal log line (refusals are not failures)',
      )

      await t.test('after a restart everything acknowledged is there and the changelog has no gap', async (t) => {
        t.equal(await server.stop(), 0, 'a clean stop')
        await server.start()
        await client.refreshToken()
        await checkAcknowledged(t, client, acknowledged, 'after a restart')
        const log = await checkChangelog(t, client, 'after a restart')
        const missing = [...acknowledged.keys()].filter((sku) => !log.priceSkus.has(sku))
        t.same(missing.slice(0, 5), [], 'every acknowledged price has its changelog entry')
      })
    },
  )

  t.test(
    'LMDB itself at ENOSPC (the guard off: reserve 0): nothing acknowledged is lost and the restart is clean',
    async (t) => {
      const server = new TestServer(dataDir, { PRICING_STORAGE_RESERVE_MB: '0', PRICING_RETENTION_INTERVAL_S: '0' })
      await server.start()
      t.teardown(() => server.stop())
      const client = new TenantClient(server, slug, clientId, clientSecret)
      await client.refreshToken()
      const ready = await server.request('GET', '/readyz')
      t.same(
        ready.body.storage,
        { nearly_full: false, free_bytes: ready.body.storage.free_bytes, reserve_bytes: 0 },
        'the guard is off',
      )
      const exited = server.exited()
      let exitCode: number | null | undefined
      void exited.then((code) => (exitCode = code))
      // The last 2 MiB for LMDB: a few batches fit, then a commit cannot write its pages.
      fillLeaving(root, filler, 2 * mebibyte)
      const outcomes: string[] = []
      let unacknowledged: string[] = []
      for (let batch = 2000; batch < 2400 && exitCode === undefined; batch++) {
        const items = batchOf(batch)
        const answer = await client.call('POST', '/price/batch', items).catch((error: Error) => error)
        if (answer instanceof Error) {
          outcomes.push(`no answer (${(answer.cause as Error | undefined)?.message ?? answer.message})`)
          unacknowledged = items.map((item) => item.sku)
          break
        }
        if (answer.status === 202) {
          for (const item of items) acknowledged.set(item.sku, item.price)
          continue
        }
        outcomes.push(`${answer.status} ${answer.body?.code ?? answer.text.slice(0, 100)}`)
        unacknowledged = items.map((item) => item.sku)
        break
      }
      const code = await Promise.race([exited, pause(10_000).then(() => 'still running')])
      const records = logRecords(server.stdout)
      const fatal = records.filter((record) => record.level === 60)
      t.comment(
        `at ENOSPC: ${outcomes.join('; ') || 'no failure'}; process: ${code === 'still running' ? 'still running' : `exited with ${code}`}; fatal: ${fatal.map((record) => `${record.msg} (${String(record['cause'])})`).join('; ')}`,
      )
      t.equal(outcomes.length, 1, 'a write failed once the file system was full')
      t.equal(code, 70, 'the process exits with 70 so that memory reloads from LMDB (tenant/runtime.ts)')
      t.equal(fatal.length, 1, 'after one fatal log line')
      t.match(fatal[0]?.msg ?? '', /storage commit failed/)
      // LMDB's own error: ENOSPC, or EIO when the file system took part of the pages (a short write).
      t.match(
        String(fatal[0]?.['cause']),
        /^(No space left on device|Input\/output error)/,
        "with LMDB's cause, not lmdb-js's generic 'Commit failed'",
      )

      await t.test(
        'on the disk still full, the server starts (the guard on), serves every acknowledged write and refuses writes',
        async (t) => {
          t.ok(freeBytes(root) < reserveBytes, `the file system is still full (${freeBytes(root)} bytes free)`)
          const guarded = new TestServer(dataDir, {
            PRICING_STORAGE_RESERVE_MB: String(reserveMb),
            PRICING_RETENTION_INTERVAL_S: '0',
          })
          await guarded.start()
          t.teardown(() => guarded.stop())
          const reader = new TenantClient(guarded, slug, clientId, clientSecret)
          await reader.refreshToken()
          await checkAcknowledged(t, reader, acknowledged, 'restarted on the full disk')
          const stored = await storedPrices(reader)
          const partial = unacknowledged.filter((sku) => stored.has(sku)).length
          t.ok(
            partial === 0 || partial === unacknowledged.length,
            `the unacknowledged batch is whole or absent (${partial} of ${unacknowledged.length} found)`,
          )
          const log = await checkChangelog(t, reader, 'restarted on the full disk')
          const missing = [...acknowledged.keys()].filter((sku) => !log.priceSkus.has(sku))
          t.same(missing.slice(0, 5), [], 'every acknowledged price has its changelog entry')
          const refused = await reader.call('POST', '/price/batch', batchOf(2500))
          t.equal(refused.status, 503, 'a write answers 503')
          t.equal(refused.body.code, 'storage_full')
          t.equal(await guarded.stop(), 0, 'and it stops cleanly on the full disk')
        },
      )

      // Space returns; the same data directory starts again, guard off as before.
      rmSync(filler)
      await server.start()
      await client.refreshToken()
      await checkAcknowledged(t, client, acknowledged, 'after ENOSPC, space freed and a restart')
      const log = await checkChangelog(t, client, 'after ENOSPC, space freed and a restart')
      const after = await client.call('POST', '/price/batch', batchOf(3000))
      t.equal(after.status, 202, 'writes go on after the restart')
      const next = await checkChangelog(t, client, 'after the next write')
      t.equal(next.last, log.last + batchItems, 'the next write continues the sequence')
    },
  )
}
