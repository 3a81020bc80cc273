/**
 * The data directory belongs to one process and one user. A second server on the same directory
 * exits 1 naming the holder, and the first keeps serving with nothing lost; a second server on the
 * same port fails with "address in use"; a writing CLI command beside a running server refuses and
 * says to use --url; a lock left by a SIGKILL is taken over. Whatever the umask (000, 022),
 * everything under the directory is owner-only, and a tree left open to others is narrowed at
 * start with a warning. A tenant whose log is damaged stops the start with its name and the way out.
 */
import { execFile } from 'node:child_process'
import { chmodSync, existsSync, lstatSync, mkdtempSync, readdirSync, readlinkSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { open } from 'lmdb'
import t, { type Test } from 'tap'
import { adminToken, entryPath, startServer, TestServer, type TenantClient } from '../helpers/server.js'
import { until } from '../helpers/until.js'

interface CliResult {
  code: number
  stdout: string
  stderr: string
}

function cli(args: string[], extraEnv: Record<string, string> = {}): Promise<CliResult> {
  const env = {
    ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('PRICING_'))),
    ...extraEnv,
  }
  return new Promise((resolve) => {
    execFile(process.execPath, [entryPath, ...args], { env, timeout: 30_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stdout, stderr })
    })
  })
}

function freshDir(t: Test): string {
  const directory = mkdtempSync(path.join(tmpdir(), 'pricing-datadir-'))
  t.teardown(() => rmSync(directory, { recursive: true, force: true }))
  return directory
}

/** Every path under `root` (itself included) whose mode lets group or others in, with its mode. */
/** The lock's record: the target of the `server.lock` symbolic link, as JSON. */
function readLock(dataDir: string): { pid: number; url: string | null } {
  return JSON.parse(readlinkSync(path.join(dataDir, 'server.lock'), 'utf8'))
}

function openToOthers(root: string): string[] {
  const found: string[] = []
  const visit = (absolute: string): void => {
    const stat = lstatSync(absolute)
    if (stat.isSymbolicLink()) return
    if ((stat.mode & 0o077) !== 0)
      found.push(`${path.relative(root, absolute) || '.'} ${(stat.mode & 0o777).toString(8)}`)
    if (stat.isDirectory()) for (const name of readdirSync(absolute)) visit(path.join(absolute, name))
  }
  visit(root)
  return found
}

async function writeArticles(client: TenantClient, prefix: string, count: number): Promise<void> {
  for (let index = 0; index < count; index++) {
    const answer = await client.call('PUT', `/article/${prefix}-${index}`, { name: `${prefix} ${index}` })
    if (answer.status !== 202) throw new Error(`write ${prefix}-${index}: ${answer.status} ${answer.text}`)
  }
}

async function articleNames(client: TenantClient): Promise<string[]> {
  const answer = await client.get('/article?page=1&size=1000')
  return (answer.body.items as { name: string }[]).map((item) => item.name).sort()
}

t.test(
  'a second server on the same data directory exits 1 naming the holder; the first serves on, nothing lost',
  async (t) => {
    const first = await startServer()
    t.teardown(() => first.dispose())
    const lock = readLock(first.dataDir)
    t.equal(lock.pid, first.pid, 'the lock names the running server')
    t.equal(lock.url, first.url, 'and where it listens')
    t.ok(
      lstatSync(path.join(first.dataDir, 'server.lock')).isSymbolicLink(),
      'a symbolic link: it needs no data block on a full disk',
    )
    t.equal(lstatSync(first.dataDir).mode & 0o777, 0o700, 'in a directory only its owner reads')
    const client = await first.tenant('shop')
    await writeArticles(client, 'before', 10)
    for (const port of ['0', String(first.port)]) {
      const second = new TestServer(first.dataDir, { PRICING_PORT: port })
      const refused = await second.start().then(
        () => null,
        (error: Error) => error.message,
      )
      t.match(refused, /server exited with 1/, `port ${port}: the second server exits 1`)
      t.match(
        refused,
        new RegExp(`is in use by process ${first.pid} \\(pricing-service start, listening at ${first.url}`),
        'naming the holder',
      )
      t.match(refused, new RegExp(`--url ${first.url}`), 'and what to use instead')
    }
    await writeArticles(client, 'after', 10)
    const expected = [
      ...Array.from({ length: 10 }, (_, index) => `after ${index}`),
      ...Array.from({ length: 10 }, (_, index) => `before ${index}`),
    ].sort()
    t.same(await articleNames(client), expected, 'the first server serves every write')
    await first.restart()
    await client.refreshToken()
    t.same(await articleNames(client), expected, 'all 20 acknowledged writes survive a restart')
  },
)

