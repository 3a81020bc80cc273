/**
 * Storage durability and startup readiness: a 202 means the write is on disk (it survives SIGKILL
 * right after the answer), a batch in flight is stored whole or not at all, a graceful restart keeps
 * everything and the changelog sequence keeps rising, and a restart answers 503 + Retry-After (on
 * /readyz and on tenant calls) until the tenant is loaded.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import t from 'tap'
import { Catalog, compositeKey, type CatalogType, type Change } from '../../engine/catalog.js'
import { TenantStore } from '../../storage/tenant-store.js'
import { startServer, type Answer, type TenantClient, type TestServer } from '../helpers/server.js'

const batchSize = 2500
const unlimited = { ingest_rate: null, ingest_burst: null, query_rate: null, query_burst: null, articles: null }

function batch(prefix: string, count = batchSize): { sku: string; name: string; metadata: Record<string, string[]> }[] {
  return Array.from({ length: count }, (_, index) => ({
    sku: `${prefix}-${index}`,
    name: `${prefix} article ${index}`,
    metadata: { batch: [prefix] },
  }))
}

async function articleTotal(client: TenantClient): Promise<number> {
  const list = await client.get('/article?page=1&size=1000')
  if (list.status !== 200) throw new Error(`list failed: ${list.status} ${list.text}`)
  return list.body.total
}

/** SKUs of one batch found after a restart (POST /article/search by metadata, page by page). */
async function foundOf(client: TenantClient, prefix: string): Promise<Set<string>> {
  const found = new Set<string>()
  for (let pageNumber = 1; ; pageNumber++) {
    const answer = await client.call('POST', '/article/search', {
      metadata: { batch: [prefix] },
      page: pageNumber,
      size: 1000,
    })
    if (answer.status !== 200) throw new Error(`search failed: ${answer.status} ${answer.text}`)
    for (const item of answer.body.items) found.add(item.sku)
    if (pageNumber * 1000 >= answer.body.total) return found
  }
}

async function restartAfterKill(server: TestServer, client: TenantClient): Promise<void> {
  await server.kill()
  await server.start()
  await client.refreshToken()
}

async function lastSequence(client: TenantClient): Promise<{ sequence: number; cursor: string; count: number }> {
  let cursor: string | undefined
  let sequence = 0
  let count = 0
  for (;;) {
    const answer = await client.get(`/changelog?limit=1000${cursor === undefined ? '' : `&cursor=${cursor}`}`)
    if (answer.status !== 200) throw new Error(`changelog failed: ${answer.status} ${answer.text}`)
    for (const item of answer.body.items) {
      if (item.sequence <= sequence) throw new Error(`changelog sequence fell from ${sequence} to ${item.sequence}`)
      sequence = item.sequence
      count++
    }
    cursor = answer.body.next_cursor
    if (!answer.body.has_more) return { sequence, cursor: cursor!, count }
  }
}

