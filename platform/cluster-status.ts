/**
 * The cluster's state as /readyz and /metrics show it (issue 10): whether Redis answers, what this
 * node has not been able to share yet, which regions it writes, and how far behind its replicas
 * are. A node on its own has none. Filled by cluster/node.ts.
 * @module
 */

export interface ClusterStatus {
  readonly nodeId: string
  readonly redisUp: boolean
  /** The shared directory has been compared with Redis since the last (re)connection. */
  readonly directorySynced: boolean
  /** This node's directory changes not yet in Redis. */
  readonly directoryUnpublished: number
  /** This node's commits (as a home) not yet in Redis for the replicas. */
  readonly queuedCommits: number
  /** Regions this node is the home (writer) of. */
  readonly homeRegions: readonly string[]
  /** Replicas here: sequences behind the home as last seen, the last commit's publish-to-apply time, stopped or not. */
  readonly replicas: readonly {
    readonly tenant: string
    readonly sequences: number
    readonly ms: number
    readonly broken: boolean
  }[]
  /** Publish-to-apply time of the commits the replicas here applied in the last minute (ms; null: none). */
  readonly applyLag: {
    readonly count: number
    readonly p50Ms: number | null
    readonly p99Ms: number | null
    readonly maxMs: number | null
  }
}

/** Why a node is degraded (empty: it is not): Redis away, changes not shared, a stopped replica. */
export function degradedReasons(status: ClusterStatus): string[] {
  const reasons: string[] = []
  if (!status.redisUp)
    reasons.push("Redis unreachable: serving reads, and writes of this node's own regions, with local limits")
  else if (!status.directorySynced) reasons.push('the shared directory is being compared with Redis')
  if (status.directoryUnpublished > 0) reasons.push(`${status.directoryUnpublished} directory changes not yet shared`)
  if (status.queuedCommits > 0) reasons.push(`${status.queuedCommits} commits not yet published to the replicas`)
  for (const replica of status.replicas)
    if (replica.broken) reasons.push(`the replica of ${replica.tenant} stopped; its reads go to the home`)
  return reasons
}