t.test('a second server on the same port (another data directory) fails with "address in use"', async (t) => {
  const first = await startServer()
  t.teardown(() => first.dispose())
  const otherDir = freshDir(t)
  const second = new TestServer(otherDir, { PRICING_PORT: String(first.port) })
  const refused = await second.start().then(
    () => null,
    (error: Error) => error.message,
  )
  t.match(refused, /server exited with 1/)
  t.match(refused, new RegExp(`Cannot listen on 127\\.0\\.0\\.1:${first.port}: address in use`))
  t.equal((await first.request('GET', '/healthz')).status, 200, 'the first one answers')
})

t.test("a writing CLI command on a running server's directory refuses and names --url; reads still work", async (t) => {
  const server = await startServer()
  t.teardown(() => server.dispose())
  await server.tenant('shop')
  const onDir = ['--data-dir', server.dataDir]
  for (const args of [
    ['key', 'create', 'shop'],
    ['tenant', 'create', 'other'],
    ['tenant', 'update', 'shop', '--tier', 'starter'],
    ['backup', 'create', 'shop'],
  ]) {
    const refused = await cli([...args, ...onDir])
    t.equal(refused.code, 1, `${args.slice(0, 2).join(' ')}: exit 1`)
    t.match(
      refused.stderr,
      new RegExp(`in use by process ${server.pid} .*--url ${server.url}`),
      'naming the server and --url',
    )
    t.equal(refused.stdout, '')
  }
  const keys = await server.admin('GET', '/admin/tenants/shop/keys')
  t.equal(keys.body.length, 1, 'no key was added beside the server')
  t.equal((await server.admin('GET', '/admin/tenants/other')).status, 404, 'no tenant either')
  const listed = await cli(['tenant', 'list', ...onDir])
  t.equal(listed.code, 0, listed.stderr)
  t.same(
    JSON.parse(listed.stdout).map((tenant: { slug: string }) => tenant.slug),
    ['shop'],
    'reading commands still work',
  )
  const through = await cli(['key', 'create', 'shop', '--url', server.url], { PRICING_ADMIN_TOKEN: adminToken })
  t.equal(through.code, 0, through.stderr)
  await server.stop()
  const afterStop = await cli(['key', 'create', 'shop', ...onDir])
  t.equal(afterStop.code, 0, `once the server stopped, the command works on the directory: ${afterStop.stderr}`)
  t.notOk(readdirSync(server.dataDir).includes('server.lock'), 'and leaves no lock behind')
})

t.test('the lock of a server killed with SIGKILL is taken over by the next start', async (t) => {
  const server = await startServer()
  t.teardown(() => server.dispose())
  const client = await server.tenant('shop')
  await writeArticles(client, 'kept', 5)
  const killedPid = server.pid
  await server.kill()
  const left = readLock(server.dataDir)
  t.equal(left.pid, killedPid, 'the killed server left its lock')
  await server.start()
  t.match(
    server.stdout,
    new RegExp(`"reason":"process ${killedPid} no longer runs","msg":"took over the lock of a server that is gone"`),
  )
  t.equal(readLock(server.dataDir).pid, server.pid, "the lock is the new server's")
  await client.refreshToken()
  t.equal((await articleNames(client)).length, 5)
})

