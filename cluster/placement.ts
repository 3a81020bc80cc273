/**
 * Placement (issue 10): which node serves a tenant request.
 *
 * - **Nodes register** in Redis with their address and regions: `pricing:node:<id>` (JSON, expires
 *   after the lease TTL unless renewed every TTL/3) and the set `pricing:nodes`.
 * - **Every region has one home node**, its writer: the holder of the lease `home:<region>`
 *   (cluster/lease.ts) among the nodes that serve the region. The other nodes of the region are
 *   its standbys and serve reads from replicas (cluster/replication.ts).
 * - **A home is kept through a Redis outage.** The lease's last holder is remembered in
 *   `pricing:home:<region>:last`. While Redis is away no lease can be renewed, so the home goes on
 *   writing on its own say (SPEC: each node keeps serving its own tenants' writes); when Redis
 *   returns, only the last holder takes the lease again, unless its registration stays absent for a
 *   whole TTL (it died): then a standby does. With no last holder recorded (a new cluster, or a
 *   Redis that lost its keys), a node takes a home only after Redis has answered it for a TTL.
 * - **A dead home is told from one cut off from Redis by asking it.** Once the last holder's
 *   registration is gone, a standby asks its address (`GET /readyz`): a refused connection, or
 *   another node answering there, means its process is gone, and the standby takes the lease at
 *   its next try instead of waiting that further TTL. A home that answers (alive, cut off from
 *   Redis only) or does not answer at all (its machine down, or cut off from the standby too) is
 *   waited for as before. So a SIGKILLed home is replaced within TTL + TTL/3 (its lease runs out
 *   at most a TTL after its last renewal; the standby tries every TTL/3), and a home cut off from
 *   Redis keeps its region for the same time as before.
 * - The view of nodes and homes is read from Redis every TTL/3; while Redis is away the last view
 *   stands.
 * @module
 */
import type { Redis } from 'ioredis'
import type { Logger } from 'pino'
import { servedHere, type Placed, type TenantPlacement } from '../tenant/placement.js'
import type { TenantRuntime } from '../tenant/runtime.js'
import { LeaseKeeper } from './lease.js'

export interface NodeInfo {
  readonly id: string
  readonly url: string
  readonly regions: readonly string[]
}

/** How long a standby waits for the last home's answer to the liveness question (at most). */
const probeTimeoutMs = 1_000

/** How a replica of a tenant stands (cluster/replication.ts); absent: no replica here. */
export interface ReplicaView {
  /** Applied the home's log up to its head as last seen, and can serve reads. */
  readonly ready: boolean
  /** The tenant's sequence here. */
  readonly sequence: number
  /** Sequences the home has published that this replica has not applied yet. */
  readonly lagSequences: number
}

export interface PlacementEvents {
  /** This node became the home of `region` (its replicas must catch up before it writes). */
  homeAcquired(region: string): void
  /** This node is no longer the home of `region`. */
  homeLost(region: string): void
}

export class ClusterPlacement implements TenantPlacement {
  readonly #nodes = new Map<string, NodeInfo>()
  /** region -> the node id holding its home lease (as last read from Redis). */
  readonly #homes = new Map<string, string>()
  readonly #leases = new Map<string, LeaseKeeper>()
  /** Regions this node was home of when Redis was last reachable: kept while it is not. */
  readonly #homeWhileAway = new Set<string>()
  /** Regions whose home's catch-up is still running here (writes wait: 503). */
  readonly promoting = new Set<string>()
  /** region -> when (own clock) its last holder was first seen unregistered while Redis answered. */
  readonly #lastHolderAbsentSince = new Map<string, number>()
  /** node id -> its registration as last read, and when (own clock): the address to ask once it is gone. */
  readonly #lastSeen = new Map<string, { info: NodeInfo; seenMs: number }>()
  #timer: NodeJS.Timeout | null = null
  #stopped = false
  redisUp = false
  /** Since when (own clock) the connection to Redis is up. */
  #upSinceMs: number
  /** The replica state of a tenant, from cluster/replication.ts. */
  replicaOf: (tenant: TenantRuntime) => ReplicaView | null = () => null

