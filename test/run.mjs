#!/usr/bin/env node
// The one test command: builds (type-checks) everything, runs every tap suite from the compiled
// output, and ends with the line `N passed, N failed` that CI reads.
import { spawnSync, spawn } from 'node:child_process'
import { rmSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import path from 'node:path'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
// A clean build, so that no compiled test of a deleted source runs.
// PRICING_BUILD_DIR lets parallel runs build into their own folders.
const buildDir = process.env.PRICING_BUILD_DIR ?? 'dist'
rmSync(path.join(root, buildDir), { recursive: true, force: true })
const tsc = spawnSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', root, '--outDir', buildDir], {
  stdio: 'inherit',
})
if (tsc.status !== 0) {
  console.log('0 passed, 1 failed')
  process.exit(1)
}
const files = process.argv.slice(2)
const tapArgs = [
  path.join(root, 'node_modules/tap/dist/esm/run.mjs'),
  '--disable-coverage',
  '--reporter=tap',
  '--jobs=2',
  '--timeout=300',
  ...(files.length > 0 ? files : [`${buildDir}/test/**/*.test.js`]),
]
const child = spawn(process.execPath, tapArgs, { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] })
let tail = ''
child.stdout.on('data', (chunk) => {
  process.stdout.write(chunk)
  tail = (tail + chunk.toString('utf8')).slice(-4096)
})
child.on('close', (code) => {
  const summaries = [...tail.matchAll(/^# \{ (total: \d+[^}]*) \}$/gm)]
  const last = summaries.length > 0 ? summaries[summaries.length - 1][1] : ''
  const count = (name) => Number((last.match(new RegExp(`${name}: (\\d+)`)) ?? [0, 0])[1])
  const failed = count('fail') + (code !== 0 && count('fail') === 0 ? 1 : 0)
  console.log(`${count('pass')} passed, ${failed} failed`)
  process.exit(code ?? 1)
})
