/**
 * Nodes of a test cluster (issue 10): real server processes on one real Redis
 * (test/helpers/redis.ts), each named `node-<name>` with its regions, one public address for all
 * (tokens name it as their issuer) and a short lease so that takeovers happen within the test.
 */
import type { RedisServer } from './redis.js'
import { startServer, type TestServer } from './server.js'

export interface ClusterNodeSpec {
  readonly name: string
  readonly region: string
  readonly env?: Record<string, string>
}

export function clusterEnv(redis: RedisServer, spec: ClusterNodeSpec, leaseMs: number): Record<string, string> {
  return {
    PRICING_REDIS_URL: redis.url,
    PRICING_NODE_ID: `node-${spec.name}`,
    PRICING_REGION: spec.region,
    PRICING_LEASE_TTL_MS: String(leaseMs),
    PRICING_PUBLIC_URL: 'http://pricing.test',
    // No fetch of the ECB feed from the internet during the test.
    PRICING_FX_FETCH_DELAY_MS: '3600000',
    ...spec.env,
  }
}

/**
 * Starts the nodes one after another; each is ready (its tenants loaded) when this resolves. The
 * nodes in the map at the test's end (also any added later) are stopped then.
 */
export async function startCluster(
  t: { teardown(fn: () => unknown): void },
  redis: RedisServer,
  specs: readonly ClusterNodeSpec[],
  leaseMs: number,
): Promise<Map<string, TestServer>> {
  const nodes = new Map<string, TestServer>()
  t.teardown(async () => {
    for (const node of nodes.values()) await node.dispose()
  })
  for (const spec of specs) nodes.set(spec.name, await startServer({ env: clusterEnv(redis, spec, leaseMs) }))
  return nodes
}

/** The log line of a node that became the home of `region`. */
export function homeLine(region: string): RegExp {
  return new RegExp(`"region":"${region}"[^\\n]*"msg":"cluster: this node is the home of the region`)
}
