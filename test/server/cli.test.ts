/**
 * The command line: tenant and key commands on a data directory (then served by a server started
 * on it), and the same commands through a running server's admin API with --url; strict flags in
 * both forms; `start` refusing bad configuration with exit code 2; `--help` listing every setting.
 * The admin token comes from PRICING_ADMIN_TOKEN or `--admin-token-file`, never from a flag.
 */
import { execFile, spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import t from 'tap'
import { helpText } from '../../server/cli/help.js'
import { parseInvocation, UsageError } from '../../server/cli/manage.js'
import { DEFAULTS, envName, flagName } from '../../platform/config.js'
import { signIn } from '../helpers/console.js'
import { adminToken, entryPath, startServer, TenantClient } from '../helpers/server.js'

interface CliResult {
  code: number
  stdout: string
  stderr: string
}

/** This process's environment without PRICING_* variables. */
function cleanEnvironment(): Record<string, string | undefined> {
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('PRICING_')))
}

/** Runs `pricing-service <args>` from the compiled tree, with no PRICING_* variables inherited. */
function cli(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [entryPath, ...args],
      { env: { ...cleanEnvironment(), ...env }, timeout: 30_000 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : 1
        resolve({ code, stdout, stderr })
      },
    )
  })
}

function json(result: CliResult): any {
  return JSON.parse(result.stdout)
}

const dataDir = mkdtempSync(path.join(tmpdir(), 'pricing-cli-'))
t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
const onDir = ['--data-dir', dataDir]
/** The admin token in a file, with the line break an editor adds, for `--admin-token-file`. */
const adminTokenFile = path.join(dataDir, 'admin-token')
writeFileSync(adminTokenFile, `${adminToken}\n`, { mode: 0o600 })
let created: { client_id: string; client_secret: string }

t.test('tenant create on a data directory prints the active tenant', async (t) => {
  const result = await cli(['tenant', 'create', 'shop', '--tier', 'standard', '--region', 'eu', ...onDir])
  t.equal(result.code, 0, result.stderr)
  const tenant = json(result)
  t.equal(tenant.slug, 'shop')
  t.equal(tenant.tier, 'standard')
  t.equal(tenant.region, 'eu')
  t.equal(tenant.status, 'active')
  t.match(tenant.created_at, /^\d{4}-\d{2}-\d{2}T/)
})

t.test('tenant create refuses a duplicate and a bad slug with exit code 1, a bad tier with 2', async (t) => {
  const duplicate = await cli(['tenant', 'create', 'shop', '--tier', 'starter', ...onDir])
  t.equal(duplicate.code, 1)
  t.match(duplicate.stderr, /already exists/)
  const slug = await cli(['tenant', 'create', 'Bad_Slug', ...onDir])
  t.equal(slug.code, 1)
  t.match(slug.stderr, /slug/)
  const tier = await cli(['tenant', 'create', 'golden', '--tier', 'gold', ...onDir])
  t.equal(tier.code, 2)
  t.equal(tier.stderr, '--tier=gold: expected one of starter, standard, enterprise\n')
  const list = json(await cli(['tenant', 'list', ...onDir]))
  t.same(
    list.map((tenant: { slug: string }) => tenant.slug),
    ['shop'],
    'nothing else was created',
  )
  t.equal(list[0].tier, 'standard', 'the duplicate did not change the first')
})

t.test('key create prints the secret once; key list shows no secret', async (t) => {
  const result = await cli(['key', 'create', 'shop', '--name', 'ci', ...onDir])
  t.equal(result.code, 0, result.stderr)
  created = json(result)
  t.match(created, { name: 'ci' })
  t.match(created.client_id, /^[0-9a-f]{24}$/)
  t.match(created.client_secret, /^[0-9a-f]{64}$/)
  const list = await cli(['key', 'list', 'shop', ...onDir])
  t.equal(list.code, 0)
  const keys = json(list)
  t.equal(keys.length, 1)
  t.equal(keys[0].client_id, created.client_id)
  t.equal(keys[0].name, 'ci')
  t.equal(keys[0].last_used_at, null)
  t.notOk(list.stdout.includes(created.client_secret), 'no secret in the listing')
  t.notOk('client_secret' in keys[0])
})

