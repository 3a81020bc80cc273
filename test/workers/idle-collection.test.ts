/**
 * The price workers' garbage collection once replication is quiet (workers/idle-collection.ts):
 * an idle worker that never allocates would otherwise keep what a snapshot's decode or past sync
 * messages left, shared price columns included. Checked with a WeakRef to an unreachable object,
 * which only a full collection clears, in a thread that allocates nothing meanwhile.
 */
import { runInNewContext } from 'node:vm'
import t from 'tap'
import { IdleCollection } from '../../workers/idle-collection.js'

/** An object reachable only through the WeakRef answered (built here, so no local keeps it). */
function garbage(): WeakRef<object> {
  return new WeakRef({ payload: new Array(1_000).fill('x') })
}

/** WeakRef targets stay alive until the current job ends: the check is one macrotask later. */
const nextTurn = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 10))
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

// This test first: the other's instance collects again once quiet (collectNow arms it), which would
// free this one's garbage while it checks that work holds the collection back.
t.test('replication work is followed by a collection once it is quiet, not while it goes on', async (t) => {
  const collection = new IdleCollection()
  const reference = garbage()
  collection.noteWork()
  // Work every 300 ms keeps it from collecting: the quiet tick needs a full second without any.
  for (let step = 0; step < 6; step++) {
    await sleep(300)
    collection.noteWork()
  }
  t.not(reference.deref(), undefined, 'no collection while work kept coming (1.8 s)')
  await nextTurn()
  await sleep(2_500)
  t.equal(reference.deref(), undefined, 'collected within 2.5 s of the last work')
})

t.test('collectNow runs a full collection, and no `gc` is left for other code', async (t) => {
  const collection = new IdleCollection()
  t.equal(typeof (globalThis as { gc?: unknown }).gc, 'undefined', 'no global gc in this context')
  t.equal(runInNewContext('typeof gc'), 'undefined', 'nor in a context made after it')
  const reference = garbage()
  await nextTurn()
  t.not(reference.deref(), undefined, 'nothing collected it on its own')
  // deref() keeps its target for the rest of this job: the collection runs in the next.
  await nextTurn()
  collection.collectNow()
  await nextTurn()
  t.equal(reference.deref(), undefined, 'the collection freed it')
})