t.test('storage durability across SIGKILL and graceful restarts', async (t) => {
  const server = await startServer()
  t.teardown(() => server.dispose())
  const client = await server.tenant('durable', { limits: unlimited })

  await t.test('a batch of 2,500 acknowledged with 202 survives SIGKILL right after the answer', async (t) => {
    const answer = await client.call('POST', '/article/batch', batch('K'))
    t.equal(answer.status, 202)
    t.same(answer.body, { accepted: batchSize, failed: [] })
    await restartAfterKill(server, client)
    t.equal(await articleTotal(client), batchSize, 'every acknowledged article is there')
    t.equal((await foundOf(client, 'K')).size, batchSize)
    for (const index of [0, 1, 1249, 2498, 2499]) {
      const read = await client.get(`/article/K-${index}`)
      t.equal(read.status, 200, `K-${index} reads back`)
      t.equal(read.body.name, `K article ${index}`)
      t.same(read.body.metadata, { batch: ['K'] })
    }
  })

  await t.test(
    'several batches in flight: every acknowledged one survives SIGKILL, an unacknowledged one is whole or absent',
    async (t) => {
      const before = await articleTotal(client)
      const prefixes = ['C1', 'C2', 'C3', 'C4']
      const answers = await Promise.all(prefixes.map((prefix) => client.call('POST', '/article/batch', batch(prefix))))
      // One more batch is sent and the server killed without waiting for its answer.
      const inFlight = client.call('POST', '/article/batch', batch('C5')).catch((error: Error) => error)
      await new Promise((resolve) => setTimeout(resolve, 5))
      await restartAfterKill(server, client)
      const last = await inFlight
      for (const [index, answer] of answers.entries()) {
        t.equal(answer.status, 202, `${prefixes[index]} acknowledged`)
        t.equal(answer.body.accepted, batchSize)
      }
      for (const prefix of prefixes)
        t.equal((await foundOf(client, prefix)).size, batchSize, `every article of ${prefix} is there`)
      const c5 = (await foundOf(client, 'C5')).size
      if (!(last instanceof Error) && (last as Answer).status === 202) {
        t.equal(c5, batchSize, 'the last batch was acknowledged before the kill, so it is whole')
      } else {
        t.ok(c5 === 0 || c5 === batchSize, `the unacknowledged batch is whole or absent (${c5} found)`)
      }
      t.equal(await articleTotal(client), before + prefixes.length * batchSize + c5)
      t.equal((await client.get('/article/C3-1234')).body.name, 'C3 article 1234')
    },
  )

  await t.test('a single write acknowledged with 202 survives SIGKILL, and so does a delete', async (t) => {
    t.equal((await client.call('PUT', '/article/SINGLE', { name: 'one' })).status, 202)
    t.equal((await client.call('DELETE', '/article/K-7')).status, 202)
    await restartAfterKill(server, client)
    t.equal((await client.get('/article/SINGLE')).body.name, 'one')
    t.equal((await client.get('/article/K-7')).status, 404, 'the delete held')
    t.ok((await client.get('/article/K-7?include_deleted=true')).body.deleted_at, 'as a soft delete')
  })

  await t.test('a graceful restart keeps everything and the changelog sequence keeps rising', async (t) => {
    const total = await articleTotal(client)
    const log = await lastSequence(client)
    t.ok(log.sequence >= 5 * batchSize, `the changelog holds the writes (last sequence ${log.sequence})`)
    t.equal(log.count, log.sequence, 'no sequence is missing')
    await server.stop()
    await server.start()
    await client.refreshToken()
    t.equal(await articleTotal(client), total, 'every article is there')
    t.same(await lastSequence(client), log, 'the changelog is unchanged')
    t.equal((await client.call('PUT', '/article/AFTER-RESTART', { name: 'x' })).status, 202)
    const next = await client.get(`/changelog?cursor=${log.cursor}`)
    t.equal(next.status, 200)
    t.equal(next.body.items.length, 1)
    t.equal(next.body.items[0].sequence, log.sequence + 1, 'the next entry continues the sequence')
    t.equal(next.body.items[0].entity_code, 'AFTER-RESTART')
    // Killed once more: the sequence still continues after the last durable entry.
    await restartAfterKill(server, client)
    t.equal((await client.call('PUT', '/article/AFTER-KILL', { name: 'x' })).status, 202)
    const after = await client.get(`/changelog?cursor=${log.cursor}`)
    t.same(
      after.body.items.map((item: { sequence: number }) => item.sequence),
      [log.sequence + 1, log.sequence + 2],
    )
  })
})

