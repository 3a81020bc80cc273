/**
 * GET /changelog: the tenant's append-only log read by opaque cursor (SPEC.md "Changelog",
 * "Events"); the cursor and the entry's rendering are tenant/changelog.ts's, which the webhook
 * dispatcher shares. Every page carries `next_cursor`: on the last page it is where to poll from next.
 * @module
 */
import { Type } from '@sinclair/typebox'
import { entityTypes, type EntityType } from '../../engine/catalog.js'
import { changelogLimitDefault, changelogLimitMax } from '../../engine/limits.js'
import { effectiveCauses } from '../../engine/effective-price/changes.js'
import { formatInstant } from '../../engine/time.js'
import { cursorLengthMax, decodeCursor, encodeCursor, renderEntries } from '../../tenant/changelog.js'
import { route, type Reply, type TenantRoute } from '../contracts.js'
import { validationError } from '../../platform/errors.js'

const limitText = /^[0-9]+$/

const ChangelogQuery = Type.Object(
  {
    cursor: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: cursorLengthMax,
        description: 'opaque; omit to start at the oldest held entry',
      }),
    ),
    entity_type: Type.Optional(
      Type.String({ enum: [...entityTypes], description: 'only entries of this entity type' }),
    ),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: changelogLimitMax, default: changelogLimitDefault })),
  },
  { additionalProperties: false },
)
export const ChangelogEntry = Type.Object({
  sequence: Type.Integer(),
  entity_type: Type.String(),
  change_type: Type.Union([Type.Literal('created'), Type.Literal('updated'), Type.Literal('deleted')]),
  entity_code: Type.String(),
  composite_key: Type.Union([Type.String(), Type.Null()]),
  changed_at: Type.String(),
  changed_by: Type.String(),
  content_hash: Type.String({ description: 'same hash means same content; empty for a delete' }),
  // An effective_price event's own fields (docs/api.md, "Effective-price events").
  tax_area: Type.Optional(Type.String()),
  currency_code: Type.Optional(Type.String()),
  old: Type.Optional(
    Type.Union([Type.Object({ net: Type.Number(), gross: Type.Number() }), Type.Null()], {
      description: 'effective_price: the amounts before effective_at (null: no price then)',
    }),
  ),
  new: Type.Optional(
    Type.Union([Type.Object({ net: Type.Number(), gross: Type.Number() }), Type.Null()], {
      description: 'effective_price: the amounts from effective_at (null: no price from then)',
    }),
  ),
  effective_at: Type.Optional(Type.String({ description: 'effective_price: the moment the price changed' })),
  cause: Type.Optional(Type.Union(effectiveCauses.map((cause) => Type.Literal(cause)))),
  summary: Type.Optional(
    Type.Boolean({ description: 'effective_price: one event for a whole list (a rule, parent, window or FX change)' }),
  ),
  count: Type.Optional(Type.Integer({ description: 'a summary: how many SKUs of the list changed' })),
  diff: Type.Optional(
    Type.Object(
      {
        from: Type.String(),
        to: Type.String(),
        tax_area: Type.String(),
        currency_code: Type.String(),
        pricelist_filter: Type.Object({ pricelists: Type.Array(Type.String()) }),
      },
      { description: 'a summary: the POST /price/diff body that pages its SKUs (add limit and cursor)' },
    ),
  ),
})
export const ChangelogPage = Type.Object({
  items: Type.Array(ChangelogEntry),
  next_cursor: Type.String(),
  has_more: Type.Boolean(),
})

/**
 * The query converter truncates integer text ('1.5' and '1e3' become 1); the spec wants an integer,
 * so the raw text must be plain digits before the schema's range check counts.
 */
function checkLimitText(rawQuery: string): void {
  const text = new URLSearchParams(rawQuery).get('limit')
  if (text !== null && !limitText.test(text)) {
    throw validationError([{ path: 'query/limit', message: `must be an integer from 1 to ${changelogLimitMax}` }])
  }
}

function entityTypeOf(text: string | undefined): EntityType | null {
  if (text === undefined) return null
  if (!(entityTypes as readonly string[]).includes(text)) {
    throw validationError([{ path: 'query/entity_type', message: `must be one of ${entityTypes.join(', ')}` }])
  }
  return text as EntityType
}

/** The spec's 410 body: `error` is `cursor_expired` itself, not the reason phrase. */
function cursorExpired(sequence: number, oldest: number, nowMs: number, requestId: string): Reply {
  return {
    status: 410,
    body: {
      timestamp: formatInstant(nowMs),
      status: 410,
      error: 'cursor_expired',
      code: 'cursor_expired',
      request_id: requestId,
      message: `The cursor names sequence ${sequence}, older than the oldest held entry ${oldest}; resynchronise, then poll without a cursor`,
      oldest_available_sequence: oldest,
    },
  }
}

export function changelogRoutes(): TenantRoute[] {
  return [
    route<undefined, typeof ChangelogQuery.static>({
      method: 'GET',
      path: '/changelog',
      operationId: 'getChangelog',
      errors: [410],
      summary: 'Changes in order, from an opaque cursor (410 cursor_expired when it is no longer held)',
      tag: 'changelog',
      query: ChangelogQuery,
      response: ChangelogPage,
      dimension: 'query',
      handler: (context) => {
        checkLimitText(context.incoming.query)
        const store = context.tenant.store
        const entityType = entityTypeOf(context.query.entity_type)
        const limit = context.query.limit ?? changelogLimitDefault
        const oldest = store.oldestSequence()
        const cursor = context.query.cursor
        const from = cursor === undefined ? oldest : decodeCursor(cursor)
        if (from < oldest) return cursorExpired(from, oldest, context.nowMs, context.incoming.requestId)
        if (from > store.sequence + 1) {
          throw validationError([
            { path: 'query/cursor', message: 'is ahead of this changelog; pass next_cursor back unchanged' },
          ])
        }
        // One more than asked tells whether another page follows without a count.
        const entries = store.readLog(from, limit + 1, entityType)
        const items = entries.slice(0, limit)
        // Never past the last entry read: a commit in flight may hold sequences not yet readable.
        const next = items.length === 0 ? from : items[items.length - 1]!.sequence + 1
        return {
          status: 200,
          body: { items: renderEntries(items), next_cursor: encodeCursor(next), has_more: entries.length > limit },
        }
      },
    }),
  ]
}
