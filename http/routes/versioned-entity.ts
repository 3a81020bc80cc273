/**
 * The routes of a versioned catalogue entity, from one description: a one-item write (PUT at a code
 * or POST of a body that carries its keys), an optional bulk write, a read of one as of an instant, a
 * list as of an instant and a soft delete. The reference entities (http/routes/reference.ts) are
 * each one description; what differs between them (how a request names its key, which list entries
 * to keep, what a write checks before the write layer) is a function in it, and every other line of
 * the skeleton (reading the instant, the 404, rendering, the 202, the batch's answer) is written once
 * here.
 * Non-goals: prices, articles and pricelists keep their own routes (paging, families, price
 * resolution do not fit this skeleton).
 * @module
 */
import { Type, type TObject, type TSchema } from '@sinclair/typebox'
import type { CatalogType, EntityValues } from '../../engine/catalog.js'
import { batchItemsMax } from '../../engine/limits.js'
import type { View } from '../../engine/temporal.js'
import type { TenantRuntime } from '../../tenant/runtime.js'
import { deleteKeys } from '../../tenant/writes/catalog.js'
import type { ItemOutcome, Refusal, WriteContext } from '../../tenant/writes/core.js'
import { arrayCost, route, type TenantContext, type TenantRoute } from '../contracts.js'
import { BatchResult, WhenQuery } from '../schemas.js'
import { accepted, acceptedOrThrow, batchAnswer, checkedItems, readInstant, requireView } from './common.js'

/** Where a read or a delete points: the catalogue key, and the words a 404 names it by. */
export interface Address {
  readonly key: string
  readonly label: string
}

/** A route's documentation: its OpenAPI operationId and summary. */
interface Documented {
  readonly path: string
  readonly operationId: string
  readonly summary: string
}

/** The write layer's use case for this entity: items in, one outcome per item out. */
export type WriteUseCase<Input> = (
  tenant: TenantRuntime,
  context: WriteContext,
  items: readonly (Input | Refusal)[],
) => Promise<ItemOutcome[]>

/** Query parameters every read accepts: the instant, and (when the query schema has it) include_deleted. */
type ReadParameters = { asOf?: string; as_of?: string; include_deleted?: boolean }

export interface VersionedEntity<K extends CatalogType, Input, Body = Input> {
  readonly type: K
  readonly tag: string
  /** The schema of one rendered entry (the read's answer, the list's element). */
  readonly response: TSchema
  readonly render: (key: string, view: View<EntityValues[K]>) => Record<string, unknown>
  readonly write: Documented & {
    readonly method: 'PUT' | 'POST'
    readonly body: TSchema
    /** The use case's one input from the request (it may throw the edge's own checks on the path). */
    readonly input: (context: TenantContext<Body>) => Input
    readonly useCase: WriteUseCase<Input>
  }
  /** A bulk write: not atomic, each item checked against `write.body`, refused ones named by `keysOf`. */
  readonly batch?: Documented & { readonly keysOf: (item: unknown) => Record<string, unknown> }
  readonly read: Documented & {
    readonly query: TObject
    readonly address: (context: TenantContext<undefined, ReadParameters & Record<string, unknown>>) => Address
  }
  readonly list: Documented & {
    readonly query: TObject
    /** Which entries in force the list shows (default every one), sorted as the catalogue keys sort. */
    readonly keep?: (
      key: string,
      view: View<EntityValues[K]>,
      context: TenantContext<undefined, ReadParameters & Record<string, unknown>>,
    ) => boolean
  }
  /** A soft delete at `when` (default now); absent for an entity that is never deleted (currencies). */
  readonly remove?: Documented & { readonly address: (params: Record<string, string>) => Address }
}

const BatchBody = Type.Array(Type.Unknown(), { minItems: 1, maxItems: batchItemsMax })

