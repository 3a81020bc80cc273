/**
 * Where a tenant request is served, when several nodes serve one deployment (issue 10). A single
 * node has no placement: everything is served here. In a cluster (cluster/placement.ts) a
 * tenant's region has one home node, its writer; other nodes of the region serve reads from a
 * replica (cluster/replication.ts) and send writes to the home node; a region that no node serves
 * is refused. The server sees only this interface.
 * @module
 */
import { ApiError } from '../platform/errors.js'
import type { TenantRuntime } from './runtime.js'

export type Placed =
  /** Serve here. */
  | { readonly kind: 'here' }
  /** Another node serves it: the request is forwarded there (http/forward.ts). */
  | { readonly kind: 'elsewhere'; readonly nodeUrl: string; readonly nodeId: string }
  /** Nobody can serve it now: 503 with Retry-After. */
  | { readonly kind: 'unavailable'; readonly message: string; readonly retryAfterS: number }

export interface TenantPlacement {
  /** This node's id (forwarded requests name it). */
  readonly nodeId: string
  /**
   * Where a request for `tenant` is served: `write` for the ingest dimension, `minSequence` the
   * changelog sequence the caller has seen (`X-Min-Sequence`), null when not given.
   */
  place(tenant: TenantRuntime, write: boolean, minSequence: number | null): Placed
  /**
   * Headers of every answer for the tenant from this node: `X-Sequence` (the tenant's changelog
   * sequence here, after the request: what a caller passes as `X-Min-Sequence` to later reads) and,
   * on a replica, `X-Replica-Lag` (sequences the home has published that it has not applied).
   */
  answerHeaders(tenant: TenantRuntime): Record<string, string>
}

export const servedHere: Placed = { kind: 'here' }

/** The `X-Min-Sequence` header: a changelog sequence, or null when absent or not a whole number. */
export function minSequenceOf(header: string): number | null {
  if (header === '' || !/^\d{1,15}$/.test(header)) return null
  return Number(header)
}

/**
 * The answer when nobody here can serve the request: 503 with Retry-After. A request already
 * forwarded once that this node would forward again gets it too (the nodes' views of the homes
 * disagree for a moment).
 */
export function placedError(placed: Exclude<Placed, { kind: 'here' }>): ApiError {
  if (placed.kind === 'unavailable') {
    return new ApiError('region_unavailable', placed.message, { retry_after: placed.retryAfterS }, placed.retryAfterS)
  }
  return new ApiError(
    'region_unavailable',
    `Forwarded to node ${placed.nodeId}'s region home, which is not this node; retry`,
    { retry_after: 1 },
    1,
  )
}
