/**
 * Reference data: currencies, tax areas, VAT classes, VAT rates and article-to-VAT-class mappings.
 * The writes' rules are the write layer's (tenant/writes/reference.ts: references that must exist,
 * canonical rates, dedup by content); these routes check shapes, call its use cases and render.
 * Non-goals: no cascade when a tax area or VAT class is deleted (history stays readable as of any
 * instant), and no check that a tax area's validity window covers a rate.
 * @module
 */
import { Type, type TSchema } from '@sinclair/typebox'
import {
  compositeKey,
  splitKey,
  type ArticleTaxclass,
  type Currency,
  type TaxArea,
  type VatClass,
  type VatRate,
} from '../../engine/catalog.js'
import { batchItemsMax } from '../../engine/limits.js'
import type { View } from '../../engine/temporal.js'
import { formatInstant } from '../../engine/time.js'
import { arrayCost, route, type TenantContext, type TenantRoute } from '../contracts.js'
import { validationError } from '../../platform/errors.js'
import {
  AsOfQuery,
  BatchResult,
  Code,
  DateTime,
  IncludeDeletedQuery,
  NullableDateTime,
  NullableText,
  readOnlyFields,
  WhenQuery,
} from '../schemas.js'
import { deleteKeys } from '../../tenant/writes/catalog.js'
import {
  unknownCurrency,
  writeCurrencies,
  writeMappings,
  writeTaxAreas,
  writeVatClasses,
  writeVatRates,
} from '../../tenant/writes/reference.js'
import {
  accepted,
  acceptedOrThrow,
  batchAnswer,
  formatOptional,
  itemProblem,
  readInstant,
  refusalError,
  requireView,
  shapeRefusal,
  withVersionMeta,
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

/** Soft delete at `when` (default now): 404 naming `what` when nothing is live then. */
async function softDelete(
  context: TenantContext<unknown, typeof WhenQuery.static>,
  type: 'tax_area' | 'vat_class' | 'vat_rate' | 'article_taxclass',
  key: string,
  what: string,
): Promise<typeof accepted> {
  const items = [{ key, when: context.query.when }]
  acceptedOrThrow(await deleteKeys(context.tenant, context, { type, what: () => what, items }))
  return accepted
}

// ---------------------------------------------------------------------------------------------
// Rendering

function renderCurrency(code: string, view: View<Currency>): Record<string, unknown> {
  return withVersionMeta({ code, is_active: view.value.is_active, vat_precision: view.value.vat_precision }, view)
}

function renderTaxArea(code: string, view: View<TaxArea>): Record<string, unknown> {
  const area = view.value
  return withVersionMeta(
    {
      code,
      name: area.name,
      is_active: area.is_active,
      valid_from: formatOptional(area.valid_from),
      valid_to: formatOptional(area.valid_to),
    },
    view,
  )
}

function renderVatClass(code: string, view: View<VatClass>): Record<string, unknown> {
  return withVersionMeta({ code, name: view.value.name, description: view.value.description }, view)
}

function renderVatRate(key: string, view: View<VatRate>): Record<string, unknown> {
  const [taxArea, vatClass] = splitKey(key)
  return withVersionMeta(
    {
      tax_area_code: taxArea,
      vat_class_code: vatClass,
      rate: Number(view.value.rate),
      start_date: formatInstant(view.version.from),
    },
    view,
  )
}

function renderMapping(key: string, view: View<ArticleTaxclass>): Record<string, unknown> {
  const [sku, taxArea] = splitKey(key)
  return withVersionMeta(
    {
      sku_code: sku,
      tax_area_code: taxArea,
      vat_class_code: view.value.vat_class_code,
      start_date: formatInstant(view.version.from),
    },
    view,
  )
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
      handler: async (context) => {
        const code = context.params['code']!
        // An unknown code answers before a contradicting body code.
        const unknown = unknownCurrency(code)
        if (unknown !== null) throw refusalError(unknown)
        checkBodyCode(context.body.code, code)
        acceptedOrThrow(await writeCurrencies(context.tenant, context, [{ ...context.body, code }]))
        return accepted
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
      handler: async (context) => {
        const code = context.params['code']!
        checkPathCode(code, '/code')
        checkBodyCode(context.body.code, code)
        acceptedOrThrow(await writeTaxAreas(context.tenant, context, [{ ...context.body, code }]))
        return accepted
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
      handler: async (context) => {
        const code = context.params['code']!
        checkPathCode(code, '/code')
        checkBodyCode(context.body.code, code)
        acceptedOrThrow(await writeVatClasses(context.tenant, context, [{ ...context.body, code }]))
        return accepted
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
      handler: async (context) => {
        acceptedOrThrow(await writeVatRates(context.tenant, context, [context.body]))
        return accepted
      },
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
  const items = context.body
  const inputs = items.map((item) => {
    const problem = itemProblem(MappingWrite, item)
    return problem === null ? (item as MappingBody) : shapeRefusal(MappingWrite, item, problem)
  })
  // Later items for the same SKU and tax area plan against earlier ones.
  const outcomes = await writeMappings(context.tenant, context, inputs)
  return { status: 202, body: batchAnswer(outcomes, (index) => mappingKeys(items[index])) }
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
      handler: async (context) => {
        acceptedOrThrow(await writeMappings(context.tenant, context, [context.body]))
        return accepted
      },
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
