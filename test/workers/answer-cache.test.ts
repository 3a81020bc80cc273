/**
 * Price query answers are cached per SKU and query settings. A cached answer must never differ from
 * a fresh computation: every write invalidates it at once, and a scheduled change (a price or VAT
 * rate with a future start) ends it at that instant. Run on the main thread and on the workers.
 */
import t from 'tap'
import { startServer, type TenantClient, type TestServer } from '../helpers/server.js'
import { answerCacheCounts } from '../helpers/metrics.js'
import { expectStatus, mapSkus, putPricelist, setupReference } from '../helpers/price-fixtures.js'

for (const engine of ['main', 'worker'] as const) {
  t.test(`answer cache on the ${engine} thread`, async (t) => {
    // Always serving: what is checked here is that a cached answer never differs from a fresh one.
    const server: TestServer = await startServer({
      env: {
        PRICING_WORKER_THRESHOLD_SKUS: engine === 'worker' ? '1' : '100000',
        PRICING_ANSWER_CACHE_MIN_REPEAT_SHARE: '0',
      },
    })
    t.teardown(() => server.dispose())
    const client: TenantClient = await server.tenant('cache', { tier: 'enterprise' })
    await setupReference(client)
    await putPricelist(client, 'net', { currency_code: 'SEK', vat_mode: 'NET' })
    await putPricelist(client, 'gross', { currency_code: 'SEK', vat_mode: 'GROSS' })
    await mapSkus(client, 'standard', ['A', 'B', 'C'], ['SE'])
    await expectStatus(
      client.call('POST', '/price/batch', [
        { sku: 'A', pricelist: 'net', price: 100 },
        { sku: 'A', pricelist: 'gross', price: 130 },
        { sku: 'B', pricelist: 'net', price: 10 },
      ]),
      202,
      'prices',
    )
    const query = (extra: Record<string, unknown> = {}) =>
      client.call('POST', '/price/query', {
        currency_code: 'SEK',
        pricelist_filter: {},
        skus: ['A', 'B', 'C'],
        tax_area: 'SE',
        ...extra,
      })
    const gross = async (sku: string, extra: Record<string, unknown> = {}) => {
      const answer = await query(extra)
      t.equal(answer.headers.get('x-price-engine'), engine)
      return answer.body.items.find((item: { sku: string }) => item.sku === sku)?.gross ?? null
    }

    const counts = async (): Promise<number[]> => {
      const { hits, misses } = await answerCacheCounts(server)
      return [hits, misses]
    }
    const [hitsBefore, missesBefore] = await counts()
    const first = await query()
    const [hitsFirst, missesFirst] = await counts()
    t.same(
      [hitsFirst! - hitsBefore!, missesFirst! - missesBefore!],
      [0, 3],
      `counted in /metrics from the ${engine} thread: 3 SKUs computed`,
    )
    const again = await query()
    const [hitsAgain, missesAgain] = await counts()
    t.same([hitsAgain! - hitsFirst!, missesAgain! - missesFirst!], [3, 0], 'then 3 served from the cache')
    t.equal(again.text, first.text, 'a repeated query answers the same bytes')
    t.equal(await gross('A'), 125, 'NET 100 + 25% beats GROSS 130')

    await expectStatus(client.call('PUT', '/price/A/net', { price: 120 }), 202, 'price write')
    t.equal(await gross('A'), 130, 'a price write shows at once (GROSS 130 now beats NET 150)')

    await expectStatus(
      client.call('POST', '/vat/rate', { tax_area_code: 'SE', vat_class_code: 'standard', rate: 5 }),
      202,
      'VAT rate',
    )
    t.equal(await gross('A'), 126, 'a VAT rate change shows at once (NET 120 + 5%)')
    t.equal(await gross('B'), 10.5)

    const beforeSchedule = new Date().toISOString()
    const soon = new Date(Date.now() + 1500).toISOString()
    await expectStatus(client.call('PUT', '/price/B/net', { price: 20, start_date: soon }), 202, 'scheduled price')
    t.equal(await gross('B'), 10.5, 'a scheduled price is not in force yet')
    t.equal(await gross('B'), 10.5, 'and still not from the cache')
    await new Promise((resolve) => setTimeout(resolve, 1800))
    t.equal(await gross('B'), 21, 'the cached answer ends when the scheduled price takes effect')

    const later = new Date(Date.now() + 1500).toISOString()
    await expectStatus(
      client.call('POST', '/vat/rate', {
        tax_area_code: 'SE',
        vat_class_code: 'standard',
        rate: 10,
        start_date: later,
      }),
      202,
      'scheduled rate',
    )
    t.equal(await gross('B'), 21)
    t.equal(await gross('B'), 21, 'cached before the scheduled rate')
    await new Promise((resolve) => setTimeout(resolve, 1800))
    t.equal(await gross('B'), 22, 'the cached answer ends when the scheduled VAT rate takes effect')

    const past = await query({ as_of: beforeSchedule })
    t.equal(
      past.body.items.find((item: { sku: string }) => item.sku === 'B').gross,
      10.5,
      'an as_of read answers as of then (not from the cache)',
    )
    // An inherited price: the child's cached answer follows the parent's writes and schedule.
    await putPricelist(client, 'child', { currency_code: 'SEK', parent_code: 'net' })
    const childGross = () => gross('B', { pricelist_filter: { pricelists: ['child'] } })
    t.equal(await childGross(), 22, 'the child inherits 20 NET + 10%')
    t.equal(await childGross(), 22)
    await expectStatus(client.call('PUT', '/price/B/net', { price: 30 }), 202, 'parent price write')
    t.equal(await childGross(), 33, 'a parent price write shows in the child at once')
    const parentSoon = new Date(Date.now() + 1500).toISOString()
    await expectStatus(
      client.call('PUT', '/price/B/net', { price: 40, start_date: parentSoon }),
      202,
      'scheduled parent price',
    )
    t.equal(await childGross(), 33)
    await new Promise((resolve) => setTimeout(resolve, 1800))
    t.equal(await childGross(), 44, 'the child follows the parent when its scheduled price takes effect')
    t.same((await query()).body.unavailable, [{ sku: 'C', reason: 'no_price' }])
    await expectStatus(client.call('PUT', '/price/C/gross', { price: 7 }), 202, 'new price for C')
    t.same((await query()).body.unavailable, [], 'an unavailable SKU becomes available at once')
  })
}

