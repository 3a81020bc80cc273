/**
 * Error handling and request bounds (SPEC "Errors", API.md §6 and §9): every error body is
 * `{timestamp, status, error, message, code}` (+ `details` for validation) with the RFC 9110 reason
 * phrase; malformed, mistyped, over-long or unknown input is 400 and stores nothing; other media
 * types 415; bodies above engine/limits.ts requestBodyBytesMax and batches above the item maximum 413.
 */
import { request as httpRequest } from 'node:http'
import t, { type Test } from 'tap'
import { batchItemsMax, codeLengthMax, requestBodyBytesMax, textLengthMax } from '../../engine/limits.js'
import type { Answer } from '../helpers/server.js'
import { suiteServer } from '../helpers/suite.js'

// Unlimited ingest, so that the big requests below are judged on their size, not the rate.
const {
  server,
  tenants: { acme },
} = await suiteServer({
  tenants: { acme: { limits: { ingest_rate: null, ingest_burst: null, articles: null } } },
})

const rfc3339Utc = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z$/

/** Checks the spec's error body exactly and answers it. */
function checkErrorBody(
  t: Test,
  answer: Answer,
  status: number,
  error: string,
  code: string,
  extra: string[] = [],
): void {
  t.equal(answer.status, status, `HTTP status ${status}`)
  t.equal(answer.headers.get('content-type'), 'application/json')
  const body = answer.body as Record<string, unknown>
  t.same(
    Object.keys(body ?? {}).sort(),
    ['code', 'error', 'message', 'request_id', 'status', 'timestamp', ...extra].sort(),
    `${code}: exactly the spec's fields`,
  )
  t.equal(body.request_id, answer.headers.get('x-request-id'), 'request_id is the x-request-id header')
  t.equal(body.status, status, 'status equals the HTTP status')
  t.equal(body.error, error, 'error is the RFC 9110 reason phrase')
  t.equal(body.code, code)
  t.ok(typeof body.message === 'string' && body.message.length > 0, 'message is text')
  t.match(body.timestamp, rfc3339Utc, 'timestamp is RFC 3339 UTC')
  t.ok(Math.abs(Date.parse(body.timestamp as string) - Date.now()) < 60_000, 'timestamp is now')
}

function put(path: string, raw: string | Buffer, contentType = 'application/json'): Promise<Answer> {
  return server.request('PUT', `${acme.base}${path}`, {
    raw,
    headers: { 'content-type': contentType },
    token: acme.token,
  })
}

async function articleCount(): Promise<number> {
  const list = await acme.get('/article?page=1&size=1')
  return list.body.total
}

t.test('malformed JSON is 400 malformed_json and stores nothing', async (t) => {
  const before = await articleCount()
  for (const raw of ['{"name": ', '{name: "x"}', "{'name': 'x'}", '{"name": "x"} trailing']) {
    const answer = await put('/article/MALFORMED', raw)
    checkErrorBody(t, answer, 400, 'Bad Request', 'malformed_json')
  }
  const batch = await server.request('POST', `${acme.base}/article/batch`, {
    raw: '[{"sku": "M-1"},',
    headers: { 'content-type': 'application/json' },
    token: acme.token,
  })
  checkErrorBody(t, batch, 400, 'Bad Request', 'malformed_json')
  t.equal((await acme.get('/article/MALFORMED')).status, 404)
  t.equal((await acme.get('/article/M-1')).status, 404)
  t.equal(await articleCount(), before)
})

t.test('a field of the wrong type is 400 validation_failed with details [{path, message}]', async (t) => {
  const answer = await acme.call('PUT', '/article/TYPED', { name: 5 })
  checkErrorBody(t, answer, 400, 'Bad Request', 'validation_failed', ['details'])
  t.ok(Array.isArray(answer.body.details) && answer.body.details.length > 0)
  for (const detail of answer.body.details) {
    t.same(Object.keys(detail).sort(), ['message', 'path'])
    t.equal(typeof detail.message, 'string')
  }
  t.ok(
    answer.body.details.some((detail: { path: string }) => detail.path === '/name'),
    'a detail names /name',
  )
  const metadata = await acme.call('PUT', '/article/TYPED', { metadata: { color: 'red' } })
  t.equal(metadata.status, 400)
  t.ok(metadata.body.details.some((detail: { path: string }) => detail.path.startsWith('/metadata')))
  const date = await acme.call('PUT', '/article/TYPED', { name: 'x', start_date: 'tomorrow' })
  t.equal(date.status, 400)
  t.ok(date.body.details.some((detail: { path: string }) => detail.path === '/start_date'))
  const array = await acme.call('PUT', '/article/TYPED', [{ name: 'x' }])
  t.equal(array.status, 400, 'an array where an object belongs')
  t.equal((await acme.get('/article/TYPED')).status, 404, 'nothing was stored')
})

