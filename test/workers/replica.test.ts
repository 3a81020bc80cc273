/**
 * A worker's tenant replica (workers/replica.ts) holds less than the main thread's catalogue until
 * something reads it: the articles stay packed until a rule or a search reads one, and the article
 * changes of sync messages meanwhile are kept packed too. Whatever is read then must equal the main
 * thread's catalogue after the same changes. A catalogue built from a prefetch (a snapshot file's
 * bytes, sent before the main thread decodes them) serves only the snapshot that names it. Also:
 * `Catalog.load`, the bulk form of `apply` that a start and a replica use, leaves the same
 * catalogue as `apply` entry by entry.
 */
import { BroadcastChannel } from 'node:worker_threads'
import t from 'tap'
import { Catalog, compositeKey, type Article, type CatalogType, type Change } from '../../engine/catalog.js'
import { PriceBook } from '../../engine/prices.js'
import type { Version } from '../../engine/temporal.js'
import { packCatalog } from '../../storage/book-snapshot.js'
import {
  replicationChannelName,
  type PrefetchMessage,
  type SnapshotMessage,
  type SyncMessage,
} from '../../workers/protocol.js'
import { ReplicaSet, TenantReplica } from '../../workers/replica.js'

const day = 86_400_000
const start = Date.UTC(2026, 0, 1)

function article(index: number, name: string): Article {
  return { name, type: index % 2 === 0 ? 'product' : 'service', metadata: { group: [`G${index % 3}`] } }
}

/** A catalogue of `count` articles (some with a later version, one deleted) and their VAT mappings. */
function sourceCatalog(count: number): Catalog {
  const catalog = new Catalog()
  const write = (change: Change | null): void => {
    if (change !== null) catalog.apply(change.type, change.key, change.versions)
  }
  for (let index = 0; index < count; index++) {
    const sku = `SKU-${index}`
    write(catalog.plan('article', sku, article(index, `Article ${index}`), start, start, 'writer'))
    if (index % 4 === 0)
      write(catalog.plan('article', sku, article(index, `Renamed ${index}`), start + day, start, 'writer'))
    write(
      catalog.plan('article_taxclass', compositeKey(sku, 'SE'), { vat_class_code: 'standard' }, start, start, 'writer'),
    )
  }
  write(catalog.plan('article', 'SKU-1', null, start + 2 * day, start, 'writer'))
  return catalog
}

function snapshotOf(catalog: Catalog, book: PriceBook): ConstructorParameters<typeof TenantReplica>[0] {
  const catalogBytes = packCatalog(catalog.entries())
  return {
    sequence: 0,
    catalog: catalogBytes,
    prepared: null,
    dictionary: book.dictionaryDelta(0, 0),
    columns: book.sharedColumns(),
  }
}

/** Every entry of a type as [key, versions], in key order. */
function table(catalog: Catalog, type: CatalogType): [string, Version<unknown>[] | undefined][] {
  return catalog.keys(type).map((key) => [key, catalog.versions(type, key)])
}

t.test('a replica decodes its articles at the first read, with the changes it received meanwhile', async (t) => {
  const source = sourceCatalog(50)
  const book = new PriceBook()
  const replica = new TenantReplica(snapshotOf(source, book))
  t.equal(replica.catalog.isDeferred('article'), true, 'articles packed after the snapshot')
  const mappingKey = compositeKey('SKU-7', 'SE')
  t.same(
    replica.catalog.get('article_taxclass', mappingKey, start),
    { vat_class_code: 'standard' },
    'the rest is decoded',
  )
  t.equal(replica.catalog.isDeferred('article'), true, 'reading a VAT mapping leaves the articles packed')

  // The same changes on both sides, as the main thread publishes them: an update, a removal, a new
  // article, and a VAT mapping beside them.
  const changes: Change[] = [
    source.plan('article', 'SKU-2', article(2, 'Changed 2'), start + 3 * day, start + day, 'writer')!,
    source.plan('article', 'SKU-60', article(60, 'New 60'), start, start + day, 'writer')!,
    source.plan('article_taxclass', mappingKey, { vat_class_code: 'reduced' }, start + day, start + day, 'writer')!,
  ]
  for (const change of changes) source.apply(change.type, change.key, change.versions)
  source.remove('article', 'SKU-3')
  const message: SyncMessage = {
    tenant: 'test',
    sequence: 1,
    changes: [
      ...changes.map(
        (change) => [change.type, change.key, change.versions] as [CatalogType, string, Version<unknown>[]],
      ),
      ['article', 'SKU-3', []],
    ],
    dictionary: book.dictionaryDelta(0, 0),
    columns: null,
  }
  replica.apply(message)
  t.equal(replica.sequence, 1)
  t.equal(replica.catalog.isDeferred('article'), true, 'article changes are kept packed too')
  t.same(
    replica.catalog.get('article_taxclass', mappingKey, start + day),
    { vat_class_code: 'reduced' },
    'the mapping change is applied at once',
  )

  t.same(
    replica.catalog.get('article', 'SKU-2', start + 3 * day),
    article(2, 'Changed 2'),
    'the first read sees the change',
  )
  t.equal(replica.catalog.isDeferred('article'), false, 'decoded by that read')
  t.same(table(replica.catalog, 'article'), table(source, 'article'), 'every article and version as on the main thread')
  t.equal(replica.catalog.exists('article', 'SKU-3'), false, 'the removed key is gone')
  t.equal(replica.catalog.liveCount('article'), source.liveCount('article'))
  t.same(table(replica.catalog, 'article_taxclass'), table(source, 'article_taxclass'))
})

