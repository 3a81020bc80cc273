/**
 * A forked catalogue (engine/catalog.ts `fork`, the dry run's copy) reads what the original holds,
 * takes its own writes, and never changes the original: not its records, keys, live counts or
 * revisions (caches of derived facts compare those).
 */
import t from 'tap'
import { Catalog, type CatalogType, type EntityValues } from '../../engine/catalog.js'

function put<K extends CatalogType>(catalog: Catalog, type: K, key: string, value: EntityValues[K] | null, at = 0) {
  const change = catalog.plan(type, key, value, at, at, 'test')
  if (change !== null) catalog.apply(change.type, change.key, change.versions)
}

const vatClass = (name: string) => ({ name, description: null })

t.test('a fork reads the original and keeps its writes to itself', async (t) => {
  const original = new Catalog()
  put(original, 'vat_class', 'standard', vatClass('standard'))
  put(original, 'vat_class', 'reduced', vatClass('reduced'))
  put(original, 'tax_area', 'SE', { name: 'SE', is_active: true, valid_from: null, valid_to: null })
  const revision = original.revision('vat_class')
  const fork = original.fork()
  t.same(fork.get('vat_class', 'standard', 1), vatClass('standard'), 'reads what the original holds')
  t.same(fork.keys('vat_class'), ['reduced', 'standard'])

  put(fork, 'vat_class', 'zero', vatClass('zero'), 1)
  put(fork, 'vat_class', 'reduced', null, 1)
  put(fork, 'vat_class', 'standard', vatClass('renamed'), 2)
  t.same(fork.keys('vat_class'), ['reduced', 'standard', 'zero'], 'the fork has its new key')
  t.equal(fork.liveCount('vat_class'), 2, 'reduced deleted, zero added')
  t.same(fork.get('vat_class', 'standard', 3), vatClass('renamed'))
  t.equal(fork.get('vat_class', 'reduced', 3), null)

  t.same(original.keys('vat_class'), ['reduced', 'standard'], 'the original keeps its keys')
  t.equal(original.liveCount('vat_class'), 2)
  t.same(original.get('vat_class', 'standard', 3), vatClass('standard'), 'and its records')
  t.same(original.get('vat_class', 'reduced', 3), vatClass('reduced'))
  t.equal(original.get('vat_class', 'zero', 3), null)
  t.equal(original.revision('vat_class'), revision, 'and its revision')
  const classesOf = (catalog: Catalog) =>
    [...catalog.entries()].filter(([type]) => type === 'vat_class').map(([, key, versions]) => [key, versions.length])
  t.same(
    classesOf(fork),
    [
      ['standard', 2],
      ['reduced', 2],
      ['zero', 1],
    ],
    'the fork lists the shared keys with its versions, then its new ones',
  )
  t.same(
    classesOf(original),
    [
      ['standard', 1],
      ['reduced', 1],
    ],
    'the original lists its own',
  )
  t.ok(fork.revision('vat_class') > revision, 'the fork counts its writes')

  // The fork reads through to the original for what it did not write (a dry run runs in one turn,
  // so the original does not change meanwhile).
  put(original, 'tax_area', 'DE', { name: 'DE', is_active: true, valid_from: null, valid_to: null })
  t.ok(fork.exists('tax_area', 'DE'), 'an unwritten type is shared')
  put(original, 'vat_class', 'standard', vatClass('later'), 3)
  t.same(fork.get('vat_class', 'standard', 4), vatClass('renamed'), 'a key the fork wrote is its own')
})

t.test('a fork of a fork leaves both untouched', async (t) => {
  const original = new Catalog()
  put(original, 'vat_class', 'standard', vatClass('standard'))
  const first = original.fork()
  put(first, 'vat_class', 'first', vatClass('first'))
  const second = first.fork()
  put(second, 'vat_class', 'second', vatClass('second'))
  t.same(
    [original.keys('vat_class'), first.keys('vat_class'), second.keys('vat_class')],
    [['standard'], ['first', 'standard'], ['first', 'second', 'standard']],
  )
})