t.test(
  'over-long codes and texts are refused: SKU of 65 in the path 400, in a batch item listed in failed; name of 1025 400',
  async (t) => {
    const longSku = 'S'.repeat(codeLengthMax + 1)
    const path = await acme.call('PUT', `/article/${longSku}`, { name: 'x' })
    checkErrorBody(t, path, 400, 'Bad Request', 'validation_failed', ['details'])
    t.equal(
      (await acme.call('PUT', `/article/${'S'.repeat(codeLengthMax)}`, { name: 'x' })).status,
      202,
      'exactly 64 passes',
    )
    const body = await acme.call('PUT', '/article/BODY-SKU', { sku: longSku, name: 'x' })
    t.equal(body.status, 400, 'a long sku in the body is refused')
    // A batch is not atomic (SPEC "General conventions"): the bad item fails, the good one is written.
    const batch = await acme.call('POST', '/article/batch', [
      { sku: longSku, name: 'x' },
      { sku: 'GOOD-1', name: 'x' },
    ])
    t.equal(batch.status, 202)
    t.equal(batch.body.accepted, 1)
    t.equal(batch.body.failed.length, 1)
    t.equal(batch.body.failed[0].sku, longSku)
    t.match(batch.body.failed[0].message, /sku/)
    t.equal((await acme.get(`/article/${longSku}`)).status, 404, 'nothing was stored under the over-long SKU')
    t.equal((await acme.get('/article/GOOD-1')).status, 200)
    const name = await acme.call('PUT', '/article/LONG-NAME', { name: 'n'.repeat(textLengthMax + 1) })
    checkErrorBody(t, name, 400, 'Bad Request', 'validation_failed', ['details'])
    t.ok(name.body.details.some((detail: { path: string }) => detail.path === '/name'))
    t.equal((await acme.get('/article/LONG-NAME')).status, 404)
    t.equal(
      (await acme.call('PUT', '/article/LONG-NAME', { name: 'n'.repeat(textLengthMax) })).status,
      202,
      'exactly 1024 passes',
    )
  },
)

t.test('unknown fields are 400 and store nothing; the response-only fields are accepted', async (t) => {
  const answer = await acme.call('PUT', '/article/UNKNOWN', { name: 'x', colour: 'red' })
  checkErrorBody(t, answer, 400, 'Bad Request', 'validation_failed', ['details'])
  t.equal((await acme.get('/article/UNKNOWN')).status, 404)
  const search = await acme.call('POST', '/article/search', { text: 'x', colour: 'red' })
  t.equal(search.status, 400, 'unknown fields in a read body too')
  const query = await acme.get('/article?colour=red')
  t.equal(query.status, 400, 'unknown query parameters too')
  t.equal(query.body.code, 'validation_failed')
  const roundTrip = await acme.call('PUT', '/article/UNKNOWN', {
    name: 'x',
    updated_at: '2024-01-01T00:00:00Z',
    updated_by: 'someone',
  })
  t.equal(roundTrip.status, 202)
})

t.test('a body that is not JSON is 415 and stores nothing', async (t) => {
  for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
    const answer = await put('/article/MEDIA', '{"name": "x"}', type)
    checkErrorBody(t, answer, 415, 'Unsupported Media Type', 'unsupported_media_type')
  }
  t.equal((await acme.get('/article/MEDIA')).status, 404)
  t.equal(
    (await put('/article/MEDIA', '{"name": "x"}', 'application/json; charset=utf-8')).status,
    202,
    'JSON with a charset passes',
  )
})

/** Sends a raw body with node:http, declaring its length (as most clients do). */
function rawPost(path: string, body: Buffer, headers: Record<string, string>): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      `${server.url}${path}`,
      { method: 'POST', headers: { ...headers, 'content-length': String(body.length) } },
      (response) => {
        const chunks: Buffer[] = []
        response.on('data', (chunk: Buffer) => chunks.push(chunk))
        response.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8')
          const responseHeaders = new Headers()
          for (const [name, value] of Object.entries(response.headers))
            if (typeof value === 'string') responseHeaders.set(name, value)
          resolve({
            status: response.statusCode!,
            headers: responseHeaders,
            body: text === '' ? undefined : JSON.parse(text),
            text,
          })
        })
      },
    )
    request.on('error', reject)
    request.end(body)
  })
}

