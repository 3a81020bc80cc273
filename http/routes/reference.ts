/**
 * Reference data: currencies, tax areas, VAT classes, VAT rates and article-to-VAT-class mappings.
 * Currencies, tax areas and VAT classes are versioned at write time; VAT rates and mappings take a
 * start date, so a future one schedules a rate change or a reclassification. Rates and mappings
 * must name a tax area and a VAT class that exist; the article need not (mappings are often loaded
 * before the articles). Every write is deduplicated by content (an identical rewrite stores nothing).
 * Non-goals: no cascade when a tax area or VAT class is deleted (history stays readable as of any
 * instant), and no check that a tax area's validity window covers a rate.
 * @module
 */
import { Type, type TSchema } from '@sinclair/typebox'
import {
  compositeKey, splitKey, type ArticleTaxclass, type Change, type Currency, type TaxArea, type VatClass, type VatRate,
} from '../../engine/catalog.js'
import { isIso4217 } from '../../engine/currencies.js'
import { batchItemsMax } from '../../engine/limits.js'
import type { View } from '../../engine/temporal.js'
import { formatInstant } from '../../engine/time.js'
import { arrayCost, route, type TenantContext, type TenantRoute } from '../contracts.js'
import { ApiError, validationError } from '../../platform/errors.js'
import {
  AsOfQuery, BatchResult, Code, DateTime, IncludeDeletedQuery, NullableDateTime, NullableText, readOnlyFields,
  WhenQuery,
} from '../schemas.js'
import type { TenantRuntime } from '../../tenant/runtime.js'
import {
  accepted, deleteInstant, failedEntry, formatOptional, itemProblem, optionalInstant, readInstant, requireView,
  withVersionMeta, writeInstant, type BatchOutcome,
} from './common.js'

// ---------------------------------------------------------------------------------------------
// Schemas

const ReadQuery = Type.Object({ ...AsOfQuery, ...IncludeDeletedQuery }, { additionalProperties: false })
type ReadQueryType = typeof ReadQuery.static
const CurrencyReadQuery = Type.Object({ ...AsOfQuery }, { additionalProperties: false })

export const CurrencyWrite = Type.Object(
  {
    code: Type.Optional(Type.String({ description: 'must equal the code in the path' })),
    is_active: Type.Optional(Type.Boolean({ default: true })),
    vat_precision: Type.Optional(Type.Integer({ minimum: 0, maximum: 4, default: 2 })),
    ...readOnlyFields,
  },
  { additionalProperties: false },
)
export const CurrencyResponse = Type.Object({
  code: Type.String(),
  is_active: Type.Boolean(),
  vat_precision: Type.Integer(),
  updated_at: Type.String(),
  updated_by: Type.String(),
})

export const TaxAreaWrite = Type.Object(
  {
    code: Type.Optional(Code),
    name: Type.Optional(NullableText),
    is_active: Type.Optional(Type.Boolean({ default: true })),
    valid_from: Type.Optional(NullableDateTime),
    valid_to: Type.Optional(NullableDateTime),
    ...readOnlyFields,
  },
  { additionalProperties: false },
)
export const TaxAreaResponse = Type.Object({
  code: Type.String(),
  name: Type.Union([Type.String(), Type.Null()]),
  is_active: Type.Boolean(),
  valid_from: Type.Union([Type.String(), Type.Null()]),
  valid_to: Type.Union([Type.String(), Type.Null()]),
  updated_at: Type.String(),
  updated_by: Type.String(),
  deleted_at: Type.Optional(Type.String()),
})

export const VatClassWrite = Type.Object(
  {
    code: Type.Optional(Code),
    name: Type.Optional(NullableText),
    description: Type.Optional(NullableText),
    ...readOnlyFields,
  },
  { additionalProperties: false },
)
export const VatClassResponse = Type.Object({
  code: Type.String(),
  name: Type.Union([Type.String(), Type.Null()]),
  description: Type.Union([Type.String(), Type.Null()]),
  updated_at: Type.String(),
  updated_by: Type.String(),
  deleted_at: Type.Optional(Type.String()),
})

