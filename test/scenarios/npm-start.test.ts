/**
 * `npm start`, run for real as the quick start runs it, in a copy of the repository (so it builds
 * its own dist/ and never touches the build a running service uses) with a temporary data
 * directory on a free port, and the environment of a fresh shell (no npm_* or PRICING_* variables
 * inherited from the `npm test` that runs this). Its stdout must be the service's JSON lines and
 * nothing else, since log shippers read it line by line: npm's banner would otherwise come first
 * (the project's .npmrc silences it). A secret given as a flag stops the start with exit 2 and is
 * echoed nowhere; the admin token read from PRICING_ADMIN_TOKEN_FILE opens the admin API.
 */
import { spawn } from 'node:child_process'
import { cpSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import t from 'tap'
import { repoRoot } from '../helpers/fixtures.js'

const root = repoRoot()
/** What the copy leaves out: the dependencies (linked instead), builds, data, git and tap's cache. */
const skipped = /^(node_modules|\.git|\.tap|data|dist|dist-.*)$/

const folder = mkdtempSync(path.join(tmpdir(), 'pricing-npm-start-'))
t.teardown(() => rmSync(folder, { recursive: true, force: true }))
const copy = path.join(folder, 'repo')
cpSync(root, copy, {
  recursive: true,
  filter: (source) => path.dirname(source) !== root || !skipped.test(path.basename(source)),
})
symlinkSync(realpathSync(path.join(root, 'node_modules')), path.join(copy, 'node_modules'))
const adminTokenFile = path.join(folder, 'admin-token')
const adminToken = 'npm-start-admin-token-7f3a9c-0123456789'
writeFileSync(adminTokenFile, `${adminToken}\n`, { mode: 0o600 })

/**
 * A fresh shell's environment: no npm_* (an outer npm run's settings), no PRICING_* variables, and
 * no NODE_V8_COVERAGE (the coverage run's: it made the start's whole-project compile, tsc, about
 * 1.6x slower, for coverage of the server that other suites collect).
 */
function freshEnvironment(extra: Record<string, string>): Record<string, string> {
  const kept = Object.entries(process.env).filter(([name]) => !/^(npm_|PRICING_|NODE_V8_COVERAGE$)/i.test(name)) as [
    string,
    string,
  ][]
  return { ...Object.fromEntries(kept), ...extra }
}

interface Run {
  readonly stdout: string
  readonly stderr: string
  readonly code: number | null
}

/**
 * Runs `npm start [-- args]` in the copy as its own process group (as a terminal runs it). When
 * `whileRunning` is given, it is called once stdout has `readyLine`, then the group gets SIGINT
 * (Ctrl-C); the run ends when npm has exited.
 */
function npmStart(
  args: string[],
  env: Record<string, string>,
  whileRunning?: { readyLine: RegExp; then: (stdout: string) => Promise<void> },
): Promise<Run> {
  const child = spawn('npm', ['start', ...(args.length > 0 ? ['--', ...args] : [])], {
    cwd: copy,
    env: freshEnvironment(env),
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  let signalled = false
  return new Promise((resolve, reject) => {
    // The first start compiles the whole project (tsc -b): minutes on a loaded machine.
    const timer = setTimeout(() => {
      process.kill(-child.pid!, 'SIGKILL')
      reject(
        new Error(
          `npm start did not get there in 240 s; stdout: ${stdout.slice(-2000)} stderr: ${stderr.slice(-2000)}`,
        ),
      )
    }, 240_000)
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8')
      if (whileRunning === undefined || signalled || !whileRunning.readyLine.test(stdout)) return
      signalled = true
      whileRunning.then(stdout).then(
        () => process.kill(-child.pid!, 'SIGINT'),
        (error: unknown) => {
          process.kill(-child.pid!, 'SIGKILL')
          reject(error)
        },
      )
    })
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')))
    child.once('close', (code) => {
      clearTimeout(timer)
      resolve({ stdout, stderr, code })
    })
  })
}

t.test("npm start's stdout is JSON lines only, and PRICING_ADMIN_TOKEN_FILE gives the admin token", async (t) => {
  const dataDir = path.join(folder, 'data')
  let tenants: unknown = null
  const run = await npmStart(
    [],
    { PRICING_DATA_DIR: dataDir, PRICING_PORT: '0', PRICING_FX_FEED_URL: '', PRICING_ADMIN_TOKEN_FILE: adminTokenFile },
    {
      // The first start's last record: the demo tenant is in place.
      readyLine: /"msg":"demo tenant provisioned"/,
      then: async (stdout) => {
        const url = /"url":"(http:[^"]+)","dataDir"/.exec(stdout)?.[1]
        const answer = await fetch(`${url}/admin/tenants`, { headers: { authorization: `Bearer ${adminToken}` } })
        tenants = {
          status: answer.status,
          slugs: ((await answer.json()) as { slug: string }[]).map((tenant) => tenant.slug),
        }
      },
    },
  )
  const lines = run.stdout.split('\n')
  t.equal(lines.pop(), '', 'stdout ends with a line break')
  const notJson = lines.filter((line) => {
    try {
      const record = JSON.parse(line) as unknown
      return typeof record !== 'object' || record === null || !('msg' in record)
    } catch {
      return true
    }
  })
  t.same(notJson, [], `every stdout line is a JSON log record (stderr: ${run.stderr.slice(-500)})`)
  t.notMatch(run.stdout, /pricing-service@|> tsc -b/, 'no npm banner')
  t.ok(lines.length >= 4, `${lines.length} records`)
  t.match(JSON.parse(lines[lines.length - 1]!), { msg: 'closed' }, 'up to the last record of the Ctrl-C shutdown')
  t.same(tenants, { status: 200, slugs: ['demo'] }, 'the admin token from the file works')
  t.notMatch(run.stdout + run.stderr, new RegExp(adminToken), 'the token is shown nowhere')
})

t.test('npm start -- --admin-token TOKEN stops with exit 2, echoing the token nowhere', async (t) => {
  const secret = 'on-the-command-line-4b1d'
  const run = await npmStart(['--admin-token', secret], {
    PRICING_DATA_DIR: path.join(folder, 'data-2'),
    PRICING_PORT: '0',
    PRICING_FX_FEED_URL: '',
  })
  t.equal(run.code, 2, run.stderr)
  t.equal(run.stdout, '', 'nothing on stdout')
  t.match(
    run.stderr,
    /--admin-token: a secret on the command line is shown to every local user .*; set PRICING_ADMIN_TOKEN or --admin-token-file FILE instead/,
  )
  t.notMatch(run.stdout + run.stderr, new RegExp(secret), 'the token is shown nowhere')
})
