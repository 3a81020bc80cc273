/**
 * The single executable (issue 10): built with the Node.js running this test, copied alone into an
 * empty folder and run with a PATH that holds no `node` and no node_modules anywhere above it:
 *
 * - `pricing-service start` runs like `npm start`: LMDB under ./data, the demo tenant and its
 *   credentials file, the API (a token, a price, a worker-thread query, a write read back), the
 *   pages and their assets; the native uWebSockets.js and lmdb addons are mapped into the process;
 * - SIGTERM ends it with exit code 0;
 * - the command line works on ./data with the server down (tenant, key, backup), and through the
 *   running server's admin API with --url;
 * - `--version` prints the version and git commit fixed into it at the build.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import t from 'tap'
import { buildBinary } from '../../binary/build.js'
import { buildInfo } from '../../platform/version.js'

const folder = mkdtempSync(path.join(tmpdir(), 'pricing-binary-'))
t.teardown(() => rmSync(folder, { recursive: true, force: true }))
const app = path.join(folder, 'app')
const emptyPath = path.join(folder, 'no-bin')
const privateTmp = path.join(folder, 'tmp')
for (const dir of [app, emptyPath, privateTmp]) mkdirSync(dir)
const adminToken = 'binary-admin-token-0123456789abcdef'
const executable = path.join(app, 'pricing-service')

/** The environment of a bare server: no node on PATH, no PRICING_* but what a test sets. */
function bareEnv(extra: Record<string, string> = {}): Record<string, string> {
  return { PATH: emptyPath, HOME: folder, TMPDIR: privateTmp, PRICING_FX_FEED_URL: '', ...extra }
}

function cli(args: string[]): { code: number | null; stdout: string; stderr: string } {
  const run = spawnSync(executable, args, {
    cwd: app,
    env: bareEnv({ PRICING_ADMIN_TOKEN: adminToken }),
    encoding: 'utf8',
    timeout: 60_000,
  })
  return { code: run.status, stdout: run.stdout, stderr: run.stderr }
}

interface Running {
  readonly child: ChildProcess
  url: string
  readonly exited: Promise<number | null>
  stdout: string
}

async function start(): Promise<Running> {
  const child = spawn(executable, ['start'], {
    cwd: app,
    env: bareEnv({
      PRICING_PORT: '0',
      PRICING_HOST: '127.0.0.1',
      PRICING_ADMIN_TOKEN: adminToken,
      PRICING_WORKER_THRESHOLD_SKUS: '1',
      PRICING_BACKUP_INTERVAL_S: '0',
    }),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const running: Running = {
    child,
    url: '',
    stdout: '',
    exited: new Promise((resolve) => child.once('exit', (code) => resolve(code))),
  }
  let stderr = ''
  child.stdout!.on('data', (chunk: Buffer) => (running.stdout += chunk.toString()))
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const deadline = Date.now() + 60_000
  for (;;) {
    const port = /"port":(\d+),"url":"[^"]+","dataDir":"[^"]+","msg":"listening"/.exec(running.stdout)?.[1]
    if (port !== undefined) {
      const url = `http://127.0.0.1:${port}`
      const ready = await fetch(`${url}/readyz`).catch(() => null)
      if (ready?.status === 200) {
        running.url = url
        return running
      }
    }
    if (Date.now() > deadline || child.exitCode !== null)
      throw new Error(`the binary did not become ready: ${stderr}\n${running.stdout}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

async function token(url: string, clientId: string, clientSecret: string): Promise<string> {
  const answer = await fetch(`${url}/oauth2/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: clientId,
      client_secret: clientSecret,
    }).toString(),
  })
  if (answer.status !== 200) throw new Error(`token: ${answer.status}`)
  return ((await answer.json()) as { access_token: string }).access_token
}

let built = { file: '', bytes: 0 }

t.before(async () => {
  const startedAt = Date.now()
  built = await buildBinary(path.join(folder, 'built', 'pricing-service'), path.join(folder, 'work'))
  t.comment(
    `built ${built.file}: ${(built.bytes / 1024 / 1024).toFixed(1)} MiB in ${Date.now() - startedAt} ms with Node.js ${process.version}`,
  )
  copyFileSync(built.file, executable)
  spawnSync('chmod', ['755', executable])
})

t.test('alone in an empty folder, with no node on PATH', async (t) => {
  t.same(readdirSync(app), ['pricing-service'], 'the folder holds the executable only')
  t.notOk(
    existsSync(path.join(folder, 'node_modules')) || existsSync(path.join(path.dirname(folder), 'node_modules')),
    'no node_modules above it',
  )
  const which = spawnSync('/bin/sh', ['-c', 'command -v node'], { env: bareEnv() })
  t.not(which.status, 0, 'no node on the PATH it runs with')
  t.ok(statSync(executable).size > 50 * 1024 * 1024, 'a whole Node.js inside')
})

