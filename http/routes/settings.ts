/**
 * Settings: the catalogue of definitions, time-dependent values (a value written for a later time
 * appears from then on), reads as of an instant, soft deletes, and the plan gate on settings that
 * turn on a feature the plan may lack. The rules of each key live in engine/settings.ts, the writes'
 * checks in the write layer (tenant/writes/settings.ts).
 * @module
 */
import { Type } from '@sinclair/typebox'
import type { Setting } from '../../engine/catalog.js'
import { settingDefinitions } from '../../engine/settings.js'
import { settingValueLengthMax } from '../../engine/limits.js'
import type { View } from '../../engine/temporal.js'
import { formatInstant } from '../../engine/time.js'
import { route, type TenantRoute } from '../contracts.js'
import { validationError } from '../../platform/errors.js'
import { AsOfQuery, DateTime, IncludeDeletedQuery, WhenQuery } from '../schemas.js'
import { deleteSettings, unknownSetting, writeSettings } from '../../tenant/writes/settings.js'
import { accepted, acceptedOrThrow, readInstant, refusalError, requireView } from './common.js'

export const SettingWrite = Type.Object(
  {
    value: Type.String({ maxLength: settingValueLengthMax, description: 'the value as text, checked per key' }),
    updated_at: Type.Optional(DateTime),
    // Response-only fields sent back by a GET-edit-PUT round trip: `key` must match, the rest is ignored.
    key: Type.Optional(Type.String()),
    updated_by: Type.Optional(Type.Unknown()),
    deleted_at: Type.Optional(Type.Unknown()),
  },
  { additionalProperties: false },
)
export const SettingResponse = Type.Object({
  key: Type.String(),
  value: Type.String(),
  updated_at: Type.String({ description: 'when this value takes effect' }),
  updated_by: Type.String(),
  deleted_at: Type.Optional(Type.String()),
})
export const SettingDefinitionResponse = Type.Object({
  key: Type.String(),
  default: Type.String(),
  description: Type.String(),
  type: Type.Union([Type.Literal('boolean'), Type.Literal('integer'), Type.Literal('string')]),
})
const ReadQuery = Type.Object({ ...AsOfQuery, ...IncludeDeletedQuery }, { additionalProperties: false })

type SettingWriteBody = typeof SettingWrite.static

/** `updated_at` is the instant the value takes effect, not when it was written (SPEC.md "Setting"). */
export function renderSetting(key: string, view: View<Setting>): Record<string, unknown> {
  const record: Record<string, unknown> = {
    key,
    value: view.value.value,
    updated_at: formatInstant(view.version.from),
    updated_by: view.version.writtenBy,
  }
  if (view.deletedAt !== null) record['deleted_at'] = formatInstant(view.deletedAt)
  return record
}

export function settingsRoutes(): TenantRoute[] {
  return [
    route({
      method: 'GET',
      path: '/settings/definitions',
      operationId: 'listSettingDefinitions',
      summary: 'Every changeable setting with its default, type and effect',
      tag: 'settings',
      response: Type.Array(SettingDefinitionResponse),
      dimension: 'query',
      handler: () => ({
        status: 200,
        body: settingDefinitions.map(({ key, default: value, description, type }) => ({
          key,
          default: value,
          description,
          type,
        })),
      }),
    }),
    route<undefined, typeof ReadQuery.static>({
      method: 'GET',
      path: '/settings',
      operationId: 'listSettings',
      summary: 'Settings written and in force at asOf, with their values and effective times',
      tag: 'settings',
      query: ReadQuery,
      response: Type.Array(SettingResponse),
      dimension: 'query',
      handler: (context) => {
        const found: Record<string, unknown>[] = []
        for (const [key, view] of context.tenant.catalog.viewsAt(
          'settings',
          readInstant(context),
          context.query.include_deleted,
        )) {
          found.push(renderSetting(key, view))
        }
        return { status: 200, body: found }
      },
    }),
    route<undefined, typeof ReadQuery.static>({
      method: 'GET',
      path: '/settings/:key',
      operationId: 'getSetting',
      summary: 'One written setting as of asOf; 404 when never written, not yet in force or deleted',
      tag: 'settings',
      query: ReadQuery,
      response: SettingResponse,
      dimension: 'query',
      handler: (context) => {
        const key = context.params['key']!
        const view = context.tenant.catalog.view('settings', key, readInstant(context), context.query.include_deleted)
        return { status: 200, body: renderSetting(key, requireView(view, `Setting ${key}`)) }
      },
    }),
    route<SettingWriteBody, Record<string, never>>({
      method: 'PUT',
      path: '/settings/:key',
      operationId: 'putSetting',
      summary: 'Write a setting from updated_at (a past or absent time means now)',
      tag: 'settings',
      body: SettingWrite,
      responseStatus: 202,
      dimension: 'ingest',
      handler: async (context) => {
        const key = context.params['key']!
        // An unknown key answers before a contradicting body key.
        const unknown = unknownSetting(key)
        if (unknown !== null) throw refusalError(unknown)
        const body = context.body
        if (body.key !== undefined && body.key !== key) {
          throw validationError([{ path: '/key', message: 'must equal the key in the path' }])
        }
        acceptedOrThrow(await writeSettings(context.tenant, context, [{ ...body, key }]))
        return accepted
      },
    }),
    route<undefined, typeof WhenQuery.static>({
      method: 'DELETE',
      path: '/settings/:key',
      operationId: 'deleteSetting',
      summary: 'Soft-delete a setting at `when` (default now); it then reads 404 and takes its default',
      tag: 'settings',
      query: WhenQuery,
      responseStatus: 202,
      dimension: 'ingest',
      handler: async (context) => {
        const input = { key: context.params['key']!, when: context.query.when }
        acceptedOrThrow(await deleteSettings(context.tenant, context, [input]))
        return accepted
      },
    }),
  ]
}
