/**
 * `npm run bench:cluster`: the cluster scenario of `npm run bench` (cluster.ts) alone, with the same
 * load parameters (64 connections, 10 s after a 2 s warm-up; `--quick`: 3 s after 1 s). Prints its
 * table and targets and writes bench/results/<timestamp>-cluster.json.
 * @module
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { runClusterBench } from './cluster.js'
import { clockTicksPerSecond } from './proc.js'
import { checkTable, clusterChecks, clusterTable, renderText } from './report.js'
import { defaultShape } from './workload.js'

const buildRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const repositoryRoot = path.resolve(buildRoot, '..')
const quick = process.argv.includes('--quick')
const load = { connections: 64, durationS: quick ? 3 : 10, warmupS: quick ? 1 : 2, clockTicks: clockTicksPerSecond() }
const result = await runClusterBench({
  entry: path.join(buildRoot, 'server', 'start.js'),
  shape: defaultShape,
  load,
  progress: (message) => process.stderr.write(`[bench] ${message}\n`),
})
const checks = clusterChecks(result)
process.stdout.write(
  `\nA cluster on Redis on this machine (Node.js ${process.version})\n\n${renderText(clusterTable(result))}\n\n${renderText(checkTable(checks))}\n`,
)
const directory = path.join(repositoryRoot, 'bench', 'results')
mkdirSync(directory, { recursive: true })
const file = path.join(directory, `${new Date().toISOString().replace(/:/g, '-')}-cluster${quick ? '-quick' : ''}.json`)
writeFileSync(
  file,
  `${JSON.stringify({ generatedAt: new Date().toISOString(), node: process.version, load, cluster: result, checks }, null, 2)}\n`,
)
process.stderr.write(`[bench] wrote ${path.relative(repositoryRoot, file)}\n`)