t.test('start: the embedded default, the API, the pages, native addons; SIGTERM exits 0', async (t) => {
  const startedAt = Date.now()
  const server = await start()
  t.comment(`ready in ${Date.now() - startedAt} ms`)
  const file = path.join(app, 'data', 'demo-credentials.json')
  // The demo is seeded once the service is ready (server/main.ts).
  for (let attempt = 0; attempt < 200 && !existsSync(file); attempt++)
    await new Promise((resolve) => setTimeout(resolve, 25))
  const credentials = JSON.parse(readFileSync(file, 'utf8')) as Record<string, string>
  t.equal(credentials['tenant'], 'demo', 'the demo tenant is seeded under ./data')
  const bearer = {
    authorization: `Bearer ${await token(server.url, credentials['client_id']!, credentials['client_secret']!)}`,
  }
  const price = await fetch(`${server.url}/t/demo/price/ESP-HOUSE-500/retail-se/SE`, { headers: bearer })
  t.equal(price.status, 200)
  t.match(await price.json(), { sku: 'ESP-HOUSE-500', gross: 169, vat_rate: 12 }, 'a demo price, exact')
  const query = await fetch(`${server.url}/t/demo/price/query`, {
    method: 'POST',
    headers: { ...bearer, 'content-type': 'application/json' },
    body: JSON.stringify({
      currency_code: 'EUR',
      tax_area: 'DE',
      pricelist_filter: { pricelists: ['wholesale-eu'] },
      skus: ['ESP-HOUSE-1000', 'GRINDER-HAND', 'MUG-350'],
      quantity: 10,
    }),
  })
  t.equal(query.status, 200, 'a price query through the worker threads')
  t.equal(((await query.json()) as { items: unknown[] }).items.length, 3)
  const write = await fetch(`${server.url}/t/demo/article/BIN-1`, {
    method: 'PUT',
    headers: { ...bearer, 'content-type': 'application/json' },
    body: JSON.stringify({ sku: 'BIN-1', name: 'From the binary' }),
  })
  t.equal(write.status, 202)
  const read = await fetch(`${server.url}/t/demo/article/BIN-1`, { headers: bearer })
  t.match(await read.json(), { sku: 'BIN-1', name: 'From the binary' })
  t.equal((await fetch(`${server.url}/portal`)).status, 200, 'the portal page')
  const css = await fetch(`${server.url}/assets/app.css`)
  t.equal(css.headers.get('content-type'), 'text/css; charset=utf-8')
  t.match(await css.text(), /--accent/, 'the embedded stylesheet')
  t.equal((await fetch(`${server.url}/openapi.json`)).status, 200)
  const maps = readFileSync(`/proc/${server.child.pid}/maps`, 'utf8')
  t.match(
    maps,
    /pricing-service-[0-9a-f]{16}-\S+\/uws_linux_x64_\d+\S*\.node/,
    'the native uWebSockets.js binary is loaded from the private folder',
  )
  t.match(maps, /pricing-service-[0-9a-f]{16}-\S+\/lmdb\.node/, 'and lmdb')
  const started = Date.now()
  server.child.kill('SIGTERM')
  t.equal(await server.exited, 0, 'SIGTERM: exit 0')
  t.comment(`stopped in ${Date.now() - started} ms`)
})

t.test('the command line: tenants, keys and backups on ./data, and through --url', async (t) => {
  const created = cli(['tenant', 'create', 'shop', '--tier', 'standard'])
  t.equal(created.code, 0, created.stderr)
  t.match(JSON.parse(created.stdout), { slug: 'shop', tier: 'standard', status: 'active' })
  const key = cli(['key', 'create', 'shop', '--name', 'ci'])
  t.equal(key.code, 0, key.stderr)
  const credentials = JSON.parse(key.stdout) as { client_id: string; client_secret: string }
  t.match(credentials.client_secret, /^[0-9a-f]{64}$/)
  const backup = cli(['backup', 'create', 'shop', '--retain', 'true'])
  t.equal(backup.code, 0, backup.stderr)
  t.match(JSON.parse(backup.stdout), { type: 'manual', retain: true })
  t.equal(JSON.parse(cli(['backup', 'list', 'shop']).stdout).length, 1)
  t.equal(cli(['tenant', 'create', 'Bad_Slug']).code, 1, 'a refused command exits 1')
  t.equal(cli(['help']).code, 0)
  // No git and no package.json beside it: the version and commit are the ones fixed at the build.
  const built = buildInfo()
  const version = cli(['--version'])
  t.equal(
    version.stdout,
    `pricing-service ${built.version} (${built.commit === null ? '' : `commit ${built.commit}, `}Node.js ${process.version})\n`,
    "the build's version and commit",
  )

  const server = await start()
  t.teardown(() => server.child.kill('SIGKILL'))
  const bearer = {
    authorization: `Bearer ${await token(server.url, credentials.client_id, credentials.client_secret)}`,
  }
  t.equal(
    (await fetch(`${server.url}/t/shop/article`, { headers: bearer })).status,
    200,
    'the key made on ./data works on the next start',
  )
  const listed = cli(['tenant', 'list', '--url', server.url])
  t.equal(listed.code, 0, listed.stderr)
  t.same(
    (JSON.parse(listed.stdout) as { slug: string }[]).map((tenant) => tenant.slug).sort(),
    ['demo', 'shop'],
    'through the running server',
  )
  server.child.kill('SIGTERM')
  t.equal(await server.exited, 0)
})
