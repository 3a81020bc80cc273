#!/usr/bin/env node
// The one test command: builds (type-checks) everything, runs every tap suite from the compiled
// output, reports the code's coverage (and fails below its floor), and ends with the line
// `N passed, N failed` that CI reads.
import { spawnSync, spawn } from 'node:child_process'
import { readdirSync, rmSync } from 'node:fs'
import os from 'node:os'
import { fileURLToPath, pathToFileURL } from 'node:url'
import path from 'node:path'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
// A clean build, so that no compiled test of a deleted source runs. It goes to dist-test/, not
// dist/: `npm start` runs from dist/, and a test run beside a running service must not delete it.
// PRICING_BUILD_DIR lets parallel runs build into their own folders.
const buildDir = process.env.PRICING_BUILD_DIR ?? 'dist-test'
rmSync(path.join(root, buildDir), { recursive: true, force: true })
const tsc = spawnSync(
  process.execPath,
  [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', root, '--outDir', buildDir],
  {
    stdio: 'inherit',
  },
)
if (tsc.status !== 0) {
  console.log('0 passed, 1 failed')
  process.exit(1)
}
const files = process.argv.slice(2)

/**
 * The Node.js binaries to run the suites on: this one, or each major version named in
 * PRICING_TEST_NODE_VERSIONS (e.g. "22 24", as CI does), taken from the npm registry's `node`
 * package through npx (no root needed). Every test process then runs on that Node.
 */
function nodeBinaries() {
  const versions = (process.env.PRICING_TEST_NODE_VERSIONS ?? '').split(/[\s,]+/).filter(Boolean)
  if (versions.length === 0) return [{ name: process.version, path: process.execPath }]
  return versions.map((version) => {
    const found = spawnSync('npx', ['-y', `node@${version}`, '-p', 'process.execPath'], { encoding: 'utf8' })
    const binary = found.stdout.trim().split('\n').pop()
    if (found.status !== 0 || !binary) {
      console.log(`cannot get Node.js ${version} through npx: ${found.stderr}`)
      console.log('0 passed, 1 failed')
      process.exit(1)
    }
    return { name: `Node.js ${version}`, path: binary }
  })
}

/**
 * Suites that test what the storage keeps (LMDB, files, the restore) across SIGKILLs, a full disk
 * and restarts (minutes of kills and restarts together): they test the storage and the operating
 * system, not the runtime, so with several Node.js versions they run on the last only, which keeps
 * CI within its time: the last, because the first collects coverage, which slows a process that
 * starts servers by about 1.7x, and these suites start hundreds. Everything else runs on every
 * version. (Their code is covered by the tenant, storage and backup suites, which run with coverage.)
 */
const storageSuites = [
  'test/scenarios/torture.test.js',
  'test/scenarios/kill-during-restore.test.js',
  'test/scenarios/kill-during-large-restore.test.js',
  'test/scenarios/kill-during-backup.test.js',
  'test/scenarios/durability.test.js',
  'test/scenarios/disk-full.test.js',
  'test/platform/data-dir.test.js',
  'test/scenarios/webhook-durability.test.js',
  'test/storage/book-snapshot.test.js',
]

/**
 * Coverage of the product's code (not of tests or benches), as V8 counts it in every process the
 * suites start: tap's test processes, the servers they spawn and their worker threads all inherit
 * NODE_V8_COVERAGE; c8 merges the files and maps them back to the TypeScript sources. Collected on
 * the first Node.js version only (one is enough, and it costs up to a sixth of the run), for a whole run
 * (PRICING_TEST_COVERAGE=true also for named files, without the floor; =false never). The floors
 * (lines, branches, functions) are a few points under the figures measured when they were set
 * (docs/architecture.md, "Gates").
 */
const coverage = {
  folders: ['engine', 'storage', 'workers', 'platform', 'tenant', 'accounts', 'cluster', 'http', 'server', 'binary'],
  linesMin: 95,
  branchesMin: 88,
  functionsMin: 94,
  directory: path.join(root, buildDir, 'v8-coverage'),
  wanted: (first) => first && (process.env.PRICING_TEST_COVERAGE ?? (files.length > 0 ? 'false' : 'true')) === 'true',
}

/** Prints c8's summary of the collected coverage; answers false when a whole run falls below the floor. */
function reportCoverage() {
  const c8Args = [
    path.join(root, 'node_modules/c8/bin/c8.js'),
    'report',
    '--all',
    `--src=${buildDir}`,
    ...coverage.folders.map((folder) => `--include=${buildDir}/${folder}/**`),
    `--temp-directory=${coverage.directory}`,
    `--reports-dir=${path.join(root, buildDir, 'coverage')}`,
    '--reporter=text-summary',
    ...(files.length > 0
      ? []
      : [
          '--check-coverage',
          `--lines=${coverage.linesMin}`,
          `--branches=${coverage.branchesMin}`,
          `--functions=${coverage.functionsMin}`,
        ]),
  ]
  const report = spawnSync(process.execPath, c8Args, { cwd: root, encoding: 'utf8' })
  process.stdout.write(
    report.stdout
      .split('\n')
      .map((line) => (line === '' ? line : `# ${line}`))
      .join('\n'),
  )
  if (report.status === 0) return true
  const floors = `lines ${coverage.linesMin}%, branches ${coverage.branchesMin}%, functions ${coverage.functionsMin}%`
  console.log(`# coverage below its floor (${floors}): ${report.stderr.trim()}`)
  return false
}

/** The machine's CPU time so far, over all cores: busy and idle, in ms. */
function cpuTimes() {
  let busy = 0
  let idle = 0
  for (const { times } of os.cpus()) {
    busy += times.user + times.nice + times.sys + times.irq
    idle += times.idle
  }
  return { busy, idle }
}

/**
 * The share of the machine's CPU that was busy between two readings, in percent: how much room
 * the run left (a run at --jobs=2 that keeps the CPUs half idle waits on its suites' timers).
 */
function cpuBusyShare(before, after) {
  const busy = after.busy - before.busy
  const total = busy + after.idle - before.idle
  return total === 0 ? 0 : Math.round((busy / total) * 100)
}

/** Every compiled suite (paths from the root, as tap's glob gives them) but `left` (paths under the build folder). */
function suitesBut(left) {
  const skipped = new Set(left.map((suite) => `${buildDir}/${suite}`))
  return readdirSync(path.join(root, buildDir, 'test'), { recursive: true })
    .map((name) => `${buildDir}/test/${name.split(path.sep).join('/')}`)
    .filter((name) => name.endsWith('.test.js') && !skipped.has(name))
    .sort()
}

/**
 * Suites run at once: 2, the cores CI has (PRICING_TEST_JOBS to try others; the run's last line per
 * Node.js says how busy the CPUs were).
 */
const jobs = Number(process.env.PRICING_TEST_JOBS ?? 2)

/**
 * Runs every suite on one Node binary (`last`: also the storage suites; `first`: with coverage);
 * answers its pass and fail counts.
 */
function runSuites(node, { first, last }) {
  const tapArgs = [
    path.join(root, 'node_modules/tap/dist/esm/run.mjs'),
    '--disable-coverage',
    '--reporter=tap',
    `--jobs=${jobs}`,
    // The processes the suites start run without tap's process tracker (see the file).
    `--node-arg=--import=${pathToFileURL(path.join(root, 'test/plain-children.mjs')).href}`,
    '--timeout=300',
    ...(files.length > 0 ? files : last ? [`${buildDir}/test/**/*.test.js`] : suitesBut(storageSuites)),
  ]
  console.log(`# running the suites on ${node.name} (${node.path})`)
  const started = { at: Date.now(), cpu: cpuTimes() }
  const covered = coverage.wanted(first)
  const env = covered ? { ...process.env, NODE_V8_COVERAGE: coverage.directory } : process.env
  return new Promise((resolve) => {
    const child = spawn(node.path, tapArgs, { cwd: root, env, stdio: ['ignore', 'pipe', 'inherit'] })
    let tail = ''
    child.stdout.on('data', (chunk) => {
      process.stdout.write(chunk)
      tail = (tail + chunk.toString('utf8')).slice(-4096)
    })
    child.on('close', (code) => {
      const summaries = [...tail.matchAll(/^# \{ (total: \d+[^}]*) \}$/gm)]
      const last = summaries.length > 0 ? summaries[summaries.length - 1][1] : ''
      const count = (name) => Number((last.match(new RegExp(`${name}: (\\d+)`)) ?? [0, 0])[1])
      const floorHeld = covered ? reportCoverage() : true
      const failed = count('fail') + (code !== 0 && count('fail') === 0 ? 1 : 0) + (floorHeld ? 0 : 1)
      const seconds = Math.round((Date.now() - started.at) / 1000)
      const busy = cpuBusyShare(started.cpu, cpuTimes())
      console.log(`# ${node.name}: ${count('pass')} passed, ${failed} failed, in ${seconds} s (CPU busy ${busy}%)`)
      resolve({ passed: count('pass'), failed, code: floorHeld ? (code ?? 1) : code || 1 })
    })
  })
}

let passed = 0
let failed = 0
let exitCode = 0
const binaries = nodeBinaries()
for (const [index, node] of binaries.entries()) {
  const result = await runSuites(node, { first: index === 0, last: index === binaries.length - 1 })
  passed += result.passed
  failed += result.failed
  if (result.code !== 0) exitCode = result.code
}
console.log(`${passed} passed, ${failed} failed`)
process.exit(exitCode)