t.test('key create for an unknown tenant fails with exit code 1', async (t) => {
  const result = await cli(['key', 'create', 'ghost', '--name', 'x', ...onDir])
  t.equal(result.code, 1)
  t.match(result.stderr, /not found/)
})

t.test('tenant list and show print the tenants', async (t) => {
  const list = await cli(['tenant', 'list', ...onDir])
  t.equal(list.code, 0)
  t.match(json(list), [{ slug: 'shop', tier: 'standard', region: 'eu', status: 'active' }])
  const show = await cli(['tenant', 'show', 'shop', ...onDir])
  t.match(json(show), { slug: 'shop', tier: 'standard' })
  t.equal((await cli(['tenant', 'show', 'ghost', ...onDir])).code, 1)
})

t.test('tenant update changes tier and limits on the data directory', async (t) => {
  const result = await cli([
    'tenant',
    'update',
    'shop',
    '--tier',
    'enterprise',
    '--limits',
    '{"query_burst":9}',
    ...onDir,
  ])
  t.equal(result.code, 0, result.stderr)
  t.match(json(result), { tier: 'enterprise', limits: { query_burst: 9 } })
  const back = await cli(['tenant', 'update', 'shop', '--tier', 'standard', ...onDir])
  t.match(json(back), { tier: 'standard', limits: { query_burst: 9 } })
})

t.test('a server started on the data directory serves the CLI tenant and key', async (t) => {
  const server = await startServer({ dataDir })
  t.teardown(() => server.stop())
  const client = new TenantClient(server, 'shop', created.client_id, created.client_secret)
  await client.refreshToken()
  const write = await client.call('PUT', '/article/CLI-1', { name: 'From the CLI tenant' })
  t.equal(write.status, 202)
  const read = await client.get('/article/CLI-1')
  t.equal(read.status, 200)
  t.equal(read.body.name, 'From the CLI tenant')
  t.equal(read.headers.get('x-ratelimit-limit'), '9', 'the CLI limit override applies')
  const keys = await server.admin('GET', '/admin/tenants/shop/keys')
  t.type(keys.body[0].last_used_at, 'string', 'the token request set last_used_at')
})

t.test('key revoke on the data directory stops new tokens', async (t) => {
  const key = json(await cli(['key', 'create', 'shop', '--name', 'short-lived', ...onDir]))
  const revoke = await cli(['key', 'revoke', 'shop', key.client_id, ...onDir])
  t.equal(revoke.code, 0, revoke.stderr)
  t.match(json(revoke).revoked_at, /^\d{4}-\d{2}-\d{2}T/)
  t.equal((await cli(['key', 'revoke', 'shop', '0'.repeat(24), ...onDir])).code, 1, 'an unknown key fails')
  const server = await startServer({ dataDir })
  t.teardown(() => server.stop())
  const client = new TenantClient(server, 'shop', key.client_id, key.client_secret)
  await t.rejects(client.refreshToken(), /token failed: 401/)
})

t.test('with --url the CLI works through a running server and its admin token', async (t) => {
  const server = await startServer()
  t.teardown(() => server.dispose())
  const remote = ['--url', server.url, '--admin-token-file', adminTokenFile]
  const tenant = await cli(['tenant', 'create', 'web', '--tier', 'starter', '--region', 'us', ...remote])
  t.equal(tenant.code, 0, tenant.stderr)
  t.match(json(tenant), { slug: 'web', tier: 'starter', region: 'us', status: 'active' })
  const key = await cli(['key', 'create', 'web', '--name', 'ci', ...remote])
  t.equal(key.code, 0, key.stderr)
  const credentials = json(key)
  t.match(credentials.client_secret, /^[0-9a-f]{64}$/)
  const client = new TenantClient(server, 'web', credentials.client_id, credentials.client_secret)
  await client.refreshToken()
  t.equal((await client.get('/article')).status, 200)
  const list = await cli(['key', 'list', 'web', ...remote])
  t.equal(json(list)[0].client_id, credentials.client_id)
  t.notOk(list.stdout.includes(credentials.client_secret))
  const tenants = json(await cli(['tenant', 'list', ...remote]))
  t.same(
    tenants.map((entry: { slug: string }) => entry.slug),
    ['web'],
  )
  const update = await cli(['tenant', 'update', 'web', '--status', 'suspended', ...remote])
  t.match(json(update), { status: 'suspended' })
  t.equal((await client.get('/article')).status, 403)
  const revoke = await cli(['key', 'revoke', 'web', credentials.client_id, ...remote])
  t.equal(revoke.code, 0, revoke.stderr)
})

