/**
 * The token endpoint under attack (issue 13): an unknown client id and a wrong secret answer
 * alike, in body and (statistically) in time, so the answer does not tell which client ids exist;
 * failed attempts are limited per client id and per client address (`PRICING_TOKEN_FAILURES_*`),
 * and the limit on one does not lock out the other. Requests come from several loopback source
 * addresses (127.0.0.2 and up) to one server.
 */
import http from 'node:http'
import t from 'tap'
import { startServer, type TestServer } from '../helpers/server.js'

const burst = 5
let server: TestServer
let first: { client_id: string; client_secret: string }
let second: { client_id: string; client_secret: string }
/** Keys that get one wrong secret each (the timing test), so that no failure limit is reached. */
const probes: { client_id: string; client_secret: string }[] = []
const rounds = 16

t.before(async () => {
  server = await startServer({ env: { PRICING_TOKEN_FAILURES_BURST: String(burst), PRICING_TOKEN_FAILURES_PER_MINUTE: '1' } })
  await server.tenant('acme')
  first = (await server.admin('POST', '/admin/tenants/acme/keys', { name: 'first' })).body
  second = (await server.admin('POST', '/admin/tenants/acme/keys', { name: 'second' })).body
  for (let round = 0; round < rounds; round++) probes.push((await server.admin('POST', '/admin/tenants/acme/keys', { name: `probe-${round}` })).body)
})
t.teardown(async () => server.dispose())

interface TokenAnswer {
  status: number
  body: Record<string, unknown>
  retryAfter: string | undefined
  ms: number
}

/** A token request from the loopback address `from`. */
function tokenRequest(from: string, clientId: string, clientSecret: string): Promise<TokenAnswer> {
  const body = new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret }).toString()
  const url = new URL('/oauth2/token', server.url)
  const started = performance.now()
  return new Promise((resolve, reject) => {
    const request = http.request(
      { host: url.hostname, port: url.port, path: url.pathname, method: 'POST', localAddress: from, headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(body) } },
      (response) => {
        let text = ''
        response.on('data', (chunk: Buffer) => (text += chunk.toString()))
        response.on('end', () => resolve({ status: response.statusCode!, body: JSON.parse(text) as Record<string, unknown>, retryAfter: response.headers['retry-after'] as string | undefined, ms: performance.now() - started }))
      },
    )
    request.once('error', reject)
    request.end(body)
  })
}

const median = (values: number[]): number => [...values].sort((left, right) => left - right)[Math.floor(values.length / 2)]!

t.test('an unknown client id and a wrong secret answer alike, in body and in time', async (t) => {
  const unknown: number[] = []
  const wrong: number[] = []
  // Each round from addresses and client ids of its own: no failure limit is reached.
  for (let round = 0; round < rounds; round++) {
    const a = await tokenRequest(`127.0.1.${round + 1}`, round.toString(16).padStart(24, 'f'), 'x'.repeat(64))
    const b = await tokenRequest(`127.0.2.${round + 1}`, probes[round]!.client_id, 'x'.repeat(64))
    if (round === 0) {
      t.equal(a.status, 401)
      t.equal(b.status, 401)
      t.same(a.body, b.body, 'the same body, word for word')
    }
    unknown.push(a.ms)
    wrong.push(b.ms)
  }
  const ratio = median(unknown) / median(wrong)
  // Without the slow hash for unknown ids, an unknown id answered tens of times faster.
  t.ok(ratio > 1 / 3 && ratio < 3, `median ${median(unknown).toFixed(1)} ms for an unknown id, ${median(wrong).toFixed(1)} ms for a wrong secret (ratio ${ratio.toFixed(2)}): both pay the slow hash`)
})

t.test('failed attempts are limited per client id, whatever the address', async (t) => {
  for (let attempt = 1; attempt <= burst; attempt++) t.equal((await tokenRequest('127.0.3.1', first.client_id, 'wrong')).status, 401, `failure ${attempt}`)
  const locked = await tokenRequest('127.0.3.1', first.client_id, 'wrong')
  t.equal(locked.status, 429)
  t.ok(Number(locked.retryAfter) >= 1, `Retry-After ${locked.retryAfter}`)
  const elsewhere = await tokenRequest('127.0.3.2', first.client_id, first.client_secret)
  t.equal(elsewhere.status, 429, 'the right secret from another address waits too: the client id is locked')
  t.equal((await tokenRequest('127.0.3.2', second.client_id, second.client_secret)).status, 200, 'another client from that address is not')
})

t.test('failed attempts are limited per address, whatever the client id', async (t) => {
  for (let attempt = 1; attempt <= burst; attempt++) t.equal((await tokenRequest('127.0.4.1', `${attempt}`.repeat(24), 'wrong')).status, 401, `failure ${attempt}, another unknown id each time`)
  const locked = await tokenRequest('127.0.4.1', second.client_id, second.client_secret)
  t.equal(locked.status, 429, 'the address is locked, even for a right secret')
  t.equal(locked.body['error'], 'invalid_request')
  t.equal((await tokenRequest('127.0.4.2', second.client_id, second.client_secret)).status, 200, 'another address is not')
})

t.test('a client_id longer than any client id: 400 invalid_request, never a 500 (found by the fuzzer: LMDB refused the key)', async (t) => {
  for (const length of [257, 5000, 200_000]) {
    const answer = await tokenRequest('127.0.5.1', 'a'.repeat(length), 'x')
    t.same([answer.status, answer.body['error']], [400, 'invalid_request'], `${length} characters`)
  }
  const json = await server.request('POST', '/oauth2/token', { body: { grant_type: 'client_credentials', client_id: 'a'.repeat(5000), client_secret: 'x' } })
  t.same([json.status, json.body.error], [400, 'invalid_request'], 'the same as JSON')
  t.equal((await tokenRequest('127.0.5.1', second.client_id, second.client_secret)).status, 200, 'no failure was counted against the address')
})