const RateInput = Type.Union([Type.Number(), Type.String({ maxLength: 32 })], {
  description: 'percentage 0-100 (25 means 25%), at most 4 decimals; a number or a numeric string',
})
export const VatRateWrite = Type.Object(
  {
    tax_area_code: Code,
    vat_class_code: Code,
    rate: RateInput,
    start_date: Type.Optional(DateTime),
    ...readOnlyFields,
  },
  { additionalProperties: false },
)
export const VatRateResponse = Type.Object({
  tax_area_code: Type.String(),
  vat_class_code: Type.String(),
  rate: Type.Number(),
  start_date: Type.String(),
  updated_at: Type.String(),
  updated_by: Type.String(),
  deleted_at: Type.Optional(Type.String()),
})
const VatRateQuery = Type.Object(
  { tax_area: Code, vat_class: Code, ...AsOfQuery, ...IncludeDeletedQuery },
  { additionalProperties: false },
)
const VatRatesQuery = Type.Object(
  { tax_area: Type.Optional(Code), ...AsOfQuery, ...IncludeDeletedQuery },
  { additionalProperties: false },
)

export const MappingWrite = Type.Object(
  { sku_code: Code, tax_area_code: Code, vat_class_code: Code, start_date: Type.Optional(DateTime), ...readOnlyFields },
  { additionalProperties: false },
)
export const MappingResponse = Type.Object({
  sku_code: Type.String(),
  tax_area_code: Type.String(),
  vat_class_code: Type.String(),
  start_date: Type.String(),
  updated_at: Type.String(),
  updated_by: Type.String(),
  deleted_at: Type.Optional(Type.String()),
})
const ByAreaQuery = Type.Object(
  { tax_area: Code, ...AsOfQuery, ...IncludeDeletedQuery },
  { additionalProperties: false },
)
const BatchBody = Type.Array(Type.Unknown(), { minItems: 1, maxItems: batchItemsMax })

type CurrencyBody = typeof CurrencyWrite.static
type TaxAreaBody = typeof TaxAreaWrite.static
type VatClassBody = typeof VatClassWrite.static
type VatRateBody = typeof VatRateWrite.static
type MappingBody = typeof MappingWrite.static

// ---------------------------------------------------------------------------------------------
// Values and checks

const ratePattern = /^(\d+)(?:\.(\d+))?$/
const rateDecimalsMax = 4
const rateMax = 100

/**
 * A VAT rate as its canonical decimal string ("25", "12.5"), or null when it is not a percentage
 * from 0 to 100 with at most 4 decimals. Numbers go through their shortest round-trip text, so an
 * exponent form (1e-7) is refused like any other text with too many decimals.
 */
export function canonicalRate(input: number | string): string | null {
  const text = typeof input === 'number' ? (Number.isFinite(input) ? String(input) : '') : input
  const match = ratePattern.exec(text)
  if (match === null) return null
  const whole = match[1]!.replace(/^0+(?=\d)/, '')
  const fraction = (match[2] ?? '').replace(/0+$/, '')
  if (fraction.length > rateDecimalsMax) return null
  const canonical = fraction === '' ? whole : `${whole}.${fraction}`
  return Number(canonical) > rateMax ? null : canonical
}

/** A code taken from the path must be a valid business code before it becomes a key. */
function checkPathCode(code: string, path: string): void {
  const problem = itemProblem(Code, code)
  if (problem !== null) throw validationError([{ path, message: problem }])
}

/** A body may repeat the path's code (GET, edit, PUT round trips) but not contradict it. */
function checkBodyCode(bodyCode: string | undefined, code: string): void {
  if (bodyCode !== undefined && bodyCode !== code) {
    throw validationError([{ path: '/code', message: 'must equal the code in the path' }])
  }
}