t.test("people's tenant requests: listed, approved and rejected from the command line", async (t) => {
  const server = await startServer()
  t.teardown(() => server.dispose())
  const remote = ['--url', server.url, '--admin-token-file', adminTokenFile]
  const cookie = `pricing_session=${await signIn(server, 'asker@example.com')}`
  for (const slug of ['wanted', 'unwanted']) {
    const asked = await server.request('POST', '/portal/tenant-requests', {
      headers: { cookie, origin: server.url },
      body: { slug, tier: 'starter', region: 'local' },
    })
    t.equal(asked.status, 201)
  }
  const list = await cli(['request', 'list', ...remote])
  t.equal(list.code, 0, list.stderr)
  const requests = json(list) as { id: string; slug: string; status: string }[]
  t.same(
    requests.map((request) => [request.slug, request.status]),
    [
      ['unwanted', 'requested'],
      ['wanted', 'requested'],
    ],
    'newest first',
  )
  const onDisk = await cli(['request', 'list', '--data-dir', server.dataDir])
  t.same(
    json(onDisk).map((request: { slug: string }) => request.slug),
    ['unwanted', 'wanted'],
    'the list reads the data directory too',
  )
  const approved = await cli(['request', 'approve', requests[1]!.id, ...remote])
  t.equal(approved.code, 0, approved.stderr)
  t.match(json(approved), { slug: 'wanted', status: 'active', email: 'asker@example.com' })
  t.equal(
    (await server.admin('GET', '/admin/tenants/wanted')).body.owner_email,
    'asker@example.com',
    'the requester owns the new tenant',
  )
  const rejected = await cli(['request', 'reject', requests[0]!.id, '--reason', 'not a real company', ...remote])
  t.match(json(rejected), { slug: 'unwanted', status: 'rejected', reason: 'not a real company' })
  const again = await cli(['request', 'approve', requests[0]!.id, ...remote])
  t.equal(again.code, 1, 'a decided request cannot be approved')
  t.match(again.stderr, /^409: /)
  const local = await cli(['request', 'approve', requests[0]!.id, '--data-dir', server.dataDir])
  t.equal(local.code, 2, 'approval needs the running server')
  t.match(local.stderr, /request approve: the running server provisions the tenant/)
})

t.test('with --url a wrong admin token fails with exit code 1 and the status', async (t) => {
  const server = await startServer()
  t.teardown(() => server.dispose())
  const result = await cli(['tenant', 'create', 'web', '--tier', 'starter', '--url', server.url], {
    PRICING_ADMIN_TOKEN: 'wrong',
  })
  t.equal(result.code, 1)
  t.match(result.stderr, /401/)
  t.equal((await server.admin('GET', '/admin/tenants/web')).status, 404)
  const fromEnv = await cli(['tenant', 'list', '--url', server.url], { PRICING_ADMIN_TOKEN: adminToken })
  t.equal(fromEnv.code, 0, 'the admin token defaults to PRICING_ADMIN_TOKEN')
})

