/**
 * Effective-price events against the real server (issue 30, point 3): with
 * `effective_price.events.enabled`, the changelog records an `effective_price` event for each
 * (SKU, pricelist, tax area) whose single read changes, at its moment: 1,000 prices scheduled for T
 * give exactly 1,000 events, none before T, all within 2 s after it; a parent's price change in a
 * three-level tree reaches exactly the descendants that inherit it; a VAT rate scheduled for T'
 * gives one event per SKU of its class on each list; a rule change gives one summary per list; a
 * server killed across a moment records its events once at the next start, and a restore's
 * scheduled versions give theirs; a webhook filtered to `effective_price` receives them at their
 * moment. SKUs are mapped to VAT
 * classes in SE only, so DE reads are unavailable and give no events.
 */
import t from 'tap'
import { eventsOf, readChangelog, type ChangelogEntry } from '../helpers/changelog.js'
import { startHttpsReceiver, testCertificate } from '../helpers/https-receiver.js'
import { expectStatus, mapSkus, putPricelist, putSetting, setupReference } from '../helpers/price-fixtures.js'
import { startServer, type TenantClient } from '../helpers/server.js'

interface EffectiveEvent extends ChangelogEntry {
  tax_area: string
  currency_code: string
  old: { net: number; gross: number } | null
  new: { net: number; gross: number } | null
  effective_at: string
  cause: string
  summary?: boolean
  count?: number
  diff?: Record<string, unknown>
}

const { caPath } = await testCertificate()
const server = await startServer({
  env: { NODE_EXTRA_CA_CERTS: caPath, PRICING_WEBHOOK_ALLOW_PRIVATE: 'true', PRICING_WEBHOOK_BATCH_MS: '200' },
})
t.teardown(() => server.dispose())
const shop = await server.tenant('events-shop', { tier: 'enterprise' })
await setupReference(shop)
await putSetting(shop, 'effective_price.events.enabled', 'true')
for (const [code, body] of [
  ['RETAIL', { currency_code: 'EUR', vat_mode: 'GROSS' }],
  ['CHILD', { currency_code: 'EUR', parent_code: 'RETAIL' }],
  ['GRAND', { currency_code: 'EUR', parent_code: 'CHILD' }],
  ['SCHED', { currency_code: 'EUR', vat_mode: 'GROSS' }],
  ['NETL', { currency_code: 'EUR', vat_mode: 'NET' }],
  ['RULES', { currency_code: 'EUR', vat_mode: 'GROSS' }],
] as const)
  await putPricelist(shop, code, body)

