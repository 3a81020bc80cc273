/**
 * The cluster's Redis connection (issue 10; docs to come in docs/cluster.md): one ioredis client per
 * node from `PRICING_REDIS_URL`. Commands fail at once while Redis is unreachable (no offline
 * queue, one attempt), so a node never stalls on it: the callers keep their local behaviour and
 * retry. The client reconnects by itself (every 100 ms up to 1 s apart) and reports each change of
 * state once.
 * @module
 */
// First: ioredis must find the plain VerbatimString when it loads (./verbatim-string.ts says why).
import './ioredis-shim.js'
import { Redis } from 'ioredis'

export interface RedisStateListener {
  (up: boolean): void
}

export function connectRedis(url: string, onState: RedisStateListener = () => {}): Redis {
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    retryStrategy: (attempt) => Math.min(attempt * 100, 1_000),
  })
  let up = false
  redis.on('ready', () => {
    if (!up) onState((up = true))
  })
  redis.on('close', () => {
    if (up) onState((up = false))
  })
  // Connection errors are reported through the state; ioredis would otherwise print each one.
  redis.on('error', () => {})
  return redis
}
