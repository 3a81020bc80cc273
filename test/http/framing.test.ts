/**
 * HTTP/1.1 message framing against the real server, over raw sockets: what RFC 9112 says to refuse
 * is answered 400 `malformed_request` with the error body and the connection closed, and the bytes
 * after it never run as a request (a write hidden there is not stored). Pipelined requests behind
 * an answer that takes a while are answered in order, and a write is never done without its
 * answer. What only uWebSockets.js's parser can fix is in docs/security.md ("HTTP framing").
 */
import http from 'node:http'
import net, { type AddressInfo } from 'node:net'
import t, { type Test } from 'tap'
import { query as priceQuery } from '../helpers/price-fixtures.js'
import { retailReference, writeRetailPrices } from '../helpers/retail-fixtures.js'
import { startServer, type TenantClient, type TestServer } from '../helpers/server.js'

let server: TestServer
let shop: TenantClient

// The exchange-rate feed answers only when the test releases it: POST /fx/fetch waits for it, an
// answer that is not immediate for as long as the test wants.
const feedXml = [
  '<?xml version="1.0" encoding="UTF-8"?>',
  '<gesmes:Envelope xmlns:gesmes="http://www.gesmes.org/xml/2002-08-01" xmlns="http://www.ecb.int/vocabulary/2002-08-01/eurofxref">',
  "<gesmes:subject>Reference rates</gesmes:subject><Cube><Cube time='2025-05-09'>",
  "<Cube currency='USD' rate='1.1252'/><Cube currency='GBP' rate='0.84770'/>",
  '</Cube></Cube></gesmes:Envelope>',
].join('\n')
let feedArrived: () => void = () => {}
let releaseFeed: () => void = () => {}
const feedServer = http.createServer((_request, response) => {
  releaseFeed = () => {
    if (!response.headersSent) response.writeHead(200, { 'content-type': 'text/xml' }).end(feedXml)
  }
  feedArrived()
})

t.before(async () => {
  await new Promise<void>((resolve) => feedServer.listen(0, '127.0.0.1', resolve))
  const feedUrl = `http://127.0.0.1:${(feedServer.address() as AddressInfo).port}/daily`
  server = await startServer({ env: { PRICING_FX_FEED_URL: feedUrl, PRICING_FX_FETCH_DELAY_MS: '3600000' } })
  shop = await server.tenant('framing')
})
t.teardown(async () => {
  await server.dispose()
  await new Promise<void>((resolve) => feedServer.close(() => resolve()))
})

interface Answer {
  status: number
  headers: Record<string, string>
  body: string
}

/** Splits what the server sent into answers (Content-Length framed, as this server writes them). */
function answersOf(bytes: string): Answer[] {
  const answers: Answer[] = []
  let rest = bytes
  while (rest.length > 0) {
    const end = rest.indexOf('\r\n\r\n')
    if (end < 0) throw new Error(`a cut answer: ${JSON.stringify(rest.slice(0, 200))}`)
    const [statusLine, ...lines] = rest.slice(0, end).split('\r\n')
    const headers: Record<string, string> = {}
    for (const line of lines) {
      const colon = line.indexOf(':')
      headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim()
    }
    if (headers['content-length'] === undefined) {
      // uWS's own error pages: no length, the connection closed after them.
      answers.push({ status: Number(statusLine!.split(' ')[1]), headers, body: rest.slice(end + 4) })
      break
    }
    const length = Number(headers['content-length'])
    answers.push({ status: Number(statusLine!.split(' ')[1]), headers, body: rest.slice(end + 4, end + 4 + length) })
    rest = rest.slice(end + 4 + length)
  }
  return answers
}

interface Exchange {
  answers: Answer[]
  /** Whether the server closed the connection (within the wait). */
  closed: boolean
}

/**
 * Writes each part on one connection (a function part is awaited between writes), then waits for
 * the server to close or for `quietMs` without new bytes; answers what came back.
 */
function exchange(parts: (string | (() => Promise<void>))[], quietMs = 1500): Promise<Exchange> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(server.port, '127.0.0.1')
    let received = ''
    let timer: NodeJS.Timeout | undefined
    let finished = false
    const finish = (closed: boolean): void => {
      if (finished) return
      finished = true
      clearTimeout(timer)
      socket.destroy()
      try {
        resolve({ answers: answersOf(received), closed })
      } catch (error) {
        reject(error as Error)
      }
    }
    const quiet = (): void => {
      clearTimeout(timer)
      timer = setTimeout(() => finish(false), quietMs)
    }
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1')
      quiet()
    })
    socket.on('close', () => finish(true))
    socket.on('error', () => {})
    socket.once('connect', async () => {
      for (const part of parts) {
        if (finished) return
        if (typeof part === 'string') socket.write(Buffer.from(part, 'latin1'))
        else await part()
      }
      if (!finished) quiet()
    })
  })
}

