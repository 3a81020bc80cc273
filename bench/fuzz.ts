/**
 * `npm run fuzz -- --seed N --requests N [--digest-every N] [--trace]`: the full fuzzer run (issue 13, "Bad input, at scale"),
 * 100,000 requests by default over every route of the real server (test/fuzz/driver.ts). Prints
 * progress, the findings, and the result line; exits 1 when anything was found. CI runs 10,000
 * requests of a fixed seed (test/security/fuzz.test.ts); this is not part of `npm test`.
 */
import { detailLine, resultLine, runFuzz, type Defect } from '../test/fuzz/driver.js'

function option(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`)
  if (at < 0) return fallback
  const value = Number(process.argv[at + 1])
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`--${name} takes a non-negative integer`)
  return value
}

const seed = option('seed', Date.now() % 1_000_000)
const requests = option('requests', 100_000)
const digestEvery = option('digest-every', 50)
console.log(`fuzz: ${requests} requests, seed ${seed} (replay: npm run fuzz -- --seed ${seed} --requests ${requests})`)
const trace = process.argv.includes('--trace') ? (line: string) => console.log(line) : undefined
const result = await runFuzz({
  seed,
  requests,
  digestEvery,
  log: (line) => console.log(line),
  ...(trace === undefined ? {} : { trace }),
})
const defects: Defect[] = ['serverErrors', 'crashes', 'hangs', 'changes', 'badBodies', 'resets']
for (const defect of defects) {
  for (const finding of result.findings[defect]) {
    console.log(
      `${defect} #${finding.index} ${finding.operation} [${finding.kind}] -> ${finding.status}\n  sent: ${finding.request}\n  ${finding.detail}`,
    )
  }
}
console.log(`statuses: ${JSON.stringify(result.statuses)}`)
console.log(`kinds: ${JSON.stringify(result.kinds)}`)
console.log(`never accepted a request: ${result.neverAccepted.join(', ') || 'none'}`)
console.log(detailLine(result))
console.log(resultLine(result))
const failed = defects.some((defect) => result.counts[defect] > 0) || !result.readyAtEnd
process.exit(failed ? 1 : 0)
