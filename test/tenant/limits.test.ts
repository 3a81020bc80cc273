/**
 * Rate limits, items per request and plan quotas (SPEC "Limits", API.md §8-§9): the X-RateLimit-*
 * headers, separate query and ingest buckets, 429 with Retry-After, batch cost in items, 413 before
 * anything is spent, 422 quotas, and operator overrides that take effect at once.
 */
import t from 'tap'
import type { Answer, TenantClient } from '../helpers/server.js'
import { suiteServer } from '../helpers/suite.js'

const { server } = await suiteServer()

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

function rateHeaders(answer: Answer): { limit: number; remaining: number; reset: number } {
  return {
    limit: Number(answer.headers.get('x-ratelimit-limit')),
    remaining: Number(answer.headers.get('x-ratelimit-remaining')),
    reset: Number(answer.headers.get('x-ratelimit-reset')),
  }
}

function articles(prefix: string, count: number): { sku: string; name: string }[] {
  return Array.from({ length: count }, (_, index) => ({ sku: `${prefix}-${index + 1}`, name: `Article ${index + 1}` }))
}

async function total(client: TenantClient): Promise<number> {
  const list = await client.get('/article?page=1&size=1000')
  if (list.status !== 200) throw new Error(`list failed: ${list.status} ${list.text}`)
  return list.body.total
}

t.test(
  'every tenant answer, success or error, carries X-RateLimit-* of its dimension with Limit = burst and Reset in Unix seconds',
  async (t) => {
    const client = await server.tenant('headers', {
      limits: { query_rate: 100, query_burst: 300, ingest_rate: 50, ingest_burst: 200 },
    })
    const beforeS = Math.floor(Date.now() / 1000)
    const answers: [string, Answer, number, number][] = [
      ['PUT 202', await client.call('PUT', '/article/H-1', { name: 'x' }), 202, 200],
      ['GET 200', await client.get('/article/H-1'), 200, 300],
      ['GET 404', await client.get('/article/NOPE'), 404, 300],
      ['PUT 400', await client.call('PUT', '/article/H-2', { name: 5 }), 400, 200],
      [
        'PUT malformed 400',
        await client.server.request('PUT', `${client.base}/article/H-3`, {
          raw: '{',
          headers: { 'content-type': 'application/json' },
          token: client.token,
        }),
        400,
        200,
      ],
      ['GET 401', await client.server.request('GET', `${client.base}/article/H-1`, { token: 'not-a-token' }), 401, 300],
      ['PUT 401', await client.server.request('PUT', `${client.base}/article/H-1`, { body: { name: 'y' } }), 401, 200],
    ]
    const afterS = Math.ceil(Date.now() / 1000)
    for (const [label, answer, status, burst] of answers) {
      t.equal(answer.status, status, `${label}: status`)
      const headers = rateHeaders(answer)
      t.equal(headers.limit, burst, `${label}: X-RateLimit-Limit is the dimension's burst`)
      t.ok(
        Number.isInteger(headers.remaining) && headers.remaining >= 0 && headers.remaining <= burst,
        `${label}: Remaining ${headers.remaining} within 0..burst`,
      )
      // The bucket is full again within (burst - remaining) / rate seconds: Reset is now-ish in seconds, not ms.
      t.ok(
        Number.isInteger(headers.reset) && headers.reset >= beforeS && headers.reset <= afterS + 5,
        `${label}: Reset ${headers.reset} is a Unix time in seconds near ${beforeS}`,
      )
    }
    t.equal((await client.get('/article/H-2')).status, 404, 'the refused write stored nothing')
  },
)

t.test('the query and ingest buckets are separate: an exhausted ingest bucket leaves reads alone', async (t) => {
  const client = await server.tenant('separate', {
    limits: { ingest_rate: 1, ingest_burst: 5, query_rate: 1, query_burst: 50 },
  })
  for (let index = 1; index <= 5; index++)
    t.equal((await client.call('PUT', `/article/S-${index}`, { name: 'x' })).status, 202)
  const refused = await client.call('PUT', '/article/S-6', { name: 'x' })
  t.equal(refused.status, 429)
  t.equal(rateHeaders(refused).remaining, 0)
  const read = await client.get('/article/S-1')
  t.equal(read.status, 200, 'a read passes while writes are limited')
  t.equal(rateHeaders(read).limit, 50, 'the read reports the query burst')
  t.ok(rateHeaders(read).remaining >= 48, `query Remaining ${rateHeaders(read).remaining} was not spent by the writes`)
  // Spending the query bucket does not touch the ingest bucket either.
  const query = await server.tenant('separate-q', {
    limits: { query_rate: 1, query_burst: 3, ingest_rate: 1, ingest_burst: 50 },
  })
  for (let index = 0; index < 3; index++) t.equal((await query.get('/article')).status, 200)
  t.equal((await query.get('/article')).status, 429, 'the 4th read exceeds a query burst of 3')
  const write = await query.call('PUT', '/article/Q-1', { name: 'x' })
  t.equal(write.status, 202, 'a write passes while reads are limited')
  t.ok(rateHeaders(write).remaining >= 48)
})

