/**
 * Text the API refuses because storing it would change it or mislead a reader: RFC 3339 offsets
 * outside 00:00-23:59, JSON strings that are not well-formed Unicode (a lone surrogate, which the
 * store turned into U+FFFD across a restart), bodies that are not UTF-8, and codes holding control
 * or format characters (C1, U+202E bidi override, U+200B, U+FEFF) or lone surrogates. Each refusal
 * is a 400 with the spec's error body naming the field, and nothing is stored. Codes are opaque:
 * an NFC and an NFD spelling are two codes (docs/api.md).
 */
import t, { type Test } from 'tap'
import type { Answer, TenantClient } from '../helpers/server.js'
import { suiteServer } from '../helpers/suite.js'

const {
  server,
  tenants: { acme },
} = await suiteServer({ tenants: { acme: {} } })

t.before(async () => {
  const pricelist = await acme.call('PUT', '/pricelist/BASE', { currency_code: 'EUR', vat_mode: 'NET' })
  if (pricelist.status !== 202) throw new Error(`pricelist: ${pricelist.status} ${pricelist.text}`)
})

function raw(client: TenantClient, method: string, path: string, body: string | Buffer): Promise<Answer> {
  return client.server.request(method, `${client.base}${path}`, {
    raw: body,
    token: client.token,
    headers: { 'content-type': 'application/json' },
  })
}

function refused(t: Test, answer: Answer, path: string | null, what: string): void {
  t.equal(answer.status, 400, `${what}: 400 (${answer.text.slice(0, 200)})`)
  t.equal(answer.body?.error, 'Bad Request', `${what}: the spec's error body`)
  if (path !== null) {
    t.equal(answer.body?.code, 'validation_failed', `${what}: validation_failed`)
    t.equal(answer.body?.details?.[0]?.path, path, `${what}: names ${path}`)
  }
}

t.test('an RFC 3339 offset has hours 00-23 and minutes 00-59: +24:00, -24:00 and +05:60 are refused', async (t) => {
  for (const offset of ['+24:00', '-24:00', '+05:60', '+99:99']) {
    const start = `2030-01-01T00:00:00${offset}`
    refused(
      t,
      await acme.call('PUT', '/price/OFF/BASE', { price: 1, start_date: start }),
      '/start_date',
      `start_date ${start}`,
    )
    refused(
      t,
      await acme.call('PUT', '/article/OFF', { name: 'x', start_date: start }),
      '/start_date',
      `article start_date ${start}`,
    )
    const read = await acme.get(`/article?as_of=${encodeURIComponent(start)}`)
    t.equal(read.status, 400, `as_of ${start} in a query string: 400`)
    t.equal(read.body.code, 'validation_failed')
  }
  t.equal((await acme.get('/price/OFF/BASE')).status, 404, 'nothing was stored')
  // The largest offsets there are: +23:59 and -23:59.
  t.equal(
    (await acme.call('PUT', '/price/OFF/BASE', { price: 1, start_date: '2030-01-01T00:00:00+23:59' })).status,
    202,
  )
  const history = await acme.get('/price/history/BASE/OFF')
  t.ok(
    history.text.includes('2029-12-31T00:01:00Z'),
    `+23:59 is 23 h 59 min before UTC (${history.text.slice(0, 300)})`,
  )
  t.equal((await acme.get(`/article?as_of=${encodeURIComponent('2030-01-01T00:00:00-23:59')}`)).status, 200)
})

t.test('a JSON string or key that is not well-formed Unicode is refused, naming the field', async (t) => {
  // JSON.stringify writes a lone surrogate as the escape \udfff, as a client's JSON would.
  refused(t, await acme.call('PUT', '/article/LONE', { name: 'N\udfffN' }), '/name', 'a lone low surrogate in a name')
  refused(
    t,
    await acme.call('PUT', '/article/LONE', { name: 'ok', metadata: { colour: ['red\ud800'] } }),
    '/metadata/colour/0',
    'in a metadata value',
  )
  refused(
    t,
    await acme.call('PUT', '/article/LONE', { name: 'ok', metadata: { ['k\udc00']: ['red'] } }),
    '/metadata/k\ufffd',
    'in a key',
  )
  refused(
    t,
    await acme.call('POST', '/article/batch', [
      { sku: 'B-1', name: 'fine' },
      { sku: 'B-2', name: '\ud83dx' },
    ]),
    '/1/name',
    'in a batch item',
  )
  t.equal((await acme.get('/article/LONE')).status, 404, 'nothing was stored')
  t.equal((await acme.get('/article/B-1')).status, 404, 'a refused body stores none of its items')
  // Bytes that are not UTF-8 (toString turned them into U+FFFD) are malformed JSON.
  const latin1 = Buffer.concat([Buffer.from('{"name":"caf'), Buffer.from([0xe9]), Buffer.from('"}')])
  const answer = await raw(acme, 'PUT', '/article/LATIN1', latin1)
  t.equal(answer.status, 400, 'a body that is not UTF-8: 400')
  t.equal(answer.body.code, 'malformed_json')
  t.equal((await acme.get('/article/LATIN1')).status, 404)
})

t.test('well-formed text, astral characters included, reads back unchanged across a restart', async (t) => {
  const name = 'N\u{1F600}N \u00e9 \\u escaped \ufffd'
  t.equal((await acme.call('PUT', '/article/EMOJI', { name })).status, 202)
  t.equal((await acme.get('/article/EMOJI')).body.name, name)
  await server.restart()
  await acme.refreshToken()
  t.equal((await acme.get('/article/EMOJI')).body.name, name, 'the same after a restart')
})

