/**
 * The `tenant`, `key`, `backup`, `request` and `signing-key` commands: parsed strictly (each command's own flags, `--x y` or `--x=y`,
 * every mistake reported at once as a UsageError), then run either directly on the data directory
 * or, with `--url` and the admin token (PRICING_ADMIN_TOKEN or `--admin-token-file`), through a
 * running server's operator API. The token itself is refused as a flag: `ps` would show it.
 * @module
 */
import { mkdirSync } from 'node:fs'
import path from 'node:path'
import { DataDirLock, DataDirLockedError } from '../../platform/data-dir/lock.js'
import { SystemStore, type LimitOverrides, type Tier } from '../../storage/system-store.js'
import { TenantBackups } from '../../storage/backup/backups.js'
import { TenantStore } from '../../storage/tenant-store.js'
import { commandLineSecretProblem, DEFAULTS, readSecretFile, unknownVariables } from '../../platform/config.js'
import { publicBackup } from '../../http/routes/management.js'
import { parseFlags } from '../../platform/flags.js'
import { plans } from '../../tenant/plans.js'
import { listTenantRequests, publicTenantRequest } from '../../accounts/tenant-requests.js'
import {
  createKey,
  createTenantRecord,
  publicKey,
  publicTenant,
  revokeKey,
  updateTenantRecord,
} from '../../accounts/provision.js'
import { signingKeyRetentionMs } from '../../accounts/auth.js'
import { publicSigningKeys, signingKeyStates } from '../../accounts/signing-keys.js'

/** A mistake in the command line itself (exit code 2), as opposed to a failed operation (1). */
export class UsageError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(problems.join('\n'))
    this.name = 'UsageError'
  }
}

const commonFlags = ['data-dir', 'url', 'admin-token', 'admin-token-file']

/** Each command: its positional arguments and its own flags (besides the common ones). */
const commands: Readonly<
  Record<string, { readonly positionals: readonly string[]; readonly flags: readonly string[] }>
> = {
  'tenant create': { positionals: ['slug'], flags: ['tier', 'region', 'owner-email'] },
  'tenant list': { positionals: [], flags: [] },
  'tenant show': { positionals: ['slug'], flags: [] },
  'tenant update': { positionals: ['slug'], flags: ['tier', 'status', 'limits'] },
  'key create': { positionals: ['slug'], flags: ['name'] },
  'key list': { positionals: ['slug'], flags: [] },
  'key revoke': { positionals: ['slug', 'client_id'], flags: [] },
  'backup create': { positionals: ['slug'], flags: ['retain'] },
  'backup list': { positionals: ['slug'], flags: [] },
  'backup restore': { positionals: ['slug', 'backup_id'], flags: [] },
  'request list': { positionals: [], flags: [] },
  'request approve': { positionals: ['id'], flags: [] },
  'request reject': { positionals: ['id'], flags: ['reason'] },
  'signing-key list': { positionals: [], flags: [] },
  'signing-key rotate': { positionals: [], flags: ['drop-previous'] },
}

const statuses = ['active', 'suspended'] as const

interface Invocation {
  readonly command: string
  readonly slug: string
  /** The second positional: a key's client id, or a backup's id. */
  readonly clientId: string
  readonly url: string | undefined
  readonly adminToken: string
  readonly dataDir: string
  readonly tier: Tier | undefined
  readonly region: string | undefined
  readonly ownerEmail: string | undefined
  readonly status: (typeof statuses)[number] | undefined
  readonly limits: LimitOverrides | undefined
  readonly name: string | undefined
  /** A rejection's reason, shown to the requester. */
  readonly reason: string | undefined
  readonly retain: boolean
  /** `signing-key rotate --drop-previous true`: older keys are dropped at once. */
  readonly dropPrevious: boolean
  /** The bound of PRICING_BACKUP_DISK_MAX_BYTES (or its default), for backups on the data directory. */
  readonly backupDiskMaxBytes: number
}

function parseLimits(text: string | undefined, problems: string[]): LimitOverrides | undefined {
  if (text === undefined) return undefined
  try {
    const value = JSON.parse(text) as unknown
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) return value as LimitOverrides
  } catch {
    // Reported below, with the other problems.
  }
  problems.push(`--limits=${text}: expected a JSON object, e.g. {"query_burst":9}`)
  return undefined
}

