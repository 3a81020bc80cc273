/**
 * This node in a cluster (issue 10), on when `PRICING_REDIS_URL` is set: its Redis connection, the
 * shared directory (cluster/directory.ts), placement and region homes (cluster/placement.ts),
 * replicas (cluster/replication.ts) and the FX fetcher's lease (cluster/fx.ts). Without it nothing
 * changes. docs/cluster.md describes the whole.
 *
 * Two steps, because the directory must be in step before the node issues tokens or loads tenants,
 * and placement needs the address the node listens on:
 * `joinCluster` (connect, first directory sync) then `ClusterNode.serve` (placement, replicas, FX).
 * @module
 */
import { randomBytes } from 'node:crypto'
import os from 'node:os'
import type { Logger } from 'pino'
import type { ClusterStatus } from '../platform/cluster-status.js'
import type { Config } from '../platform/config.js'
import type { BucketFactory } from '../tenant/rate-limits.js'
import type { FxFeedCluster } from '../tenant/fx-feed.js'
import { applyStoredFeed } from '../tenant/fx-feed.js'
import type { TokenService } from '../accounts/auth.js'
import type { TenantRegistry, TenantRuntime } from '../tenant/runtime.js'
import type { SigningKeyRecord, SystemStore, TenantRecord } from '../storage/system-store.js'
import { bootstrapReplicas } from './bootstrap.js'
import { SharedDirectory } from './directory.js'
import { RedisFxFeed } from './fx.js'
import { LeaseKeeper } from './lease.js'
import { ClusterPlacement } from './placement.js'
import { connectRedis } from './redis.js'
import { SharedBucket } from './rate-limits.js'
import { Replication } from './replication.js'

/** How long start-up waits for the first directory sync before serving anyway (Redis away). */
const firstSyncWaitMs = 3_000

export interface ServeDeps {
  readonly tenants: TenantRegistry
  readonly tokens: TokenService
  /** This node's address for the other nodes (PRICING_NODE_URL or the listened address). */
  readonly nodeUrl: string
  readonly now: () => number
}

type ClusterConfig = Pick<Config, 'redisUrl' | 'nodeId' | 'leaseTtlMs' | 'region'>

/** What a cluster node is made of: its settings, the node's system store, its logger and the clock. */
export interface ClusterNodeOptions {
  readonly config: ClusterConfig
  readonly system: SystemStore
  readonly logger: Logger
  readonly now: () => number
}

export class ClusterNode {
  readonly redis
  readonly directory: SharedDirectory
  readonly fx: FxFeedCluster
  readonly #fetcher: LeaseKeeper
  placement: ClusterPlacement | null = null
  replication: Replication | null = null
  #redisUp = false
  /** Set by `stop`: the connection it closes itself is no outage to warn about. */
  #stopping = false

  readonly config: ClusterConfig
  readonly system: SystemStore
  readonly logger: Logger
  /** The clock (server/main.ts gives `Date.now`). */
  readonly now: () => number

