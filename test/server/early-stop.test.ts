/**
 * A start that ends early ends cleanly: a refused start (an address in use, a stored key that
 * PRICING_SECRET_KEY does not open) exits with code 1, and a SIGTERM right after 'listening'
 * (before the tenants are loaded) or right after 'ready' without tenants shuts down with code 0;
 * all with nothing but JSON log lines on stdout. All come while the query pool's threads are
 * still starting: a thread ended inside its start made V8 print 'Failing script:' and a source
 * file on stdout, or the process end by a signal (workers/pool.ts close, server/main.ts). The race
 * is narrow, so each case runs a few rounds.
 */
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import net from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import t, { type Test } from 'tap'
import { logRecords } from '../helpers/logs.js'
import { adminToken, entryPath, TestServer } from '../helpers/server.js'

/** Rounds per case: each is a start of half a second or so. */
const rounds = 5

interface Ended {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
}

/**
 * Runs the server until it ends by itself, or, with `stopAt`, sends SIGTERM as soon as it logs that
 * message; answers once its output is complete (the stdio streams closed, not only exited).
 * Four threads on any machine: more threads still starting when the start ends.
 */
function run(dataDir: string, env: Record<string, string>, stopAt: 'listening' | 'ready' | null): Promise<Ended> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [entryPath, 'start'], {
      env: {
        ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('PRICING_'))),
        PRICING_PORT: '0',
        PRICING_HOST: '127.0.0.1',
        PRICING_DATA_DIR: dataDir,
        PRICING_ADMIN_TOKEN: adminToken,
        PRICING_DEMO: 'false',
        PRICING_FX_FEED_URL: '',
        PRICING_BACKUP_INTERVAL_S: '0',
        PRICING_WORKERS: '4',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    let stopped = false
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString()
      if (stopAt !== null && !stopped && stdout.includes(`"msg":"${stopAt}"`)) {
        stopped = true
        child.kill('SIGTERM')
      }
    })
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`the server did not end within 30 s: ${stdout.slice(-500)} ${stderr.slice(-500)}`))
    }, 30_000)
    child.once('close', (code, signal) => {
      clearTimeout(timer)
      resolve({ code, signal, stdout, stderr })
    })
  })
}

/** Every stdout line is a JSON log record (logRecords throws, naming the first that is not). */
function onlyLogLines(t: Test, ended: Ended, round: number): ReturnType<typeof logRecords> {
  t.doesNotThrow(() => logRecords(ended.stdout), `round ${round}: nothing but log lines on stdout`)
  t.notOk(ended.stdout.includes('Failing script'), `round ${round}: no V8 bootstrap report`)
  try {
    return logRecords(ended.stdout)
  } catch {
    return []
  }
}

const freshDir = (t: Test): string => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'pricing-early-stop-'))
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  return dataDir
}

t.test('a start refused at listen (address in use) exits 1 with clean stdout', async (t) => {
  const taken = net.createServer()
  await new Promise<void>((resolve) => taken.listen({ host: '127.0.0.1', port: 0, exclusive: true }, resolve))
  t.teardown(() => taken.close())
  const port = String((taken.address() as net.AddressInfo).port)
  const dataDir = freshDir(t)
  for (let round = 1; round <= rounds; round++) {
    const ended = await run(dataDir, { PRICING_PORT: port }, null)
    t.equal(ended.code, 1, `round ${round}: exit code 1 (signal: ${ended.signal})`)
    t.match(ended.stderr, 'pricing-service failed to start: Cannot listen on 127.0.0.1:', `round ${round}: the reason`)
    onlyLogLines(t, ended, round)
  }
})

t.test('a start refused by its secret key (stored keys that do not open) exits 1 with clean stdout', async (t) => {
  const dataDir = freshDir(t)
  // A first start seals the signing key with this key (stopped at once: that is the other case).
  const first = await run(dataDir, { PRICING_SECRET_KEY: randomBytes(32).toString('base64') }, 'listening')
  t.equal(first.code, 0, `the first start stops cleanly: ${first.stderr}`)
  for (let round = 1; round <= rounds; round++) {
    const ended = await run(dataDir, {}, null)
    t.equal(ended.code, 1, `round ${round}: exit code 1 (signal: ${ended.signal})`)
    t.match(ended.stderr, 'PRICING_SECRET_KEY is not set', `round ${round}: the reason`)
    onlyLogLines(t, ended, round)
  }
})

t.test('a SIGTERM right after listening, before the start is over, exits 0 with its closed line', async (t) => {
  const dataDir = freshDir(t)
  // Tenants to load after 'listening': their warm-ups wait for the threads, so the signal comes
  // while the start still runs (without a handler yet, the process ended by the signal).
  const setup = new TestServer(dataDir, { PRICING_WORKERS: '4' })
  await setup.start()
  for (const slug of ['acme', 'globex']) {
    const tenant = await setup.tenant(slug)
    t.equal((await tenant.call('PUT', '/article/SKU-1', { name: 'Mug', type: 'kitchen' })).status, 202)
  }
  t.equal(await setup.stop(), 0)
  for (let round = 1; round <= rounds; round++) {
    const ended = await run(dataDir, {}, 'listening')
    t.equal(ended.code, 0, `round ${round}: exit code 0 (signal: ${ended.signal}) ${ended.stderr}`)
    const records = onlyLogLines(t, ended, round)
    t.ok(
      records.some((record) => record['msg'] === 'closed'),
      `round ${round}: it closed (${records.at(-1)?.['msg']} last)`,
    )
  }
})

t.test('a SIGTERM right after ready without tenants, while the price workers start, exits 0 cleanly', async (t) => {
  // Without a tenant to warm, readiness does not wait for the threads: they are still loading
  // their module, and a thread ended inside that load aborted the process (no 'closed' line).
  const dataDir = freshDir(t)
  for (let round = 1; round <= rounds; round++) {
    const ended = await run(dataDir, {}, 'ready')
    t.equal(ended.code, 0, `round ${round}: exit code 0 (signal: ${ended.signal}) ${ended.stderr}`)
    const records = onlyLogLines(t, ended, round)
    t.ok(
      records.some((record) => record['msg'] === 'closed'),
      `round ${round}: it closed (${records.at(-1)?.['msg']} last)`,
    )
  }
})