/** Every route of `entity`, in the order write, bulk write, read, list, delete. */
export function versionedEntityRoutes<K extends CatalogType, Input, Body>(
  entity: VersionedEntity<K, Input, Body>,
): TenantRoute[] {
  const routes = [writeRoute(entity)]
  if (entity.batch !== undefined) routes.push(batchRoute(entity, entity.batch))
  routes.push(readRoute(entity), listRoute(entity))
  if (entity.remove !== undefined) routes.push(removeRoute(entity, entity.remove))
  return routes
}

function writeRoute<K extends CatalogType, Input, Body>(entity: VersionedEntity<K, Input, Body>): TenantRoute {
  const { write } = entity
  return route<Body>({
    method: write.method,
    path: write.path,
    operationId: write.operationId,
    summary: write.summary,
    tag: entity.tag,
    body: write.body,
    responseStatus: 202,
    dimension: 'ingest',
    handler: async (context) => {
      acceptedOrThrow(await write.useCase(context.tenant, context, [write.input(context)]))
      return accepted
    },
  })
}

function batchRoute<K extends CatalogType, Input, Body>(
  entity: VersionedEntity<K, Input, Body>,
  batch: NonNullable<VersionedEntity<K, Input, Body>['batch']>,
): TenantRoute {
  const schema = entity.write.body
  return route<unknown[]>({
    method: 'POST',
    path: batch.path,
    operationId: batch.operationId,
    summary: batch.summary,
    tag: entity.tag,
    body: BatchBody,
    response: BatchResult,
    responseStatus: 202,
    dimension: 'ingest',
    cost: arrayCost,
    handler: async (context) => {
      const items = context.body
      const inputs = checkedItems<Input>(schema, items)
      // Later items for the same key plan against earlier ones (the write layer's batch routine).
      const outcomes = await entity.write.useCase(context.tenant, context, inputs)
      return { status: 202, body: batchAnswer(outcomes, (index) => batch.keysOf(items[index])) }
    },
  })
}

function readRoute<K extends CatalogType, Input, Body>(entity: VersionedEntity<K, Input, Body>): TenantRoute {
  const { read, type } = entity
  return route<undefined, ReadParameters & Record<string, unknown>>({
    method: 'GET',
    path: read.path,
    operationId: read.operationId,
    summary: read.summary,
    tag: entity.tag,
    query: read.query,
    response: entity.response,
    dimension: 'query',
    handler: (context) => {
      const { key, label } = read.address(context)
      const view = context.tenant.catalog.view(type, key, readInstant(context), context.query.include_deleted)
      return { status: 200, body: entity.render(key, requireView(view, label)) }
    },
  })
}

function listRoute<K extends CatalogType, Input, Body>(entity: VersionedEntity<K, Input, Body>): TenantRoute {
  const { list, type } = entity
  return route<undefined, ReadParameters & Record<string, unknown>>({
    method: 'GET',
    path: list.path,
    operationId: list.operationId,
    summary: list.summary,
    tag: entity.tag,
    query: list.query,
    response: Type.Array(entity.response),
    dimension: 'query',
    handler: (context) => {
      const answer: Record<string, unknown>[] = []
      const views = context.tenant.catalog.viewsAt(type, readInstant(context), context.query.include_deleted)
      for (const [key, view] of views) {
        if (list.keep === undefined || list.keep(key, view, context)) answer.push(entity.render(key, view))
      }
      return { status: 200, body: answer }
    },
  })
}

function removeRoute<K extends CatalogType, Input, Body>(
  entity: VersionedEntity<K, Input, Body>,
  remove: NonNullable<VersionedEntity<K, Input, Body>['remove']>,
): TenantRoute {
  return route<undefined, typeof WhenQuery.static>({
    method: 'DELETE',
    path: remove.path,
    operationId: remove.operationId,
    summary: remove.summary,
    tag: entity.tag,
    query: WhenQuery,
    responseStatus: 202,
    dimension: 'ingest',
    handler: async (context) => {
      const { key, label } = remove.address(context.params)
      const items = [{ key, when: context.query.when }]
      acceptedOrThrow(await deleteKeys(context.tenant, context, { type: entity.type, what: () => label, items }))
      return accepted
    },
  })
}