  constructor(options: ClusterNodeOptions) {
    const { config, system, logger } = options
    this.config = config
    this.system = system
    this.logger = logger
    this.now = options.now
    const nodeId = this.nodeId
    this.redis = connectRedis(config.redisUrl, (up) => {
      this.#redisUp = up
      if (this.#stopping) return
      if (up) {
        logger.info({ nodeId }, 'cluster: Redis reachable')
        void this.replication?.flushQueued().catch(() => undefined)
        void this.directory.flush()
      } else
        logger.warn(
          { nodeId },
          "cluster: Redis unreachable; serving reads and this node's own regions' writes with local limits",
        )
    })
    this.directory = new SharedDirectory(this.redis, system, nodeId, logger)
    this.#fetcher = new LeaseKeeper(
      this.redis,
      { name: 'fx-fetcher', owner: nodeId, ttlMs: config.leaseTtlMs },
      {
        acquired: (token) => logger.info({ nodeId, token }, 'cluster: this node fetches the FX feed'),
        lost: (reason) => logger.warn({ nodeId, reason }, 'cluster: this node no longer fetches the FX feed'),
      },
      this.now,
    )
    this.fx = new RedisFxFeed(this.redis, this.#fetcher, Math.max(50, Math.floor(config.leaseTtlMs / 2)))
  }

  get nodeId(): string {
    return this.config.nodeId !== '' ? this.config.nodeId : `${os.hostname()}-${process.pid}`
  }

  get regions(): string[] {
    return this.config.region
      .split(',')
      .map((region) => region.trim())
      .filter((region) => region !== '')
  }

  /** Tenants' rate-limit buckets shared by all nodes through Redis (cluster/rate-limits.ts). */
  readonly bucketFactory: BucketFactory = (slug, dimension, rate, burst, nowMs) =>
    new SharedBucket({
      redis: this.redis,
      slug,
      dimension,
      rate,
      burst,
      nowMs,
      redisUp: () => this.#redisUp,
      now: this.now,
    })

  /** The secret nodes prove themselves with to each other (http/routes/cluster.ts); null until Redis answered. */
  secret: string | null = null

  /** Waits (bounded) for the first directory sync; agrees the cluster secret. */
  async join(): Promise<void> {
    await this.directory.start(firstSyncWaitMs)
    try {
      await this.redis.set('pricing:cluster:secret', randomBytes(32).toString('hex'), 'NX')
      this.secret = await this.redis.get('pricing:cluster:secret')
    } catch {
      // Redis away: no copies between nodes until the next start.
    }
  }

  /** Before the tenants load: copies of the tenants this node serves and does not hold yet. */
  async bootstrap(dataDir: string): Promise<void> {
    const { redis, system, nodeId, regions, secret, logger, now } = this
    await bootstrapReplicas({ redis, system, dataDir, nodeId, regions, secret, logger, now })
  }

  /** Placement, replicas and the FX fetcher, once the node listens and its tenants are loaded. */
  serve(deps: ServeDeps): void {
    const { tenants, tokens } = deps
    const replication = new Replication(this.redis, tenants, this.logger, deps.now)
    this.replication = replication
    const placement = new ClusterPlacement(
      this.redis,
      { id: this.nodeId, url: deps.nodeUrl, regions: this.regions },
      this.config.leaseTtlMs,
      this.logger,
      {
        homeAcquired: (region) => void this.#takeOver(region, deps),
        homeLost: (region) => {
          for (const tenant of tenants.all()) if (tenant.record.region === region) replication.demote(tenant)
        },
      },
      deps.now,
    )
    placement.replicaOf = (tenant) => replication.view(tenant)
    this.placement = placement
    // Every tenant starts as a replica where this node serves its region; the home lease promotes.
    for (const tenant of tenants.all()) this.#place(tenant)
    tenants.whenOpened((tenant) => this.#place(tenant))
    this.directory.listen(async (table, key, value) => {
      // Signing keys another node created, stored again (a new secret key) or dropped (rotation).
      if (table === 'signing_keys')
        await (value === undefined ? tokens.forget(key) : tokens.learn(value as SigningKeyRecord))
      if (table === 'tenants' && value !== undefined) await this.#tenantChanged(value as TenantRecord, deps)
    })
    // Signing keys the directory brought in between the tokens' start and now.
    tokens.keys
      .maintain(deps.now(), 0)
      .catch((error: unknown) => this.logger.error({ err: error }, 'cluster: signing keys not caught up'))
    // Tenants the directory brought in between loading and now.
    for (const record of this.system.listTenants())
      if (tenants.get(record.slug) === undefined) void this.#tenantChanged(record, deps)
    replication.start()
    placement.start()
    this.#fetcher.start()
  }

  /** A tenant of a region this node serves follows the home's log unless this node is the home. */
  #place(tenant: TenantRuntime): void {
    const placement = this.placement!
    if (placement.isHome(tenant.record.region)) {
      tenant.becomeHome(this.replication)
    } else if (this.regions.includes(tenant.record.region)) this.replication!.follow(tenant)
    else tenant.becomeReplica()
  }

  async #tenantChanged(record: TenantRecord, deps: ServeDeps): Promise<void> {
    const known = deps.tenants.get(record.slug)
    if (known !== undefined) {
      known.update(record, deps.now())
      return
    }
    const runtime = deps.tenants.open(record, deps.now())
    runtime.load()
    if (runtime.role === 'home') await applyStoredFeed(this.system, runtime, deps.now())
  }

  async #takeOver(region: string, deps: ServeDeps): Promise<void> {
    const placement = this.placement!
    placement.promoting.add(region)
    try {
      for (const tenant of deps.tenants.all()) {
        if (tenant.record.region !== region || tenant.role === 'home') continue
        await this.replication!.promote(tenant)
        this.logger.info(
          { tenant: tenant.slug, sequence: tenant.store.sequence },
          'cluster: tenant writable here (home of its region)',
        )
      }
    } catch (error) {
      this.logger.error({ err: error, region }, 'cluster: taking over the region failed; its writes stay refused here')
      return
    }
    placement.promoting.delete(region)
  }

  status(): ClusterStatus {
    return {
      nodeId: this.nodeId,
      redisUp: this.#redisUp,
      directorySynced: this.directory.synced,
      directoryUnpublished: this.directory.unpublished,
      queuedCommits: this.replication?.queuedCommits ?? 0,
      homeRegions: this.regions.filter((region) => this.placement?.isHome(region) === true),
      replicas: this.replication?.lags() ?? [],
      applyLag: this.replication?.applyLag() ?? { count: 0, p50Ms: null, p99Ms: null, maxMs: null },
    }
  }

  async stop(): Promise<void> {
    this.#stopping = true
    await this.#fetcher.stop(true)
    await this.placement?.stop()
    await this.replication?.stop()
    await this.directory.stop()
    this.redis.disconnect()
  }
}

/** Connects to Redis and brings the directory in step (waiting at most a few seconds). */
export async function joinCluster(options: ClusterNodeOptions): Promise<ClusterNode> {
  const node = new ClusterNode(options)
  await node.join()
  return node
}