async function events(client: TenantClient = shop): Promise<EffectiveEvent[]> {
  return (await readChangelog(client, 'entity_type=effective_price&limit=1000')) as EffectiveEvent[]
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
/** An instant as the API writes it (whole seconds without milliseconds). */
const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z')
async function batch(client: TenantClient, items: Record<string, unknown>[]): Promise<void> {
  const answer = await expectStatus(client.call('POST', '/price/batch', items), 202, 'batch')
  if (answer.body.failed.length > 0) throw new Error(`batch: ${JSON.stringify(answer.body.failed)}`)
}

t.test('1,000 prices scheduled for T: exactly 1,000 events, none before T, all within 2 s after', async (t) => {
  const skus = Array.from({ length: 1000 }, (_, index) => `S-${String(index).padStart(4, '0')}`)
  await mapSkus(shop, 'standard', skus, ['SE'])
  const before = (await events()).length
  const at = Math.ceil((Date.now() + 3000) / 1000) * 1000
  await batch(
    shop,
    skus.map((sku, index) => ({ sku, pricelist: 'SCHED', price: 10 + index, start_date: iso(at) })),
  )
  await sleep(at - 400 - Date.now())
  t.equal((await events()).length, before, 'none 400 ms before T')
  let reachedAt = Number.NaN
  let scheduled: EffectiveEvent[] = []
  while (Date.now() < at + 5000) {
    scheduled = (await events()).slice(before)
    if (scheduled.length >= 1000) {
      reachedAt = Date.now()
      break
    }
    await sleep(50)
  }
  t.equal(scheduled.length, 1000, 'exactly 1,000 events')
  t.ok(reachedAt - at <= 2000, `all recorded ${reachedAt - at} ms after T (at most 2,000)`)
  t.same(
    new Set(scheduled.map((event) => `${event.entity_code}/${event.composite_key}/${event.tax_area}`)).size,
    1000,
    'one per SKU, on SCHED in SE',
  )
  const first = scheduled.find((event) => event.entity_code === 'S-0005')!
  t.same(
    [first.change_type, first.old, first.new, first.effective_at, first.changed_at, first.cause, first.currency_code],
    ['created', null, { net: 12, gross: 15 }, iso(at), iso(at), 'scheduled_start', 'EUR'],
    'no price before; 15 gross (12 net at 25%) from T; its cause',
  )
  t.ok(
    scheduled.every((event) => event.effective_at === iso(at) && event.cause === 'scheduled_start'),
    'every one at T',
  )
  await sleep(600)
  t.equal((await events()).length, before + 1000, 'and no more after')
})

t.test("a parent's price reaches exactly the descendants that inherit it", async (t) => {
  await mapSkus(shop, 'standard', ['P-ALL', 'P-CHILD', 'P-GRAND'], ['SE'])
  await batch(shop, [
    { sku: 'P-ALL', pricelist: 'RETAIL', price: 100 },
    { sku: 'P-CHILD', pricelist: 'RETAIL', price: 100 },
    { sku: 'P-CHILD', pricelist: 'CHILD', price: 90 },
    { sku: 'P-GRAND', pricelist: 'RETAIL', price: 100 },
    { sku: 'P-GRAND', pricelist: 'GRAND', price: 80 },
  ])
  await sleep(500)
  const before = (await events()).length
  await batch(
    shop,
    ['P-ALL', 'P-CHILD', 'P-GRAND'].map((sku) => ({ sku, pricelist: 'RETAIL', price: 120 })),
  )
  await sleep(800)
  const moved = (await events()).slice(before)
  t.same(
    moved
      .map((event) => [event.entity_code, event.composite_key, event.cause, event.old?.gross, event.new?.gross])
      .sort(),
    [
      ['P-ALL', 'CHILD', 'parent_changed', 100, 120],
      ['P-ALL', 'GRAND', 'parent_changed', 100, 120],
      ['P-ALL', 'RETAIL', 'written', 100, 120],
      ['P-CHILD', 'RETAIL', 'written', 100, 120],
      ['P-GRAND', 'CHILD', 'parent_changed', 100, 120],
      ['P-GRAND', 'RETAIL', 'written', 100, 120],
    ],
    'CHILD and GRAND where they inherit; not where they have their own price',
  )
  t.ok(
    moved.filter((event) => event.cause === 'written').every((event) => event.changed_by === shop.clientId),
    'a written change names its writer',
  )
  // The same price again: nothing is stored, so nothing moves.
  await batch(shop, [{ sku: 'P-ALL', pricelist: 'RETAIL', price: 120 }])
  await sleep(600)
  t.equal((await events()).length, before + moved.length, 'no event when the amount is unchanged')
})

t.test("a VAT rate scheduled for T': one event per SKU of its class on each list", async (t) => {
  const skus = ['V-1', 'V-2', 'V-3']
  await mapSkus(shop, 'reduced', skus, ['SE'])
  await batch(shop, [
    ...skus.map((sku) => ({ sku, pricelist: 'SCHED', price: 112 })),
    ...skus.map((sku) => ({ sku, pricelist: 'NETL', price: 100 })),
  ])
  await sleep(500)
  const before = (await events()).length
  const at = Math.ceil((Date.now() + 2000) / 1000) * 1000
  await expectStatus(
    shop.call('POST', '/vat/rate', { tax_area_code: 'SE', vat_class_code: 'reduced', rate: 6, start_date: iso(at) }),
    202,
    'scheduled rate',
  )
  await sleep(at + 1500 - Date.now())
  const moved = (await events()).slice(before)
  t.same(
    moved.map((event) => [event.entity_code, event.composite_key, event.old, event.new]).sort(),
    [
      ['V-1', 'NETL', { net: 100, gross: 112 }, { net: 100, gross: 106 }],
      ['V-1', 'SCHED', { net: 100, gross: 112 }, { net: 105.66, gross: 112 }],
      ['V-2', 'NETL', { net: 100, gross: 112 }, { net: 100, gross: 106 }],
      ['V-2', 'SCHED', { net: 100, gross: 112 }, { net: 105.66, gross: 112 }],
      ['V-3', 'NETL', { net: 100, gross: 112 }, { net: 100, gross: 106 }],
      ['V-3', 'SCHED', { net: 100, gross: 112 }, { net: 105.66, gross: 112 }],
    ],
    'the GROSS list keeps its gross (the net moves), the NET list its net',
  )
  t.ok(
    moved.every((event) => event.cause === 'vat_rate_started' && event.effective_at === iso(at)),
    "each at T', cause vat_rate_started",
  )
})

t.test('a rule on a list: one summary per tax area, with the diff that pages its SKUs', async (t) => {
  const skus = ['R-1', 'R-2', 'R-3']
  await mapSkus(shop, 'standard', skus, ['SE'])
  await batch(
    shop,
    skus.map((sku) => ({ sku, pricelist: 'RULES', price: 100 })),
  )
  await sleep(500)
  const before = (await events()).length
  await putPricelist(shop, 'RULES', {
    currency_code: 'EUR',
    vat_mode: 'GROSS',
    price_rules: [{ expression: 'sales * 0.5' }],
  })
  await sleep(800)
  const moved = (await events()).slice(before)
  t.equal(moved.length, 1, 'one event')
  const summary = moved[0]!
  t.same(
    [summary.entity_code, summary.composite_key, summary.summary, summary.count, summary.cause, summary.tax_area],
    ['RULES', null, true, 3, 'rule_changed', 'SE'],
  )
  // The diff pages over every priced SKU (the answer's items are those of the page that changed).
  const changed: string[] = []
  let cursor: string | null | undefined
  let pages = 0
  do {
    const body = { ...summary.diff, limit: 500, ...(cursor === undefined ? {} : { cursor }) }
    const page = await expectStatus(shop.call('POST', '/price/diff', body), 200, 'diff')
    changed.push(...page.body.items.map((item: { sku: string }) => item.sku))
    cursor = page.body.next_cursor
    pages++
  } while (cursor !== null && pages < 100)
  t.same(changed, skus, 'its diff pages exactly the SKUs it counted')
})

t.test('events off: none recorded', async (t) => {
  const quiet = await server.tenant('quiet-shop', { tier: 'enterprise' })
  await setupReference(quiet)
  await putPricelist(quiet, 'RETAIL', { currency_code: 'EUR', vat_mode: 'GROSS' })
  await mapSkus(quiet, 'standard', ['Q-1'], ['SE'])
  await batch(quiet, [{ sku: 'Q-1', pricelist: 'RETAIL', price: 10 }])
  await sleep(600)
  t.same(await events(quiet), [], 'nothing without effective_price.events.enabled')
})

t.test('a server killed across a moment records its events once at the next start', async (t) => {
  const skus = ['K-1', 'K-2', 'K-3', 'K-4']
  await mapSkus(shop, 'standard', skus, ['SE'])
  const before = await events()
  const at = Math.ceil((Date.now() + 2500) / 1000) * 1000
  await batch(
    shop,
    skus.map((sku) => ({ sku, pricelist: 'SCHED', price: 50, start_date: iso(at) })),
  )
  await server.kill()
  await sleep(at + 500 - Date.now())
  await server.start()
  await shop.refreshToken()
  await sleep(1000)
  const after = (await events()).slice(before.length)
  t.same(
    after.map((event) => [event.entity_code, event.effective_at, event.new?.gross]).sort(),
    skus.map((sku) => [sku, iso(at), 50]),
    'each event of the moment, once',
  )
  const hashes = new Set([...before, ...after].map((event) => event.content_hash))
  t.equal(hashes.size, before.length + after.length, 'no event recorded twice')
  await server.restart()
  await shop.refreshToken()
  await sleep(800)
  t.equal((await events()).length, before.length + after.length, 'a clean restart records none again')
})

t.test('a webhook filtered to effective_price receives each event at its moment, and nothing else', async (t) => {
  const receiver = await startHttpsReceiver()
  t.teardown(() => receiver.close())
  await putSetting(shop, 'change.events.enabled', 'true')
  t.teardown(() => putSetting(shop, 'change.events.enabled', 'false'))
  const hook = await shop.call('POST', '/webhooks', {
    url: `${receiver.url}/effective`,
    entity_type_filter: 'effective_price',
  })
  t.equal(hook.status, 201)
  t.teardown(() => shop.call('DELETE', `/webhooks/${hook.body.id}`))
  const skus = ['W-1', 'W-2', 'W-3']
  await mapSkus(shop, 'standard', skus, ['SE'])
  const at = Math.ceil((Date.now() + 2000) / 1000) * 1000
  await batch(
    shop,
    skus.map((sku) => ({ sku, pricelist: 'SCHED', price: 20, start_date: iso(at) })),
  )
  const requests = await receiver.waitFor((received) => eventsOf(received).length >= 3, 10_000)
  const received = Date.now()
  const delivered = eventsOf(requests) as EffectiveEvent[]
  t.same(
    delivered.map((event) => [event.entity_type, event.entity_code, event.effective_at, event.new?.gross]).sort(),
    skus.map((sku) => ['effective_price', sku, iso(at), 20]),
    'the three events, and not the price writes that scheduled them',
  )
  t.ok(received - at < 2000, `delivered ${received - at} ms after the moment`)
})

t.test('a whole list: its summary to a webhook, its SKUs one by one to one that asks for them', async (t) => {
  const summaries = await startHttpsReceiver()
  const each = await startHttpsReceiver()
  t.teardown(() => summaries.close())
  t.teardown(() => each.close())
  await putSetting(shop, 'change.events.enabled', 'true')
  t.teardown(() => putSetting(shop, 'change.events.enabled', 'false'))
  const register = async (url: string, perSku: boolean) => {
    const body = { url, entity_type_filter: 'effective_price', ...(perSku ? { effective_price_per_sku: true } : {}) }
    const created = await expectStatus(shop.call('POST', '/webhooks', body), 201, 'webhook')
    t.equal(created.body.effective_price_per_sku, perSku, 'the webhook says which it takes')
    t.teardown(() => shop.call('DELETE', `/webhooks/${created.body.id}`))
  }
  await register(`${summaries.url}/summaries`, false)
  await register(`${each.url}/each`, true)
  await putPricelist(shop, 'RULES', {
    currency_code: 'EUR',
    vat_mode: 'GROSS',
    price_rules: [{ expression: 'sales * 0.25' }],
  })
  const perSku = eventsOf(await each.waitFor((received) => eventsOf(received).length >= 3, 10_000)) as EffectiveEvent[]
  const summary = eventsOf(
    await summaries.waitFor((received) => eventsOf(received).length >= 1, 10_000),
  ) as EffectiveEvent[]
  await sleep(600)
  t.same(
    eventsOf(summaries.requests).map((event: any) => [event.entity_code, event.summary, event.count]),
    [['RULES', true, 3]],
    'the summary webhook: one summary, no SKU',
  )
  t.same(summary.length, 1)
  t.same(
    (eventsOf(each.requests) as EffectiveEvent[])
      .map((event: any) => [
        event.entity_code,
        event.composite_key,
        event.in_summary,
        event.cause,
        event.old?.gross,
        event.new?.gross,
      ])
      .sort(),
    [
      ['R-1', 'RULES', true, 'rule_changed', 50, 25],
      ['R-2', 'RULES', true, 'rule_changed', 50, 25],
      ['R-3', 'RULES', true, 'rule_changed', 50, 25],
    ],
    'the per-SKU webhook: each SKU (50 -> 25 gross), no summary',
  )
  t.equal(perSku.length, 3)
})

t.test("after a restore, the restored data's scheduled versions give their events", async (t) => {
  const skus = ['B-1', 'B-2']
  await mapSkus(shop, 'standard', skus, ['SE'])
  const at = Math.ceil((Date.now() + 10_000) / 1000) * 1000
  await batch(
    shop,
    skus.map((sku) => ({ sku, pricelist: 'SCHED', price: 30, start_date: iso(at) })),
  )
  const backup = await expectStatus(server.admin('POST', '/admin/tenants/events-shop/backups', {}), 201, 'backup')
  // The scheduled versions removed, and the server restarted: its moments are scanned without them.
  await batch(
    shop,
    skus.map((sku) => ({ sku, pricelist: 'SCHED', price: 31, remove_future_changes: true })),
  )
  // Their own events recorded first (31 from now), so that nothing of them comes later.
  const recorded = () =>
    events().then((all) => all.filter((event) => skus.includes(event.entity_code) && event.new?.gross === 31).length)
  for (let waited = 0; (await recorded()) < 2 && waited < 5000; waited += 100) await sleep(100)
  t.equal(await recorded(), 2, 'the events of the write that removed the schedule')
  await server.restart()
  await shop.refreshToken()
  const before = await events()
  await expectStatus(
    server.admin('POST', '/admin/tenants/events-shop/restore', { backup_id: backup.body.id }),
    202,
    'restore',
  )
  let status = await server.admin('GET', '/admin/tenants/events-shop/restore/status')
  while (status.body.status === 'in_progress')
    status = await server.admin('GET', '/admin/tenants/events-shop/restore/status')
  t.equal(status.body.status, 'completed')
  t.ok(Date.now() < at - 1000, 'restored before the moment')
  await sleep(at + 1000 - Date.now())
  const after = (await events()).slice(before.length)
  t.same(
    after.map((event) => [event.entity_code, event.effective_at, event.old, event.new?.gross]).sort(),
    skus.map((sku) => [sku, iso(at), null, 30]),
    'the restored schedule fires: no price before, 30 from the moment',
  )
})
