/**
 * The CI variant of `npm run torture` (test/torture/): a fixed seed, 6 runs covering every phase
 * (ingest, webhook delivery, backup, restore, retention, restore of a large tenant) with shortened
 * phases, each ended by a
 * SIGKILL of the real server process. After every restart: every acknowledged write reads back,
 * the changelog has no gap and no duplicate sequence, the webhook got every sequence, the start
 * was within its bound (2x a clean start on the same data + 3 s), and nothing else was found.
 */
import t from 'tap'
import { runTorture } from '../torture/runner.js'

t.test('6 seeded SIGKILL runs across every phase lose nothing', async (t) => {
  const result = await runTorture({
    runs: 6,
    seed: 13,
    scale: 0.5,
    concurrency: 3,
    changelogCapacity: 10_000,
    log: (line) => t.comment(line),
  })
  t.comment(result.line)
  t.same(result.findings, [], 'no findings')
  t.equal(result.runs, 6)
  t.ok(
    Object.values(result.phaseCounts).every((count) => count >= 1),
    `every phase ran: ${JSON.stringify(result.phaseCounts)}`,
  )
  t.ok(result.acknowledged > 500, `writes were acknowledged (${result.acknowledged})`)
  t.equal(result.lost, 0, 'lost items')
  t.equal(result.failedRestarts, 0, 'failed restarts')
  t.equal(result.slowRestarts, 0, 'restarts over the bound')
  t.equal(result.changelogGaps, 0, 'changelog gaps')
  t.equal(result.duplicateSequences, 0, 'duplicate sequences')
  t.equal(result.undelivered, 0, 'undelivered events')
})
