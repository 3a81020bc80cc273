/**
 * Seeds the demo tenant on first start: the tenant, an API key and the catalogue of ./catalogue.ts,
 * planned by the same catalogue and price planners as the API's writes and stored in one commit,
 * so that the changelog records every entity (changed by `system`).
 * @module
 */
import type { AppDeps } from '../../http/contracts.js'
import { compositeKey, type Change } from '../../engine/catalog.js'
import { planPriceWrite, priceContentHash } from '../../engine/prices.js'
import { compileRules } from '../../engine/rules.js'
import type { PriceChange } from '../../storage/tenant-store.js'
import { applyStoredFeed } from '../../tenant/fx-feed.js'
import { createKey, createTenantRecord } from '../../accounts/provision.js'
import { parseContent } from '../../http/routes/price-writes.js'
import type { TenantRuntime } from '../../tenant/runtime.js'
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
  const changes = planCatalogue(runtime, nowMs)
  const prices = planPrices(runtime, nowMs)
  await runtime.commit(changes, [], prices, { applied: true })
  return { slug: demoSlug, clientId: key.client_id, clientSecret }
}

/** Plans and applies the reference data, articles and pricelists; answers the changes to store. */
function planCatalogue(runtime: TenantRuntime, nowMs: number): Change[] {
  const catalog = runtime.catalog
  const changes: Change[] = []
  const plan = (...args: Parameters<typeof catalog.plan>): void => {
    const change = catalog.plan(...args)
    // An empty tenant: every write is new.
    if (change === null) throw new Error(`demo seed: ${args[0]} ${args[1]} planned no change`)
    catalog.apply(change.type, change.key, change.versions)
    changes.push(change)
  }
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
    plan('article', article.sku, { name: article.name, type: article.type, metadata: article.metadata }, nowMs, nowMs, seedActor)
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
  return changes
}

/** Plans and applies a price per article on each base pricelist; answers the changes to store. */
function planPrices(runtime: TenantRuntime, nowMs: number): PriceChange[] {
  const changes: PriceChange[] = []
  for (const article of demoArticles) {
    for (const [pricelist, price] of Object.entries(article.prices)) {
      const content = parseContent(priceBody(price))
      const version = { from: nowMs, content, writtenAt: nowMs, writtenBy: seedActor }
      const planned = planPriceWrite(runtime.prices.versions(pricelist, article.sku), version, { removeLater: false, force: false })
      if (planned === null) throw new Error(`demo seed: price ${article.sku}/${pricelist} planned no change`)
      runtime.prices.apply(pricelist, article.sku, planned.versions)
      changes.push({
        pricelist,
        sku: article.sku,
        versions: planned.versions,
        changeType: planned.changeType,
        hash: priceContentHash(content),
        at: nowMs,
        by: seedActor,
      })
    }
  }
  return changes
}

function priceBody(price: DemoPrice): Exclude<DemoPrice, number> {
  return typeof price === 'number' ? { price } : price
}
