/**
 * Webhook registration (SPEC.md "Webhooks"; decisions in docs/api.md "Webhooks"): create, list,
 * read, update, deactivate, and a synthetic test delivery. Delivery itself is tenant/webhooks/webhooks.ts.
 * @module
 */
import { Type } from '@sinclair/typebox'
import { entityTypes } from '../../engine/catalog.js'
import { formatInstant } from '../../engine/time.js'
import { route, type TenantContext, type TenantRoute } from '../contracts.js'
import { ApiError, notFound, validationError } from '../../platform/errors.js'
import type { TenantRuntime } from '../../tenant/runtime.js'
import { webhookAddressProblem, webhookUrlProblem } from '../../tenant/webhooks/url-guard.js'
import { webhooksPerTenantMax, type Webhook, type WebhookInput } from '../../tenant/webhooks/model.js'
import type { TenantWebhooks } from '../../tenant/webhooks/registry.js'
import { readOnlyFields } from '../schemas.js'
import { assert } from '../../engine/assert.js'

const urlLengthMax = 2_048
const secretLengthMax = 256
const idText = /^[1-9][0-9]{0,9}$/

// Literals, not `enum` on a string: TypeBox's compiled checker does not enforce `enum` there.
const EntityTypeFilter = Type.Union([...entityTypes.map((type) => Type.Literal(type)), Type.Null()], {
  description: 'only events of this entity type; null for all',
})
const writableFields = {
  url: Type.String({ minLength: 1, maxLength: urlLengthMax, description: 'https:// only' }),
  secret: Type.Union([Type.String({ minLength: 1, maxLength: secretLengthMax }), Type.Null()], {
    description: 'signs deliveries (X-Signature-256); never answered',
  }),
  entity_type_filter: EntityTypeFilter,
  effective_price_per_sku: Type.Boolean({
    description:
      'effective_price events of a change that moves a whole list: one per SKU (true) rather than one summary per list and tax area (false, the default)',
  }),
  active: Type.Boolean(),
}
/** Fields of an answer, accepted and ignored in a PUT so that a read, edited, can be written back. */
const answerOnlyFields = {
  id: Type.Optional(Type.Unknown()),
  has_secret: Type.Optional(Type.Unknown()),
  created_at: Type.Optional(Type.Unknown()),
  last_delivery: Type.Optional(Type.Unknown()),
  updated_at: readOnlyFields.updated_at,
}
const CreateBody = Type.Object(
  {
    url: writableFields.url,
    secret: Type.Optional(writableFields.secret),
    entity_type_filter: Type.Optional(writableFields.entity_type_filter),
    effective_price_per_sku: Type.Optional(writableFields.effective_price_per_sku),
    active: Type.Optional(writableFields.active),
  },
  { additionalProperties: false },
)
const UpdateBody = Type.Object(
  {
    url: Type.Optional(writableFields.url),
    secret: Type.Optional(writableFields.secret),
    entity_type_filter: Type.Optional(writableFields.entity_type_filter),
    effective_price_per_sku: Type.Optional(writableFields.effective_price_per_sku),
    active: Type.Optional(writableFields.active),
    ...answerOnlyFields,
  },
  { additionalProperties: false },
)
const WebhookAnswer = Type.Object({
  id: Type.Integer(),
  url: Type.String(),
  entity_type_filter: Type.Union([Type.String(), Type.Null()]),
  effective_price_per_sku: Type.Boolean(),
  active: Type.Boolean(),
  has_secret: Type.Boolean(),
  created_at: Type.String(),
  updated_at: Type.String(),
  last_delivery: Type.Union([
    Type.Object({
      at: Type.String(),
      status: Type.Union([Type.Integer(), Type.Null()]),
      error: Type.Union([Type.String(), Type.Null()]),
    }),
    Type.Null(),
  ]),
})

function answer(webhook: Webhook): Record<string, unknown> {
  const last = webhook.lastDelivery
  return {
    id: webhook.id,
    url: webhook.url,
    entity_type_filter: webhook.entityTypeFilter,
    effective_price_per_sku: webhook.effectivePricePerSku ?? false,
    active: webhook.active,
    has_secret: webhook.secret !== null,
    created_at: formatInstant(webhook.createdAt),
    updated_at: formatInstant(webhook.updatedAt),
    last_delivery: last === null ? null : { at: formatInstant(last.at), status: last.status, error: last.error },
  }
}

function service(tenant: TenantRuntime): TenantWebhooks {
  assert(tenant.webhooks !== null, 'webhooks need a WebhookEnvironment')
  return tenant.webhooks
}

function requirePlan(tenant: TenantRuntime): void {
  if (!tenant.limits.webhooks)
    throw new ApiError('plan_forbidden', 'Webhooks need a plan that includes webhooks', { feature: 'webhooks' })
}

/** The path's id: a positive integer (400), registered (404). */
function webhookOf(context: TenantContext<unknown, unknown>): Webhook {
  const text = context.params.id!
  if (!idText.test(text)) throw validationError([{ path: 'params/id', message: 'must be a positive integer' }])
  const webhook = service(context.tenant).get(Number(text))
  if (webhook === undefined) throw notFound(`Webhook ${text}`)
  return webhook
}

