/**
 * Exchange rates (SPEC.md "Exchange rates", API.md §6 "FX"): manual daily rates, the rate of a pair
 * as of an instant (through EUR), an on-demand feed fetch and the feed's currency list. Rates are
 * per tenant. FX history is the exception to "writes take effect now": a daily rate is stored at
 * its publication date, past or future.
 * Non-goals: deleting rates (history is kept permanently).
 * @module
 */
import { Type } from '@sinclair/typebox'
import { isIso4217 } from '../../engine/currencies.js'
import {
  canonicalFxRate,
  fxBaseCurrency,
  fxCurrencyHeld,
  fxRateDecimalsMax,
  fxRateMax,
  latestFeedCurrencies,
  planFxRates,
  resolveFx,
} from '../../engine/fx.js'
import type { Catalog, Change } from '../../engine/catalog.js'
import { formatInstant, instantMax, instantMin, parseInstant } from '../../engine/time.js'
import { route, type TenantRoute } from '../contracts.js'
import { ApiError, validationError, type ErrorDetail } from '../../platform/errors.js'
import { activeFxFeed, applyFeed, commitFxChanges, FxFeedError } from '../../tenant/fx-feed.js'
import { AsOfQuery, CurrencyCode, DateTime } from '../schemas.js'
import { accepted, readInstant } from './common.js'

const RateValue = Type.Union([Type.Number(), Type.String({ maxLength: 64 })], {
  description: `EUR -> code: above 0 and at most ${fxRateMax}, at most ${fxRateDecimalsMax} decimals; a number or a numeric string`,
})
export const FxDailyBody = Type.Object(
  {
    date: Type.String({ format: 'date', description: 'publication date, UTC (yyyy-MM-dd)' }),
    rates: Type.Record(Type.String(), RateValue, { minProperties: 1, description: 'ISO 4217 code (not EUR) -> rate' }),
  },
  { additionalProperties: false },
)
type FxDailyBodyType = typeof FxDailyBody.static

const RateQuery = Type.Object(
  { base: CurrencyCode, quote: CurrencyCode, ...AsOfQuery },
  { additionalProperties: false },
)
type RateQueryType = typeof RateQuery.static
const CurrenciesQuery = Type.Object({ ...AsOfQuery }, { additionalProperties: false })

export const FxRateResponse = Type.Object({
  base: Type.String(),
  quote: Type.String(),
  as_of: DateTime,
  rate: Type.Number({ description: 'rounded half-up to 10 significant digits; conversions use the exact rate' }),
})
export const FxFetchResponse = Type.Object({
  as_of: DateTime,
  count: Type.Integer({ description: 'rates in the fetched feed, all now held (unchanged ones record nothing)' }),
})
export const FxCurrenciesResponse = Type.Object({
  as_of: Type.Union([DateTime, Type.Null()]),
  currencies: Type.Array(Type.String()),
})

/** The request's cost: its number of rates (SPEC.md rate-limit table); counted on the raw body. */
function ratesCost(body: unknown): number {
  const rates = (body as { rates?: unknown } | null)?.rates
  const isObject = typeof rates === 'object' && rates !== null && !Array.isArray(rates)
  return isObject ? Math.max(1, Object.keys(rates).length) : 1
}

/** Checks every rate before anything is stored: one bad rate refuses the whole request. */
export function checkedRates(rates: Record<string, number | string>): [string, string][] {
  const details: ErrorDetail[] = []
  const checked: [string, string][] = []
  for (const [code, input] of Object.entries(rates)) {
    const path = `/rates/${code}`
    if (code === fxBaseCurrency) details.push({ path, message: 'EUR is the base: rates are EUR -> code' })
    else if (!/^[A-Z]{3}$/.test(code) || !isIso4217(code)) {
      details.push({ path, message: 'must be an ISO 4217 currency code' })
    }
    const rate = canonicalFxRate(input)
    if (rate === null) {
      const message = `must be a number above 0 and at most ${fxRateMax} with at most ${fxRateDecimalsMax} decimals`
      details.push({ path, message })
    } else {
      checked.push([code, rate])
    }
  }
  // As many details as the schema validator gives (validate.ts): enough to fix a request.
  if (details.length > 0) throw validationError(details.slice(0, 20))
  return checked.sort(([left], [right]) => (left < right ? -1 : 1))
}