t.test('an article search or a live count decodes the articles as well', async (t) => {
  const source = sourceCatalog(10)
  const replica = new TenantReplica(snapshotOf(source, new PriceBook()))
  t.equal(replica.catalog.liveCount('article'), source.liveCount('article'), 'the count of live articles')
  t.equal(replica.catalog.isDeferred('article'), false)
  const other = new TenantReplica(snapshotOf(source, new PriceBook()))
  const found = [...other.catalog.viewsAt('article', start + 2 * day)].map(([key, view]) => [key, view.value])
  t.same(
    found,
    [...source.viewsAt('article', start + 2 * day)].map(([key, view]) => [key, view.value]),
    'the views in force',
  )
})

t.test('Catalog.load leaves what apply leaves entry by entry', async (t) => {
  const source = sourceCatalog(30)
  const entries = [...source.entries()]
  const applied = new Catalog()
  for (const [type, key, versions] of entries) applied.apply(type, key, versions)
  const loaded = new Catalog()
  loaded.load(entries)
  for (const type of ['article', 'article_taxclass', 'pricelist'] as const) {
    t.same(table(loaded, type), table(applied, type), `${type}: the same keys and versions`)
    t.equal(loaded.liveCount(type), applied.liveCount(type), `${type}: the same live count`)
    t.equal(loaded.revision(type), applied.revision(type), `${type}: the same revision`)
  }
  t.equal(loaded.liveCount('article'), 29, 'one of 30 articles is deleted')
  // Loading over existing keys counts what changed, as apply does.
  const replaced: [CatalogType, string, Version<unknown>[]][] = [
    ['article', 'SKU-1', source.versions('article', 'SKU-0')!],
  ]
  loaded.load(replaced)
  applied.apply('article', 'SKU-1', source.versions('article', 'SKU-0')!)
  t.equal(loaded.liveCount('article'), 30, 'the deleted one is live again')
  t.equal(loaded.liveCount('article'), applied.liveCount('article'))
  t.equal(loaded.revision('article'), applied.revision('article'))
})

t.test('a prefetched catalogue serves the snapshot that names its token, and no other', async (t) => {
  const replicas = new ReplicaSet()
  const channel = new BroadcastChannel(replicationChannelName)
  t.teardown(() => {
    replicas.close()
    channel.close()
  })
  const book = new PriceBook()
  const prefetched = sourceCatalog(12)
  const other = sourceCatalog(5)
  const prefetch: PrefetchMessage = {
    kind: 'prefetch',
    tenant: 'a',
    token: 7,
    catalog: packCatalog(prefetched.entries()),
  }
  // The snapshot's own bytes differ from the prefetch's here, so the catalogue shows which was used.
  const named: SnapshotMessage = {
    kind: 'snapshot',
    tenant: 'a',
    snapshot: { ...snapshotOf(other, book), prepared: 7 },
  }
  channel.postMessage(prefetch)
  channel.postMessage(named)
  const settled = async (tenant: string): Promise<TenantReplica> => {
    for (let wait = 0; wait < 200 && replicas.get(tenant) === undefined; wait++) {
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    return replicas.get(tenant)!
  }
  const used = await settled('a')
  t.same(table(used.catalog, 'article_taxclass'), table(prefetched, 'article_taxclass'), 'built from the prefetch')
  t.same(table(used.catalog, 'article'), table(prefetched, 'article'), 'its articles too')

  const mismatch: SnapshotMessage = {
    kind: 'snapshot',
    tenant: 'b',
    snapshot: { ...snapshotOf(other, book), prepared: 8 },
  }
  channel.postMessage({ ...prefetch, tenant: 'b', token: 9 } satisfies PrefetchMessage)
  channel.postMessage(mismatch)
  const decoded = await settled('b')
  t.same(
    table(decoded.catalog, 'article_taxclass'),
    table(other, 'article_taxclass'),
    "another token: the snapshot's own bytes",
  )
  t.equal(decoded.catalog.keys('article').length, 5)
})