t.test(
  'while a large tenant loads after a restart, /readyz and tenant calls answer 503 with Retry-After, then 200',
  async (t) => {
    const server = await startServer()
    t.teardown(() => server.dispose())
    const client = await server.tenant('large', { limits: unlimited })
    const batches = 60
    for (let index = 0; index < batches; index += 4) {
      const answers = await Promise.all(
        [0, 1, 2, 3]
          .filter((offset) => index + offset < batches)
          .map((offset) => client.call('POST', '/article/batch', batch(`R${index + offset}`))),
      )
      for (const answer of answers)
        if (answer.status !== 202) throw new Error(`batch failed: ${answer.status} ${answer.text}`)
    }
    t.equal(await articleTotal(client), batches * batchSize, '150,000 articles written')
    // Killed, not stopped: a clean stop leaves a snapshot (storage/book-snapshot.ts) that loads the
    // 150,000 articles before the probes arrive; after a crash the start loads the tables, which
    // takes long enough to watch.
    await server.kill()
    await server.start(false)
    const probes: Promise<Answer>[] = [server.request('GET', '/readyz'), client.get('/article/R0-0')]
    const [firstReady, firstCall] = await Promise.all(probes)
    t.equal(firstReady!.status, 503, '/readyz answers 503 while the tenant loads')
    t.ok(Number(firstReady!.headers.get('retry-after')) >= 1, 'with Retry-After')
    t.equal(firstCall!.status, 503, 'a tenant call during loading answers 503')
    t.ok(Number(firstCall!.headers.get('retry-after')) >= 1, 'with Retry-After')
    t.equal(firstCall!.body.code, 'not_ready')
    t.equal(firstCall!.body.error, 'Service Unavailable')
    const health = await server.request('GET', '/healthz')
    t.equal(health.status, 200, '/healthz answers while loading (the process is alive)')
    let readyAfterMs = 0
    const startedMs = Date.now()
    for (;;) {
      const ready = await server.request('GET', '/readyz')
      if (ready.status === 200) break
      t.equal(ready.status, 503)
      if (Date.now() - startedMs > 60_000) throw new Error('never became ready')
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    readyAfterMs = Date.now() - startedMs
    t.comment(`ready ${readyAfterMs} ms after the first probe`)
    await client.refreshToken()
    const read = await client.get('/article/R59-2499')
    t.equal(read.status, 200, 'once ready, tenant calls are served')
    t.equal(read.body.name, 'R59 article 2499')
    t.equal(await articleTotal(client), batches * batchSize, 'every article was loaded')
  },
)

t.test(
  'loading in chunks (startup) yields the same catalogue as loading at once, across types and chunk edges',
  async (t) => {
    const directory = mkdtempSync(path.join(tmpdir(), 'pricing-load-'))
    t.teardown(() => rmSync(directory, { recursive: true, force: true }))
    const store = new TenantStore(directory)
    const source = new Catalog()
    const changes: Change[] = []
    const plan = (type: CatalogType, key: string, value: unknown): void => {
      const change = source.plan(type, key, value as never, 1_000, 1_000, 'test')!
      source.apply(type, key, change.versions)
      changes.push(change)
    }
    for (let index = 0; index < 95; index++)
      plan('article', `A-${String(index).padStart(3, '0')}`, { name: `a${index}`, type: null, metadata: {} })
    for (let index = 0; index < 4; index++) plan('vat_class', `V${index}`, { name: `v${index}`, description: null })
    plan('article_taxclass', compositeKey('A-001', 'SE'), { vat_class_code: 'V1' })
    const deleted = source.plan('article', 'A-007', null, 2_000, 2_000, 'test')!
    source.apply('article', 'A-007', deleted.versions)
    changes.push(deleted)
    await store.commit(changes)
    const atOnce = new Catalog()
    const total = store.loadInto(atOnce)
    t.equal(total, 100)
    for (const chunk of [1, 7, 50, 99, 100, 101, 5000]) {
      const gradual = new Catalog()
      t.equal(await store.loadIntoGradually(gradual, chunk), total, `chunks of ${chunk}: every key loaded once`)
      for (const type of ['article', 'vat_class', 'article_taxclass'] as CatalogType[]) {
        t.equal(gradual.liveCount(type), atOnce.liveCount(type), `chunks of ${chunk}: live ${type} count`)
        t.same(
          [...gradual.viewsAt(type, 3_000, true)],
          [...atOnce.viewsAt(type, 3_000, true)],
          `chunks of ${chunk}: ${type} entries`,
        )
      }
    }
    t.equal(atOnce.liveCount('article'), 94, 'the deleted article is not live')
    await store.close()
  },
)
