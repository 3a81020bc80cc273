/**
 * History retention against the real server (SPEC setting catalogue `retention.*`; issue 8):
 * - a plan without history retention refuses `retention.enabled=true` (403) and the operator's pass;
 * - `retention.max.versions`: each pair keeps that many versions, never fewer than the 3 most recent,
 *   and keeps the version in force and the one scheduled after it; reads of now and of the future
 *   answer as before, an as-of read before the oldest kept version answers 404;
 * - `retention.history.ms`: the versions that ended before the window go, the one in force at its
 *   start stays, so as-of reads inside the window answer as before and one before it 404;
 * - what a pass removed stays removed after a restart (it was written durably); the metric counts it;
 * - the automatic pass (`PRICING_RETENTION_INTERVAL_S`) thins a tenant without an operator.
 * Versions are written without a start date, so each takes the instant of its write (a past start
 * means now); rounds are 60 ms apart.
 */
import t from 'tap'
import { expectStatus } from '../helpers/price-fixtures.js'
import { retailReference } from '../helpers/retail-fixtures.js'
import { startServer, type TenantClient } from '../helpers/server.js'
import { suiteServer } from '../helpers/suite.js'

const { server } = await suiteServer({ env: { PRICING_RETENTION_INTERVAL_S: '0' } })

const skus = Array.from({ length: 50 }, (_, index) => `R-${index}`)
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** `rounds` versions of every SKU's RETAIL price (round r: 100 * (r + 1) + index); the instant after each round. */
async function writeRounds(client: TenantClient, rounds: number): Promise<number[]> {
  const after: number[] = []
  for (let round = 0; round < rounds; round++) {
    const items = skus.map((sku, index) => ({ sku, pricelist: 'RETAIL', price: 100 * (round + 1) + index }))
    await expectStatus(client.call('POST', '/price/batch', items), 202, `round ${round}`)
    after.push(Date.now())
    await sleep(60)
  }
  return after
}

async function versionCount(client: TenantClient, sku: string): Promise<number> {
  return (await expectStatus(client.get(`/price/history/RETAIL/${sku}`), 200, 'history')).body.length
}

async function salesAt(client: TenantClient, sku: string, at: number | null): Promise<number | 404> {
  const answer = await client.get(`/price/${sku}/RETAIL${at === null ? '' : `?as_of=${new Date(at).toISOString()}`}`)
  if (answer.status === 404) return 404
  if (answer.status !== 200) throw new Error(`price read: ${answer.status} ${answer.text}`)
  return answer.body.price.sales
}

/** Retention on, with the least it may keep: one version, a window of 1 ms. */
async function retainLeast(client: TenantClient): Promise<void> {
  await expectStatus(client.call('PUT', '/settings/retention.max.versions', { value: '1' }), 202, 'max')
  await expectStatus(client.call('PUT', '/settings/retention.history.ms', { value: '1' }), 202, 'window')
  await expectStatus(client.call('PUT', '/settings/retention.enabled', { value: 'true' }), 202, 'enabled')
}

async function runPass(slug: string): Promise<any> {
  return expectStatus(server.admin('POST', `/admin/tenants/${slug}/retention`), 200, 'retention pass')
}

t.test('a plan without history retention refuses it', async (t) => {
  const starter = await server.tenant('starter-shop', { tier: 'starter' })
  const refused = await starter.call('PUT', '/settings/retention.enabled', { value: 'true' })
  t.equal(refused.status, 403)
  t.equal(refused.body.code, 'plan_forbidden')
  t.equal((await server.admin('POST', '/admin/tenants/starter-shop/retention')).status, 403, "the operator's pass too")
  const standard = await server.tenant('off-shop', { tier: 'standard' })
  t.equal(
    (await standard.call('PUT', '/settings/retention.max.versions', { value: '-1' })).status,
    400,
    'a negative count: 400',
  )
  t.equal(
    (await standard.call('PUT', '/settings/retention.history.ms', { value: '0' })).status,
    400,
    'an empty window: 400',
  )
  const off = await server.admin('POST', '/admin/tenants/off-shop/retention')
  t.equal(off.status, 409, 'retention.enabled off: 409')
  t.match(off.body.message, /retention.enabled is false/)
})

