/**
 * Large price queries run on worker threads that read the tenant's shared state. They must answer
 * exactly as the main thread does, and never from state older than what the caller has written.
 * The server runs with a worker threshold of 3 SKUs so that small test queries cross it.
 */
import { readdirSync, readFileSync } from 'node:fs'
import t from 'tap'
import { expectStatus, mapSkus } from '../helpers/price-fixtures.js'
import { suiteServer } from '../helpers/suite.js'

const {
  server,
  tenants: { workers: client },
} = await suiteServer({
  env: { PRICING_WORKER_THRESHOLD_SKUS: '3', PRICING_WORKERS: '2' },
  tenants: {
    workers: {
      tier: 'enterprise',
      reference: true,
      pricelists: {
        base: { currency_code: 'SEK', vat_mode: 'NET' },
        gross: { currency_code: 'SEK', vat_mode: 'GROSS' },
        child: { currency_code: 'EUR', parent_code: 'base' },
      },
    },
  },
})

t.before(async () => {
  const skus = Array.from({ length: 40 }, (_, index) => `W-${String(index).padStart(3, '0')}`)
  await mapSkus(client, 'standard', skus)
  const prices = skus.flatMap((sku, index) => [
    {
      sku,
      pricelist: 'base',
      price: 100 + index + 0.125,
      quantity_breaks: index % 4 === 0 ? [{ quantity_break: 10, percent_of_base: 90 }] : undefined,
    },
    ...(index % 3 === 0 ? [{ sku, pricelist: 'gross', price: { sales: 120 + index, fields: { cost: 50 } } }] : []),
  ])
  await expectStatus(client.call('POST', '/price/batch', prices), 202, 'prices')
})

function query(skus: string[], extra: Record<string, unknown> = {}) {
  return client.call('POST', '/price/query', {
    currency_code: 'SEK',
    pricelist_filter: {},
    skus,
    tax_area: 'SE',
    ...extra,
  })
}

t.test('queries at or above the threshold are answered by a worker, smaller ones by the main thread', async (t) => {
  const small = await query(['W-001', 'W-002'])
  t.equal(small.status, 200)
  t.equal(small.headers.get('x-price-engine'), 'main')
  const large = await query(['W-001', 'W-002', 'W-003'])
  t.equal(large.status, 200)
  t.equal(large.headers.get('x-price-engine'), 'worker')
})

t.test('a worker answers exactly what the main thread answers, item by item', async (t) => {
  const skus = Array.from({ length: 40 }, (_, index) => `W-${String(index).padStart(3, '0')}`).concat(['MISSING'])
  const worker = await query(skus, { quantity: 10 })
  t.equal(worker.headers.get('x-price-engine'), 'worker')
  for (let start = 0; start < skus.length; start += 2) {
    const pair = skus.slice(start, start + 2)
    const main = await query(pair, { quantity: 10 })
    t.equal(main.headers.get('x-price-engine'), 'main')
    for (const item of main.body.items) {
      t.same(
        worker.body.items.find((candidate: { sku: string }) => candidate.sku === item.sku),
        item,
        `${item.sku} is the same from both`,
      )
    }
    for (const missing of main.body.unavailable) {
      t.same(
        worker.body.unavailable.find((candidate: { sku: string }) => candidate.sku === missing.sku),
        missing,
      )
    }
  }
  t.equal(worker.body.items.length, 40)
  t.same(worker.body.unavailable, [{ sku: 'MISSING', reason: 'no_price' }])
  const inherited = await query(['W-000', 'W-001', 'W-002'], {
    currency_code: 'EUR',
    pricelist_filter: { pricelists: ['child'] },
  })
  t.equal(inherited.headers.get('x-price-engine'), 'worker')
  t.equal(inherited.body.items.length, 3, 'the child inherits through FX on the worker too')
  t.ok(
    inherited.body.items.every(
      (item: { inherited: boolean; currency_code: string }) => item.inherited && item.currency_code === 'EUR',
    ),
  )
})

