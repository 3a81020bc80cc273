/**
 * The write layer's use cases (tenant/writes/) on a real TenantRuntime over LMDB in a temporary
 * directory, without HTTP: each item answers its own outcome (a refused item's status, path and
 * message, the others written), later items of a batch plan against earlier ones (dedup, quotas),
 * and the unit of work stores the applied prefix when planning fails part-way, as a reload shows.
 */
import t, { type Test } from 'tap'
import { createLogger } from '../../platform/log.js'
import { SystemStore, type TenantRecord } from '../../storage/system-store.js'
import { TenantRegistry, type TenantRuntime } from '../../tenant/runtime.js'
import { writeArticles } from '../../tenant/writes/articles.js'
import { applyChange } from '../../tenant/writes/catalog.js'
import { applyBatch, invalid, Refusal, type ItemOutcome } from '../../tenant/writes/core.js'
import { deletePrices, writePrices } from '../../tenant/writes/prices.js'
import { temporaryDir } from '../helpers/store-fixtures.js'

const nowMs = Date.parse('2026-01-01T00:00:00Z')
const context = { nowMs, actor: 'tester' }

/** A tenant runtime on its own data directory; `reopen` closes it and loads a fresh one from disk. */
async function openTenant(t: Test, limits: TenantRecord['limits'] = {}) {
  const dataDir = temporaryDir(t, 'writes')
  const system = new SystemStore(`${dataDir}/system`)
  const record: TenantRecord = {
    slug: 'acme',
    tier: 'standard',
    region: 'eu',
    status: 'active',
    owner_email: null,
    limits,
    created_at: nowMs,
    updated_at: nowMs,
  }
  const open = async (): Promise<{ registry: TenantRegistry; tenant: TenantRuntime }> => {
    const registry = new TenantRegistry({ system, dataDir, logger: createLogger('silent'), now: () => nowMs })
    const tenant = registry.open(record, nowMs)
    await tenant.loadGradually()
    return { registry, tenant }
  }
  let current = await open()
  t.teardown(async () => {
    await current.registry.close()
    await system.close()
  })
  return {
    get tenant() {
      return current.tenant
    },
    async reopen(): Promise<TenantRuntime> {
      await current.registry.close()
      current = await open()
      return current.tenant
    },
  }
}

const statuses = (outcomes: readonly ItemOutcome[]): string[] => outcomes.map((outcome) => outcome.status)

t.test('each price item answers its own outcome; refused items carry their path and message', async (t) => {
  const { tenant } = await openTenant(t)
  const shape = new Refusal({ status: 'validation_failed', message: '/sku: expected string' })
  const outcomes = await writePrices(tenant, context, [
    { sku: 'A', pricelist: 'retail', price: 10.5 },
    shape,
    { sku: 'B', pricelist: 'retail', price: 'ten' },
    {
      sku: 'C',
      pricelist: 'retail',
      price: 1,
      quantity_breaks: [{ quantity_break: 5, fixed_price: 1, percent_of_base: 5 }],
    },
    { sku: 'D', pricelist: 'retail', price: { sales: 2, fields: { cost: 1.25 } } },
  ])
  t.same(statuses(outcomes), ['applied', 'validation_failed', 'validation_failed', 'validation_failed', 'applied'])
  t.equal(outcomes[1], shape, 'a refusal of the shape passes through in its place')
  const amount = outcomes[2] as Refusal
  t.equal(amount.path, '/price/sales')
  t.equal(amount.message, '/price/sales: must be a decimal number (at most ±100000000000)')
  t.equal(amount.problem, 'must be a decimal number (at most ±100000000000)')
  t.equal((outcomes[3] as Refusal).path, '/quantity_breaks/0')
  t.equal(tenant.prices.versions('retail', 'A')[0]!.content!.sales, 105_000)
  t.same(tenant.prices.versions('retail', 'D')[0]!.content!.fields, { cost: 12_500 })
  t.equal(tenant.prices.versions('retail', 'B').length, 0, 'a refused item changes nothing')
})

t.test('later items plan against earlier ones: dedup and quotas count the batch so far', async (t) => {
  const { tenant } = await openTenant(t, { articles: 2, prices: 1 })
  const prices = await writePrices(tenant, context, [
    { sku: 'A', pricelist: 'retail', price: 3 },
    { sku: 'A', pricelist: 'retail', price: 3 },
    { sku: 'B', pricelist: 'retail', price: 4 },
  ])
  t.same(statuses(prices), ['applied', 'unchanged', 'quota_exceeded'])
  t.equal((prices[2] as Refusal).message, 'The plan allows 1 prices; 1 exist')
  const articles = await writeArticles(tenant, context, [
    { sku: 'X' },
    { sku: 'Y', name: 'y' },
    { sku: 'X', name: 'x' },
    { sku: 'Z' },
  ])
  t.same(
    statuses(articles),
    ['applied', 'applied', 'applied', 'quota_exceeded'],
    'rewriting a live article is no new one',
  )
  t.equal((articles[3] as Refusal).limit, 2)
  t.equal(tenant.catalog.get('article', 'X', nowMs)?.name, 'x')
})

t.test('a delete of a pair without a price is refused as not_found', async (t) => {
  const { tenant } = await openTenant(t)
  await writePrices(tenant, context, [{ sku: 'A', pricelist: 'retail', price: 3 }])
  const outcomes = await deletePrices(tenant, context, [
    { sku: 'A', pricelist: 'retail' },
    { sku: 'B', pricelist: 'retail' },
  ])
  t.same(statuses(outcomes), ['applied', 'not_found'])
  t.equal((outcomes[1] as Refusal).message, 'No price for B on retail at 2026-01-01T00:00:00.000Z')
  t.equal(tenant.prices.versions('retail', 'A').at(-1)!.content, null)
})

t.test('the unit of work stores what was applied before an unexpected error, then rethrows', async (t) => {
  const fixture = await openTenant(t)
  const tenant = fixture.tenant
  const boom = new Error('planner bug')
  const writer = {
    plan: (sku: string) => {
      if (sku === 'C') throw boom
      return tenant.catalog.plan('article', sku, { name: sku, type: null, metadata: {} }, nowMs, nowMs, 'tester')
    },
    quota: () => null,
    apply: (change: Parameters<typeof applyChange>[1], applied: Parameters<typeof applyChange>[2]) =>
      applyChange(tenant, change, applied),
  }
  await t.rejects(applyBatch(tenant, ['A', invalid('/sku', 'bad'), 'B', 'C', 'D'], writer), boom)
  const reloaded = await fixture.reopen()
  t.same(
    [...reloaded.catalog.keys('article')].sort(),
    ['A', 'B'],
    'the items before the failure are on disk, the rest nowhere',
  )
})

t.test('a tenant being restored refuses the unit of work before planning', async (t) => {
  const { tenant } = await openTenant(t)
  tenant.beginRestore('backup-1')
  await t.rejects(writePrices(tenant, context, [{ sku: 'A', pricelist: 'retail', price: 3 }]), { code: 'restoring' })
  t.equal(tenant.prices.versions('retail', 'A').length, 0)
})

t.test('a replica refuses the unit of work before memory changes', async (t) => {
  const { tenant } = await openTenant(t)
  tenant.becomeReplica()
  await t.rejects(writePrices(tenant, context, [{ sku: 'A', pricelist: 'retail', price: 3 }]), /is a replica here/)
  t.equal(tenant.prices.versions('retail', 'A').length, 0)
  tenant.becomeHome(null)
})