t.test(
  'past the ingest burst a write is refused with 429, Retry-After and the spec body, stores nothing, and passes after the refill',
  async (t) => {
    const client = await server.tenant('limited', { limits: { ingest_rate: 1, ingest_burst: 5 } })
    const remaining: number[] = []
    for (let index = 1; index <= 5; index++) {
      const answer = await client.call('PUT', `/article/L-${index}`, { name: 'x' })
      t.equal(answer.status, 202, `write ${index} passes`)
      remaining.push(rateHeaders(answer).remaining)
    }
    t.same(remaining, [4, 3, 2, 1, 0], 'each write spends one item')
    const refused = await client.call('PUT', '/article/L-6', { name: 'x' })
    t.equal(refused.status, 429)
    const retryAfter = Number(refused.headers.get('retry-after'))
    t.ok(
      Number.isInteger(retryAfter) && retryAfter >= 1,
      `Retry-After ${refused.headers.get('retry-after')} is whole seconds >= 1`,
    )
    t.same(Object.keys(refused.body).sort(), [
      'code',
      'error',
      'message',
      'request_id',
      'retry_after',
      'status',
      'timestamp',
    ])
    t.equal(refused.body.status, 429)
    t.equal(refused.body.error, 'Too Many Requests')
    t.equal(refused.body.code, 'rate_limited')
    t.equal(typeof refused.body.message, 'string')
    t.ok(refused.body.message.length > 0)
    t.equal(refused.body.retry_after, retryAfter, 'retry_after equals the Retry-After header')
    t.ok(Number.isInteger(refused.body.retry_after) && refused.body.retry_after >= 1)
    t.equal(rateHeaders(refused).limit, 5)
    t.equal(rateHeaders(refused).remaining, 0)
    t.equal((await client.get('/article/L-6')).status, 404, 'the refused write stored nothing')
    await sleep(retryAfter * 1000 + 150)
    const again = await client.call('PUT', '/article/L-6', { name: 'x' })
    t.equal(again.status, 202, 'after Retry-After seconds the same request passes')
    t.equal((await client.get('/article/L-6')).body.name, 'x')
  },
)

t.test('a batch costs its number of items, and DELETE /article/batch likewise', async (t) => {
  // Rate 0: the bucket never refills during the test, so Remaining is exact.
  const client = await server.tenant('cost', { limits: { ingest_rate: 0, ingest_burst: 100 } })
  const single = await client.call('PUT', '/article/C-0', { name: 'x' })
  t.equal(rateHeaders(single).remaining, 99)
  const batch = await client.call('POST', '/article/batch', articles('C', 3))
  t.equal(batch.status, 202)
  t.same(batch.body, { accepted: 3, failed: [] })
  t.equal(rateHeaders(batch).remaining, 96, 'three items spent three')
  const removed = await client.call('DELETE', '/article/batch', ['C-1', 'C-2'])
  t.equal(removed.status, 202)
  t.equal(rateHeaders(removed).remaining, 94, 'a batch delete of two spent two')
  const invalid = await client.call('POST', '/article/batch', [{ sku: 'C-9', name: 1 }, { sku: 'C-10' }])
  t.equal(invalid.status, 202)
  t.equal(rateHeaders(invalid).remaining, 92, 'refused items of a batch are counted too')
})

