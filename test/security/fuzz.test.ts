/**
 * The fuzzer in CI (issue 13, "Bad input, at scale"): 10,000 requests from a fixed seed over every
 * operation of the OpenAPI document and every web page (test/fuzz/driver.ts), against the real
 * server with a real LMDB. No answer is a 5xx, the server never exits or hangs, every error body is
 * the spec's, and no refused request changes the changelog head or the state's digest. The full run
 * (100,000 requests, any seed) is `npm run fuzz`, outside `npm test`.
 */
import t from 'tap'
import { detailLine, resultLine, runFuzz, type Defect } from '../fuzz/driver.js'

/** Fixed, so that CI replays the same requests: `npm run fuzz -- --seed 20261126 --requests 10000` does too. */
const seed = 20261126
const requests = 10_000

t.test(
  `${requests} fuzzed requests over every route (seed ${seed}): no 5xx, no crash, no change after a refusal`,
  async (t) => {
    const result = await runFuzz({ seed, requests })
    t.comment(resultLine(result))
    t.comment(detailLine(result))
    t.equal(result.requests, requests, 'every request was sent')
    // A closed connection without an answer (other than a body cut short, or one past four times the
    // body limit) is a broken answer too: a HEAD answer with content was one.
    const defects: Defect[] = ['serverErrors', 'crashes', 'hangs', 'changes', 'badBodies', 'resets']
    for (const defect of defects) {
      t.same(result.findings[defect], [], `${defect}: ${result.counts[defect]}`)
    }
    t.ok(result.readyAtEnd, '/readyz answers 200 at the end')
    t.ok(
      result.operationsRefused >= result.operations * 0.9,
      `${result.operationsRefused} of ${result.operations} operations refused bad input`,
    )
    t.ok(
      result.operationsAccepted >= result.operations * 0.6,
      `${result.operationsAccepted} of ${result.operations} operations accepted a valid request`,
    )
    t.ok(result.headChecks > requests / 3, `${result.headChecks} refusals checked against the changelog head`)
  },
)