const referenceNames = { tax_area: 'Tax area', vat_class: 'VAT class' } as const

/**
 * Rates and mappings need their tax area and VAT class live now and still live when the write takes
 * effect (a deletion scheduled before a future start refuses it). Refusal is a 400 on the field.
 */
function requireReference(
  tenant: TenantRuntime,
  type: keyof typeof referenceNames,
  code: string,
  instants: { nowMs: number; from: number },
  path: string,
): void {
  const name = referenceNames[type]
  let message: string | null = null
  if (tenant.catalog.view(type, code, instants.nowMs) === null) message = `${name} ${code} does not exist`
  else if (tenant.catalog.view(type, code, instants.from) === null) {
    message = `${name} ${code} is deleted by ${formatInstant(instants.from)}`
  }
  if (message !== null) throw validationError([{ path, message }], message)
}

/** Commits a single planned write; null (nothing would change) stores nothing. */
async function commitOne(tenant: TenantRuntime, change: Change | null): Promise<typeof accepted> {
  if (change !== null) await tenant.commit([change])
  return accepted
}

/** Soft delete at `when`: 404 when nothing is live then. */
async function softDelete(
  context: TenantContext<unknown, typeof WhenQuery.static>,
  type: 'tax_area' | 'vat_class' | 'vat_rate' | 'article_taxclass',
  key: string,
  what: string,
): Promise<typeof accepted> {
  const at = deleteInstant(context)
  requireView(context.tenant.catalog.view(type, key, at), what)
  return commitOne(context.tenant, context.tenant.catalog.plan(type, key, null, at, context.nowMs, context.actor))
}

// ---------------------------------------------------------------------------------------------
// Rendering

function renderCurrency(code: string, view: View<Currency>): Record<string, unknown> {
  return withVersionMeta({ code, is_active: view.value.is_active, vat_precision: view.value.vat_precision }, view)
}

function renderTaxArea(code: string, view: View<TaxArea>): Record<string, unknown> {
  const area = view.value
  return withVersionMeta({
    code,
    name: area.name,
    is_active: area.is_active,
    valid_from: formatOptional(area.valid_from),
    valid_to: formatOptional(area.valid_to),
  }, view)
}

function renderVatClass(code: string, view: View<VatClass>): Record<string, unknown> {
  return withVersionMeta({ code, name: view.value.name, description: view.value.description }, view)
}

function renderVatRate(key: string, view: View<VatRate>): Record<string, unknown> {
  const [taxArea, vatClass] = splitKey(key)
  return withVersionMeta({
    tax_area_code: taxArea,
    vat_class_code: vatClass,
    rate: Number(view.value.rate),
    start_date: formatInstant(view.version.from),
  }, view)
}

function renderMapping(key: string, view: View<ArticleTaxclass>): Record<string, unknown> {
  const [sku, taxArea] = splitKey(key)
  return withVersionMeta({
    sku_code: sku,
    tax_area_code: taxArea,
    vat_class_code: view.value.vat_class_code,
    start_date: formatInstant(view.version.from),
  }, view)
}

// ---------------------------------------------------------------------------------------------
// Currencies