/** A request head under the tenant with its token; `headers` are lines without CRLF. */
function head(method: string, urlPath: string, headers: string[]): string {
  return [
    `${method} ${shop.base}${urlPath} HTTP/1.1`,
    'Host: 127.0.0.1',
    `Authorization: Bearer ${shop.token}`,
    ...headers,
    '',
    '',
  ].join('\r\n')
}

/** A complete article write, the request an attacker hides in a body. */
function articleWrite(sku: string, name = 'smuggled'): string {
  const body = JSON.stringify({ name })
  return head('PUT', `/article/${sku}`, ['Content-Type: application/json', `Content-Length: ${body.length}`]) + body
}

async function stored(sku: string): Promise<boolean> {
  const read = await shop.get(`/article/${sku}`)
  if (read.status !== 200 && read.status !== 404) throw new Error(`article read: ${read.status} ${read.text}`)
  return read.status === 200
}

/** The refusal: one 400 with the error body, and the connection closed. */
function assertRefused(t: Test, result: Exchange, message: RegExp): void {
  t.equal(result.answers.length, 1, 'one answer')
  const answer = result.answers[0]!
  t.equal(answer.status, 400)
  t.equal(answer.headers['connection'], 'close')
  const body = JSON.parse(answer.body)
  t.equal(body.code, 'malformed_request')
  t.equal(body.status, 400)
  t.equal(body.error, 'Bad Request')
  t.match(body.message, message)
  t.equal(body.request_id, answer.headers['x-request-id'])
  t.ok(result.closed, 'the server closed the connection')
}

/**
 * A request RFC 9112 says to refuse, sent alone: the 400; and followed in the same packet by a
 * hidden write: the connection closed (with the 400 or without an answer, as uWS closes a
 * connection that sends a request behind an unanswered one), and neither write stored.
 */
async function refused(t: Test, sku: string, head: string, body: string, message: RegExp): Promise<void> {
  assertRefused(t, await exchange([head + body]), message)
  const smuggled = await exchange([head + body + articleWrite(`${sku}-SMUGGLED`)])
  t.ok(smuggled.closed, 'with a request behind it: the server closed the connection')
  t.same(
    smuggled.answers.map((answer) => answer.status).filter((status) => status !== 400),
    [],
    'no answer but the 400',
  )
  t.notOk(await stored(`${sku}-SMUGGLED`), 'the hidden write was not stored')
  t.notOk(await stored(sku), 'the refused write was not stored')
}

t.test('two Content-Length values: 400, closed, and the write after the first length never runs', async (t) => {
  const outer = JSON.stringify({ name: 'outer' })
  const request = head('PUT', '/article/CL2', [
    'Content-Type: application/json',
    `Content-Length: ${outer.length}`,
    'Content-Length: 300',
  ])
  await refused(t, 'CL2', request, outer, /different values/)
})

t.test('a Content-Length that is not digits (empty, read as 0 by uWS): 400, and its body never runs', async (t) => {
  await refused(
    t,
    'CLEMPTY',
    head('PUT', '/article/CLEMPTY', ['Content-Type: application/json', 'Content-Length: ']),
    '',
    /decimal digits/,
  )
})

t.test('an empty Content-Length before a real one: 400, and the body never runs', async (t) => {
  // uWS reads the first (as 0): the body, a write, would be its next request.
  const smuggled = articleWrite('CLFIRST-SMUGGLED')
  const request = head('PUT', '/article/CLFIRST', [
    'Content-Type: application/json',
    'Content-Length: ',
    `Content-Length: ${smuggled.length}`,
  ])
  await refused(t, 'CLFIRST', request, '', /different values/)
})

/** A chunked body of one chunk, then the end chunk. */
function chunked(body: string): string {
  return `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`
}

