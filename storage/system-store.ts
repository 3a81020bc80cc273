/**
 * The system environment: tenants, API keys, token-signing keys, the latest fetched FX feed,
 * people (tenant memberships, magic sign-in links and console sessions), people's tenant requests
 * and each tenant's latest restore. Small tables, read at startup and written rarely; every write is durable before it
 * resolves.
 * @module
 */
import { mkdirSync } from 'node:fs'
import { open, type Database, type RootDatabase } from 'lmdb'
import { environmentOptions } from './options.js'

export type Tier = 'starter' | 'standard' | 'enterprise'
export type TenantStatus = 'requested' | 'provisioning' | 'active' | 'suspended' | 'rejected'

/** Operator overrides of the plan table; null means unlimited. */
export interface LimitOverrides {
  articles?: number | null
  pricelists?: number | null
  prices?: number | null
  changelog_capacity?: number | null
  query_rate?: number | null
  query_burst?: number | null
  ingest_rate?: number | null
  ingest_burst?: number | null
  max_items_per_request?: number | null
  webhooks?: boolean
  retention?: boolean
}

export interface TenantRecord {
  slug: string
  tier: Tier
  region: string
  status: TenantStatus
  owner_email: string | null
  limits: LimitOverrides
  created_at: number
  updated_at: number
}

export interface ApiKeyRecord {
  client_id: string
  tenant: string
  name: string
  /** scrypt: `scrypt$N$r$p$salt-hex$hash-hex`. */
  secret_hash: string
  created_at: number
  revoked_at: number | null
  last_used_at: number | null
}

/**
 * A token-signing key pair. The private key is stored as its JWK (`private_jwk`) without
 * PRICING_SECRET_KEY, and sealed (`sealed_private_jwk`, accounts/signing-key-records.ts)
 * with it: exactly one of the two is present.
 */
export interface SigningKeyRecord {
  kid: string
  alg: string
  private_jwk?: Record<string, unknown>
  sealed_private_jwk?: string
  public_jwk: Record<string, unknown>
  created_at: number
}

/** The latest euro reference-rate feed this node fetched, so that a restart and a new tenant have it. */
export interface FxFeedRecord {
  /** Epoch ms of the fetch. */
  fetched_at: number
  /** The URL it came from. */
  source: string
  /** Publication days, oldest first; rates are canonical decimal strings (EUR -> code). */
  days: { date: string; rates: Record<string, string> }[]
}

export type Role = 'owner' | 'admin' | 'editor' | 'viewer'

/** A person's membership of a tenant (key: `<slug> <email>`). */
export interface MemberRecord {
  tenant: string
  email: string
  role: Role
  created_at: number
}

/** A magic sign-in link, stored by the SHA-256 of its token (the token itself is only in the mail). */
export interface SignInLinkRecord {
  email: string
  expires_at: number
  used_at: number | null
  /** Where the link lands after sign-in (an invitation: the tenant's console); absent: /console. */
  next?: string
}

/** A console session, stored by the SHA-256 of its cookie value. */
export interface SessionRecord {
  email: string
  created_at: number
  expires_at: number
}

/** A person's request for a tenant through the portal (key: id); accounts/tenant-requests.ts owns its meaning. */
export interface TenantRequestRecord {
  id: string
  email: string
  slug: string
  tier: Tier
  region: string
  status: 'requested' | 'provisioning' | 'active' | 'rejected'
  created_at: number
  decided_at: number | null
  /** Why it was rejected (null otherwise). */
  reason: string | null
}

/** A tenant's latest restore (key: slug); tenant/backups/restore.ts owns its meaning. */
export interface RestoreRecord {
  status: 'in_progress' | 'completed' | 'failed'
  backup_id: string
  /** Epoch ms. */
  started_at: number
  completed_at: number | null
  error: string | null
  /** Who asked for it (a console user's e-mail, or `operator`). */
  requested_by: string
}

/** The tables of the system environment, by the names they are opened with. */
export const systemTables = [
  'tenants',
  'api_keys',
  'signing_keys',
  'fx_feed',
  'members',
  'sign_in_links',
  'sessions',
  'restores',
  'tenant_requests',
] as const
export type SystemTable = (typeof systemTables)[number]