function currencyRoutes(): TenantRoute[] {
  return [
    route<CurrencyBody>({
      method: 'PUT',
      path: '/currency/:code',
      operationId: 'putCurrency',
      summary: 'Register or change a currency (is_active default true, vat_precision 0-4 default 2)',
      tag: 'currencies',
      body: CurrencyWrite,
      responseStatus: 202,
      dimension: 'ingest',
      handler: (context) => {
        const code = context.params['code']!
        if (!isIso4217(code)) throw new ApiError('currency_unknown', `Currency ${code} is not an ISO 4217 code`)
        checkBodyCode(context.body.code, code)
        const value: Currency = {
          is_active: context.body.is_active ?? true,
          vat_precision: context.body.vat_precision ?? 2,
        }
        const { tenant, nowMs, actor } = context
        return commitOne(tenant, tenant.catalog.plan('currency', code, value, nowMs, nowMs, actor))
      },
    }),
    route<undefined, typeof CurrencyReadQuery.static>({
      method: 'GET',
      path: '/currency/:code',
      operationId: 'getCurrency',
      summary: 'One registered currency, active or not (404 when never registered)',
      tag: 'currencies',
      query: CurrencyReadQuery,
      response: CurrencyResponse,
      dimension: 'query',
      handler: (context) => {
        const code = context.params['code']!
        const view = context.tenant.catalog.view('currency', code, readInstant(context))
        return { status: 200, body: renderCurrency(code, requireView(view, `Currency ${code}`)) }
      },
    }),
    route<undefined, typeof CurrencyReadQuery.static>({
      method: 'GET',
      path: '/currency',
      operationId: 'listCurrencies',
      summary: 'Active registered currencies, sorted by code',
      tag: 'currencies',
      query: CurrencyReadQuery,
      response: Type.Array(CurrencyResponse),
      dimension: 'query',
      handler: (context) => {
        const list: Record<string, unknown>[] = []
        for (const [code, view] of context.tenant.catalog.viewsAt('currency', readInstant(context))) {
          if (view.value.is_active) list.push(renderCurrency(code, view))
        }
        return { status: 200, body: list }
      },
    }),
  ]
}

// ---------------------------------------------------------------------------------------------
// Tax areas and VAT classes

function toTaxArea(body: TaxAreaBody): TaxArea {
  const area: TaxArea = {
    name: body.name ?? null,
    is_active: body.is_active ?? true,
    valid_from: optionalInstant(body.valid_from),
    valid_to: optionalInstant(body.valid_to),
  }
  if (area.valid_from !== null && area.valid_to !== null && area.valid_to <= area.valid_from) {
    throw validationError([{ path: '/valid_to', message: 'must be after valid_from' }])
  }
  return area
}

/** GET one, GET list and DELETE for a code-keyed type whose reads take asOf and include_deleted. */
function codeRoutes<T>(options: {
  type: 'tax_area' | 'vat_class'
  path: string
  tag: string
  noun: string
  response: TSchema
  render: (code: string, view: View<T>) => Record<string, unknown>
  /** operationIds of the read, the list and the delete. */
  operationIds: { read: string; list: string; delete: string }
}): TenantRoute[] {
  const { type, path, tag, noun, response, render, operationIds } = options
  const label = referenceNames[type]
  return [
    route<undefined, ReadQueryType>({
      method: 'GET',
      path: `${path}/:code`,
      operationId: operationIds.read,
      summary: `One ${noun} as of asOf`,
      tag,
      query: ReadQuery,
      response,
      dimension: 'query',
      handler: (context) => {
        const code = context.params['code']!
        const view = context.tenant.catalog.view(type, code, readInstant(context), context.query.include_deleted)
        return { status: 200, body: render(code, requireView(view as View<T> | null, `${label} ${code}`)) }
      },
    }),
    route<undefined, ReadQueryType>({
      method: 'GET',
      path,
      operationId: operationIds.list,
      summary: `Every ${noun} as of asOf, sorted by code`,
      tag,
      query: ReadQuery,
      response: Type.Array(response),
      dimension: 'query',
      handler: (context) => {
        const list: Record<string, unknown>[] = []
        const views = context.tenant.catalog.viewsAt(type, readInstant(context), context.query.include_deleted)
        for (const [code, view] of views) list.push(render(code, view as View<T>))
        return { status: 200, body: list }
      },
    }),
    route<undefined, typeof WhenQuery.static>({
      method: 'DELETE',
      path: `${path}/:code`,
      operationId: operationIds.delete,
      summary: `Soft-delete a ${noun} at when (default now)`,
      tag,
      query: WhenQuery,
      responseStatus: 202,
      dimension: 'ingest',
      handler: (context) => softDelete(context, type, context.params['code']!, `${label} ${context.params['code']}`),
    }),
  ]
}

