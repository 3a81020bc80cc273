/**
 * The token endpoint under attack: an unknown client id and a wrong secret answer alike, in body
 * and (statistically) in time, so the answer does not tell which client ids exist; failed attempts
 * are limited per (client id, address) and per address (`PRICING_TOKEN_FAILURES_*`), so wrong
 * secrets from one address do not lock the key out from another; requests are charged before the
 * slow hash, so parallel ones cannot all be hashed; and the limits' tables are bounded without
 * forgetting a lockout. Requests come from several loopback source addresses (127.0.0.2 and up).
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
  server = await startServer({
    env: { PRICING_TOKEN_FAILURES_BURST: String(burst), PRICING_TOKEN_FAILURES_PER_MINUTE: '1' },
  })
  await server.tenant('acme')
  first = (await server.admin('POST', '/admin/tenants/acme/keys', { name: 'first' })).body
  second = (await server.admin('POST', '/admin/tenants/acme/keys', { name: 'second' })).body
  for (let round = 0; round < rounds; round++)
    probes.push((await server.admin('POST', '/admin/tenants/acme/keys', { name: `probe-${round}` })).body)
})
t.teardown(async () => server.dispose())

interface TokenAnswer {
  status: number
  body: Record<string, unknown>
  retryAfter: string | undefined
  ms: number
}

/** A token request from the loopback address `from` (to `target`, the suite's server by default). */
function tokenRequest(
  from: string,
  clientId: string,
  clientSecret: string,
  target: TestServer = server,
): Promise<TokenAnswer> {
  const body = new URLSearchParams({
    grant_type: 'client_credentials',
    client_id: clientId,
    client_secret: clientSecret,
  }).toString()
  const url = new URL('/oauth2/token', target.url)
  const started = performance.now()
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        localAddress: from,
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(body) },
      },
      (response) => {
        let text = ''
        response.on('data', (chunk: Buffer) => (text += chunk.toString()))
        response.on('end', () =>
          resolve({
            status: response.statusCode!,
            body: JSON.parse(text) as Record<string, unknown>,
            retryAfter: response.headers['retry-after'] as string | undefined,
            ms: performance.now() - started,
          }),
        )
      },
    )
    request.once('error', reject)
    request.end(body)
  })
}

const median = (values: number[]): number =>
  [...values].sort((left, right) => left - right)[Math.floor(values.length / 2)]!

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
  t.ok(
    ratio > 1 / 3 && ratio < 3,
    `median ${median(unknown).toFixed(1)} ms for an unknown id, ${median(wrong).toFixed(1)} ms for a wrong secret (ratio ${ratio.toFixed(2)}): both pay the slow hash`,
  )
})

t.test('failed attempts are limited per client id and address: a stranger does not lock the owner out', async (t) => {
  for (let attempt = 1; attempt <= burst; attempt++)
    t.equal((await tokenRequest('127.0.3.1', first.client_id, 'wrong')).status, 401, `failure ${attempt}`)
  const locked = await tokenRequest('127.0.3.1', first.client_id, 'wrong')
  t.equal(locked.status, 429)
  t.ok(Number(locked.retryAfter) >= 1, `Retry-After ${locked.retryAfter}`)
  t.equal(
    (await tokenRequest('127.0.3.1', first.client_id, first.client_secret)).status,
    429,
    'from that address even the right secret waits',
  )
  t.equal(
    (await tokenRequest('127.0.3.2', first.client_id, first.client_secret)).status,
    200,
    'the owner, from another address, gets its token',
  )
  t.equal(
    (await tokenRequest('127.0.3.2', second.client_id, second.client_secret)).status,
    200,
    'and another client too',
  )
})

t.test('parallel requests are charged before the slow hash: at most the burst is hashed', async (t) => {
  const answers = await Promise.all(
    Array.from({ length: 60 }, (_, index) =>
      tokenRequest('127.0.6.1', index.toString(16).padStart(24, 'e'), 'x'.repeat(64)),
    ),
  )
  const statuses = answers.map((answer) => answer.status)
  t.equal(statuses.filter((status) => status === 401).length, burst, `${burst} hashed and refused (401)`)
  t.equal(statuses.filter((status) => status === 429).length, 60 - burst, 'the rest refused at once (429), unhashed')
  t.equal(
    (await tokenRequest('127.0.6.2', second.client_id, second.client_secret)).status,
    200,
    'another address is served',
  )
})

t.test('failed attempts are limited per address, whatever the client id', async (t) => {
  for (let attempt = 1; attempt <= burst; attempt++)
    t.equal(
      (await tokenRequest('127.0.4.1', `${attempt}`.repeat(24), 'wrong')).status,
      401,
      `failure ${attempt}, another unknown id each time`,
    )
  const locked = await tokenRequest('127.0.4.1', second.client_id, second.client_secret)
  t.equal(locked.status, 429, 'the address is locked, even for a right secret')
  t.equal(locked.body['error'], 'invalid_request')
  t.equal(
    (await tokenRequest('127.0.4.2', second.client_id, second.client_secret)).status,
    200,
    'another address is not',
  )
})

t.test(
  'a client_id longer than any client id: 400 invalid_request, never a 500 (found by the fuzzer: LMDB refused the key)',
  async (t) => {
    for (const length of [257, 5000, 200_000]) {
      const answer = await tokenRequest('127.0.5.1', 'a'.repeat(length), 'x')
      t.same([answer.status, answer.body['error']], [400, 'invalid_request'], `${length} characters`)
    }
    const json = await server.request('POST', '/oauth2/token', {
      body: { grant_type: 'client_credentials', client_id: 'a'.repeat(5000), client_secret: 'x' },
    })
    t.same([json.status, json.body.error], [400, 'invalid_request'], 'the same as JSON')
    t.equal(
      (await tokenRequest('127.0.5.1', second.client_id, second.client_secret)).status,
      200,
      'no failure was counted against the address',
    )
  },
)

t.test('the tables are bounded without forgetting a lockout', async (t) => {
  // A table of 20: 30 other addresses with a failure each fill it past its bound.
  const small = await startServer({
    env: {
      PRICING_TOKEN_FAILURES_BURST: String(burst),
      PRICING_TOKEN_FAILURES_PER_MINUTE: '1',
      PRICING_TOKEN_FAILURES_KEYS_MAX: '20',
    },
  })
  t.teardown(() => small.dispose())
  await small.tenant('acme')
  const key = (await small.admin('POST', '/admin/tenants/acme/keys', { name: 'k' })).body as {
    client_id: string
    client_secret: string
  }
  for (let attempt = 1; attempt <= burst; attempt++) await tokenRequest('127.0.7.1', key.client_id, 'wrong', small)
  t.equal((await tokenRequest('127.0.7.1', key.client_id, key.client_secret, small)).status, 429, 'locked out')
  for (let index = 1; index <= 30; index++) {
    t.equal((await tokenRequest(`127.0.8.${index}`, index.toString(16).padStart(24, 'd'), 'wrong', small)).status, 401)
  }
  t.equal(
    (await tokenRequest('127.0.7.1', key.client_id, key.client_secret, small)).status,
    429,
    'still locked out once the table has overflowed',
  )
  t.equal(
    (await tokenRequest('127.0.7.2', key.client_id, key.client_secret, small)).status,
    200,
    'and the owner elsewhere is served',
  )
})