for (const engine of ['main', 'worker'] as const) {
  t.test(
    `the default cache on the ${engine} thread steps aside on distinct queries and serves repeated ones`,
    async (t) => {
      const server = await startServer({
        env: { PRICING_WORKERS: '1', PRICING_WORKER_THRESHOLD_SKUS: engine === 'worker' ? '1' : '100000' },
      })
      t.teardown(() => server.dispose())
      const client = await server.tenant('adaptive', { tier: 'enterprise' })
      await setupReference(client)
      await putPricelist(client, 'net', { currency_code: 'SEK', vat_mode: 'NET' })
      const skus = Array.from({ length: 400 }, (_, index) => `S${index}`)
      await mapSkus(client, 'standard', skus, ['SE'])
      await expectStatus(
        client.call(
          'POST',
          '/price/batch',
          skus.map((sku, index) => ({ sku, pricelist: 'net', price: 10 + index })),
        ),
        202,
        'prices',
      )
      const query = async (body: string[]): Promise<number[]> => {
        const before = await answerCacheCounts(server)
        const answer = await client.call('POST', '/price/query', {
          currency_code: 'SEK',
          pricelist_filter: {},
          skus: body,
          tax_area: 'SE',
        })
        t.equal(answer.headers.get('x-price-engine'), engine)
        t.equal(answer.body.items.length, body.length)
        const after = await answerCacheCounts(server)
        return [after.hits - before.hits, after.misses - before.misses]
      }
      // Carts: every query asks for SKUs no query asked for before, so the cache finds none.
      for (let cart = 0; cart < 40; cart++) await query(skus.slice(cart * 5, cart * 5 + 5))
      const page = skus.slice(300, 305)
      t.same(await query(page), [0, 5], 'a new body: computed')
      t.same(await query(page), [0, 5], 'the same body again: computed, the cache has stepped aside')
      // A category page that every shopper opens: the repeats are noticed (a fingerprint per query)
      // and after about a dozen the cache serves again.
      let repeats = 0
      let foundInARow = 0
      while (repeats < 1_000 && foundInARow < 2) {
        repeats++
        foundInARow = (await query(page))[0] === 5 ? foundInARow + 1 : 0
      }
      t.ok(repeats > 5, `the cache was aside for more than 5 repeats (${repeats})`)
      t.ok(repeats <= 40, `and serves again within 40 (${repeats} queries)`)
      t.same(await query(page), [5, 0], 'the page comes from the cache')
      t.same(await query(page), [5, 0], 'every time')
      // A write before every repeat ends the cached items each time: the repeats keep missing, and
      // the cache steps aside again (for the next 1,024 queries).
      for (let round = 0; round < 6; round++) {
        await expectStatus(
          client.call('PUT', '/price/S300/net', { price: 1_000 + round }),
          202,
          'write between the repeats',
        )
        await query(page)
      }
      t.same(await query(page), [0, 5], 'repeats that kept missing put the cache aside')
    },
  )
}

t.test('PRICING_ANSWER_CACHE_ITEMS=0: no cache on either thread, every SKU computed, the same answers', async (t) => {
  const server = await startServer({ env: { PRICING_ANSWER_CACHE_ITEMS: '0', PRICING_WORKER_THRESHOLD_SKUS: '3' } })
  t.teardown(() => server.dispose())
  const client = await server.tenant('nocache', { tier: 'enterprise' })
  await setupReference(client)
  await putPricelist(client, 'net', { currency_code: 'SEK', vat_mode: 'NET' })
  await mapSkus(client, 'standard', ['A', 'B', 'C'], ['SE'])
  await expectStatus(
    client.call('POST', '/price/batch', [
      { sku: 'A', pricelist: 'net', price: 100 },
      { sku: 'B', pricelist: 'net', price: 10 },
    ]),
    202,
    'prices',
  )
  const misses = async (): Promise<number[]> => {
    const { hits, misses } = await answerCacheCounts(server)
    return [hits, misses]
  }
  for (const skus of [
    ['A', 'B'],
    ['A', 'B', 'C'],
  ]) {
    const engine = skus.length >= 3 ? 'worker' : 'main'
    const [hitsBefore, missesBefore] = await misses()
    const body = { currency_code: 'SEK', pricelist_filter: {}, skus, tax_area: 'SE' }
    const first = await client.call('POST', '/price/query', body)
    const second = await client.call('POST', '/price/query', body)
    t.equal(second.headers.get('x-price-engine'), engine)
    t.equal(second.text, first.text, `${engine}: the same answer`)
    const [hitsAfter, missesAfter] = await misses()
    t.same(
      [hitsAfter! - hitsBefore!, missesAfter! - missesBefore!],
      [0, 2 * skus.length],
      `${engine}: both queries computed every SKU`,
    )
  }
})