function taxAreaRoutes(): TenantRoute[] {
  return [
    route<TaxAreaBody>({
      method: 'PUT',
      path: '/tax-area/:code',
      operationId: 'putTaxArea',
      summary: 'Create or replace a tax area (is_active default true; valid_from/valid_to optional)',
      tag: 'tax areas',
      body: TaxAreaWrite,
      responseStatus: 202,
      dimension: 'ingest',
      handler: (context) => {
        const code = context.params['code']!
        checkPathCode(code, '/code')
        checkBodyCode(context.body.code, code)
        const { tenant, nowMs, actor } = context
        return commitOne(tenant, tenant.catalog.plan('tax_area', code, toTaxArea(context.body), nowMs, nowMs, actor))
      },
    }),
    ...codeRoutes<TaxArea>({
      type: 'tax_area',
      path: '/tax-area',
      tag: 'tax areas',
      noun: 'tax area',
      response: TaxAreaResponse,
      render: renderTaxArea,
      operationIds: { read: 'getTaxArea', list: 'listTaxAreas', delete: 'deleteTaxArea' },
    }),
  ]
}

function vatClassRoutes(): TenantRoute[] {
  return [
    route<VatClassBody>({
      method: 'PUT',
      path: '/vat/class/:code',
      operationId: 'putVatClass',
      summary: 'Create or replace a VAT class (name, description)',
      tag: 'vat',
      body: VatClassWrite,
      responseStatus: 202,
      dimension: 'ingest',
      handler: (context) => {
        const code = context.params['code']!
        checkPathCode(code, '/code')
        checkBodyCode(context.body.code, code)
        const value: VatClass = { name: context.body.name ?? null, description: context.body.description ?? null }
        const { tenant, nowMs, actor } = context
        return commitOne(tenant, tenant.catalog.plan('vat_class', code, value, nowMs, nowMs, actor))
      },
    }),
    ...codeRoutes<VatClass>({
      type: 'vat_class',
      path: '/vat/class',
      tag: 'vat',
      noun: 'VAT class',
      response: VatClassResponse,
      render: renderVatClass,
      operationIds: { read: 'getVatClass', list: 'listVatClasses', delete: 'deleteVatClass' },
    }),
  ]
}

// ---------------------------------------------------------------------------------------------
// VAT rates

function planVatRate(context: TenantContext<VatRateBody>): Change | null {
  const { tenant, nowMs, actor, body } = context
  const rate = canonicalRate(body.rate)
  if (rate === null) {
    throw validationError([{ path: '/rate', message: 'must be a percentage from 0 to 100 with at most 4 decimals' }])
  }
  const from = writeInstant(body.start_date, nowMs)
  requireReference(tenant, 'tax_area', body.tax_area_code, { nowMs, from }, '/tax_area_code')
  requireReference(tenant, 'vat_class', body.vat_class_code, { nowMs, from }, '/vat_class_code')
  const key = compositeKey(body.tax_area_code, body.vat_class_code)
  return tenant.catalog.plan('vat_rate', key, { rate }, from, nowMs, actor)
}