for (const [name, lines] of [
  ['xchunked', ['Transfer-Encoding: xchunked']],
  ['gzip, chunked (a coding the server does not have)', ['Transfer-Encoding: gzip, chunked']],
  ['chunked, identity (chunked not last)', ['Transfer-Encoding: chunked, identity']],
  ['two Transfer-Encoding headers', ['Transfer-Encoding: identity', 'Transfer-Encoding: chunked']],
  ['an empty Transfer-Encoding before chunked', ['Transfer-Encoding: ', 'Transfer-Encoding: chunked']],
] as const) {
  t.test(`Transfer-Encoding ${name}: 400, closed, the body's write not done and nothing after it run`, async (t) => {
    const sku = `TE-${name
      .replace(/[^a-z]/g, '')
      .slice(0, 12)
      .toUpperCase()}`
    const request = head('PUT', `/article/${sku}`, ['Content-Type: application/json', ...lines])
    await refused(
      t,
      sku,
      request,
      chunked(JSON.stringify({ name: 'outer' })),
      /Transfer-Encoding must be one header with the single coding chunked/,
    )
  })
}

t.test('Transfer-Encoding: chunked (any case) is read, and answered with Connection: close', async (t) => {
  const request = head('PUT', '/article/TE-OK', ['Content-Type: application/json', 'Transfer-Encoding: Chunked'])
  const result = await exchange([request + chunked(JSON.stringify({ name: 'chunked body' }))])
  t.equal(result.answers.length, 1)
  t.equal(result.answers[0]!.status, 202, result.answers[0]!.body)
  t.equal(result.answers[0]!.headers['connection'], 'close')
  t.ok(result.closed)
  t.equal((await shop.get('/article/TE-OK')).body.name, 'chunked body')
})

// uWS's chunked decoder (parser-only, docs/security.md) takes any two bytes after chunk data as its
// CRLF and bare LF as line ends: what follows the chunked body as it reads it would run as the
// next request. Closing the connection after a chunked body, and not dispatching a request whose
// connection uWS closed, keeps those bytes from ever running. The outer request here is refused
// at once (an unknown field), as an attacker would choose: an answer given at once let the bytes
// after it run.
for (const [name, body] of [
  [
    'two bytes other than CRLF after the chunk data',
    (json: string) => `${json.length.toString(16)}\r\n${json}XY0\r\n\r\n`,
  ],
  ['bare LF chunk lines', (json: string) => `${json.length.toString(16)}\n${json}\n0\n\n`],
] as const) {
  t.test(`chunked body with ${name}: the bytes after it never run as a request`, async (t) => {
    const sku = name.startsWith('two') ? 'CHUNK-XY' : 'CHUNK-LF'
    const request = head('PUT', `/article/${sku}`, ['Content-Type: application/json', 'Transfer-Encoding: chunked'])
    const result = await exchange([
      request + body(JSON.stringify({ name: 'outer', colour: 'red' })) + articleWrite(`${sku}-SMUGGLED`),
    ])
    t.ok(result.closed, 'the server closed the connection')
    t.ok(result.answers.length <= 1, 'no answer for a second request')
    t.notOk(await stored(`${sku}-SMUGGLED`), 'the hidden write was not stored')
  })
}

t.test('Transfer-Encoding with Content-Length: refused by uWS before the handler, nothing stored', async (t) => {
  const request = head('PUT', '/article/TECL', [
    'Content-Type: application/json',
    'Content-Length: 4',
    'Transfer-Encoding: chunked',
  ])
  const result = await exchange([request + chunked(JSON.stringify({ name: 'outer' })) + articleWrite('TECL-SMUGGLED')])
  t.equal(result.answers.length, 1)
  t.equal(result.answers[0]!.status, 400)
  t.ok(result.closed)
  t.notOk(await stored('TECL'))
  t.notOk(await stored('TECL-SMUGGLED'))
})

/**
 * Sends a POST /fx/fetch, which waits for the feed until the test releases it; once the server has
 * read it (the feed was asked), writes `behind` (pipelined), waits, releases the feed.
 */
async function behindHeldAnswer(behind: string): Promise<Exchange> {
  const arrived = new Promise<void>((resolve) => (feedArrived = resolve))
  return exchange([
    head('POST', '/fx/fetch', ['Content-Length: 0']),
    () => arrived,
    behind,
    () => new Promise((resolve) => setTimeout(resolve, 200)),
    async () => releaseFeed(),
  ])
}

