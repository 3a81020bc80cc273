/**
 * The demo tenant provisioned on first start: a key and a little sample catalogue, written through
 * the same catalogue and storage paths as the API.
 * @module
 */
import type { Change } from '../engine/catalog.js'
import type { AppDeps } from './app.js'
import { applyStoredFeed } from './fx-feed.js'
import { createKey, createTenantRecord } from './provision.js'

export async function seedDemoTenant(
  deps: AppDeps,
  nowMs: number,
): Promise<{ slug: string; clientId: string; clientSecret: string }> {
  const record = await createTenantRecord(deps.system, { slug: 'demo', tier: 'standard', region: deps.config.region.split(',')[0]! }, nowMs)
  const runtime = deps.tenants.open(record, nowMs)
  runtime.load()
  await applyStoredFeed(deps.system, runtime, nowMs)
  const { record: key, clientSecret } = await createKey(deps.system, 'demo', 'demo', nowMs)
  const catalog = runtime.catalog
  const by = 'system'
  const changes: (Change | null)[] = []
  const plan = (...args: Parameters<typeof catalog.plan>): void => {
    const change = catalog.plan(...args)
    if (change !== null) catalog.apply(change.type, change.key, change.versions)
    changes.push(change)
  }
  plan('currency', 'SEK', { is_active: true, vat_precision: 2 }, nowMs, nowMs, by)
  plan('currency', 'EUR', { is_active: true, vat_precision: 2 }, nowMs, nowMs, by)
  plan('tax_area', 'SE', { name: 'Sweden', is_active: true, valid_from: null, valid_to: null }, nowMs, nowMs, by)
  plan('vat_class', 'standard', { name: 'Standard rate', description: null }, nowMs, nowMs, by)
  plan('vat_class', 'reduced', { name: 'Reduced rate (food)', description: null }, nowMs, nowMs, by)
  plan('vat_rate', 'SE\u0001standard', { rate: '25' }, nowMs, nowMs, by)
  plan('vat_rate', 'SE\u0001reduced', { rate: '12' }, nowMs, nowMs, by)
  const articles: [string, string, string, string][] = [
    ['COFFEE-500', 'Coffee beans 500 g', 'food', 'reduced'],
    ['MUG-01', 'Ceramic mug', 'kitchen', 'standard'],
    ['KETTLE-2L', 'Electric kettle 2 l', 'kitchen', 'standard'],
  ]
  for (const [sku, name, type, vatClass] of articles) {
    plan('article', sku, { name, type, metadata: { brand: ['Demo'] } }, nowMs, nowMs, by)
    plan('article_taxclass', `${sku}\u0001SE`, { vat_class_code: vatClass }, nowMs, nowMs, by)
  }
  plan('pricelist', 'retail-se', {
    currency_code: 'SEK', vat_mode: 'GROSS', name: 'Retail Sweden', description: 'Consumer prices incl. VAT',
    parent_code: null, start_date: null, end_date: null, metadata: { channel: ['web', 'store'] }, price_rules: [],
  }, nowMs, nowMs, by)
  await runtime.commit(changes.filter((change): change is Change => change !== null))
  return { slug: 'demo', clientId: key.client_id, clientSecret }
}