function vatRateRoutes(): TenantRoute[] {
  return [
    route<VatRateBody>({
      method: 'POST',
      path: '/vat/rate',
      operationId: 'setVatRate',
      summary: 'Set a VAT rate of a tax area and VAT class from start_date (a future start schedules it)',
      tag: 'vat',
      body: VatRateWrite,
      responseStatus: 202,
      dimension: 'ingest',
      handler: (context) => commitOne(context.tenant, planVatRate(context)),
    }),
    route<undefined, typeof VatRateQuery.static>({
      method: 'GET',
      path: '/vat/rate',
      operationId: 'getVatRate',
      summary: 'The VAT rate in force for a tax area and VAT class as of asOf',
      tag: 'vat',
      query: VatRateQuery,
      response: VatRateResponse,
      dimension: 'query',
      handler: (context) => {
        const { tax_area: taxArea, vat_class: vatClass, include_deleted: includeDeleted } = context.query
        const key = compositeKey(taxArea, vatClass)
        const view = context.tenant.catalog.view('vat_rate', key, readInstant(context), includeDeleted)
        return { status: 200, body: renderVatRate(key, requireView(view, `VAT rate ${taxArea}/${vatClass}`)) }
      },
    }),
    route<undefined, typeof VatRatesQuery.static>({
      method: 'GET',
      path: '/vat/rates',
      operationId: 'listVatRates',
      summary: 'VAT rates in force as of asOf: those of tax_area, or of every area when it is absent',
      tag: 'vat',
      query: VatRatesQuery,
      response: Type.Array(VatRateResponse),
      dimension: 'query',
      handler: (context) => {
        const taxArea = context.query.tax_area
        const list: Record<string, unknown>[] = []
        const views = context.tenant.catalog.viewsAt('vat_rate', readInstant(context), context.query.include_deleted)
        for (const [key, view] of views) {
          if (taxArea === undefined || splitKey(key)[0] === taxArea) list.push(renderVatRate(key, view))
        }
        return { status: 200, body: list }
      },
    }),
    route<undefined, typeof WhenQuery.static>({
      method: 'DELETE',
      path: '/vat/rate/:taxArea/:vatClass',
      operationId: 'deleteVatRate',
      summary: 'Soft-delete a VAT rate at when (default now)',
      tag: 'vat',
      query: WhenQuery,
      responseStatus: 202,
      dimension: 'ingest',
      handler: (context) => {
        const { taxArea, vatClass } = context.params as { taxArea: string; vatClass: string }
        return softDelete(context, 'vat_rate', compositeKey(taxArea, vatClass), `VAT rate ${taxArea}/${vatClass}`)
      },
    }),
  ]
}

// ---------------------------------------------------------------------------------------------
// Article-to-VAT-class mappings

function planMapping(context: TenantContext, body: MappingBody): Change | null {
  const { tenant, nowMs, actor } = context
  const from = writeInstant(body.start_date, nowMs)
  requireReference(tenant, 'tax_area', body.tax_area_code, { nowMs, from }, '/tax_area_code')
  requireReference(tenant, 'vat_class', body.vat_class_code, { nowMs, from }, '/vat_class_code')
  const key = compositeKey(body.sku_code, body.tax_area_code)
  return tenant.catalog.plan('article_taxclass', key, { vat_class_code: body.vat_class_code }, from, nowMs, actor)
}

function mappingLabel(sku: string, taxArea: string): string {
  return `VAT class mapping of ${sku} in ${taxArea}`
}

/** The key fields of a batch item as sent (null when absent or not text), for its failed entry. */
function mappingKeys(item: unknown): Record<string, unknown> {
  const fields = (typeof item === 'object' && item !== null ? item : {}) as Record<string, unknown>
  const text = (value: unknown): string | null => (typeof value === 'string' ? value : null)
  return { sku_code: text(fields['sku_code']), tax_area_code: text(fields['tax_area_code']) }
}

async function writeMappingBatch(context: TenantContext<unknown[]>) {
  const outcome: BatchOutcome = { accepted: 0, failed: [] }
  const changes: Change[] = []
  for (const item of context.body) {
    const keys = mappingKeys(item)
    const problem = itemProblem(MappingWrite, item)
    if (problem !== null) {
      outcome.failed.push({ ...keys, message: problem })
      continue
    }
    let change: Change | null
    try {
      change = planMapping(context, item as MappingBody)
    } catch (error) {
      outcome.failed.push(failedEntry(keys, error))
      continue
    }
    if (change !== null) {
      // Later items for the same SKU and tax area plan against this one.
      context.tenant.catalog.apply(change.type, change.key, change.versions)
      changes.push(change)
    }
    outcome.accepted++
  }
  await context.tenant.commit(changes)
  return { status: 202, body: outcome }
}