t.test(
  'retention.max.versions keeps that many, the 3 most recent at least, and what is in force or scheduled',
  async (t) => {
    const client = await server.tenant('count-shop', { tier: 'standard' })
    await retailReference(client, skus)
    const after = await writeRounds(client, 10)
    // A version scheduled a minute ahead for every SKU.
    const scheduledAt = Date.now() + 60_000
    await expectStatus(
      client.call(
        'POST',
        '/price/batch',
        skus.map((sku) => ({
          sku,
          pricelist: 'RETAIL',
          price: 9_999,
          start_date: new Date(scheduledAt).toISOString(),
        })),
      ),
      202,
      'scheduled',
    )
    t.equal(await versionCount(client, 'R-7'), 11)
    const before = {
      now: await salesAt(client, 'R-7', null),
      future: await salesAt(client, 'R-7', scheduledAt + 1),
      round7: await salesAt(client, 'R-7', after[7]!),
    }
    t.same(before, { now: 1_007, future: 9_999, round7: 807 })
    t.equal(await salesAt(client, 'R-7', after[0]!), 107, 'the first version is readable before the pass')

    await expectStatus(client.call('PUT', '/settings/retention.max.versions', { value: '2' }), 202, 'max')
    await expectStatus(client.call('PUT', '/settings/retention.enabled', { value: 'true' }), 202, 'enabled')
    const pass = await runPass('count-shop')
    // 11 versions: the 3 most recent (rounds 8 and 9, the scheduled one) stay although the maximum is 2.
    t.same(pass.body, {
      ...pass.body,
      pairs: skus.length,
      versions_before: 11 * skus.length,
      versions_removed: 8 * skus.length,
      stopped: null,
    })
    t.equal(await versionCount(client, 'R-7'), 3, 'three versions left')
    t.same(
      {
        now: await salesAt(client, 'R-7', null),
        future: await salesAt(client, 'R-7', scheduledAt + 1),
        round8: await salesAt(client, 'R-7', after[8]!),
      },
      { now: 1_007, future: 9_999, round8: 907 },
      'in force, scheduled and the kept round read as before',
    )
    t.equal(await salesAt(client, 'R-7', after[7]!), 404, 'an as-of read before the kept versions: 404')
    const metrics = (await server.request('GET', '/metrics')).text
    t.match(
      metrics,
      new RegExp(`pricing_retention_versions_removed_total ${8 * skus.length}`),
      'the metric counts the removed versions',
    )

    await server.restart()
    await client.refreshToken()
    t.equal(await versionCount(client, 'R-7'), 3, 'still three after a restart: the pass was durable')
    t.equal(await salesAt(client, 'R-7', null), 1_007)
    t.equal((await runPass('count-shop')).body.versions_removed, 0, 'a second pass finds nothing to remove')
  },
)

t.test(
  'retention.history.ms removes what ended before the window and keeps what was in force at its start',
  async (t) => {
    const client = await server.tenant('window-shop', { tier: 'standard' })
    await retailReference(client, skus)
    const after = await writeRounds(client, 10)
    await expectStatus(client.call('PUT', '/settings/retention.enabled', { value: 'true' }), 202, 'enabled')
    // The window starts between rounds 5 and 6 (60 ms apart; the pass runs a few ms after this).
    await expectStatus(
      client.call('PUT', '/settings/retention.history.ms', { value: String(Date.now() - after[5]!) }),
      202,
      'window',
    )
    const pass = await runPass('window-shop')
    t.equal(pass.body.versions_removed, 5 * skus.length, 'rounds 0-4 ended before the window')
    t.equal(await versionCount(client, 'R-3'), 5)
    t.equal(
      await salesAt(client, 'R-3', after[5]! + 1),
      603,
      'the version in force at the window start answers as before',
    )
    t.equal(await salesAt(client, 'R-3', after[9]!), 1_003)
    t.equal(await salesAt(client, 'R-3', after[4]!), 404, 'before the window: 404')
  },
)