/**
 * The admin token for `--url`: from `--admin-token-file`, else PRICING_ADMIN_TOKEN_FILE or
 * PRICING_ADMIN_TOKEN (not both), as the server reads it. `--admin-token` itself is a problem.
 */
function adminTokenOf(flag: (name: string) => string | undefined, env: NodeJS.ProcessEnv, problems: string[]): string {
  if (flag('admin-token') !== undefined)
    problems.push(commandLineSecretProblem('--admin-token', 'PRICING_ADMIN_TOKEN', '--admin-token-file'))
  const fileFlag = flag('admin-token-file')
  if (fileFlag !== undefined) return readSecretFile(fileFlag, '--admin-token-file', problems) ?? ''
  const fromEnv = env['PRICING_ADMIN_TOKEN'] ?? ''
  const envFile = env['PRICING_ADMIN_TOKEN_FILE'] ?? ''
  if (envFile === '') return fromEnv
  if (fromEnv !== '') problems.push('PRICING_ADMIN_TOKEN and PRICING_ADMIN_TOKEN_FILE: set one of them, not both')
  return readSecretFile(envFile, 'PRICING_ADMIN_TOKEN_FILE', problems) ?? ''
}

/** Parses `tenant …` / `key …` arguments; throws a UsageError listing every problem. */
export function parseInvocation(group: string, args: readonly string[], env: NodeJS.ProcessEnv): Invocation {
  const verb = args[0] ?? ''
  const command = `${group} ${verb}`
  const spec = commands[command]
  if (spec === undefined) {
    const verbs = Object.keys(commands).filter((name) => name.startsWith(`${group} `))
    throw new UsageError([`${command.trim()}: unknown command; expected ${verbs.join(', ')}`])
  }
  const parsed = parseFlags(
    args.slice(1),
    [...commonFlags, ...spec.flags].map((name) => ({ name, boolean: false })),
  )
  const problems = [...unknownVariables(env), ...parsed.problems.map((problem) => `${command}: ${problem}`)]
  const positionals = parsed.positionals
  for (const [index, name] of spec.positionals.entries()) {
    if (positionals[index] === undefined) problems.push(`${command}: expects <${name}>`)
  }
  for (const extra of positionals.slice(spec.positionals.length))
    problems.push(`${command}: ${extra}: unexpected argument`)
  const flag = (name: string): string | undefined => parsed.values.get(name)
  const tier = flag('tier')
  if (tier !== undefined && !(tier in plans))
    problems.push(`--tier=${tier}: expected one of ${Object.keys(plans).join(', ')}`)
  const status = flag('status')
  if (status !== undefined && !(statuses as readonly string[]).includes(status)) {
    problems.push(`--status=${status}: expected one of ${statuses.join(', ')}`)
  }
  const url = flag('url')
  if (url !== undefined && !/^https?:\/\/[^/]/.test(url))
    problems.push(`--url=${url}: expected an http:// or https:// URL`)
  const limits = parseLimits(flag('limits'), problems)
  const retain = flag('retain')
  if (retain !== undefined && retain !== 'true' && retain !== 'false')
    problems.push(`--retain=${retain}: expected true or false`)
  const dropPrevious = flag('drop-previous')
  if (dropPrevious !== undefined && dropPrevious !== 'true' && dropPrevious !== 'false')
    problems.push(`--drop-previous=${dropPrevious}: expected true or false`)
  const diskMax = env['PRICING_BACKUP_DISK_MAX_BYTES']
  if (diskMax !== undefined && !/^\d+$/.test(diskMax))
    problems.push(`PRICING_BACKUP_DISK_MAX_BYTES=${diskMax}: expected an integer of at least 0`)
  if (command === 'backup restore' && url === undefined) {
    problems.push(
      "backup restore: runs inside the server, which swaps the tenant's data under load: pass --url of the running server (README: Operations, Restore)",
    )
  }
  if ((command === 'request approve' || command === 'request reject') && url === undefined) {
    problems.push(
      `${command}: the running server provisions the tenant and mails the requester: pass --url of the running server`,
    )
  }
  if (command === 'signing-key rotate' && url === undefined) {
    problems.push(
      'signing-key rotate: the running server signs with the new key from then on (and shares it in a cluster): pass --url of the running server',
    )
  }
  const adminToken = adminTokenOf(flag, env, problems)
  if (problems.length > 0) throw new UsageError(problems)
  return {
    command,
    slug: positionals[0] ?? '',
    clientId: positionals[1] ?? '',
    url,
    adminToken,
    dataDir: path.resolve(flag('data-dir') ?? env['PRICING_DATA_DIR'] ?? './data'),
    tier: tier as Tier | undefined,
    region: flag('region'),
    ownerEmail: flag('owner-email'),
    status: status as Invocation['status'],
    limits,
    name: flag('name'),
    reason: flag('reason'),
    retain: retain === 'true',
    dropPrevious: dropPrevious === 'true',
    backupDiskMaxBytes: diskMax === undefined ? DEFAULTS.backupDiskMaxBytes : Number(diskMax),
  }
}