  constructor(
    readonly redis: Redis,
    readonly self: NodeInfo,
    readonly ttlMs: number,
    readonly logger: Logger,
    readonly events: PlacementEvents,
    readonly now: () => number,
  ) {
    this.#upSinceMs = redis.status === 'ready' ? now() : Number.POSITIVE_INFINITY
    redis.on('ready', () => (this.#upSinceMs = this.now()))
    redis.on('close', () => {
      this.redisUp = false
      this.#upSinceMs = Number.POSITIVE_INFINITY
    })
    for (const region of self.regions) {
      const lease = new LeaseKeeper(
        redis,
        { name: `home:${region}`, owner: self.id, ttlMs, mayAcquire: () => this.#mayAcquireHome(region) },
        {
          acquired: (token) => {
            logger.info({ nodeId: self.id, region, token }, 'cluster: this node is the home of the region (its writer)')
            this.#homes.set(region, self.id)
            this.#homeWhileAway.add(region)
            void redis.set(`pricing:home:${region}:last`, self.id).catch(() => undefined)
            events.homeAcquired(region)
          },
          lost: (reason) => {
            // Redis away: the home keeps writing on its own say (see above); otherwise it steps down.
            if (!this.redisUp) {
              logger.warn(
                { nodeId: self.id, region, reason },
                'cluster: home lease not renewable while Redis is away; still writing for the region',
              )
              return
            }
            logger.warn({ nodeId: self.id, region, reason }, 'cluster: this node is no longer the home of the region')
            this.#homeWhileAway.delete(region)
            events.homeLost(region)
          },
        },
        now,
      )
      this.#leases.set(region, lease)
    }
  }

  start(): void {
    for (const lease of this.#leases.values()) lease.start()
    void this.#refresh()
  }

  /** Whether this node is the home (writer) of `region`. */
  isHome(region: string): boolean {
    const lease = this.#leases.get(region)
    if (lease === undefined) return false
    if (lease.token !== null) return true
    return !this.redisUp && this.#homeWhileAway.has(region)
  }

  /** The node id of `region`'s home as last seen (this node's own id when it is the home). */
  homeOf(region: string): string | null {
    if (this.isHome(region)) return this.self.id
    return this.#homes.get(region) ?? null
  }

  /** Registered nodes as last read (this one included). */
  get nodes(): readonly NodeInfo[] {
    return [...this.#nodes.values()]
  }

  get nodeId(): string {
    return this.self.id
  }

  place(tenant: TenantRuntime, write: boolean, minSequence: number | null): Placed {
    const region = tenant.record.region
    if (this.isHome(region)) {
      if (write && this.promoting.has(region))
        return {
          kind: 'unavailable',
          message: `This node is taking over region ${region}: writes resume once it has applied the old home's log`,
          retryAfterS: 1,
        }
      return servedHere
    }
    if (!write) {
      const replica = this.replicaOf(tenant)
      if (replica !== null && replica.ready && (minSequence === null || replica.sequence >= minSequence)) {
        return servedHere
      }
    }
    const homeId = this.#homes.get(region)
    const home = homeId === undefined ? undefined : this.#nodes.get(homeId)
    if (home !== undefined && home.id !== this.self.id) return { kind: 'elsewhere', nodeUrl: home.url, nodeId: home.id }
    const retryAfterS = Math.max(1, Math.ceil(this.ttlMs / 1000))
    const served = this.self.regions.includes(region) || this.nodes.some((node) => node.regions.includes(region))
    return {
      kind: 'unavailable',
      message: served
        ? `No node is the home of region ${region} now (a standby takes over within about ${retryAfterS} s)`
        : `No node of this deployment serves region ${region}`,
      retryAfterS,
    }
  }

  answerHeaders(tenant: TenantRuntime): Record<string, string> {
    const replica = tenant.role === 'replica' ? this.replicaOf(tenant) : null
    const sequence = String(tenant.store.sequence)
    return replica === null
      ? { 'x-sequence': sequence }
      : { 'x-sequence': sequence, 'x-replica-lag': String(replica.lagSequences) }
  }

  async #mayAcquireHome(region: string): Promise<boolean> {
    // A home kept through an outage takes its lease back first.
    if (this.#homeWhileAway.has(region)) return true
    const last = await this.redis.get(`pricing:home:${region}:last`)
    if (last === this.self.id) return true
    // No last home known (a new cluster, or a Redis that lost its keys): wait a whole TTL of
    // Redis answering, so that a home kept through an outage has claimed its region again.
    if (last === null) return this.now() - this.#upSinceMs >= this.ttlMs
    if ((await this.redis.exists(`pricing:node:${last}`)) === 1) {
      this.#lastHolderAbsentSince.delete(region)
      return false
    }
    // Gone from Redis: a process that is gone too needs no further wait.
    if (await this.#processGone(last)) return true
    const since = this.#lastHolderAbsentSince.get(region)
    if (since === undefined) {
      this.#lastHolderAbsentSince.set(region, this.now())
      return false
    }
    return this.now() - since >= this.ttlMs
  }

  /**
   * Whether node `id`'s process is certainly gone: its address refuses connections, or another node
   * answers there. Anything else (an answer from it, a time-out, an address never seen) is not
   * certain, and the caller waits.
   */
  async #processGone(id: string): Promise<boolean> {
    const seen = this.#lastSeen.get(id)
    if (seen === undefined) return false
    try {
      const answer = await fetch(new URL('/readyz', seen.info.url), {
        signal: AbortSignal.timeout(Math.min(probeTimeoutMs, Math.floor(this.ttlMs / 3))),
      })
      const body = (await answer.json().catch(() => null)) as { cluster?: { node_id?: unknown } } | null
      const nodeId = body?.cluster?.node_id
      return typeof nodeId === 'string' && nodeId !== id
    } catch (error) {
      return (error as { cause?: { code?: unknown } }).cause?.code === 'ECONNREFUSED'
    }
  }

  /** Registers this node, then reads the nodes and the homes of their regions. */
  async #refresh(): Promise<void> {
    if (this.#stopped) return
    try {
      await this.redis
        .multi()
        .set(`pricing:node:${this.self.id}`, JSON.stringify(this.self), 'PX', this.ttlMs)
        .sadd('pricing:nodes', this.self.id)
        .exec()
      const ids = await this.redis.smembers('pricing:nodes')
      const texts = ids.length === 0 ? [] : await this.redis.mget(...ids.map((id) => `pricing:node:${id}`))
      this.#nodes.clear()
      const gone: string[] = []
      const seenMs = this.now()
      ids.forEach((id, index) => {
        const text = texts[index]
        if (text === null || text === undefined) gone.push(id)
        else {
          const info = JSON.parse(text) as NodeInfo
          this.#nodes.set(id, info)
          this.#lastSeen.set(id, { info, seenMs })
        }
      })
      // Addresses of nodes gone for long are of no more use (ids change with each start by default).
      for (const [id, seen] of this.#lastSeen) if (seenMs - seen.seenMs > this.ttlMs * 10) this.#lastSeen.delete(id)
      if (gone.length > 0) await this.redis.srem('pricing:nodes', ...gone)
      const regions = [...new Set([...this.self.regions, ...[...this.#nodes.values()].flatMap((node) => node.regions)])]
      const holders = await this.redis.mget(...regions.map((region) => `pricing:lease:home:${region}`))
      this.#homes.clear()
      regions.forEach((region, index) => {
        const holder = holders[index]
        if (holder !== null && holder !== undefined) this.#homes.set(region, holder)
      })
      if (!this.redisUp) {
        this.redisUp = true
        // Redis is back: a home kept through the outage asks for its lease again at once.
        for (const lease of this.#leases.values()) lease.poke()
      }
      // A home kept through the outage whose lease went to another node meanwhile steps down.
      for (const region of this.#homeWhileAway) {
        const holder = this.#homes.get(region)
        if (holder !== undefined && holder !== this.self.id) {
          this.#homeWhileAway.delete(region)
          this.events.homeLost(region)
        }
      }
    } catch {
      this.redisUp = false
    } finally {
      if (!this.#stopped) {
        this.#timer = setTimeout(() => void this.#refresh(), Math.max(50, Math.floor(this.ttlMs / 3)))
        this.#timer.unref()
      }
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true
    if (this.#timer !== null) clearTimeout(this.#timer)
    // A graceful stop hands the regions over at once: everything written here was published.
    const homes = this.self.regions.filter((region) => this.isHome(region))
    for (const lease of this.#leases.values()) await lease.stop(true)
    const multi = this.redis.multi().del(`pricing:node:${this.self.id}`).srem('pricing:nodes', this.self.id)
    for (const region of homes) multi.del(`pricing:home:${region}:last`)
    await multi.exec().catch(() => undefined)
  }
}