t.test('a reduction in force keeps what its prior price reads; a pair without one is thinned', async (t) => {
  const client = await server.tenant('omnibus-shop', { tier: 'standard' })
  await retailReference(client, ['O-FELL', 'O-ROSE'])
  // NET prices: O-FELL 100 -> 120 -> 130 -> 110 -> 90 (reduced since 110), O-ROSE 100 -> 120 -> 130 -> 140 -> 150.
  const rounds: [number, number][] = [
    [100, 100],
    [120, 120],
    [130, 130],
    [110, 140],
    [90, 150],
  ]
  for (const [fell, rose] of rounds) {
    const items = [
      { sku: 'O-FELL', pricelist: 'RETAIL', price: fell },
      { sku: 'O-ROSE', pricelist: 'RETAIL', price: rose },
    ]
    await expectStatus(client.call('POST', '/price/batch', items), 202, 'round')
    await sleep(20)
  }
  const prior = async () => {
    const body = {
      currency_code: 'EUR',
      tax_area: 'SE',
      skus: ['O-FELL', 'O-ROSE'],
      pricelist_filter: { pricelists: ['RETAIL'] },
      prior_price: true,
    }
    const answer = await expectStatus(client.call('POST', '/price/query', body), 200, 'query')
    return answer.body.items.map((item: { sku: string; prior_price: unknown }) => [item.sku, item.prior_price])
  }
  const before = await prior()
  // Over the 30 days before the fall to 110: 100 (the lowest), net; 125 gross at 25%.
  t.match(before[0], ['O-FELL', { net: 100, gross: 125 }], 'O-FELL: reduced, its prior price 100')
  t.same(before[1], ['O-ROSE', null], 'O-ROSE: never reduced')
  await retainLeast(client)
  const pass = await runPass('omnibus-shop')
  t.equal(pass.body.versions_removed, 2, "O-ROSE's two oldest go (the 3 most recent stay); O-FELL keeps all")
  t.equal(await versionCount(client, 'O-FELL'), 5)
  t.equal(await versionCount(client, 'O-ROSE'), 3)
  t.same(await prior(), before, 'the prior prices read as before')
})

t.test('a price with a version marked as an error keeps its whole history', async (t) => {
  const client = await server.tenant('corrected-shop', { tier: 'standard' })
  await retailReference(client, ['C-MARK', 'C-PLAIN'])
  for (const price of [100, 120, 130, 140, 150]) {
    const items = ['C-MARK', 'C-PLAIN'].map((sku) => ({ sku, pricelist: 'RETAIL', price }))
    await expectStatus(client.call('POST', '/price/batch', items), 202, 'round')
    await sleep(20)
  }
  const history = await expectStatus(client.call('GET', '/price/history/RETAIL/C-MARK'), 200, 'history')
  const second = history.body.at(-2).change_at
  await expectStatus(
    client.call('POST', '/price/corrections/RETAIL/C-MARK', { start_date: second, reason: 'typo' }),
    202,
    'mark',
  )
  await retainLeast(client)
  const pass = await runPass('corrected-shop')
  t.equal(pass.body.versions_removed, 2, "C-PLAIN's two oldest go (the 3 most recent stay); C-MARK keeps all")
  t.equal(await versionCount(client, 'C-MARK'), 5)
  t.equal(await versionCount(client, 'C-PLAIN'), 3)
})

t.test('the automatic pass thins a tenant by itself', async (t) => {
  const automatic = await startServer({ env: { PRICING_RETENTION_INTERVAL_S: '1' } })
  t.teardown(() => automatic.dispose())
  const client = await automatic.tenant('auto-shop', { tier: 'enterprise' })
  await retailReference(client, skus)
  await writeRounds(client, 6)
  await expectStatus(client.call('PUT', '/settings/retention.max.versions', { value: '3' }), 202, 'max')
  await expectStatus(client.call('PUT', '/settings/retention.enabled', { value: 'true' }), 202, 'enabled')
  const deadline = Date.now() + 15_000
  let count = await versionCount(client, 'R-0')
  while (count > 3 && Date.now() < deadline) {
    await sleep(200)
    count = await versionCount(client, 'R-0')
  }
  t.equal(count, 3, 'thinned to 3 versions within seconds')
  const logged = Date.now() + 5_000
  while (!automatic.stdout.includes('"msg":"history retention pass"') && Date.now() < logged) await sleep(50)
  t.match(automatic.stdout, /"msg":"history retention pass"/, 'the pass is logged')
})
