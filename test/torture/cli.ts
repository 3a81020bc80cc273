/**
 * `npm run torture -- --runs 50 --seed 1 [--scale 1] [--concurrency 4] [--keep]`: the crash-safety
 * session of runner.ts, printing a line per run, every finding, and the result line last. Exits 1
 * when anything was lost, a start failed or was too slow, or any other check found something.
 * @module
 */
import { parseArgs } from 'node:util'
import { runTorture } from './runner.js'

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '50' },
    seed: { type: 'string', default: '1' },
    scale: { type: 'string', default: '1' },
    concurrency: { type: 'string', default: '4' },
    'changelog-capacity': { type: 'string', default: '30000' },
    keep: { type: 'boolean', default: false },
  },
})

function integer(name: string, text: string, min: number): number {
  const value = Number(text)
  if (!Number.isInteger(value) || value < min) {
    process.stderr.write(`--${name} must be an integer of at least ${min}: ${text}\n`)
    process.exit(2)
  }
  return value
}

const scale = Number(values.scale)
if (!(scale > 0)) {
  process.stderr.write(`--scale must be a positive number: ${values.scale}\n`)
  process.exit(2)
}
const result = await runTorture({
  runs: integer('runs', values.runs, 1),
  seed: integer('seed', values.seed, 0),
  scale,
  concurrency: integer('concurrency', values.concurrency, 1),
  changelogCapacity: integer('changelog-capacity', values['changelog-capacity'], 1),
  keep: values.keep,
})
for (const finding of result.findings) process.stdout.write(`finding: ${finding}\n`)
if (result.findings.length > 0) process.stdout.write(`kept for diagnosis: the data directory and ${result.logPath}\n`)
process.stdout.write(`${result.line}\n`)
process.exit(result.findings.length === 0 && result.lost === 0 && result.failedRestarts === 0 ? 0 : 1)
