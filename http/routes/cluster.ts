/**
 * Routes between the nodes of a cluster (issue 10; docs/cluster.md), not part of the public API
 * and not in the OpenAPI document: a region's home hands a tenant's snapshot (an LMDB backup copy)
 * to a new replica, which then follows the tenant's log from the copy's sequence
 * (cluster/bootstrap.ts). Callers prove they are nodes with the cluster's secret, which the nodes
 * share through Redis; a node on its own answers 404.
 * @module
 */
import type { RootRoute } from '../contracts.js'
import { timingSafeEqual } from 'node:crypto'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { ApiError } from '../../platform/errors.js'

function sameSecret(authorization: string, secret: string): boolean {
  const given = Buffer.from(authorization)
  const expected = Buffer.from(`Bearer ${secret}`)
  return given.length === expected.length && timingSafeEqual(given, expected)
}

export function clusterRoutes(): RootRoute[] {
  return [
    {
      method: 'GET',
      path: '/cluster/tenants/:slug/snapshot',
      operationId: 'getClusterSnapshot',
      summary: "A tenant's data as a new replica starts from it (between nodes; cluster secret)",
      tag: 'system',
      internal: true,
      responseType: 'application/octet-stream',
      handler: async ({ deps, params, incoming }) => {
        const secret = deps.clusterSecret?.() ?? null
        if (secret === null) throw new ApiError('route_not_found', `No route for GET ${incoming.path}`)
        if (!sameSecret(incoming.authorization, secret))
          throw new ApiError('unauthorized', 'The cluster secret is required')
        const tenant = deps.tenants.get(params['slug']!)
        if (tenant === undefined) throw new ApiError('tenant_not_found', `Tenant ${params['slug']} not found`)
        if (tenant.role !== 'home')
          throw new ApiError(
            'region_unavailable',
            `This node is not the home of region ${tenant.record.region}`,
            { retry_after: 1 },
            1,
          )
        const directory = await mkdtemp(path.join(tmpdir(), `pricing-snapshot-${tenant.slug}-`))
        try {
          await tenant.store.backup(directory)
          const bytes = await readFile(path.join(directory, 'data.mdb'))
          return {
            status: 200,
            headers: { 'content-type': 'application/octet-stream', 'cache-control': 'no-store' },
            body: bytes,
          }
        } finally {
          await rm(directory, { recursive: true, force: true })
        }
      },
    },
  ]
}