t.test('codes refuse Unicode control and format characters and lone surrogates', async (t) => {
  const bad: [string, string][] = [
    ['C1 control U+0085', 'A\u0085B'],
    ['C1 control U+009B (CSI)', 'A\u009bB'],
    ['bidi override U+202E', 'A\u202eB'],
    ['zero-width space U+200B', 'A\u200bB'],
    ['byte order mark U+FEFF', '\ufeffAB'],
    ['soft hyphen U+00AD', 'A\u00adB'],
    ['lone surrogate', 'A\udfffB'],
  ]
  // A lone surrogate anywhere refuses the whole body (the JSON reader, before any item).
  refused(
    t,
    await acme.call('POST', '/article/batch', [{ sku: 'A\udfffB', name: 'x' }]),
    '/0/sku',
    'article batch: lone surrogate',
  )
  refused(
    t,
    await acme.call('PUT', '/pricelist/PL-LONE', { currency_code: 'EUR', parent_code: 'A\udfffB' }),
    '/parent_code',
    'parent_code: lone surrogate',
  )
  for (const [index, [what, code]] of bad.filter(([, code]) => !code.includes('\udfff')).entries()) {
    const batch = await acme.call('POST', '/article/batch', [{ sku: code, name: 'x' }])
    t.equal(batch.status, 202, `article batch: ${what}`)
    t.equal(batch.body.accepted, 0, `article batch: ${what} is not accepted`)
    t.match(
      batch.body.failed[0]?.message,
      /code without control characters/,
      `article batch: ${what} is listed with the reason`,
    )
    refused(
      t,
      await acme.call('PUT', `/pricelist/PL-${index}`, { currency_code: 'EUR', parent_code: code }),
      '/parent_code',
      `parent_code: ${what}`,
    )
    const prices = await acme.call('POST', '/price/batch', [{ sku: code, pricelist: 'BASE', price: 1 }])
    t.same([prices.status, prices.body.accepted], [202, 0], `price batch: ${what} is not accepted`)
    t.match(
      prices.body.failed[0]?.message,
      /^\/sku: Expected a code without control characters/,
      `price batch: ${what} is listed`,
    )
  }
  // In the path: the code itself (percent-encoded UTF-8) is checked.
  for (const [what, code] of bad.filter(([, code]) => !code.includes('\udfff'))) {
    refused(
      t,
      await acme.call('PUT', `/article/${encodeURIComponent(code)}`, { name: 'x' }),
      '/sku',
      `article path: ${what}`,
    )
    refused(
      t,
      await acme.call('PUT', `/bundle/${encodeURIComponent(code)}/BASE`, { method: 'FIXED', fixed_price: 1 }),
      '/bundleSku',
      `bundle path: ${what}`,
    )
    refused(
      t,
      await acme.call('PUT', `/pricelist/${encodeURIComponent(code)}`, { currency_code: 'EUR' }),
      '/code',
      `pricelist path: ${what}`,
    )
    refused(
      t,
      await acme.call('PUT', `/tax-area/${encodeURIComponent(code)}`, { name: 'x' }),
      '/code',
      `tax area path: ${what}`,
    )
  }
  const stored = (await acme.get('/article')).body.map((article: { sku: string }) => article.sku)
  t.same(stored, ['EMOJI'], 'no article with such a code was stored')
  // Other scripts, symbols and astral characters are codes as before.
  for (const code of ['ÄPFEL-1', '商品-7', 'Ω\u{1F600}', 'a b']) {
    t.equal(
      (await acme.call('PUT', `/article/${encodeURIComponent(code)}`, { name: 'x' })).status,
      202,
      `${code} is a code`,
    )
  }
})

t.test('codes are opaque: an NFC and an NFD spelling are two codes', async (t) => {
  const composed = 'CAF\u00c9'.normalize('NFC')
  const decomposed = composed.normalize('NFD')
  t.not(composed, decomposed)
  t.equal((await acme.call('PUT', `/article/${encodeURIComponent(composed)}`, { name: 'composed' })).status, 202)
  t.equal((await acme.call('PUT', `/article/${encodeURIComponent(decomposed)}`, { name: 'decomposed' })).status, 202)
  t.equal((await acme.get(`/article/${encodeURIComponent(composed)}`)).body.name, 'composed')
  t.equal((await acme.get(`/article/${encodeURIComponent(decomposed)}`)).body.name, 'decomposed')
  const skus = (await acme.get('/article')).body.map((article: { sku: string }) => article.sku)
  t.ok(skus.includes(composed) && skus.includes(decomposed), 'both are listed, each as written')
})

t.test('a path parameter that is not valid percent-encoded UTF-8 is refused, not kept as literal text', async (t) => {
  for (const segment of ['%ED%BF%BF', '%E2%82', '%zz', 'A%FFB']) {
    const written = await acme.call('PUT', `/article/${segment}`, { name: 'x' })
    refused(t, written, 'url', `PUT /article/${segment}`)
    const read = await acme.get(`/article/${segment}`)
    t.equal(read.status, 400, `GET /article/${segment}: 400`)
  }
  t.equal((await acme.get('/article/%25ED%25BF%25BF')).status, 404, 'nothing was stored under the literal text')
  // A valid encoding still decodes: %C3%A9 is é.
  t.equal((await acme.call('PUT', '/article/CAF%C3%89', { name: 'x' })).status, 202)
  t.equal((await acme.get('/article/CAF\u00c9')).status, 200)
})