t.test('with --url on a server without an admin token the CLI says the admin API is off and what to do', async (t) => {
  // The quick start's server: `npm start` sets no PRICING_ADMIN_TOKEN.
  const server = await startServer({ env: { PRICING_ADMIN_TOKEN: '' } })
  t.teardown(() => server.dispose())
  for (const args of [
    ['backup', 'list', 'acme'],
    ['backup', 'create', 'acme'],
    ['tenant', 'list'],
  ]) {
    const result = await cli([...args, '--url', server.url], {
      PRICING_ADMIN_TOKEN: 'a-token-the-server-does-not-have',
    })
    t.equal(result.code, 1, `${args.join(' ')} fails`)
    t.match(
      result.stderr,
      `the server at ${server.url} has its admin API off: it was started without PRICING_ADMIN_TOKEN`,
      'naming the cause',
    )
    t.match(result.stderr, 'start it again with PRICING_ADMIN_TOKEN set in its environment', 'and the remedy')
  }
  // A tenant that does not exist on a server with the admin API on is still a plain 404.
  const on = await startServer()
  t.teardown(() => on.dispose())
  const missing = await cli(['backup', 'list', 'nobody', '--url', on.url], { PRICING_ADMIN_TOKEN: adminToken })
  t.equal(missing.code, 1)
  t.match(missing.stderr, /^404: /)
  t.notMatch(missing.stderr, 'admin API off')
  // No token given to a server that wants one: the 401 says where the token goes.
  const tokenless = await cli(['tenant', 'list', '--url', on.url])
  t.equal(tokenless.code, 1)
  t.match(tokenless.stderr, "set PRICING_ADMIN_TOKEN in this command's environment")
})

t.test('an unknown command prints the usage and exits 2', async (t) => {
  const result = await cli(['frobnicate'])
  t.equal(result.code, 2)
  t.match(result.stderr, /^frobnicate: unknown command\n\nUsage: pricing-service/)
})

/** The problems parseInvocation reports, or [] when it accepts the arguments. */
function usageProblems(group: string, args: string[], env: Record<string, string> = {}): readonly string[] {
  try {
    parseInvocation(group, args, env)
    return []
  } catch (error) {
    if (!(error instanceof UsageError)) throw error
    return error.problems
  }
}

t.test('tenant and key arguments: both flag forms, strict names, every problem at once', async (t) => {
  t.match(
    parseInvocation('tenant', ['create', 'a', '--tier=enterprise', '--region', 'ap', '--owner-email=o@x.test'], {}),
    {
      command: 'tenant create',
      slug: 'a',
      tier: 'enterprise',
      region: 'ap',
      ownerEmail: 'o@x.test',
    },
  )
  t.match(parseInvocation('tenant', ['update', 'a', '--status=suspended', '--limits={"query_burst":3}'], {}), {
    status: 'suspended',
    limits: { query_burst: 3 },
  })
  t.match(parseInvocation('key', ['revoke', 'a', 'c1', '--url=http://h:1', '--admin-token-file', adminTokenFile], {}), {
    slug: 'a',
    clientId: 'c1',
    url: 'http://h:1',
    adminToken,
  })
  t.equal(parseInvocation('key', ['list', 'a'], { PRICING_ADMIN_TOKEN: 'from-env' }).adminToken, 'from-env')
  t.same(usageProblems('tenant', ['create', 'a', '--teir', 'standard']), [
    'tenant create: --teir: unknown flag; did you mean --tier?',
  ])
  t.same(
    usageProblems('key', ['create', 'a', '--tier', 'standard']),
    ['key create: --tier: unknown flag'],
    'a flag of another command',
  )
  t.same(usageProblems('tenant', ['update', '--status', 'gone', '--limits', '{oops', 'x', 'y']), [
    'tenant update: y: unexpected argument',
    '--status=gone: expected one of active, suspended',
    '--limits={oops: expected a JSON object, e.g. {"query_burst":9}',
  ])
  t.same(usageProblems('tenant', ['update', 'a', '--limits=[1]']), [
    '--limits=[1]: expected a JSON object, e.g. {"query_burst":9}',
  ])
  t.same(usageProblems('key', ['revoke', 'a']), ['key revoke: expects <client_id>'])
  t.same(usageProblems('key', ['create', 'a', '--name']), [
    'key create: --name: expects a value (--name VALUE or --name=VALUE)',
  ])
  t.same(usageProblems('tenant', ['list', '--url', 'localhost:8080']), [
    '--url=localhost:8080: expected an http:// or https:// URL',
  ])
  t.same(usageProblems('tenant', ['delete', 'a']), [
    'tenant delete: unknown command; expected tenant create, tenant list, tenant show, tenant update',
  ])
  t.same(usageProblems('tenant', ['list'], { PRICING_DATADIR: '/x' }), [
    'PRICING_DATADIR: unknown variable; did you mean PRICING_DATA_DIR?',
  ])
})

