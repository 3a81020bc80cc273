/**
 * Shared TypeBox schemas: the building blocks of request and response schemas. They validate
 * requests and generate /openapi.json.
 * @module
 */
import { Type, type TSchema, type TString } from '@sinclair/typebox'
import {
  codeLengthMax,
  metadataKeysMax,
  metadataValueLengthMax,
  metadataValuesMax,
  pageSizeMax,
  textLengthMax,
} from '../engine/limits.js'

/**
 * Business codes: 1-64 characters, no control or format characters. The pattern refuses C0 and DEL
 * (any JSON Schema validator can check it); the `code` format (./validate.ts) refuses every Unicode
 * control (Cc: C1 too), format character (Cf: U+200B, U+202E, U+FEFF, ...) and lone surrogate.
 * Codes are opaque: compared code point by code point, never normalised (docs/api.md).
 */
export const Code = Type.String({
  minLength: 1,
  maxLength: codeLengthMax,
  pattern: '^[^\\u0000-\\u001f\\u007f]+$',
  format: 'code',
  description:
    'business code, 1-64 characters; no control characters (Unicode Cc), format characters (Cf) or lone surrogates',
})
export const CurrencyCode = Type.String({ pattern: '^[A-Z]{3}$', description: 'ISO 4217 code' })
export const Text = Type.String({ maxLength: textLengthMax })
export const NullableText = Type.Union([Text, Type.Null()])
export const DateTime = Type.String({
  format: 'date-time',
  description: 'RFC 3339 instant with offset, or a bare date (midnight UTC)',
})
export const NullableDateTime = Type.Union([DateTime, Type.Null()])
/**
 * The keys of a map field (metadata, a price's fields): 1 to `lengthMax` characters, never
 * `__proto__`. A Record's key schema loses its length bounds in TypeBox (it becomes '^(.*)$'), so
 * the bounds are the key pattern, and `additionalProperties: false` refuses a key that does not
 * match it. `__proto__` is no plain key of a JavaScript object: it came back as `__proto_` after a
 * restart (msgpackr), or vanished (an assignment sets the prototype).
 */
export function mapKeys(lengthMax: number): TString {
  return Type.String({ pattern: `^(?!__proto__$)[\\s\\S]{1,${lengthMax}}$` })
}
export const Metadata = Type.Record(
  mapKeys(codeLengthMax),
  Type.Array(Type.String({ maxLength: metadataValueLengthMax }), { maxItems: metadataValuesMax }),
  {
    maxProperties: metadataKeysMax,
    additionalProperties: false,
    description: `key (1-${codeLengthMax} characters, not __proto__) to list of values`,
  },
)
/**
 * A quantity: a positive decimal number, or its text (a literal of more than 15 significant digits
 * arrives as text: http/json-body.ts). Read exactly, half-up to 4 decimals, by `quantityValue`.
 */
export function Quantity(maximum = Number.POSITIVE_INFINITY) {
  const bound = Number.isFinite(maximum) ? { maximum } : {}
  return Type.Union(
    [
      Type.Number({ exclusiveMinimum: 0, ...bound }),
      Type.String({ pattern: '^\\s*\\+?(\\d+(\\.\\d*)?|\\.\\d+)([eE][+-]?\\d+)?\\s*$', maxLength: 40 }),
    ],
    {
      description: `positive decimal number${Number.isFinite(maximum) ? ` (at most ${maximum})` : ''}, or its text; read half-up to 4 decimals`,
    },
  )
}
export const VatMode = Type.Union([Type.Literal('NET'), Type.Literal('GROSS')])

export const AsOfQuery = {
  asOf: Type.Optional(DateTime),
  as_of: Type.Optional(DateTime),
}
export const IncludeDeletedQuery = { include_deleted: Type.Optional(Type.Boolean()) }
export const PageQuery = {
  page: Type.Optional(Type.Integer({ minimum: 1 })),
  size: Type.Optional(Type.Integer({ minimum: 1, maximum: pageSizeMax })),
}
export const WhenQuery = Type.Object({ when: Type.Optional(DateTime) }, { additionalProperties: false })

export function Page<T extends TSchema>(item: T) {
  return Type.Object({
    items: Type.Array(item),
    page: Type.Integer(),
    size: Type.Integer(),
    total: Type.Integer(),
  })
}

export const BatchResult = Type.Object({
  accepted: Type.Integer(),
  failed: Type.Array(Type.Object({ message: Type.String() }, { additionalProperties: true })),
})

/** Response-only fields a client may send back unchanged (GET, edit, PUT): accepted and ignored. */
export const readOnlyFields = {
  updated_at: Type.Optional(Type.Unknown()),
  updated_by: Type.Optional(Type.Unknown()),
  deleted_at: Type.Optional(Type.Unknown()),
}

export const ErrorBody = Type.Object({
  timestamp: Type.String(),
  status: Type.Integer(),
  error: Type.String(),
  message: Type.String(),
  code: Type.String(),
  request_id: Type.String({ description: "the request's id, as in the x-request-id response header" }),
  details: Type.Optional(Type.Array(Type.Object({ path: Type.String(), message: Type.String() }))),
  // Fields some codes add (docs/errors.md).
  max_items_per_request: Type.Optional(
    Type.Integer({ description: '413 too_many_items: the most items one request may cost' }),
  ),
  retry_after: Type.Optional(
    Type.Integer({ description: '429 rate_limited: seconds to wait (as the Retry-After header)' }),
  ),
  oldest_available_sequence: Type.Optional(
    Type.Integer({ description: '410 cursor_expired: the oldest changelog entry held' }),
  ),
  reason: Type.Optional(Type.String({ description: '404 of a price read: why there is no price' })),
  setting: Type.Optional(Type.String({ description: '403 plan_forbidden: the setting refused' })),
  feature: Type.Optional(Type.String({ description: '403 plan_forbidden: the plan feature it needs' })),
  write: Type.Optional(
    Type.String({ description: 'POST /price/simulate: the JSON pointer of the refused write in the body' }),
  ),
})