async function viaApi(url: string, token: string, method: string, route: string, body?: unknown): Promise<unknown> {
  const response = await fetch(`${url.replace(/\/$/, '')}${route}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await response.text()
  const json = text === '' ? null : (JSON.parse(text) as unknown)
  const answer = json as { message?: string; code?: string } | null
  // Every route this command calls exists: a server that knows none of them has its admin API off.
  if (response.status === 404 && answer?.code === 'route_not_found') throw new Error(adminApiOff(url))
  if (response.status === 401 && token === '')
    throw new Error(
      `401: ${url} wants its admin token: set PRICING_ADMIN_TOKEN in this command's environment (or give --admin-token-file FILE)`,
    )
  if (!response.ok) throw new Error(`${response.status}: ${answer?.message ?? text}`)
  return json
}

/** What to do when the server at `url` runs without an admin token (the quick start's `npm start`). */
function adminApiOff(url: string): string {
  return [
    `404: the server at ${url} has its admin API off: it was started without PRICING_ADMIN_TOKEN.`,
    'Stop it, start it again with PRICING_ADMIN_TOKEN set in its environment (a long random token), and give this',
    'command the same token in its environment (PRICING_ADMIN_TOKEN or --admin-token-file FILE).',
  ].join('\n')
}

function throughApi(url: string, the: Invocation): Promise<unknown> {
  const call = (method: string, route: string, body?: unknown) => viaApi(url, the.adminToken, method, route, body)
  const tenant = `/admin/tenants/${the.slug}`
  switch (the.command) {
    case 'tenant create': {
      const owner = the.ownerEmail === undefined ? {} : { owner_email: the.ownerEmail }
      return call('POST', '/admin/tenants', {
        slug: the.slug,
        tier: the.tier ?? 'starter',
        region: the.region ?? 'local',
        ...owner,
      })
    }
    case 'tenant list':
      return call('GET', '/admin/tenants')
    case 'tenant show':
      return call('GET', tenant)
    case 'tenant update':
      return call('PATCH', tenant, { tier: the.tier, limits: the.limits, status: the.status })
    case 'key create':
      return call('POST', `${tenant}/keys`, { name: the.name ?? 'cli' })
    case 'key list':
      return call('GET', `${tenant}/keys`)
    case 'backup create':
      return call('POST', `${tenant}/backups`, { retain: the.retain })
    case 'backup list':
      return call('GET', `${tenant}/backups`)
    case 'backup restore':
      return restoreThroughApi(call, tenant, the.clientId)
    case 'request list':
      return call('GET', '/admin/tenant-requests')
    case 'request approve':
      return call('POST', `/admin/tenant-requests/${encodeURIComponent(the.slug)}/approve`)
    case 'request reject':
      return call(
        'POST',
        `/admin/tenant-requests/${encodeURIComponent(the.slug)}/reject`,
        the.reason === undefined ? {} : { reason: the.reason },
      )
    case 'signing-key list':
      return call('GET', '/admin/signing-keys')
    case 'signing-key rotate':
      return call('POST', '/admin/signing-keys/rotate', { drop_previous: the.dropPrevious })
    default:
      return call('DELETE', `${tenant}/keys/${the.clientId}`)
  }
}

/** Starts a restore and waits for it to end: answers the final status (exit 1 if it failed). */
async function restoreThroughApi(
  call: (method: string, route: string, body?: unknown) => Promise<unknown>,
  tenant: string,
  backupId: string,
): Promise<unknown> {
  await call('POST', `${tenant}/restore`, { backup_id: backupId })
  for (;;) {
    const status = (await call('GET', `${tenant}/restore/status`)) as { status: string; error: string | null }
    if (status.status !== 'in_progress') {
      if (status.status === 'failed') throw new Error(status.error ?? 'restore failed')
      return status
    }
    await new Promise((resolve) => setTimeout(resolve, restorePollMs))
  }
}