/** 400 for a URL that is not https or whose host is not public (unless allowed by configuration). */
async function checkUrl(tenant: TenantRuntime, url: string): Promise<void> {
  const problem = webhookUrlProblem(url)
  if (problem !== null) throw validationError([{ path: 'body/url', message: problem }])
  const refused = await webhookAddressProblem(url, service(tenant).env.settings.allowPrivate)
  if (refused !== null)
    throw new ApiError('webhook_url_forbidden', `Webhook URL refused: ${refused}`, {
      details: [{ path: 'body/url', message: refused }],
    })
}

function inputOf(body: Record<string, unknown>): WebhookInput {
  const input: { -readonly [K in keyof WebhookInput]: WebhookInput[K] } = {}
  if (body.url !== undefined) input.url = body.url as string
  if (body.secret !== undefined) input.secret = body.secret as string | null
  if (body.entity_type_filter !== undefined) input.entity_type_filter = body.entity_type_filter as string | null
  if (body.effective_price_per_sku !== undefined)
    input.effective_price_per_sku = body.effective_price_per_sku as boolean
  if (body.active !== undefined) input.active = body.active as boolean
  return input
}

export function webhookRoutes(): TenantRoute[] {
  return [
    route<typeof CreateBody.static>({
      method: 'POST',
      path: '/webhooks',
      operationId: 'createWebhook',
      errors: [422],
      summary: 'Register a webhook (HTTPS; receives the changes recorded from now on)',
      tag: 'webhooks',
      body: CreateBody,
      response: WebhookAnswer,
      responseStatus: 201,
      dimension: 'ingest',
      handler: async (context) => {
        requirePlan(context.tenant)
        const webhooks = service(context.tenant)
        await checkUrl(context.tenant, context.body.url)
        if (webhooks.count >= webhooksPerTenantMax) {
          throw new ApiError(
            'quota_exceeded',
            `A tenant may register ${webhooksPerTenantMax} webhooks; ${webhooks.count} exist (deactivated ones count: update one instead)`,
          )
        }
        const created = await webhooks.create(inputOf(context.body), context.nowMs)
        return { status: 201, body: answer(created) }
      },
    }),
    route({
      method: 'GET',
      path: '/webhooks',
      operationId: 'listWebhooks',
      summary: 'All webhooks, active or not, by id',
      tag: 'webhooks',
      response: Type.Array(WebhookAnswer),
      dimension: 'query',
      handler: (context) => ({ status: 200, body: service(context.tenant).list().map(answer) }),
    }),
    route({
      method: 'GET',
      path: '/webhooks/:id',
      operationId: 'getWebhook',
      errors: [400],
      summary: 'One webhook',
      tag: 'webhooks',
      response: WebhookAnswer,
      dimension: 'query',
      handler: (context) => ({ status: 200, body: answer(webhookOf(context)) }),
    }),
    route<typeof UpdateBody.static>({
      method: 'PUT',
      path: '/webhooks/:id',
      operationId: 'updateWebhook',
      summary:
        'Update a webhook: the given fields replace the stored ones (secret null removes it; active true reactivates)',
      tag: 'webhooks',
      body: UpdateBody,
      response: WebhookAnswer,
      dimension: 'ingest',
      handler: async (context) => {
        const webhook = webhookOf(context)
        const input = inputOf(context.body)
        if (Object.keys(input).length === 0) {
          throw validationError([
            {
              path: 'body',
              message: 'must give at least one of url, secret, entity_type_filter, effective_price_per_sku, active',
            },
          ])
        }
        if (input.active === true || input.url !== undefined) requirePlan(context.tenant)
        if (input.url !== undefined) await checkUrl(context.tenant, input.url)
        const updated = await service(context.tenant).update(webhook.id, input, context.nowMs)
        return { status: 200, body: answer(updated!) }
      },
    }),
    route({
      method: 'DELETE',
      path: '/webhooks/:id',
      operationId: 'deactivateWebhook',
      errors: [400],
      summary: 'Deactivate a webhook (it stays registered with active false)',
      tag: 'webhooks',
      response: WebhookAnswer,
      dimension: 'ingest',
      handler: async (context) => {
        const webhook = webhookOf(context)
        const updated = await service(context.tenant).update(webhook.id, { active: false }, context.nowMs)
        return { status: 200, body: answer(updated!) }
      },
    }),
    route({
      method: 'POST',
      path: '/webhooks/:id/test',
      operationId: 'testWebhook',
      errors: [400],
      summary: 'Send one synthetic event (entity_type test) to the webhook, once, asynchronously',
      tag: 'webhooks',
      responseStatus: 202,
      dimension: 'ingest',
      handler: (context) => {
        const webhook = webhookOf(context)
        requirePlan(context.tenant)
        service(context.tenant).test(webhook.id, context.actor, context.nowMs)
        return { status: 202 }
      },
    }),
  ]
}
