/**
 * The command line: tenant and key commands on a data directory (then served by a server started
 * on it), and the same commands through a running server's admin API with --url.
 */
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import t from 'tap'
import { adminToken, entryPath, startServer, TenantClient } from './helpers/server.js'

interface CliResult {
  code: number
  stdout: string
  stderr: string
}

/** Runs `pricing-service <args>` from the compiled tree, with no PRICING_* variables inherited. */
function cli(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('PRICING_')))
  return new Promise((resolve) => {
    execFile(process.execPath, [entryPath, ...args], { env: { ...clean, ...env }, timeout: 30_000 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : 1
      resolve({ code, stdout, stderr })
    })
  })
}

function json(result: CliResult): any {
  return JSON.parse(result.stdout)
}

const dataDir = mkdtempSync(path.join(tmpdir(), 'pricing-cli-'))
t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
const onDir = ['--data-dir', dataDir]
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

t.test('tenant create refuses a duplicate, a bad slug and a bad tier with exit code 1', async (t) => {
  const duplicate = await cli(['tenant', 'create', 'shop', '--tier', 'starter', ...onDir])
  t.equal(duplicate.code, 1)
  t.match(duplicate.stderr, /already exists/)
  const slug = await cli(['tenant', 'create', 'Bad_Slug', ...onDir])
  t.equal(slug.code, 1)
  t.match(slug.stderr, /slug/)
  const tier = await cli(['tenant', 'create', 'golden', '--tier', 'gold', ...onDir])
  t.equal(tier.code, 1)
  t.match(tier.stderr, /tier/)
  const list = json(await cli(['tenant', 'list', ...onDir]))
  t.same(list.map((tenant: { slug: string }) => tenant.slug), ['shop'], 'nothing else was created')
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
  const result = await cli(['tenant', 'update', 'shop', '--tier', 'enterprise', '--limits', '{"query_burst":9}', ...onDir])
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
  const remote = ['--url', server.url, '--admin-token', adminToken]
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
  t.same(tenants.map((entry: { slug: string }) => entry.slug), ['web'])
  const update = await cli(['tenant', 'update', 'web', '--status', 'suspended', ...remote])
  t.match(json(update), { status: 'suspended' })
  t.equal((await client.get('/article')).status, 403)
  const revoke = await cli(['key', 'revoke', 'web', credentials.client_id, ...remote])
  t.equal(revoke.code, 0, revoke.stderr)
})

t.test('with --url a wrong admin token fails with exit code 1 and the status', async (t) => {
  const server = await startServer()
  t.teardown(() => server.dispose())
  const result = await cli(['tenant', 'create', 'web', '--tier', 'starter', '--url', server.url, '--admin-token', 'wrong'])
  t.equal(result.code, 1)
  t.match(result.stderr, /401/)
  t.equal((await server.admin('GET', '/admin/tenants/web')).status, 404)
  const fromEnv = await cli(['tenant', 'list', '--url', server.url], { PRICING_ADMIN_TOKEN: adminToken })
  t.equal(fromEnv.code, 0, 'the admin token defaults to PRICING_ADMIN_TOKEN')
})

t.test('an unknown command prints the usage and exits 2', async (t) => {
  const result = await cli(['frobnicate'])
  t.equal(result.code, 2)
  t.match(result.stderr, /Usage: pricing-service/)
  const help = await cli(['help'])
  t.equal(help.code, 0)
  t.match(help.stdout, /key create <slug> --name N/)
})
