/**
 * Forwarding (cluster mode, issue 10): a tenant request that another node serves (a write on a
 * node that is not its region's home; a read with no ready replica here) is sent on to that node
 * and its answer passed back, so that clients talk to any node behind one address. A redirect
 * would not do: HTTP clients drop the Authorization header when they follow a redirect to another
 * origin. A forwarded request carries `X-Pricing-Forwarded`; a node that gets one it would forward
 * again answers 503 instead (two nodes whose views of the homes disagree for a moment).
 * @module
 */
import type { Reply } from './contracts.js'
import { ApiError } from '../platform/errors.js'
import type { Incoming } from './adapter.js'

/** The request headers that travel with a forwarded request. */
const requestHeaders = ['authorization', 'content-type', 'if-none-match', 'x-min-sequence', 'cookie', 'origin'] as const
/** The answer headers passed back. */
const answerHeaders = [
  'content-type',
  'etag',
  'cache-control',
  'location',
  'retry-after',
  'x-sequence',
  'x-replica-lag',
  'x-price-engine',
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
] as const
/** How long a forwarded request may take before the caller gets a 503. */
const forwardTimeoutMs = 30_000

export interface ForwardTarget {
  readonly nodeUrl: string
  readonly nodeId: string
}

/** The incoming request's headers as forwarded (empty ones left out). */
export function forwardedHeaders(incoming: Incoming, from: string): Record<string, string> {
  const headers: Record<string, string> = { 'x-request-id': incoming.requestId, 'x-pricing-forwarded': from }
  const values: Record<(typeof requestHeaders)[number], string> = {
    authorization: incoming.authorization,
    'content-type': incoming.contentType,
    'if-none-match': incoming.ifNoneMatch,
    'x-min-sequence': incoming.minSequence ?? '',
    // The console's session and its cross-site check travel too: its forms post to any node.
    cookie: incoming.cookie,
    origin: incoming.origin,
  }
  for (const name of requestHeaders) if (values[name] !== '') headers[name] = values[name]
  return headers
}

/** Sends the request to `target` and answers its answer (503 when it cannot be reached). */
export async function forward(target: ForwardTarget, incoming: Incoming, from: string): Promise<Reply> {
  const url = `${target.nodeUrl}${incoming.path}${incoming.query === '' ? '' : `?${incoming.query}`}`
  let response: Response
  try {
    response = await fetch(url, {
      method: incoming.method,
      headers: forwardedHeaders(incoming, from),
      body:
        incoming.body === null || incoming.method === 'GET' || incoming.method === 'HEAD'
          ? undefined
          : new Uint8Array(incoming.body),
      redirect: 'manual',
      signal: AbortSignal.timeout(forwardTimeoutMs),
    })
  } catch (error) {
    throw new ApiError(
      'region_unavailable',
      `Node ${target.nodeId}, which serves this request, cannot be reached (${(error as Error).message})`,
      { retry_after: 1 },
      1,
    )
  }
  const headers: Record<string, string> = { 'x-pricing-node': target.nodeId }
  for (const name of answerHeaders) {
    const value = response.headers.get(name)
    if (value !== null) headers[name] = value
  }
  const body = Buffer.from(await response.arrayBuffer())
  headers['content-type'] ??= 'application/octet-stream'
  return {
    status: response.status,
    headers,
    body: body.length === 0 && response.status === 204 ? undefined : body,
    forwarded: true,
  }
}
