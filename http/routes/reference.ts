/**
 * Reference data: currencies, tax areas, VAT classes, VAT rates and article-to-VAT-class mappings.
 * The writes' rules are the write layer's (tenant/writes/reference.ts: references that must exist,
 * canonical rates, dedup by content); these routes check shapes, call its use cases and render.
 * Each entity is one description for the shared skeleton in http/routes/versioned-entity.ts.
 * Non-goals: no cascade when a tax area or VAT class is deleted (history stays readable as of any
 * instant), and no check that a tax area's validity window covers a rate.
 * @module
 */
import { Type } from '@sinclair/typebox'
import {
  compositeKey,
  splitKey,
  type ArticleTaxclass,
  type Currency,
  type TaxArea,
  type VatClass,
  type VatRate,
} from '../../engine/catalog.js'
import type { View } from '../../engine/temporal.js'
import { formatInstant } from '../../engine/time.js'
import type { TenantRoute } from '../contracts.js'
import { validationError } from '../../platform/errors.js'
import {
  AsOfQuery,
  Code,
  DateTime,
  IncludeDeletedQuery,
  NullableDateTime,
  NullableText,
  readOnlyFields,
} from '../schemas.js'
import {
  unknownCurrency,
  writeCurrencies,
  writeMappings,
  writeTaxAreas,
  writeVatClasses,
  writeVatRates,
  type CurrencyInput,
  type TaxAreaInput,
  type VatClassInput,
  type VatRateInput,
  type MappingInput,
} from '../../tenant/writes/reference.js'
import { formatOptional, itemProblem, refusalError, withVersionMeta } from './common.js'
import { versionedEntityRoutes, type Address } from './versioned-entity.js'

// ---------------------------------------------------------------------------------------------
// Schemas

const ReadQuery = Type.Object({ ...AsOfQuery, ...IncludeDeletedQuery }, { additionalProperties: false })
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

/** The input of a PUT at `/.../:code`: a valid path code, which the body may repeat but not contradict. */
function codedInput<Body extends { code?: string | undefined }>(context: {
  params: Record<string, string>
  body: Body
}): Body & { code: string } {
  const code = context.params['code']!
  checkPathCode(code, '/code')
  checkBodyCode(context.body.code, code)
  return { ...context.body, code }
}