for (const umask of [0o000, 0o022]) {
  t.test(
    `with umask ${umask.toString(8).padStart(3, '0')}, everything under the data directory is the owner's alone`,
    async (t) => {
      // The child inherits this process's umask.
      const previous = process.umask(umask)
      t.teardown(() => void process.umask(previous))
      const server = await startServer({ env: { PRICING_DEMO: 'true' } })
      t.teardown(() => server.dispose())
      const client = await server.tenant('shop')
      await writeArticles(client, 'a', 3)
      t.equal((await server.admin('POST', '/admin/tenants/shop/backups', {})).status, 201)
      t.equal((await server.request('POST', '/portal/sign-in', { body: { email: 'someone@example.com' } })).status, 202)
      // The mail may be written just after the answer.
      const outbox = path.join(server.dataDir, 'outbox')
      await until(() => existsSync(outbox) && readdirSync(outbox).length > 0, 10_000, 'the sign-in mail in the outbox')
      const names = readdirSync(server.dataDir)
      for (const name of ['system', 'tenants', 'backups', 'outbox', 'demo-credentials.json', 'server.lock'])
        t.ok(names.includes(name), `${name} exists`)
      t.ok(readdirSync(path.join(server.dataDir, 'outbox')).length > 0, 'the sign-in mail is in the outbox')
      t.same(openToOthers(server.dataDir), [], 'no path is open to group or others')
      t.equal(lstatSync(server.dataDir).mode & 0o777, 0o700)
      t.equal(lstatSync(path.join(server.dataDir, 'system', 'data.mdb')).mode & 0o777, 0o600)
    },
  )
}

t.test('a data directory left open to others is narrowed at start, with a warning naming the paths', async (t) => {
  const server = await startServer()
  t.teardown(() => server.dispose())
  await server.tenant('shop')
  await server.stop()
  const opened = [
    server.dataDir,
    path.join(server.dataDir, 'system'),
    path.join(server.dataDir, 'system', 'data.mdb'),
    path.join(server.dataDir, 'tenants', 'shop', 'data.mdb'),
  ]
  for (const file of opened) chmodSync(file, lstatSync(file).isDirectory() ? 0o777 : 0o666)
  t.equal(openToOthers(server.dataDir).length, opened.length)
  await server.start()
  const warning =
    /"count":(\d+),"paths":(\[[^\]]*\]),"msg":"data directory was accessible to other users: narrowed to its owner"/.exec(
      server.stdout,
    )
  t.ok(warning !== null, 'the start warns')
  t.equal(Number(warning![1]), opened.length)
  t.same(JSON.parse(warning![2]!).sort(), ['.', 'system', 'system/data.mdb', 'tenants/shop/data.mdb'])
  t.same(openToOthers(server.dataDir), [], "and everything is the owner's again")
  t.equal((await server.request('GET', '/healthz')).status, 200, 'and it serves')
})

t.test("a tenant whose log is damaged stops the start with the tenant's name and the way to recover", async (t) => {
  const server = await startServer()
  t.teardown(() => server.dispose())
  const client = await server.tenant('shop')
  await writeArticles(client, 'a', 3)
  await server.stop()
  const tenantDir = path.join(server.dataDir, 'tenants', 'shop')
  const env = open({ path: tenantDir })
  const meta = env.openDB({ name: 'meta' })
  await meta.put('checksum', 'not-the-last-entry')
  await env.close()
  // The tenants load after the server listens: it may log "listening" before it exits.
  let refused = ''
  const damaged = new TestServer(server.dataDir, {}, (text) => (refused += text))
  await damaged.start(false).catch(() => undefined)
  t.equal(await damaged.exited(), 1, 'the start exits 1')
  t.match(refused, /tenant shop/, 'names the tenant')
  t.match(refused, /log tail checksum differs at \d+/, 'and the damage')
  t.match(refused, new RegExp(`${tenantDir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`), 'and its directory')
  t.match(refused, /backup list shop|backups\/shop/, 'points to its backups')
  t.match(refused, /move .* aside/, 'and says to move the directory aside')
})
