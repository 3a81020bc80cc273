/**
 * Bundle pricing rules, keyed by bundle SKU and pricelist: get (own rule, else the nearest
 * ancestor's), set, remove (the bundle falls back to the parent's rule, or to no rule).
 * Setting or removing a rule changes the answers on that pricelist and its descendants at once:
 * bundles are resolved at read time from the rules and component prices in force. A rule's checks
 * are the write layer's (tenant/writes/bundles.ts).
 * @module
 */
import { Type, type TSchema } from '@sinclair/typebox'
import { compositeKey } from '../../engine/catalog.js'
import { pricelistDepthMax } from '../../engine/limits.js'
import { formatInstant } from '../../engine/time.js'
import { route, type TenantRoute } from '../contracts.js'
import { notFound } from '../../platform/errors.js'
import { AsOfQuery, Code, Quantity, WhenQuery } from '../schemas.js'
import { deleteBundleRules, writeBundleRules } from '../../tenant/writes/bundles.js'
import { accepted, acceptedOrThrow, readInstant } from './common.js'
import { validate } from '../validate.js'

const Amount = Type.Union([Type.Number(), Type.String({ maxLength: 40 })])
export const BundleRuleWrite = Type.Object(
  {
    method: Type.Union([Type.Literal('SUM_OF_PARTS'), Type.Literal('FIXED')]),
    discount_type: Type.Optional(Type.Union([Type.Literal('PERCENTAGE'), Type.Literal('ABSOLUTE'), Type.Null()])),
    discount_value: Type.Optional(Type.Union([Amount, Type.Null()])),
    fixed_price: Type.Optional(Type.Union([Amount, Type.Null()])),
    components: Type.Optional(
      Type.Array(Type.Object({ sku: Code, quantity: Quantity(1e6) }, { additionalProperties: false }), {
        maxItems: 100,
      }),
    ),
    updated_at: Type.Optional(Type.Unknown()),
    updated_by: Type.Optional(Type.Unknown()),
    bundle_sku: Type.Optional(Type.Unknown()),
    pricelist: Type.Optional(Type.Unknown()),
    inherited: Type.Optional(Type.Unknown()),
    source_pricelist: Type.Optional(Type.Unknown()),
  },
  { additionalProperties: false },
)
type BundleRuleBody = typeof BundleRuleWrite.static
const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])
const BundleRuleAnswer = Type.Object({
  bundle_sku: Type.String(),
  pricelist: Type.String(),
  method: Type.Union([Type.Literal('SUM_OF_PARTS'), Type.Literal('FIXED')]),
  discount_type: Nullable(Type.Union([Type.Literal('PERCENTAGE'), Type.Literal('ABSOLUTE')])),
  discount_value: Nullable(Type.Number()),
  fixed_price: Nullable(Type.Number()),
  components: Type.Array(Type.Object({ sku: Type.String(), quantity: Type.Number() })),
  inherited: Type.Boolean(),
  source_pricelist: Type.String({ description: 'the pricelist whose own rule this is' }),
  updated_at: Type.String({ format: 'date-time' }),
  updated_by: Type.String(),
})

export function bundleRoutes(): TenantRoute[] {
  return [
    route<undefined, typeof ReadQuery.static>({
      method: 'GET',
      path: '/bundle/:bundleSku/:pricelistCode',
      operationId: 'getBundleRule',
      summary: "The bundle rule in force: the pricelist's own, else the nearest ancestor's",
      tag: 'bundles',
      query: ReadQuery,
      response: BundleRuleAnswer,
      dimension: 'query',
      handler: (context) => {
        const sku = context.params['bundleSku']!
        const code = context.params['pricelistCode']!
        const at = readInstant(context)
        let current: string | null = code
        for (let depth = 0; current !== null && depth <= pricelistDepthMax; depth++) {
          const view = context.tenant.catalog.view('bundle_rule', compositeKey(sku, current), at)
          if (view !== null) {
            const rule = view.value
            return {
              status: 200,
              body: {
                bundle_sku: sku,
                pricelist: code,
                method: rule.method,
                discount_type: rule.discount_type,
                discount_value: rule.discount_value === null ? null : Number(rule.discount_value),
                fixed_price: rule.fixed_price === null ? null : Number(rule.fixed_price),
                components: rule.components,
                inherited: current !== code,
                source_pricelist: current,
                updated_at: formatInstant(view.version.writtenAt),
                updated_by: view.version.writtenBy,
              },
            }
          }
          current = context.tenant.catalog.get('pricelist', current, at)?.parent_code ?? null
        }
        throw notFound(`Bundle rule for ${sku} on ${code}`)
      },
    }),
    route<BundleRuleBody>({
      method: 'PUT',
      path: '/bundle/:bundleSku/:pricelistCode',
      operationId: 'putBundleRule',
      summary: 'Set the bundle rule of a SKU on a pricelist (SUM_OF_PARTS with discount, or FIXED)',
      tag: 'bundles',
      body: BundleRuleWrite,
      responseStatus: 202,
      dimension: 'ingest',
      handler: async (context) => {
        const sku = validate<string>(Code, context.params['bundleSku']!, '/bundleSku')
        const input = { sku, pricelist: context.params['pricelistCode']!, rule: context.body }
        acceptedOrThrow(await writeBundleRules(context.tenant, context, [input]))
        return accepted
      },
    }),
    route<undefined, typeof WhenQuery.static>({
      method: 'DELETE',
      path: '/bundle/:bundleSku/:pricelistCode',
      operationId: 'deleteBundleRule',
      summary: "Remove a pricelist's own bundle rule (the parent's rule applies again, if any)",
      tag: 'bundles',
      query: WhenQuery,
      responseStatus: 202,
      dimension: 'ingest',
      handler: async (context) => {
        const key = compositeKey(context.params['bundleSku']!, context.params['pricelistCode']!)
        acceptedOrThrow(await deleteBundleRules(context.tenant, context, [{ key, when: context.query.when }]))
        return accepted
      },
    }),
  ]
}

const ReadQuery = Type.Object({ ...AsOfQuery }, { additionalProperties: false })