export class SystemStore {
  readonly #root: RootDatabase
  readonly tenants: Database<TenantRecord, string>
  readonly keys: Database<ApiKeyRecord, string>
  readonly signingKeys: Database<SigningKeyRecord, string>
  /** 'latest' -> the latest fetched FX feed. */
  readonly fxFeed: Database<FxFeedRecord, string>
  readonly members: Database<MemberRecord, string>
  readonly signInLinks: Database<SignInLinkRecord, string>
  readonly sessions: Database<SessionRecord, string>
  readonly restores: Database<RestoreRecord, string>
  readonly tenantRequests: Database<TenantRequestRecord, string>
  /** Each table's name (as opened), for observers of writes. */
  readonly #names = new Map<Database<any, string>, SystemTable>()
  /**
   * Told of each durable write (`value` undefined: a removal), after it is durable. A cluster node
   * shares the tables it names this way (cluster/directory.ts); a single node has none.
   */
  observer: ((table: SystemTable, key: string, value: unknown) => void) | null = null

  constructor(readonly path: string) {
    mkdirSync(path, { recursive: true })
    this.#root = open(environmentOptions(path, 16 * 1024 * 1024))
    this.tenants = this.#root.openDB<TenantRecord, string>({ name: 'tenants' })
    this.keys = this.#root.openDB<ApiKeyRecord, string>({ name: 'api_keys' })
    this.signingKeys = this.#root.openDB<SigningKeyRecord, string>({ name: 'signing_keys' })
    this.fxFeed = this.#root.openDB<FxFeedRecord, string>({ name: 'fx_feed' })
    this.members = this.#root.openDB<MemberRecord, string>({ name: 'members' })
    this.signInLinks = this.#root.openDB<SignInLinkRecord, string>({ name: 'sign_in_links' })
    this.sessions = this.#root.openDB<SessionRecord, string>({ name: 'sessions' })
    this.restores = this.#root.openDB<RestoreRecord, string>({ name: 'restores' })
    this.tenantRequests = this.#root.openDB<TenantRequestRecord, string>({ name: 'tenant_requests' })
    for (const table of systemTables) this.#names.set(this.table(table), table)
  }

  /** A table by its name. */
  table(name: SystemTable): Database<any, string> {
    switch (name) {
      case 'tenants':
        return this.tenants
      case 'api_keys':
        return this.keys
      case 'signing_keys':
        return this.signingKeys
      case 'fx_feed':
        return this.fxFeed
      case 'members':
        return this.members
      case 'sign_in_links':
        return this.signInLinks
      case 'sessions':
        return this.sessions
      case 'restores':
        return this.restores
      case 'tenant_requests':
        return this.tenantRequests
    }
  }

  listTenants(): TenantRecord[] {
    return [...this.tenants.getRange({ snapshot: false })].map((entry) => entry.value)
  }

  listKeys(tenant: string): ApiKeyRecord[] {
    const keys: ApiKeyRecord[] = []
    for (const { value } of this.keys.getRange({ snapshot: false })) {
      if (value.tenant === tenant) keys.push(value)
    }
    return keys.sort((left, right) => left.created_at - right.created_at)
  }

  /** Members of a tenant, oldest first. */
  listMembers(tenant: string): MemberRecord[] {
    return [...this.members.getRange({ start: `${tenant} `, end: `${tenant}!`, snapshot: false })]
      .map((entry) => entry.value)
      .sort((left, right) => left.created_at - right.created_at)
  }

  member(tenant: string, email: string): MemberRecord | undefined {
    return this.members.get(`${tenant} ${email}`)
  }

  /** Durable put: resolves after the commit is flushed. */
  async put<V>(db: Database<V, string>, key: string, value: V, observed = true): Promise<void> {
    await db.put(key, value)
    await this.#root.flushed
    if (observed) this.#observe(db, key, value)
  }

  /** Durable removal. */
  async remove<V>(db: Database<V, string>, key: string, observed = true): Promise<void> {
    await db.remove(key)
    await this.#root.flushed
    if (observed) this.#observe(db, key, undefined)
  }

  /**
   * Read-modify-write of one record inside a write transaction, so that concurrent updates of the
   * same record (a revoke and a token request's last-used time) never overwrite each other with a
   * stale copy. `change` answers the new value, or undefined to leave the record alone. Resolves
   * with the stored value once durable.
   */
  async update<V>(
    db: Database<V, string>,
    key: string,
    change: (current: V | undefined) => V | undefined,
  ): Promise<V | undefined> {
    const next = await db.transaction(() => {
      const value = change(db.get(key))
      if (value !== undefined) void db.put(key, value)
      return value
    })
    if (next !== undefined) {
      await this.#root.flushed
      this.#observe(db, key, next)
    }
    return next
  }

  #observe(db: Database<any, string>, key: string, value: unknown): void {
    const table = this.#names.get(db)
    if (this.observer !== null && table !== undefined) this.observer(table, key, value)
  }

  async close(): Promise<void> {
    await this.#root.close()
  }
}