t.test('a batch above max_items_per_request is refused with 413 before it spends or stores anything', async (t) => {
  const client = await server.tenant('items', {
    limits: { ingest_rate: 0, ingest_burst: 100, max_items_per_request: 10 },
  })
  const first = await client.call('POST', '/article/batch', articles('I', 10))
  t.equal(first.status, 202, 'exactly the maximum passes')
  t.equal(rateHeaders(first).remaining, 90)
  const refused = await client.call('POST', '/article/batch', articles('J', 11))
  t.equal(refused.status, 413)
  t.same(Object.keys(refused.body).sort(), [
    'code',
    'error',
    'max_items_per_request',
    'message',
    'request_id',
    'status',
    'timestamp',
  ])
  t.equal(refused.body.status, 413)
  t.equal(refused.body.error, 'Content Too Large')
  t.equal(refused.body.code, 'too_many_items')
  t.equal(refused.body.max_items_per_request, 10)
  t.match(refused.body.message, /10/)
  t.equal(rateHeaders(refused).remaining, 90, 'nothing was spent')
  t.equal(rateHeaders(refused).limit, 100)
  t.equal(await total(client), 10, 'nothing of the refused batch was stored')
  t.equal((await client.get('/article/J-1')).status, 404)
  const deletes = await client.call(
    'DELETE',
    '/article/batch',
    Array.from({ length: 11 }, (_, index) => `I-${index + 1}`),
  )
  t.equal(deletes.status, 413, 'a batch delete above the maximum is refused too')
  t.equal(await total(client), 10, 'and deletes nothing')
})

t.test(
  'a batch costing more than the burst is refused with 413 naming the burst, before it spends anything',
  async (t) => {
    const client = await server.tenant('burst', { limits: { ingest_rate: 0, ingest_burst: 5 } })
    t.equal((await client.call('PUT', '/article/B-0', { name: 'x' })).status, 202)
    const refused = await client.call('POST', '/article/batch', articles('B', 6))
    t.equal(refused.status, 413)
    t.equal(refused.body.code, 'too_many_items')
    t.equal(refused.body.error, 'Content Too Large')
    t.equal(refused.body.max_items_per_request, 5)
    t.equal(rateHeaders(refused).remaining, 4, 'nothing was spent')
    t.equal(await total(client), 1, 'nothing was stored')
    // A batch within the burst but above what is left is a 429, not a 413.
    const later = await client.call('POST', '/article/batch', articles('B', 5))
    t.equal(later.status, 429)
    t.equal(later.body.code, 'rate_limited')
    t.equal(rateHeaders(later).remaining, 4, 'a refused batch spends nothing either')
  },
)

t.test(
  'the article quota answers 422 quota_exceeded for the one too many, lists batch excess in failed, and frees a slot on delete',
  async (t) => {
    const client = await server.tenant('quota', { limits: { articles: 3 } })
    for (let index = 1; index <= 3; index++)
      t.equal((await client.call('PUT', `/article/Q-${index}`, { name: 'x' })).status, 202)
    const refused = await client.call('PUT', '/article/Q-4', { name: 'x' })
    t.equal(refused.status, 422)
    t.same(
      Object.keys(refused.body).sort(),
      ['code', 'error', 'message', 'request_id', 'status', 'timestamp'],
      'the documented error fields only',
    )
    t.equal(refused.body.status, 422)
    t.equal(refused.body.error, 'Unprocessable Content')
    t.equal(refused.body.code, 'quota_exceeded')
    t.match(refused.body.message, /3/)
    t.ok(refused.headers.get('x-ratelimit-limit') !== null, 'a quota refusal carries the rate-limit headers')
    t.equal((await client.get('/article/Q-4')).status, 404, 'the refused article was not stored')
    const update = await client.call('PUT', '/article/Q-1', { name: 'changed' })
    t.equal(update.status, 202, 'rewriting an existing article at full quota passes')
    t.equal((await client.get('/article/Q-1')).body.name, 'changed')
    t.equal((await client.call('DELETE', '/article/Q-2')).status, 202)
    t.equal((await client.call('PUT', '/article/Q-4', { name: 'x' })).status, 202, 'the deleted article freed a slot')
    t.equal((await client.call('PUT', '/article/Q-5', { name: 'x' })).status, 422, 'and only one')
    t.equal(
      (await client.call('PUT', '/article/Q-2', { name: 'back' })).status,
      422,
      'reviving a deleted article needs a slot too',
    )
    t.equal(await total(client), 3)

    const batchClient = await server.tenant('quota-batch', { limits: { articles: 3 } })
    t.equal((await batchClient.call('PUT', '/article/P-1', { name: 'x' })).status, 202)
    const batch = await batchClient.call('POST', '/article/batch', [
      { sku: 'P-1', name: 'update' },
      { sku: 'P-2', name: 'x' },
      { sku: 'P-3', name: 'x' },
      { sku: 'P-4', name: 'x' },
      { sku: 'P-5', name: 'x' },
    ])
    t.equal(batch.status, 202)
    t.equal(batch.body.accepted, 3)
    t.same(
      batch.body.failed.map((entry: { sku: string }) => entry.sku),
      ['P-4', 'P-5'],
      'the excess items are listed in failed',
    )
    for (const entry of batch.body.failed) t.match(entry.message, /quota|allows 3/)
    t.equal(await total(batchClient), 3)
    t.equal((await batchClient.get('/article/P-1')).body.name, 'update', 'updates within the quota were written')
    t.equal((await batchClient.get('/article/P-4')).status, 404)
  },
)

