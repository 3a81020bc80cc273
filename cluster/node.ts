/**
 * This node in a cluster (issue 10), on when `PRICING_REDIS_URL` is set: its Redis connection, and
 * the leases it competes for (for now the FX fetcher, cluster/fx.ts). Without it nothing changes.
 * @module
 */
import os from 'node:os'
import type { Config } from '../server/config.js'
import type { FxFeedCluster } from '../server/fx-feed.js'
import type { Logger } from 'pino'
import { RedisFxFeed } from './fx.js'
import { LeaseKeeper } from './lease.js'
import { connectRedis } from './redis.js'

export interface ClusterNode {
  readonly nodeId: string
  readonly fx: FxFeedCluster
  stop(): Promise<void>
}

export function joinCluster(config: Pick<Config, 'redisUrl' | 'nodeId' | 'leaseTtlMs'>, logger: Logger): ClusterNode {
  const nodeId = config.nodeId !== '' ? config.nodeId : `${os.hostname()}-${process.pid}`
  const redis = connectRedis(config.redisUrl, (up) => {
    if (up) logger.info({ nodeId }, 'cluster: Redis reachable')
    else logger.warn({ nodeId }, 'cluster: Redis unreachable')
  })
  const fetcher = new LeaseKeeper(redis, { name: 'fx-fetcher', owner: nodeId, ttlMs: config.leaseTtlMs }, {
    acquired: (token) => logger.info({ nodeId, token }, 'cluster: this node fetches the FX feed'),
    lost: (reason) => logger.warn({ nodeId, reason }, 'cluster: this node no longer fetches the FX feed'),
  })
  fetcher.start()
  return {
    nodeId,
    fx: new RedisFxFeed(redis, fetcher, Math.max(50, Math.floor(config.leaseTtlMs / 2))),
    async stop() {
      await fetcher.stop(true)
      redis.disconnect()
    },
  }
}