/** A key named by the path's `:code`, and its 404's words. */
function byCode(noun: string): (params: Record<string, string>) => Address {
  return (params) => ({ key: params['code']!, label: `${noun} ${params['code']}` })
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
// The five entities

const currencies = (): TenantRoute[] =>
  versionedEntityRoutes<'currency', CurrencyInput, CurrencyBody>({
    type: 'currency',
    tag: 'currencies',
    response: CurrencyResponse,
    render: renderCurrency,
    write: {
      method: 'PUT',
      path: '/currency/:code',
      operationId: 'putCurrency',
      summary: 'Register or change a currency (is_active default true, vat_precision 0-4 default 2)',
      body: CurrencyWrite,
      input: (context) => {
        const code = context.params['code']!
        // An unknown code answers before a contradicting body code.
        const unknown = unknownCurrency(code)
        if (unknown !== null) throw refusalError(unknown)
        checkBodyCode(context.body.code, code)
        return { ...context.body, code }
      },
      useCase: writeCurrencies,
    },
    read: {
      path: '/currency/:code',
      operationId: 'getCurrency',
      summary: 'One registered currency, active or not (404 when never registered)',
      query: CurrencyReadQuery,
      address: (context) => byCode('Currency')(context.params),
    },
    list: {
      path: '/currency',
      operationId: 'listCurrencies',
      summary: 'Active registered currencies, sorted by code',
      query: CurrencyReadQuery,
      keep: (_code, view) => view.value.is_active,
    },
  })

const taxAreas = (): TenantRoute[] =>
  versionedEntityRoutes<'tax_area', TaxAreaInput, TaxAreaBody>({
    type: 'tax_area',
    tag: 'tax areas',
    response: TaxAreaResponse,
    render: renderTaxArea,
    write: {
      method: 'PUT',
      path: '/tax-area/:code',
      operationId: 'putTaxArea',
      summary: 'Create or replace a tax area (is_active default true; valid_from/valid_to optional)',
      body: TaxAreaWrite,
      input: codedInput,
      useCase: writeTaxAreas,
    },
    read: {
      path: '/tax-area/:code',
      operationId: 'getTaxArea',
      summary: 'One tax area as of asOf',
      query: ReadQuery,
      address: (context) => byCode('Tax area')(context.params),
    },
    list: {
      path: '/tax-area',
      operationId: 'listTaxAreas',
      summary: 'Every tax area as of asOf, sorted by code',
      query: ReadQuery,
    },
    remove: {
      path: '/tax-area/:code',
      operationId: 'deleteTaxArea',
      summary: 'Soft-delete a tax area at when (default now)',
      address: byCode('Tax area'),
    },
  })

const vatClasses = (): TenantRoute[] =>
  versionedEntityRoutes<'vat_class', VatClassInput, VatClassBody>({
    type: 'vat_class',
    tag: 'vat',
    response: VatClassResponse,
    render: renderVatClass,
    write: {
      method: 'PUT',
      path: '/vat/class/:code',
      operationId: 'putVatClass',
      summary: 'Create or replace a VAT class (name, description)',
      body: VatClassWrite,
      input: codedInput,
      useCase: writeVatClasses,
    },
    read: {
      path: '/vat/class/:code',
      operationId: 'getVatClass',
      summary: 'One VAT class as of asOf',
      query: ReadQuery,
      address: (context) => byCode('VAT class')(context.params),
    },
    list: {
      path: '/vat/class',
      operationId: 'listVatClasses',
      summary: 'Every VAT class as of asOf, sorted by code',
      query: ReadQuery,
    },
    remove: {
      path: '/vat/class/:code',
      operationId: 'deleteVatClass',
      summary: 'Soft-delete a VAT class at when (default now)',
      address: byCode('VAT class'),
    },
  })

/** A VAT rate's key (tax area, VAT class) and its 404's words. */
function vatRateAddress(taxArea: string, vatClass: string): Address {
  return { key: compositeKey(taxArea, vatClass), label: `VAT rate ${taxArea}/${vatClass}` }
}

const vatRates = (): TenantRoute[] =>
  versionedEntityRoutes<'vat_rate', VatRateInput, VatRateBody>({
    type: 'vat_rate',
    tag: 'vat',
    response: VatRateResponse,
    render: renderVatRate,
    write: {
      method: 'POST',
      path: '/vat/rate',
      operationId: 'setVatRate',
      summary: 'Set a VAT rate of a tax area and VAT class from start_date (a future start schedules it)',
      body: VatRateWrite,
      input: (context) => context.body,
      useCase: writeVatRates,
    },
    read: {
      path: '/vat/rate',
      operationId: 'getVatRate',
      summary: 'The VAT rate in force for a tax area and VAT class as of asOf',
      query: VatRateQuery,
      address: (context) => vatRateAddress(context.query['tax_area'] as string, context.query['vat_class'] as string),
    },
    list: {
      path: '/vat/rates',
      operationId: 'listVatRates',
      summary: 'VAT rates in force as of asOf: those of tax_area, or of every area when it is absent',
      query: VatRatesQuery,
      keep: (key, _view, context) => {
        const taxArea = context.query['tax_area']
        return taxArea === undefined || splitKey(key)[0] === taxArea
      },
    },
    remove: {
      path: '/vat/rate/:taxArea/:vatClass',
      operationId: 'deleteVatRate',
      summary: 'Soft-delete a VAT rate at when (default now)',
      address: (params) => vatRateAddress(params['taxArea']!, params['vatClass']!),
    },
  })

/** A mapping's key (SKU, tax area) and its 404's words. */
function mappingAddress(params: Record<string, string>): Address {
  const sku = params['sku']!
  const taxArea = params['taxArea']!
  return { key: compositeKey(sku, taxArea), label: `VAT class mapping of ${sku} in ${taxArea}` }
}

/** The key fields of a batch item as sent (null when absent or not text), for its failed entry. */
function mappingKeys(item: unknown): Record<string, unknown> {
  const fields = (typeof item === 'object' && item !== null ? item : {}) as Record<string, unknown>
  const text = (value: unknown): string | null => (typeof value === 'string' ? value : null)
  return { sku_code: text(fields['sku_code']), tax_area_code: text(fields['tax_area_code']) }
}

const mappings = (): TenantRoute[] =>
  versionedEntityRoutes<'article_taxclass', MappingInput, MappingBody>({
    type: 'article_taxclass',
    tag: 'vat',
    response: MappingResponse,
    render: renderMapping,
    write: {
      method: 'POST',
      path: '/article-taxclass',
      operationId: 'setArticleTaxClass',
      summary: 'Map an article to a VAT class in a tax area from start_date (a future start schedules it)',
      body: MappingWrite,
      input: (context) => context.body,
      useCase: writeMappings,
    },
    batch: {
      path: '/article-taxclass/batch',
      operationId: 'writeArticleTaxClasses',
      summary: 'Write mappings in bulk (not atomic: valid items are written, others listed in failed)',
      keysOf: mappingKeys,
    },
    read: {
      path: '/article-taxclass/:sku/:taxArea',
      operationId: 'getArticleTaxClass',
      summary: 'The mapping of an article in a tax area in force as of asOf',
      query: ReadQuery,
      address: (context) => mappingAddress(context.params),
    },
    // Keys sort by SKU first (compositeKey), so filtering the sorted keys keeps SKU order.
    list: {
      path: '/article-taxclass/by-area',
      operationId: 'listArticleTaxClassesOfArea',
      summary: 'Every mapping of a tax area in force as of asOf, sorted by SKU',
      query: ByAreaQuery,
      keep: (key, _view, context) => splitKey(key)[1] === context.query['tax_area'],
    },
    remove: {
      path: '/article-taxclass/:sku/:taxArea',
      operationId: 'deleteArticleTaxClass',
      summary: 'Soft-delete the mapping of an article in a tax area at when (default now)',
      address: mappingAddress,
    },
  })

export function referenceRoutes(): TenantRoute[] {
  return [...currencies(), ...taxAreas(), ...vatClasses(), ...vatRates(), ...mappings()]
}