/** Keys sort by SKU first (compositeKey), so filtering the sorted keys keeps SKU order. */
function listMappingsOfArea(context: TenantContext<undefined, typeof ByAreaQuery.static>) {
  const taxArea = context.query.tax_area
  const list: Record<string, unknown>[] = []
  const views = context.tenant.catalog.viewsAt('article_taxclass', readInstant(context), context.query.include_deleted)
  for (const [key, view] of views) {
    if (splitKey(key)[1] === taxArea) list.push(renderMapping(key, view))
  }
  return { status: 200, body: list }
}

function mappingRoutes(): TenantRoute[] {
  return [
    route<MappingBody>({
      method: 'POST',
      path: '/article-taxclass',
      operationId: 'setArticleTaxClass',
      summary: 'Map an article to a VAT class in a tax area from start_date (a future start schedules it)',
      tag: 'vat',
      body: MappingWrite,
      responseStatus: 202,
      dimension: 'ingest',
      handler: (context) => commitOne(context.tenant, planMapping(context, context.body)),
    }),
    route<unknown[]>({
      method: 'POST',
      path: '/article-taxclass/batch',
      operationId: 'writeArticleTaxClasses',
      summary: 'Write mappings in bulk (not atomic: valid items are written, others listed in failed)',
      tag: 'vat',
      body: BatchBody,
      response: BatchResult,
      responseStatus: 202,
      dimension: 'ingest',
      cost: arrayCost,
      handler: writeMappingBatch,
    }),
    route<undefined, typeof ByAreaQuery.static>({
      method: 'GET',
      path: '/article-taxclass/by-area',
      operationId: 'listArticleTaxClassesOfArea',
      summary: 'Every mapping of a tax area in force as of asOf, sorted by SKU',
      tag: 'vat',
      query: ByAreaQuery,
      response: Type.Array(MappingResponse),
      dimension: 'query',
      handler: listMappingsOfArea,
    }),
    route<undefined, ReadQueryType>({
      method: 'GET',
      path: '/article-taxclass/:sku/:taxArea',
      operationId: 'getArticleTaxClass',
      summary: 'The mapping of an article in a tax area in force as of asOf',
      tag: 'vat',
      query: ReadQuery,
      response: MappingResponse,
      dimension: 'query',
      handler: (context) => {
        const { sku, taxArea } = context.params as { sku: string; taxArea: string }
        const key = compositeKey(sku, taxArea)
        const at = readInstant(context)
        const view = context.tenant.catalog.view('article_taxclass', key, at, context.query.include_deleted)
        return { status: 200, body: renderMapping(key, requireView(view, mappingLabel(sku, taxArea))) }
      },
    }),
    route<undefined, typeof WhenQuery.static>({
      method: 'DELETE',
      path: '/article-taxclass/:sku/:taxArea',
      operationId: 'deleteArticleTaxClass',
      summary: 'Soft-delete the mapping of an article in a tax area at when (default now)',
      tag: 'vat',
      query: WhenQuery,
      responseStatus: 202,
      dimension: 'ingest',
      handler: (context) => {
        const { sku, taxArea } = context.params as { sku: string; taxArea: string }
        return softDelete(context, 'article_taxclass', compositeKey(sku, taxArea), mappingLabel(sku, taxArea))
      },
    }),
  ]
}

export function referenceRoutes(): TenantRoute[] {
  return [...currencyRoutes(), ...taxAreaRoutes(), ...vatClassRoutes(), ...vatRateRoutes(), ...mappingRoutes()]
}