t.test(
  "answers through the workers' answer arenas stay exact under concurrency, aborted requests and wrap-around",
  async (t) => {
    // 60 distinct queries of ~6-9 KB answers; 30 rounds pass more than the two 4 MiB rings hold, twice over.
    const rounds = 40
    const all = Array.from({ length: 40 }, (_, index) => `W-${String(index).padStart(3, '0')}`)
    const bodies = Array.from({ length: 60 }, (_, index) => ({
      currency_code: 'SEK',
      pricelist_filter: {},
      skus: all.filter((_, position) => (position * 7 + index) % 5 !== 0).concat(index % 2 === 0 ? ['MISSING'] : []),
      tax_area: 'SE',
      sort_order: index % 3 === 0 ? 'ASC' : index % 3 === 1 ? 'DESC' : undefined,
      quantity: 1 + (index % 12),
    }))
    const url = `${server.url}/t/workers/price/query`
    const post = (body: unknown, signal?: AbortSignal) =>
      fetch(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${client.token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal,
      })
    const expected: string[] = []
    for (const body of bodies) expected.push(await (await post(body)).text())
    t.ok(
      expected.every((text) => text.startsWith('{"items":[')),
      'every answer is an answer',
    )
    const bytesPerRound = expected.reduce((sum, text) => sum + Buffer.byteLength(text), 0)
    t.ok(bytesPerRound * rounds > 2 * 2 * 4 * 1024 * 1024, `${rounds} rounds of ${bytesPerRound} bytes wrap both rings`)
    let mismatches = 0
    let fromWorkers = 0
    let aborted = 0
    for (let round = 0; round < rounds; round++) {
      const controllers = bodies.map(() => new AbortController())
      const answers = bodies.map(async (body, index) => {
        const answer = await post(body, controllers[index]!.signal)
        if (answer.headers.get('x-price-engine') === 'worker') fromWorkers++
        if ((await answer.text()) !== expected[index]) mismatches++
      })
      // Every seventh request is given up while in flight: its answer is dropped, its arena bytes released.
      controllers.forEach((controller, index) => {
        if (index % 7 === round % 7) setTimeout(() => controller.abort(), index % 3)
      })
      for (const settled of await Promise.allSettled(answers)) if (settled.status === 'rejected') aborted++
    }
    t.equal(mismatches, 0, `every answer of ${rounds * 60 - aborted} byte for byte as answered alone`)
    t.ok(aborted > 0, `${aborted} requests were aborted in flight`)
    t.equal(fromWorkers, rounds * 60 - aborted, 'all from the workers')
    // And after all that, the rings are not wedged: answers still come from the workers, exactly.
    for (const [index, body] of bodies.slice(0, 5).entries()) {
      const answer = await post(body)
      t.equal(answer.headers.get('x-price-engine'), 'worker')
      t.equal(await answer.text(), expected[index])
    }
  },
)

t.test('a worker never answers from state older than what the caller has written', async (t) => {
  const skus = ['W-005', 'W-006', 'W-007', 'W-008']
  for (let round = 1; round <= 25; round++) {
    const price = 1000 + round
    await expectStatus(client.call('PUT', '/price/W-006/base', { price }), 202, 'price write')
    const answer = await query(skus, { pricelist_filter: { pricelists: ['base'] } })
    t.equal(answer.headers.get('x-price-engine'), 'worker')
    const item = answer.body.items.find((candidate: { sku: string }) => candidate.sku === 'W-006')
    t.equal(item.net, price, `round ${round}: the worker sees the price just written`)
  }
  // A catalogue change (a new VAT rate) and brand-new SKUs (dictionary growth) reach the workers too.
  await expectStatus(
    client.call('POST', '/vat/rate', { tax_area_code: 'SE', vat_class_code: 'standard', rate: 20 }),
    202,
    'rate',
  )
  const newSkus = Array.from({ length: 300 }, (_, index) => `NEW-${index}`)
  await mapSkus(client, 'standard', newSkus, ['SE'])
  await expectStatus(
    client.call(
      'POST',
      '/price/batch',
      newSkus.map((sku, index) => ({ sku, pricelist: 'base', price: 10 + index })),
    ),
    202,
    'new prices',
  )
  const fresh = await query(['W-006', 'NEW-0', 'NEW-299'], { pricelist_filter: { pricelists: ['base'] } })
  t.equal(fresh.headers.get('x-price-engine'), 'worker')
  const byKey = Object.fromEntries(fresh.body.items.map((item: { sku: string }) => [item.sku, item]))
  t.equal(byKey['W-006'].vat_rate, 20)
  t.equal(byKey['W-006'].vat, 205, '1025 × 20%')
  t.equal(byKey['NEW-299'].net, 309)
  t.equal(byKey['NEW-299'].gross, 370.8)
})

t.test('workers keep answering after a restart (replicas are rebuilt from snapshots)', async (t) => {
  await server.restart()
  await client.refreshToken()
  const answer = await query(['W-006', 'NEW-0', 'NEW-1'])
  t.equal(answer.status, 200)
  t.equal(answer.headers.get('x-price-engine'), 'worker')
  t.equal(answer.body.items.length, 3)
})

t.test(
  'price workers run at the lowest CPU priority (nice +19), the main thread at its own',
  { skip: process.platform !== 'linux' ? 'per-thread nice values are read from /proc (Linux)' : false },
  async (t) => {
    // Enough big queries at once that both workers have run one (the first task after the warm-up lowers them).
    const answers = await Promise.all(Array.from({ length: 16 }, () => query(['W-001', 'W-002', 'W-003', 'W-004'])))
    t.same(
      answers.map((answer) => answer.status),
      answers.map(() => 200),
    )
    const pid = server.pid
    const niceOf = (tid: string): number => {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8')
      // Fields after the command's closing parenthesis; nice is field 19 of stat(5).
      return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16])
    }
    const threads = readdirSync(`/proc/${pid}/task`)
    const mainNice = niceOf(String(pid))
    const lowered = threads.filter((tid) => niceOf(tid) === Math.min(19, mainNice + 19))
    t.ok(lowered.length >= 2, `${lowered.length} threads at nice ${Math.min(19, mainNice + 19)} (the 2 price workers)`)
    t.ok(threads.filter((tid) => niceOf(tid) === mainNice).length >= 1, `the main thread stays at nice ${mainNice}`)
    t.ok(
      lowered.length < threads.length / 2,
      `the other threads (${threads.length - lowered.length}) keep the process's priority`,
    )
  },
)
