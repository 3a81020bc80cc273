/**
 * Seeds the demo tenant on first start: the tenant, an API key and the catalogue of ./catalogue.ts,
 * written by the same use cases as the API's writes (tenant/writes/) in one unit of work,
 * so that the changelog records every entity (changed by `system`).
 * @module
 */
import type { AppDeps } from '../../http/contracts.js'
import { assert } from '../../engine/assert.js'
import { compileRules } from '../../engine/rules.js'
import { applyStoredFeed } from '../../tenant/fx-feed.js'
import { createKey, createTenantRecord } from '../../accounts/provision.js'
import type { AppliedWrites, TenantRuntime } from '../../tenant/runtime.js'
import { articleWriter } from '../../tenant/writes/articles.js'
import { applyChange } from '../../tenant/writes/catalog.js'
import { applyItems, type EntityWriter, type WriteContext } from '../../tenant/writes/core.js'
import {
  currencyWriter,
  mappingWriter,
  taxAreaWriter,
  vatClassWriter,
  vatRateWriter,
} from '../../tenant/writes/reference.js'
import { priceWriter, type PriceInput } from '../../tenant/writes/prices.js'
import {
  demoArticles,
  demoCampaign,
  demoCurrencies,
  demoPricelists,
  demoSlug,
  demoTaxAreas,
  demoVatClasses,
  type DemoPrice,
} from './catalogue.js'

/** The writer recorded as `updated_by` and the changelog's `changed_by`. */
const seedActor = 'system'
const dayMs = 86_400_000

export interface DemoTenant {
  readonly slug: string
  readonly clientId: string
  readonly clientSecret: string
}

/** The demo tenant's owner: a sign-in link for this address goes to the outbox at the first start. */
export const demoOwnerEmail = 'owner@demo.example'

export async function seedDemoTenant(deps: AppDeps, nowMs: number): Promise<DemoTenant> {
  const region = deps.config.region.split(',')[0]!
  const record = await createTenantRecord(
    deps.system,
    { slug: demoSlug, tier: 'standard', region, owner_email: demoOwnerEmail },
    nowMs,
  )
  const runtime = deps.tenants.open(record, nowMs)
  runtime.load()
  await applyStoredFeed(deps.system, runtime, nowMs)
  const { record: key, clientSecret } = await createKey(deps.system, demoSlug, 'demo', nowMs)
  const context = { nowMs, actor: seedActor }
  // One unit of work, so one commit: the catalogue first, then the prices that name it.
  await runtime.write((applied) => {
    planCatalogue(runtime, context, applied)
    const outcomes = applyItems(demoPriceInputs(), priceWriter(runtime, context), applied)
    // An empty tenant: every price is new.
    assert(
      outcomes.every((outcome) => outcome.status === 'applied'),
      'demo seed: a price planned no change',
    )
  })
  return { slug: demoSlug, clientId: key.client_id, clientSecret }
}

/**
 * Plans and applies the reference data and articles through their write use cases' writers, and
 * the pricelists, in the unit of work `applied`. The pricelists are planned directly, with their
 * values' fields in the order this seed has always stored them (the use case orders them otherwise,
 * and a fresh demo tenant keeps the same bytes on disk).
 */
function planCatalogue(runtime: TenantRuntime, context: WriteContext, applied: AppliedWrites): void {
  // An empty tenant: every write is new.
  const write = <Input>(writer: EntityWriter<Input, unknown>, input: Input): void => {
    const [outcome] = applyItems([input], writer, applied)
    assert(outcome!.status === 'applied', 'demo seed: an entity was not written')
  }
  const writers = {
    currency: currencyWriter(runtime, context),
    vatClass: vatClassWriter(runtime, context),
    taxArea: taxAreaWriter(runtime, context),
    vatRate: vatRateWriter(runtime, context),
    article: articleWriter(runtime, context),
    mapping: mappingWriter(runtime, context),
  }
  for (const { code, vat_precision } of demoCurrencies) write(writers.currency, { code, vat_precision })
  for (const vatClass of demoVatClasses) write(writers.vatClass, vatClass)
  for (const area of demoTaxAreas) {
    write(writers.taxArea, { code: area.code, name: area.name })
    for (const [vatClass, rate] of Object.entries(area.rates)) {
      write(writers.vatRate, { tax_area_code: area.code, vat_class_code: vatClass, rate })
    }
  }
  for (const article of demoArticles) {
    write(writers.article, { sku: article.sku, name: article.name, type: article.type, metadata: article.metadata })
    for (const area of demoTaxAreas) {
      write(writers.mapping, { sku_code: article.sku, tax_area_code: area.code, vat_class_code: article.vatClass })
    }
  }
  const catalog = runtime.catalog
  const nowMs = context.nowMs
  const plan = (...args: Parameters<typeof catalog.plan>): void => {
    const change = catalog.plan(...args)
    assert(change !== null, 'demo seed: a pricelist planned no change')
    applyChange(runtime, change, applied)
  }
  for (const { code, ...pricelist } of demoPricelists) {
    plan(
      'pricelist',
      code,
      { ...pricelist, parent_code: null, start_date: null, end_date: null, price_rules: [] },
      nowMs,
      nowMs,
      seedActor,
    )
  }
  const { code, campaignDays, ...campaign } = demoCampaign
  const rules = campaign.price_rules.map((rule) => ({ ...rule, updated_by: seedActor }))
  // As the API does on a pricelist write: a rule that does not compile is refused.
  compileRules(rules)
  plan(
    'pricelist',
    code,
    {
      ...campaign,
      vat_mode: null,
      start_date: nowMs,
      end_date: nowMs + campaignDays * dayMs,
      price_rules: rules,
    },
    nowMs,
    nowMs,
    seedActor,
  )
}

/** A price per article on each base pricelist, as the price write use case takes them. */
function demoPriceInputs(): PriceInput[] {
  const inputs: PriceInput[] = []
  for (const article of demoArticles) {
    for (const [pricelist, price] of Object.entries(article.prices)) {
      inputs.push({ sku: article.sku, pricelist, ...priceBody(price) })
    }
  }
  return inputs
}

function priceBody(price: DemoPrice): Exclude<DemoPrice, number> {
  return typeof price === 'number' ? { price } : price
}
