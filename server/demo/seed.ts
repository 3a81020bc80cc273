/**
 * Seeds the demo tenant on first start: the tenant, an API key and the catalogue of ./catalogue.ts,
 * written by the same use cases as the API's writes (tenant/writes/) in one unit of work,
 * so that the changelog records every entity (changed by `system`).
 * @module
 */
import type { AppDeps } from '../../http/contracts.js'
import { compositeKey } from '../../engine/catalog.js'
import { assert } from '../../engine/assert.js'
import { compileRules } from '../../engine/rules.js'
import { applyStoredFeed } from '../../tenant/fx-feed.js'
import { createKey, createTenantRecord } from '../../accounts/provision.js'
import type { AppliedWrites, TenantRuntime } from '../../tenant/runtime.js'
import { articleWriter } from '../../tenant/writes/articles.js'
import { applyChange } from '../../tenant/writes/catalog.js'
import { applyItems, type WriteContext } from '../../tenant/writes/core.js'
import { priceWriter, type PriceInput } from '../../tenant/writes/prices.js'
import { demoArticles, demoCampaign, demoCurrencies, demoPricelists, demoSlug, demoTaxAreas, demoVatClasses, type DemoPrice } from './catalogue.js'

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
  const record = await createTenantRecord(deps.system, { slug: demoSlug, tier: 'standard', region, owner_email: demoOwnerEmail }, nowMs)
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
    assert(outcomes.every((outcome) => outcome.status === 'applied'), 'demo seed: a price planned no change')
  })
  return { slug: demoSlug, clientId: key.client_id, clientSecret }
}

/**
 * Plans and applies the reference data, articles (through the article write use case) and pricelists
 * in the unit of work `applied`.
 */
function planCatalogue(runtime: TenantRuntime, context: WriteContext, applied: AppliedWrites): void {
  const catalog = runtime.catalog
  const plan = (...args: Parameters<typeof catalog.plan>): void => {
    const change = catalog.plan(...args)
    // An empty tenant: every write is new.
    assert(change !== null, 'demo seed: an entity planned no change')
    applyChange(runtime, change, applied)
  }
  const articles = articleWriter(runtime, context)
  const nowMs = context.nowMs
  for (const currency of demoCurrencies) {
    plan('currency', currency.code, { is_active: true, vat_precision: currency.vat_precision }, nowMs, nowMs, seedActor)
  }
  for (const vatClass of demoVatClasses) {
    plan('vat_class', vatClass.code, { name: vatClass.name, description: vatClass.description }, nowMs, nowMs, seedActor)
  }
  for (const area of demoTaxAreas) {
    plan('tax_area', area.code, { name: area.name, is_active: true, valid_from: null, valid_to: null }, nowMs, nowMs, seedActor)
    for (const [vatClass, rate] of Object.entries(area.rates)) {
      plan('vat_rate', compositeKey(area.code, vatClass), { rate }, nowMs, nowMs, seedActor)
    }
  }
  for (const article of demoArticles) {
    const input = { sku: article.sku, name: article.name, type: article.type, metadata: article.metadata }
    const [outcome] = applyItems([input], articles, applied)
    assert(outcome!.status === 'applied', 'demo seed: an article planned no change')
    for (const area of demoTaxAreas) {
      plan('article_taxclass', compositeKey(article.sku, area.code), { vat_class_code: article.vatClass }, nowMs, nowMs, seedActor)
    }
  }
  for (const { code, ...pricelist } of demoPricelists) {
    plan('pricelist', code, { ...pricelist, parent_code: null, start_date: null, end_date: null, price_rules: [] }, nowMs, nowMs, seedActor)
  }
  const { code, campaignDays, ...campaign } = demoCampaign
  const rules = campaign.price_rules.map((rule) => ({ ...rule, updated_by: seedActor }))
  // As the API does on a pricelist write: a rule that does not compile is refused.
  compileRules(rules)
  plan('pricelist', code, {
    ...campaign,
    vat_mode: null,
    start_date: nowMs,
    end_date: nowMs + campaignDays * dayMs,
    price_rules: rules,
  }, nowMs, nowMs, seedActor)
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