const restorePollMs = 250

/** Commands that change the data directory: they hold its lock (platform/data-dir/lock.ts) while they run. */
const writingCommands = new Set(['tenant create', 'tenant update', 'key create', 'key revoke', 'backup create'])

/**
 * Takes the data directory for a writing command: refused while a server (or another command)
 * holds it, since a running server would never see the change (it keeps its own memory) or would
 * race it. The message says how to do the same through the server.
 */
function lockForWriting(the: Invocation): DataDirLock {
  mkdirSync(the.dataDir, { recursive: true, mode: 0o700 })
  try {
    return DataDirLock.acquire(the.dataDir, `pricing-service ${the.command}`)
  } catch (error) {
    if (!(error instanceof DataDirLockedError)) throw error
    const holder = error.holder
    if (!holder.command.endsWith(' start')) {
      throw new Error(`${error.message}: wait for it to finish, then run the command again`)
    }
    const url = holder.url ?? 'http://<host>:<port>'
    throw new Error(
      `${error.message}. A running server does not see changes made beside it: run the command through it instead, ` +
        `with --url ${url} and its admin token (PRICING_ADMIN_TOKEN or --admin-token-file FILE), e.g. ` +
        `pricing-service ${the.command} … --url ${url}`,
    )
  }
}

async function onDataDirectory(the: Invocation): Promise<unknown> {
  const lock = writingCommands.has(the.command) ? lockForWriting(the) : null
  try {
    return await onLockedDataDirectory(the)
  } finally {
    lock?.release()
  }
}

async function onLockedDataDirectory(the: Invocation): Promise<unknown> {
  const nowMs = Date.now()
  const system = new SystemStore(path.join(the.dataDir, 'system'))
  try {
    switch (the.command) {
      case 'tenant create': {
        const input = {
          slug: the.slug,
          tier: the.tier ?? 'starter',
          region: the.region ?? 'local',
          owner_email: the.ownerEmail ?? null,
        }
        const record = await createTenantRecord(system, input, nowMs)
        await new TenantStore(path.join(the.dataDir, 'tenants', record.slug)).close()
        return publicTenant(record)
      }
      case 'tenant list':
        return system.listTenants().map(publicTenant)
      case 'tenant show': {
        const record = system.tenants.get(the.slug)
        if (record === undefined) throw new Error(`Tenant ${the.slug} not found`)
        return publicTenant(record)
      }
      case 'tenant update':
        return publicTenant(
          await updateTenantRecord(system, the.slug, { tier: the.tier, limits: the.limits, status: the.status }, nowMs),
        )
      case 'key create': {
        const { record, clientSecret } = await createKey(system, the.slug, the.name ?? 'cli', nowMs)
        return { ...publicKey(record), client_secret: clientSecret }
      }
      case 'key list':
        return system.listKeys(the.slug).map(publicKey)
      case 'request list':
        return listTenantRequests(system).map(publicTenantRequest)
      case 'signing-key list': {
        // As the server holds them at its next start: the newest signs.
        const records = [...system.signingKeys.getRange({ snapshot: false })].map((entry) => entry.value)
        return publicSigningKeys(signingKeyStates(records, null, signingKeyRetentionMs))
      }
      case 'backup create':
      case 'backup list':
        return await backupOnDataDirectory(system, the, nowMs)
      default:
        return publicKey(await revokeKey(system, the.slug, the.clientId, nowMs))
    }
  } finally {
    await system.close()
  }
}

/** Backups on the data directory, while no server runs on it (`backup list` also while one does). */
async function backupOnDataDirectory(system: SystemStore, the: Invocation, nowMs: number): Promise<unknown> {
  if (system.tenants.get(the.slug) === undefined) throw new Error(`Tenant ${the.slug} not found`)
  const backups = new TenantBackups(path.join(the.dataDir, 'backups', the.slug), the.slug, the.backupDiskMaxBytes)
  if (the.command === 'backup list') return backups.list().map(publicBackup)
  const store = new TenantStore(path.join(the.dataDir, 'tenants', the.slug))
  try {
    return publicBackup(await backups.create(store, 'manual', the.retain, nowMs))
  } finally {
    await store.close()
  }
}

/** Runs a parsed command; answers what it prints as JSON. */
export function manage(the: Invocation): Promise<unknown> {
  return the.url === undefined ? onDataDirectory(the) : throughApi(the.url, the)
}