t.test('PATCH /admin/tenants/{slug} with new limits takes effect at once', async (t) => {
  const client = await server.tenant('patched', { limits: { ingest_rate: 0, ingest_burst: 2, articles: 2 } })
  t.equal((await client.call('PUT', '/article/X-1', { name: 'x' })).status, 202)
  t.equal((await client.call('PUT', '/article/X-2', { name: 'x' })).status, 202)
  t.equal((await client.call('PUT', '/article/X-1', { name: 'y' })).status, 429, 'the burst of 2 is spent')
  const patched = await server.admin('PATCH', '/admin/tenants/patched', { limits: { ingest_burst: 50, articles: 3 } })
  t.equal(patched.status, 200)
  const write = await client.call('PUT', '/article/X-3', { name: 'x' })
  t.equal(write.status, 202, 'the larger burst and quota apply to the next request')
  t.equal(rateHeaders(write).limit, 50)
  t.equal((await client.call('PUT', '/article/X-4', { name: 'x' })).status, 422, 'the new quota of 3 holds')
  const items = await server.admin('PATCH', '/admin/tenants/patched', { limits: { max_items_per_request: 2 } })
  t.equal(items.status, 200)
  const batch = await client.call('POST', '/article/batch', articles('X', 3))
  t.equal(batch.status, 413)
  t.equal(batch.body.max_items_per_request, 2)
  t.equal(rateHeaders(batch).limit, 50, 'a later PATCH keeps the earlier overrides')
  const unlimited = await server.admin('PATCH', '/admin/tenants/patched', {
    limits: { ingest_rate: null, ingest_burst: null, articles: null, max_items_per_request: null },
  })
  t.equal(unlimited.status, 200)
  const many = await client.call('POST', '/article/batch', articles('Y', 60))
  t.equal(many.status, 202, 'null means unlimited')
  t.equal(many.body.accepted, 60)
  t.equal(many.headers.get('x-ratelimit-limit'), null, 'an unlimited dimension has no limit to report')
})

t.test(
  'the engine maximum of 2,500 items per request holds even when an override lifts the plan maximum (413, not 400)',
  async (t) => {
    for (const [slug, override] of [
      ['items-null', null],
      ['items-high', 5000],
    ] as const) {
      const client = await server.tenant(slug, {
        limits: { ingest_rate: null, ingest_burst: null, max_items_per_request: override },
      })
      const refused = await client.call('POST', '/article/batch', articles('E', 2501))
      t.equal(refused.status, 413, `override ${override}: 2,501 items are too many`)
      t.equal(refused.body.code, 'too_many_items')
      t.equal(refused.body.max_items_per_request, 2500)
      t.equal(await total(client), 0, 'nothing was stored')
      const full = await client.call('POST', '/article/batch', articles('E', 2500))
      t.equal(full.status, 202)
      t.equal(full.body.accepted, 2500)
    }
  },
)

t.test('an operator PATCH that leaves the rate limits alone does not refill the buckets', async (t) => {
  const client = await server.tenant('no-refill', { limits: { ingest_rate: 0, ingest_burst: 2 } })
  t.equal((await client.call('PUT', '/article/N-1', { name: 'x' })).status, 202)
  t.equal((await client.call('PUT', '/article/N-2', { name: 'x' })).status, 202)
  t.equal((await client.call('PUT', '/article/N-3', { name: 'x' })).status, 429)
  t.equal((await server.admin('PATCH', '/admin/tenants/no-refill', { limits: { articles: 100 } })).status, 200)
  const still = await client.call('PUT', '/article/N-3', { name: 'x' })
  t.equal(still.status, 429, 'a quota change does not hand out a fresh burst')
  t.equal(still.headers.get('x-ratelimit-remaining'), '0')
  t.equal((await server.admin('PATCH', '/admin/tenants/no-refill', { status: 'suspended' })).status, 200)
  t.equal((await server.admin('PATCH', '/admin/tenants/no-refill', { status: 'active' })).status, 200)
  t.equal(
    (await client.call('PUT', '/article/N-3', { name: 'x' })).status,
    429,
    'neither does suspending and reactivating',
  )
  t.equal((await client.get('/article/N-1')).status, 200, 'the query bucket was not touched')
})
