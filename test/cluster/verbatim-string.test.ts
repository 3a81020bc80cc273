/**
 * ioredis loads with the plain VerbatimString of cluster/verbatim-string.ts, not its own
 * `extends String` class, which slows msgpackr's encoding for the whole process (the module says
 * why; the bench's ingest figures measure it). Loading the cluster's Redis module swaps it in.
 */
import t from 'tap'
import { ioredisVerbatimString } from '../../cluster/ioredis-shim.js'
import { connectRedis } from '../../cluster/redis.js'
import { VerbatimString } from '../../cluster/verbatim-string.js'

t.test('ioredis uses the plain VerbatimString: no object has String.prototype as its prototype', async (t) => {
  t.equal(typeof connectRedis, 'function', 'the cluster Redis module (and ioredis) loaded')
  const used = ioredisVerbatimString() as typeof VerbatimString
  t.equal(used, VerbatimString, "ioredis's module cache entry is ours")
  t.notOk(
    Object.prototype.isPrototypeOf.call(String.prototype, used.prototype),
    'its prototype chain has no String.prototype',
  )
  const reply = new used('txt', 'hello')
  t.equal(`${reply}`, 'hello', 'it still reads as its text')
  t.equal(reply.format, 'txt')
})
