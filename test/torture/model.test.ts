/**
 * The torture harness's own checks (test/torture/), without a server: the reference model flags a
 * lost or invented value and accepts either outcome of a write in flight, a restore replaces the
 * model with the backup's snapshot, the PRNG replays a seed, and the schedule covers every phase
 * in its first five runs. So a clean torture result means the checks ran, not that they could not fail.
 */
import t from 'tap'
import { Model } from './model.js'
import { phaseNames } from './phases.js'
import { Prng } from './prng.js'
import { schedule } from './runner.js'
import { canonicalAmount, canonicalPrice } from './workload.js'

t.test('the model flags a lost write and an invented one, and adopts what it reads', async (t) => {
  const model = new Model()
  model.acknowledge('price', 'PA|S-1', 'a')
  t.equal(model.check('price', 'PA|S-1', 'a'), null, 'the acknowledged value')
  t.match(
    model.check('price', 'PA|S-1', null),
    { kind: 'price', key: 'PA|S-1', expected: 'a', observed: null },
    'a lost write',
  )
  t.equal(model.check('price', 'PA|S-1', null), null, 'what was read is adopted')
  t.match(
    model.check('article', 'A-1', 'never written'),
    { expected: null, observed: 'never written' },
    'an invented value',
  )
})

t.test('a write in flight at the kill may be there or not, nothing else', async (t) => {
  const model = new Model()
  model.acknowledge('setting', 'k', 'old')
  t.ok(model.lock('setting', 'k'))
  t.notOk(model.lock('setting', 'k'), 'one write of a key at a time')
  model.maybe('setting', 'k', 'new')
  model.unlock('setting', 'k')
  t.equal(model.known('setting', 'k'), undefined, 'unknown until read back')
  t.equal(model.check('setting', 'k', 'new'), null, 'the write in flight')
  model.maybe('setting', 'k', 'newer')
  t.equal(model.check('setting', 'k', 'new'), null, 'or the value before it')
  model.maybe('setting', 'k', 'newest')
  t.not(model.check('setting', 'k', 'other'), null, 'but not a third value')
})

t.test('a restore replaces every key with the snapshot taken at the backup', async (t) => {
  const model = new Model()
  model.acknowledge('price', 'PA|S-1', 'backup')
  const snapshot = model.snapshot()
  model.acknowledge('price', 'PA|S-1', 'after')
  model.acknowledge('price', 'PA|S-2', 'created after')
  model.replaceWith(snapshot)
  t.equal(model.known('price', 'PA|S-1'), 'backup')
  t.equal(model.known('price', 'PA|S-2'), null, 'a key the backup lacks is absent')
  model.maybe('price', 'PA|S-1', 'x')
  t.throws(() => model.snapshot(), 'no snapshot while a key is unresolved')
})

t.test('amounts compare as canonical 4-decimal strings', async (t) => {
  t.equal(canonicalAmount('12.3400'), '12.34')
  t.equal(canonicalAmount(12.34), '12.34')
  t.equal(canonicalAmount('0.0001'), '0.0001')
  t.equal(canonicalAmount('100000000000'), '100000000000')
  t.equal(
    canonicalPrice({ sales: '1.5000', fields: { cost: '0.2' } }, null),
    canonicalPrice({ sales: 1.5, fields: { cost: 0.2 } }, []),
  )
  t.not(canonicalPrice({ sales: '1.5' }, null), canonicalPrice({ sales: '1.5001' }, null))
})

t.test('a seed replays the same choices, and the first runs, one per phase, cover every phase', async (t) => {
  const draw = (seed: number) =>
    Array.from(
      { length: 20 },
      (
        (prng) => () =>
          prng.index(1000)
      )(new Prng(seed)),
    )
  t.same(draw(7), draw(7))
  t.notSame(draw(7), draw(8))
  for (const seed of [1, 2, 3, 13, 99]) {
    const plan = schedule(new Prng(seed), phaseNames.length)
    t.same([...plan].sort(), [...phaseNames].sort(), `seed ${seed}: ${plan.join(', ')}`)
  }
})
