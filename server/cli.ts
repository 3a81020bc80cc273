/**
 * The `pricing-service` command line. `start` runs the server; `tenant` and `key` commands manage
 * tenants and API keys either directly on the data directory or, with `--url` and `--admin-token`,
 * through a running server's operator API.
 * @module
 */
import path from 'node:path'
import { SystemStore, type LimitOverrides, type Tier } from '../storage/system-store.js'
import { TenantStore } from '../storage/tenant-store.js'
import { main } from './main.js'
import { plans } from './plans.js'
import { createKey, createTenantRecord, publicKey, publicTenant, revokeKey, updateTenantRecord } from './provision.js'

const usage = `Usage: pricing-service [command] [options]

Commands:
  start                                   run the server (default)
  tenant create <slug> --tier T --region R [--owner-email E]
  tenant list
  tenant show <slug>
  tenant update <slug> [--tier T] [--status active|suspended] [--limits JSON]
  key create <slug> --name N              prints the secret once
  key list <slug>
  key revoke <slug> <client_id>

Options for tenant and key commands:
  --data-dir DIR        work on this data directory (default ./data or PRICING_DATA_DIR)
  --url URL             work through a running server's admin API instead
  --admin-token TOKEN   the admin token for --url (default PRICING_ADMIN_TOKEN)
Server options: every PRICING_* variable as a flag, e.g. --port 9000 --data-dir ./x (see README).
`

function option(args: readonly string[], name: string): string | undefined {
  const index = args.indexOf(`--${name}`)
  return index >= 0 ? args[index + 1] : undefined
}

function positional(args: readonly string[]): string[] {
  const values: string[] = []
  for (let index = 0; index < args.length; index++) {
    if (args[index]!.startsWith('--')) index++
    else values.push(args[index]!)
  }
  return values
}

async function viaApi(url: string, token: string, method: string, route: string, body?: unknown): Promise<unknown> {
  const response = await fetch(`${url.replace(/\/$/, '')}${route}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await response.text()
  const json = text === '' ? null : (JSON.parse(text) as unknown)
  if (!response.ok) throw new Error(`${response.status}: ${(json as { message?: string })?.message ?? text}`)
  return json
}

async function manage(command: string, args: string[]): Promise<unknown> {
  const [verb, ...rest] = positional(args)
  const url = option(args, 'url')
  const nowMs = Date.now()
  const tier = option(args, 'tier') as Tier | undefined
  if (tier !== undefined && !(tier in plans)) throw new Error(`--tier must be one of ${Object.keys(plans).join(', ')}`)
  const limitsText = option(args, 'limits')
  const limits = limitsText === undefined ? undefined : (JSON.parse(limitsText) as LimitOverrides)
  if (url !== undefined) {
    const token = option(args, 'admin-token') ?? process.env['PRICING_ADMIN_TOKEN'] ?? ''
    const call = (method: string, route: string, body?: unknown) => viaApi(url, token, method, route, body)
    if (command === 'tenant' && verb === 'create') return call('POST', '/admin/tenants', { slug: rest[0], tier: tier ?? 'starter', region: option(args, 'region') ?? 'local', ...(option(args, 'owner-email') ? { owner_email: option(args, 'owner-email') } : {}) })
    if (command === 'tenant' && verb === 'list') return call('GET', '/admin/tenants')
    if (command === 'tenant' && verb === 'show') return call('GET', `/admin/tenants/${rest[0]}`)
    if (command === 'tenant' && verb === 'update') return call('PATCH', `/admin/tenants/${rest[0]}`, { tier, limits, status: option(args, 'status') })
    if (command === 'key' && verb === 'create') return call('POST', `/admin/tenants/${rest[0]}/keys`, { name: option(args, 'name') ?? 'cli' })
    if (command === 'key' && verb === 'list') return call('GET', `/admin/tenants/${rest[0]}/keys`)
    if (command === 'key' && verb === 'revoke') return call('DELETE', `/admin/tenants/${rest[0]}/keys/${rest[1]}`)
    throw new Error(usage)
  }
  const dataDir = path.resolve(option(args, 'data-dir') ?? process.env['PRICING_DATA_DIR'] ?? './data')
  const system = new SystemStore(path.join(dataDir, 'system'))
  try {
    if (command === 'tenant' && verb === 'create') {
      const record = await createTenantRecord(system, { slug: rest[0] ?? '', tier: tier ?? 'starter', region: option(args, 'region') ?? 'local', owner_email: option(args, 'owner-email') ?? null }, nowMs)
      await new TenantStore(path.join(dataDir, 'tenants', record.slug)).close()
      return publicTenant(record)
    }
    if (command === 'tenant' && verb === 'list') return system.listTenants().map(publicTenant)
    if (command === 'tenant' && verb === 'show') {
      const record = system.tenants.get(rest[0] ?? '')
      if (record === undefined) throw new Error(`Tenant ${rest[0]} not found`)
      return publicTenant(record)
    }
    if (command === 'tenant' && verb === 'update') {
      const status = option(args, 'status') as 'active' | 'suspended' | undefined
      return publicTenant(await updateTenantRecord(system, rest[0] ?? '', { tier, limits, status }, nowMs))
    }
    if (command === 'key' && verb === 'create') {
      const { record, clientSecret } = await createKey(system, rest[0] ?? '', option(args, 'name') ?? 'cli', nowMs)
      return { ...publicKey(record), client_secret: clientSecret }
    }
    if (command === 'key' && verb === 'list') return system.listKeys(rest[0] ?? '').map(publicKey)
    if (command === 'key' && verb === 'revoke') return publicKey(await revokeKey(system, rest[0] ?? '', rest[1] ?? '', nowMs))
    throw new Error(usage)
  } finally {
    await system.close()
  }
}

export async function run(argv: string[]): Promise<void> {
  const [command = 'start', ...args] = argv
  if (command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(usage)
    return
  }
  if (command === 'start' || command.startsWith('--')) {
    await main(command === 'start' ? args : argv)
    return
  }
  if (command !== 'tenant' && command !== 'key') {
    process.stderr.write(usage)
    process.exit(2)
  }
  try {
    const result = await manage(command, args)
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`)
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n`)
    process.exit(1)
  }
}