export function publicationDate(date: string): number {
  const from = parseInstant(date)
  if (Number.isNaN(from) || from < instantMin || from > instantMax) {
    throw validationError([{ path: '/date', message: 'must be a date from 1970-01-01 (yyyy-MM-dd)' }])
  }
  return from
}

/** 400 for a code that is neither ISO 4217 nor held (the feed's history has retired codes). */
function checkQueryCode(catalog: Catalog, code: string, name: string): void {
  if (!isIso4217(code) && !fxCurrencyHeld(catalog, code)) {
    throw new ApiError('currency_unknown', `${code} is not an ISO 4217 currency code`, {
      details: [{ path: `query/${name}`, message: 'must be an ISO 4217 currency code' }],
    })
  }
}

export function fxRoutes(): TenantRoute[] {
  return [
    route<FxDailyBodyType>({
      method: 'POST',
      path: '/fx/daily',
      operationId: 'setFxRates',
      summary: 'Set EUR -> X rates of one publication date (past or future); same date and rate records nothing',
      tag: 'fx',
      body: FxDailyBody,
      responseStatus: 202,
      dimension: 'ingest',
      cost: ratesCost,
      handler: async (context) => {
        const from = publicationDate(context.body.date)
        const changes: Change[] = []
        for (const [quote, rate] of checkedRates(context.body.rates)) {
          changes.push(...planFxRates(context.tenant.catalog, quote, [{ from, rate }], context.nowMs, context.actor))
        }
        await commitFxChanges(context.tenant, changes)
        return accepted
      },
    }),
    route<undefined, RateQueryType>({
      method: 'GET',
      path: '/fx/rate',
      operationId: 'getFxRate',
      summary: 'The rate base -> quote as of an instant (on or before, else the earliest after), through EUR',
      tag: 'fx',
      query: RateQuery,
      response: FxRateResponse,
      dimension: 'query',
      handler: (context) => {
        const { base, quote } = context.query
        checkQueryCode(context.tenant.catalog, base, 'base')
        checkQueryCode(context.tenant.catalog, quote, 'quote')
        const resolved = resolveFx(context.tenant.catalog, base, quote, readInstant(context))
        if (resolved === null) {
          const missing = [base, quote].filter((code) => !fxCurrencyHeld(context.tenant.catalog, code))
          throw new ApiError('not_found', `No exchange rate for ${missing.join(' and ') || `${base}/${quote}`}`)
        }
        return { status: 200, body: { base, quote, as_of: formatInstant(resolved.asOf), rate: resolved.rate } }
      },
    }),
    route({
      method: 'POST',
      path: '/fx/fetch',
      operationId: 'fetchFxRates',
      errors: [502],
      summary: 'Fetch the feed now for this tenant, whatever fx.rate.auto.update says',
      tag: 'fx',
      response: FxFetchResponse,
      dimension: 'ingest',
      handler: async (context) => {
        const service = activeFxFeed()
        if (service === null) throw new ApiError('fx_feed_unavailable', 'The FX feed is not available on this node')
        let days
        try {
          days = await service.fetchLatest()
        } catch (error) {
          if (error instanceof FxFeedError) throw new ApiError('fx_feed_unavailable', `FX feed: ${error.message}`)
          throw error
        }
        const applied = await applyFeed(context.tenant, days, context.actor, context.nowMs)
        return { status: 200, body: { as_of: formatInstant(applied.asOf), count: applied.count } }
      },
    }),
    route<undefined, typeof CurrenciesQuery.static>({
      method: 'GET',
      path: '/fx/currencies',
      operationId: 'listFxCurrencies',
      summary: 'Currencies of the latest feed date held (on or before asOf), EUR included',
      tag: 'fx',
      query: CurrenciesQuery,
      response: FxCurrenciesResponse,
      dimension: 'query',
      handler: (context) => {
        const feed = latestFeedCurrencies(context.tenant.catalog, readInstant(context))
        const asOf = feed.asOf === null ? null : formatInstant(feed.asOf)
        return { status: 200, body: { as_of: asOf, currencies: feed.currencies } }
      },
    }),
  ]
}
