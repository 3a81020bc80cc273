/**
 * The answer arena (workers/answer-arena.ts), both sides in one thread: answers come back byte for
 * byte through wrap-around; the worker refuses to place while the ring is full and places again
 * once the main thread releases; a release that comes early waits for those placed before it; an
 * answer over a quarter of the ring is refused (it travels as a transferred buffer instead).
 */
import { randomBytes } from 'node:crypto'
import t from 'tap'
import { AnswerArena, ArenaReader, type ArenaPlacement } from '../../workers/answer-arena.js'

const capacity = 64 * 1024

t.test('answers read back exactly through many wrap-arounds', async (t) => {
  const arena = new AnswerArena(7, capacity)
  const reader = new ArenaReader()
  let mismatches = 0
  let announced = 0
  for (let round = 0; round < 2_000; round++) {
    const answer = randomBytes(1 + ((round * 7919) % (capacity / 4)))
    const placement = arena.place(answer)!
    if (placement.buffer !== null) announced++
    const { bytes, release } = reader.open(placement)
    if (!bytes.equals(answer)) mismatches++
    release()
  }
  t.equal(mismatches, 0, 'every answer read back as written')
  t.equal(announced, 1, 'the buffer crossed once, with the first answer')
})

t.test('a full ring refuses until the main thread releases, in placement order', async (t) => {
  const arena = new AnswerArena(1, capacity)
  const reader = new ArenaReader()
  const quarter = capacity / 4
  // Three quarters and an eighth: the ring's end is an eighth away.
  const answers = [quarter, quarter, quarter, quarter / 2].map((size, index) => Buffer.alloc(size, 0x61 + index))
  const opened = answers.map((answer) => reader.open(arena.place(answer)!))
  const next = Buffer.alloc(quarter, 0x7a)
  t.equal(arena.place(next), null, 'a quarter does not fit: the tail is an eighth and nothing was released')
  opened[1]!.release()
  t.equal(arena.place(next), null, 'the release of the 2nd waits for the 1st')
  opened[0]!.release()
  const wrapped = arena.place(next)
  t.not(wrapped, null, 'with the 1st and 2nd released, it fits at the start of the ring')
  t.equal(wrapped!.start, 0)
  t.equal(wrapped!.reserved, quarter + quarter / 2, 'the skipped tail counts with it')
  t.same(opened[2]!.bytes, answers[2], 'the 3rd answer, not released, is untouched')
  t.same(opened[3]!.bytes, answers[3], 'and so is the 4th')
  t.same(reader.open(wrapped!).bytes, next)
  opened[2]!.release()
  opened[2]!.release()
  // In flight now: the 4th (an eighth) and the wrapped answer (three eighths): half the ring.
  t.not(arena.place(Buffer.alloc(quarter)), null)
  t.not(arena.place(Buffer.alloc(quarter)), null, 'two more quarters fill the ring exactly')
  t.equal(arena.place(Buffer.alloc(1)), null, 'a second release of the 3rd counted once: not a byte more fits')
})

t.test('an answer over a quarter of the ring is refused; capacity must be a power of two', async (t) => {
  const arena = new AnswerArena(2, capacity)
  t.equal(arena.place(Buffer.alloc(capacity / 4 + 1)), null)
  t.not(arena.place(Buffer.alloc(capacity / 4)), null)
  t.throws(() => new AnswerArena(3, 1000), /power of two/)
  const reader = new ArenaReader()
  const unannounced: ArenaPlacement = { arena: 99, buffer: null, sequence: 0, start: 0, reserved: 1, length: 1 }
  t.throws(() => reader.open(unannounced), /never announced/)
})
