/**
 * The restore's comparison of two real LMDB stores (storage/backup/restore-diff.ts): a key only in
 * the tenant is removed, one only in the backup created, a differing one updated (or deleted where
 * the backup holds it deleted), an equal one left alone; across several read chunks (2,000 keys each),
 * with keys whose order in LMDB differs from plain string order. Committing the changes makes the
 * tenant's tables equal the backup's, which a second comparison shows (no differences left).
 */
import path from 'node:path'
import t from 'tap'
import type { Change } from '../../engine/catalog.js'
import type { PriceVersion } from '../../engine/prices.js'
import type { Version } from '../../engine/temporal.js'
import { restoreChanges, restoreDiff } from '../../storage/backup/restore-diff.js'
import { TenantStore, type PriceChange } from '../../storage/tenant-store.js'
import { temporaryDir } from '../helpers/store-fixtures.js'

const article = (key: string, name: string | null): Change => {
  const versions: Version<unknown>[] = [
    { from: 1, value: name === null ? null : { name }, hash: name ?? '', writtenAt: 1, writtenBy: 'tester' },
  ]
  return { type: 'article', key, versions, changeType: 'created', hash: name ?? '', at: 1, by: 'tester' }
}
const price = (sku: string, sales: number | null): PriceChange => {
  const versions: PriceVersion[] = [
    {
      from: 1,
      content: sales === null ? null : { sales, fields: null, breaks: null },
      writtenAt: 1,
      writtenBy: 'tester',
    },
  ]
  return { pricelist: 'P', sku, versions, changeType: 'created', hash: String(sales), at: 1, by: 'tester' }
}

t.test('two stores compared: created, updated, deleted, removed, equal', async (t) => {
  const directory = temporaryDir(t, 'restore-diff')
  const current = new TenantStore(path.join(directory, 'current'))
  const backup = new TenantStore(path.join(directory, 'backup'))
  t.teardown(async () => {
    await current.close()
    await backup.close()
  })
  // 6,000 shared prices (equal but every 1,000th), and keys of odd lengths and characters.
  const shared = Array.from({ length: 6_000 }, (_, index) => `S${index}`)
  await backup.commit(
    [article('A', 'a'), article('B', 'b'), article('D', 'd'), article('E', null)],
    [],
    shared.map((sku, index) => price(sku, index)).concat([price('only-backup', 1), price('Z', null)]),
  )
  await current.commit(
    [article('A', 'a'), article('B', 'changed'), article('C', 'new'), article('D', null), article('E', 'back')],
    [],
    shared
      .map((sku, index) => price(sku, index % 1_000 === 0 ? -index : index))
      .concat([price('only-current', 2), price('Z', 3), price('é', 4)]),
  )

  const diff = await restoreDiff(current, backup)
  const entities = diff.entities.map(
    (entry) => `${entry.key}:${entry.versions.length === 0 ? 'absent' : 'held'}:${entry.live ? 'live' : 'not-live'}`,
  )
  t.same(
    entities.sort(),
    ['B:held:live', 'C:absent:live', 'D:held:not-live', 'E:held:live'],
    'B differs, C is only in the tenant, D deleted there, E deleted in the backup',
  )
  const prices = diff.prices.map((entry) => entry.sku).sort()
  t.same(
    prices,
    ['S0', 'S1000', 'S2000', 'S3000', 'S4000', 'S5000', 'Z', 'only-backup', 'only-current', 'é'].sort(),
    'every differing pair, across chunks',
  )
  t.equal(diff.compared, 5 + 6_000 + 4, 'each key compared once')

  const { changes, prices: priceChanges } = restoreChanges(diff, 99, 'restorer')
  const typeOf = (key: string) => changes.find((change) => change.key === key)!.changeType
  t.same([typeOf('B'), typeOf('C'), typeOf('D'), typeOf('E')], ['updated', 'deleted', 'created', 'deleted'])
  const priceType = (sku: string) => priceChanges.find((change) => change.sku === sku)!.changeType
  t.same(
    [priceType('S0'), priceType('only-backup'), priceType('only-current'), priceType('Z')],
    ['updated', 'created', 'deleted', 'deleted'],
  )
  t.ok(
    changes.every((change) => change.at === 99 && change.by === 'restorer'),
    'at and by of the restore',
  )

  const sequence = current.sequence
  const entries = await current.commit(changes, [], priceChanges, { restore: { backup_id: 'b' } })
  t.equal(entries.length, 4 + 10, 'one log entry per difference')
  t.equal(entries[0]!.sequence, sequence + 1, 'after the current sequence')
  t.same(current.metaValue('restore'), { backup_id: 'b' }, 'the marker, in the same transaction')
  const again = await restoreDiff(current, backup)
  t.same([again.entities.length, again.prices.length], [0, 0], 'the tenant now holds exactly the backup')
})