t.test(
  'a body over requestBodyBytesMax is 413 body_too_large, readable by the uploading client, and the server keeps serving',
  async (t) => {
    t.equal(requestBodyBytesMax, 8 * 1024 * 1024)
    const items = Math.ceil((9 * 1024 * 1024) / 4000)
    const big = Buffer.from(
      JSON.stringify(Array.from({ length: items }, (_, index) => ({ sku: `BIG-${index}`, name: 'n'.repeat(3980) }))),
    )
    t.ok(
      big.length > requestBodyBytesMax && big.length < 10 * 1024 * 1024,
      `the body is about 9 MiB (${big.length} bytes)`,
    )
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${acme.token}` }
    // The server reads the rest of the upload before answering, so that Node's clients (which fail
    // with EPIPE when the server closes mid-upload) read the 413.
    for (let attempt = 0; attempt < 3; attempt++) {
      const declared = await rawPost(`${acme.base}/article/batch`, big, headers)
      checkErrorBody(t, declared, 413, 'Content Too Large', 'body_too_large')
    }
    const viaFetch = await fetch(`${server.url}${acme.base}/article/batch`, { method: 'POST', headers, body: big })
    t.equal(viaFetch.status, 413, 'fetch with a declared length reads the 413')
    t.equal(((await viaFetch.json()) as { code: string }).code, 'body_too_large')
    // Without a declared length (chunked upload) the limit holds while reading.
    const chunked = await fetch(`${server.url}${acme.base}/article/batch`, {
      method: 'POST',
      headers,
      body: new ReadableStream({
        start(controller) {
          for (let offset = 0; offset < big.length; offset += 1024 * 1024)
            controller.enqueue(big.subarray(offset, offset + 1024 * 1024))
          controller.close()
        },
      }),
      duplex: 'half',
    } as RequestInit)
    t.equal(chunked.status, 413, 'a chunked body over the limit is 413')
    t.equal(((await chunked.json()) as { code: string }).code, 'body_too_large')
    t.equal((await acme.get('/article/BIG-0')).status, 404, 'nothing was stored')
    t.equal((await server.request('GET', '/healthz')).status, 200, 'the server keeps serving')
    t.equal((await acme.call('PUT', '/article/AFTER-BIG', { name: 'x' })).status, 202)
    t.equal((await acme.get('/article/AFTER-BIG')).status, 200)
  },
)

t.test('a batch of more than the item maximum is 413 too_many_items and stores nothing', async (t) => {
  t.equal(batchItemsMax, 2500)
  const items = Array.from({ length: batchItemsMax + 1 }, (_, index) => ({ sku: `MAX-${index}`, name: 'x' }))
  const answer = await acme.call('POST', '/article/batch', items)
  checkErrorBody(t, answer, 413, 'Content Too Large', 'too_many_items', ['max_items_per_request'])
  t.equal(answer.body.max_items_per_request, batchItemsMax)
  t.equal((await acme.get('/article/MAX-0')).status, 404)
  const full = await acme.call('POST', '/article/batch', items.slice(0, batchItemsMax))
  t.equal(full.status, 202, 'exactly the maximum passes')
  t.equal(full.body.accepted, batchItemsMax)
})

t.test('an empty batch or a batch that is not an array is 400 and stores nothing', async (t) => {
  const before = await articleCount()
  const empty = await acme.call('POST', '/article/batch', [])
  checkErrorBody(t, empty, 400, 'Bad Request', 'validation_failed', ['details'])
  for (const body of [{ sku: 'OBJ-1', name: 'x' }, 'OBJ-1', 5, null]) {
    const answer = await acme.call('POST', '/article/batch', body)
    checkErrorBody(t, answer, 400, 'Bad Request', 'validation_failed', ['details'])
  }
  const missing = await server.request('POST', `${acme.base}/article/batch`, { token: acme.token })
  t.equal(missing.status, 400, 'no body at all')
  t.equal((await acme.call('DELETE', '/article/batch', [])).status, 400, 'an empty batch delete')
  t.equal((await acme.get('/article/OBJ-1')).status, 404)
  t.equal(await articleCount(), before)
})

t.test('every other error status answers the spec body with its reason phrase', async (t) => {
  checkErrorBody(t, await server.request('GET', '/t/nobody/article'), 404, 'Not Found', 'tenant_not_found')
  checkErrorBody(t, await acme.get('/article/NOT-THERE'), 404, 'Not Found', 'not_found')
  checkErrorBody(t, await acme.get('/no-such-route'), 404, 'Not Found', 'route_not_found')
  const method = await acme.call('PATCH', '/article/X', { name: 'x' })
  checkErrorBody(t, method, 405, 'Method Not Allowed', 'method_not_allowed')
  t.ok(method.headers.get('allow') !== null, '405 names the allowed methods')
  const unauthorized = await server.request('GET', `${acme.base}/article`)
  checkErrorBody(t, unauthorized, 401, 'Unauthorized', 'unauthorized')
  t.equal(unauthorized.headers.get('www-authenticate'), 'Bearer')
  const other = await server.tenant('other')
  checkErrorBody(
    t,
    await server.request('GET', `${acme.base}/article`, { token: other.token }),
    401,
    'Unauthorized',
    'unauthorized',
  )
})