t.test('tenant and key commands run with = flags; a usage mistake exits 2 and changes nothing', async (t) => {
  const dir = `--data-dir=${dataDir}`
  const tenant = await cli(['tenant', 'create', 'equals', '--tier=enterprise', '--region=ap', dir])
  t.equal(tenant.code, 0, tenant.stderr)
  t.match(json(tenant), { slug: 'equals', tier: 'enterprise', region: 'ap' })
  const typo = await cli(['tenant', 'create', 'typo', '--teir', 'standard', ...onDir])
  t.equal(typo.code, 2)
  t.equal(typo.stderr, 'tenant create: --teir: unknown flag; did you mean --tier?\n')
  const list = json(await cli(['tenant', 'list', dir]))
  t.same(list.map((entry: { slug: string }) => entry.slug).sort(), ['equals', 'shop'], 'typo was not created')
})

t.test(
  'start: bad values, unknown flags and variables exit 2, named, with what is allowed or a suggestion',
  async (t) => {
    const value = await cli(['start', '--port=abc'])
    t.equal(value.code, 2)
    t.equal(
      value.stderr,
      'Invalid configuration (see pricing-service --help):\n  --port=abc: expected an integer from 0 to 65535\n',
    )
    const names = await cli(['start', '--prot', '1'], { PRICING_PROT: '1' })
    t.equal(names.code, 2)
    t.match(names.stderr, /\n {2}PRICING_PROT: unknown variable; did you mean PRICING_PORT\?\n/)
    t.match(names.stderr, /\n {2}--prot: unknown flag; did you mean --port\?\n/)
  },
)

t.test('start --port=0 listens on a free port; a tooling variable is no error', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'pricing-cli-start-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const args = ['start', '--port=0', `--data-dir=${dir}`, '--no-demo', '--fx-feed-url=', '--log-level', 'info']
  const env = { ...cleanEnvironment(), PRICING_BUILD_DIR: 'dist-somewhere' }
  const child = spawn(process.execPath, [entryPath, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const port = await new Promise<number>((resolve, reject) => {
    let stdout = ''
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString()
      const match = /"port":(\d+),"url":"[^"]*","dataDir":"[^"]*","msg":"listening"/.exec(stdout)
      if (match !== null) resolve(Number(match[1]))
    })
    child.once('exit', (code) => reject(new Error(`exited with ${code}: ${stderr}`)))
  })
  t.not(port, 0)
  const health = await fetch(`http://127.0.0.1:${port}/healthz`)
  t.equal(health.status, 200)
  child.kill('SIGTERM')
  t.equal(await exited, 0, stderr)
})

t.test('the admin token is refused as a flag (ps shows it) and read from a file or the variable', async (t) => {
  const refusal =
    "--admin-token: a secret on the command line is shown to every local user (ps, /proc/PID/cmdline) and kept in the shell's history; set PRICING_ADMIN_TOKEN or --admin-token-file FILE instead"
  t.same(usageProblems('tenant', ['list', '--url', 'http://h:1', '--admin-token', 's3cret-token']), [refusal])
  const run = await cli(['tenant', 'list', '--url', 'http://127.0.0.1:9', '--admin-token=s3cret-token'])
  t.equal(run.code, 2, 'a usage mistake')
  t.equal(run.stderr, `${refusal}\n`, 'the message, without the value')
  t.equal(
    parseInvocation('tenant', ['list'], { PRICING_ADMIN_TOKEN_FILE: adminTokenFile }).adminToken,
    adminToken,
    'PRICING_ADMIN_TOKEN_FILE',
  )
  t.same(usageProblems('tenant', ['list'], { PRICING_ADMIN_TOKEN_FILE: adminTokenFile, PRICING_ADMIN_TOKEN: 'x' }), [
    'PRICING_ADMIN_TOKEN and PRICING_ADMIN_TOKEN_FILE: set one of them, not both',
  ])
  const missing = path.join(dataDir, 'no-such-file')
  t.same(usageProblems('tenant', ['list', '--admin-token-file', missing]), [
    `--admin-token-file=${missing}: cannot read it (ENOENT)`,
  ])
})