t.test('a write pipelined behind an answer that waits (POST /fx/fetch): both answered, in order', async (t) => {
  const result = await behindHeldAnswer(articleWrite('PIPE-1', 'pipelined'))
  t.same(
    result.answers.map((answer) => answer.status),
    [200, 202],
    JSON.stringify(result),
  )
  t.equal(JSON.parse(result.answers[0]?.body ?? '{}').count, 2, 'the fetch answer first')
  t.notOk(result.closed, 'the connection stays open')
  t.equal((await shop.get('/article/PIPE-1')).body.name, 'pipelined')
})

t.test('reads pipelined behind an answer that waits: all answered, in order', async (t) => {
  const read = (sku: string): string => head('GET', `/article/${sku}`, [])
  const result = await behindHeldAnswer(read('PIPE-1') + read('NONE-9'))
  t.same(
    result.answers.map((answer) => answer.status),
    [200, 200, 404],
    JSON.stringify(result),
  )
  t.equal(JSON.parse(result.answers[1]?.body ?? '{}').name, 'pipelined')
  t.notOk(result.closed, 'the connection stays open')
})

t.test('a write pipelined with a request behind it in one packet: not done unless answered', async (t) => {
  // uWS closes the connection when it parses a request while an earlier one is unanswered (the
  // write's answer waits for its commit): the write must then not be done at all.
  const result = await exchange([articleWrite('PIPE-SAME', 'same packet') + head('GET', '/article/PIPE-SAME', [])])
  const answered = result.answers.length > 0 && result.answers[0]!.status === 202
  t.equal(await stored('PIPE-SAME'), answered, answered ? 'answered 202 and stored' : 'no answer and not stored')
  t.ok(answered || result.closed)
})

t.test('pipelined requests answered at once still all get their answers in order', async (t) => {
  const read = (sku: string): string => head('GET', `/article/${sku}`, [])
  const result = await exchange([read('NONE-1') + read('NONE-2') + read('NONE-3')], 500)
  t.same(
    result.answers.map((answer) => answer.status),
    [404, 404, 404],
  )
  const messages = result.answers.map((answer) => String(JSON.parse(answer.body).message))
  t.same(
    messages.map((message, index) => message.includes(`NONE-${index + 1}`)),
    [true, true, true],
    messages.join('; '),
  )
  t.notOk(result.closed)
})

t.test('two Authorization headers: the first is the one that counts, as with one', async (t) => {
  const path = `${shop.base}/article/NONE-A`
  const lines = (first: string, second: string): string =>
    [
      `GET ${path} HTTP/1.1`,
      'Host: 127.0.0.1',
      `Authorization: ${first}`,
      `Authorization: ${second}`,
      'X-Request-Id: first-id',
      'X-Request-Id: second-id',
      '',
      '',
    ].join('\r\n')
  const valid = await exchange([lines(`Bearer ${shop.token}`, 'Bearer wrong')], 500)
  t.same(
    valid.answers.map((answer) => answer.status),
    [404],
    'the valid first token is read',
  )
  t.equal(valid.answers[0]!.headers['x-request-id'], 'first-id', 'the first X-Request-Id is echoed')
  const invalid = await exchange([lines('Bearer wrong', `Bearer ${shop.token}`)], 500)
  t.same(
    invalid.answers.map((answer) => answer.status),
    [401],
    'a valid second token does not stand in for the first',
  )
})

t.test(
  'price queries pipelined in one packet, with a read behind them: all answered, in order, connection open',
  async (t) => {
    await retailReference(shop, ['Q-1', 'Q-2'])
    await writeRetailPrices(shop, ['Q-1', 'Q-2'], 10)
    const query = (sku: string): string => {
      const body = JSON.stringify(priceQuery([sku], ['RETAIL']))
      return head('POST', '/price/query', ['Content-Type: application/json', `Content-Length: ${body.length}`]) + body
    }
    const result = await exchange([query('Q-1') + query('Q-2') + head('GET', '/article/NONE-Q', [])], 500)
    t.same(
      result.answers.map((answer) => answer.status),
      [200, 200, 404],
      JSON.stringify(result).slice(0, 600),
    )
    const priced = result.answers
      .slice(0, 2)
      .map((answer) => (JSON.parse(answer.body) as { items: { sku: string; net: number }[] }).items)
    t.same(
      priced.map((items) => items.map((item) => [item.sku, item.net])),
      [[['Q-1', 10]], [['Q-2', 11]]],
      'each query its own answer, in order',
    )
    t.notOk(result.closed, 'the connection stays open')
  },
)