t.test('--help lists every setting with its flag, variable and default', async (t) => {
  const short = await cli(['start', '-h'])
  t.equal(short.code, 0)
  t.equal(short.stdout, helpText(), 'start -h prints the help too')
  const { code, stdout } = await cli(['--help'])
  t.equal(code, 0)
  t.match(stdout, /^Usage: pricing-service/)
  t.match(stdout, /key create <slug> \[--name N\]/)
  for (const key of Object.keys(DEFAULTS) as (keyof typeof DEFAULTS)[]) {
    const line = stdout.split('\n').find((text) => text.startsWith(`  --${flagName(key)}, ${envName(key)}  (default: `))
    t.ok(line, `${key} is listed`)
    const shown = DEFAULTS[key] === '' ? 'empty' : String(DEFAULTS[key])
    t.equal(line?.endsWith(`(default: ${shown})`), true, `${key} shows its default`)
  }
})

t.test('backup create and list on the data directory, and through a running server', async (t) => {
  const made = await cli(['backup', 'create', 'shop', '--retain', 'true', ...onDir])
  t.equal(made.code, 0, made.stderr)
  const backup = json(made)
  t.match(backup.id, /^shop-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{6}Z$/)
  t.equal(backup.type, 'manual')
  t.equal(backup.retain, true)
  const second = json(await cli(['backup', 'create', 'shop', ...onDir]))
  t.equal(second.retain, false)
  const listed = await cli(['backup', 'list', 'shop', ...onDir])
  t.equal(listed.code, 0, listed.stderr)
  t.same(
    json(listed).map((entry: { id: string }) => entry.id),
    [second.id, backup.id],
    'newest first',
  )
  const unknown = await cli(['backup', 'create', 'nobody', ...onDir])
  t.equal(unknown.code, 1)
  t.match(unknown.stderr, /Tenant nobody not found/)
  const bad = await cli(['backup', 'create', 'shop', '--retain', 'maybe', ...onDir])
  t.equal(bad.code, 2)
  t.match(bad.stderr, /--retain=maybe: expected true or false/)

  const server = await startServer()
  t.teardown(() => server.dispose())
  await server.tenant('live')
  const remote = ['--url', server.url, '--admin-token-file', adminTokenFile]
  const live = await cli(['backup', 'create', 'live', '--retain', 'true', ...remote])
  t.equal(live.code, 0, live.stderr)
  t.equal(json(live).retain, true)
  const liveList = json(await cli(['backup', 'list', 'live', ...remote]))
  t.same(
    liveList.map((entry: { id: string }) => entry.id),
    [json(live).id],
    'the running server lists it',
  )
  const missing = await cli(['backup', 'list', 'nobody', ...remote])
  t.equal(missing.code, 1)

  // Restore: through the running server only; waits for the end.
  const liveClient = await server.tenant('restored')
  await liveClient.call('PUT', '/currency/EUR', { is_active: true, vat_precision: 2 })
  const point = json(await cli(['backup', 'create', 'restored', ...remote]))
  t.equal((await liveClient.call('PUT', '/currency/SEK', { is_active: true, vat_precision: 2 })).status, 202)
  const offline = await cli(['backup', 'restore', 'restored', point.id, ...onDir])
  t.equal(offline.code, 2, 'restore on the data directory: a usage error')
  t.match(offline.stderr, /backup restore: runs inside the server.*pass --url/)
  const restored = await cli(['backup', 'restore', 'restored', point.id, ...remote])
  t.equal(restored.code, 0, restored.stderr)
  t.equal(json(restored).status, 'completed')
  t.equal(json(restored).backup_id, point.id)
  t.equal((await liveClient.get('/currency/SEK')).status, 404, 'the currency written after the backup is gone')
  const unknownBackup = await cli(['backup', 'restore', 'restored', 'restored-nope', ...remote])
  t.equal(unknownBackup.code, 1)
  t.match(unknownBackup.stderr, /404/)
})
