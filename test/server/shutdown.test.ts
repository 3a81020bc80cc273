/**
 * Graceful shutdown (issue 10): on SIGTERM the service stops accepting connections, lets the
 * requests in flight finish (a write whose body is still arriving is answered 202 and stored, with
 * `Connection: close`), then flushes and closes LMDB and exits 0; a request that never finishes
 * holds the shutdown no longer than PRICING_SHUTDOWN_TIMEOUT_MS.
 */
import net from 'node:net'
import t from 'tap'
import { retailBase, retailReference } from '../helpers/retail-fixtures.js'
import { startServer } from '../helpers/server.js'

const skus = Array.from({ length: 2_000 }, (_, index) => `HALT-${index}`)

/** Sends a request's head and the first part of its body; answers the socket and a function that sends the rest and reads the whole answer. */
function partialRequest(
  port: number,
  head: string,
  body: string,
  firstBytes: number,
): { socket: net.Socket; finish: () => Promise<string> } {
  const socket = net.connect(port, '127.0.0.1')
  let answer = ''
  socket.on('data', (chunk) => (answer += chunk.toString()))
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()))
  socket.write(`${head}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, firstBytes)}`)
  return {
    socket,
    finish: async () => {
      socket.write(body.slice(firstBytes))
      await closed
      return answer
    },
  }
}

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

t.test('SIGTERM: no new connections, the request in flight is answered and stored, exit 0', async (t) => {
  const server = await startServer({ env: { PRICING_SHUTDOWN_TIMEOUT_MS: '10000' } })
  t.teardown(() => server.dispose())
  const client = await server.tenant('halt')
  await retailReference(client, skus)
  const body = JSON.stringify(skus.map((sku, index) => ({ sku, pricelist: 'RETAIL', price: 500 + index })))
  const head = `POST /t/halt/price/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${client.token}\r\nContent-Type: application/json\r\n`
  const inFlight = partialRequest(server.port, head, body, 1_000)
  await delay(300)
  const signalled = Date.now()
  process.kill(server.pid, 'SIGTERM')
  await delay(300)
  const connected = await new Promise<string>((resolve) => {
    const probe = net.connect(server.port, '127.0.0.1', () => {
      probe.destroy()
      resolve('connected')
    })
    probe.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message))
  })
  t.equal(connected, 'ECONNREFUSED', 'a new connection is refused once the shutdown began')
  const answer = await inFlight.finish()
  t.match(answer, /^HTTP\/1\.1 202 /, 'the request whose body was still arriving is answered 202')
  t.match(answer, /\r\nconnection: close\r\n/i, 'with Connection: close')
  t.match(answer, /"accepted":2000/)
  const code = await server.exited()
  t.equal(code, 0, 'the process exits 0')
  t.ok(Date.now() - signalled < 10_000, `within the bound (${Date.now() - signalled} ms)`)
  t.match(server.stdout, /"msg":"shutting down: no new connections, waiting for the requests in flight"/)
  t.match(server.stdout, /"msg":"closed"/)
  await server.start()
  await client.refreshToken()
  t.equal(
    await retailBase(client, skus, 'HALT-'),
    500,
    'every price of the answered request is there after the restart',
  )
})

t.test('a request that never finishes holds the shutdown only PRICING_SHUTDOWN_TIMEOUT_MS', async (t) => {
  const server = await startServer({ env: { PRICING_SHUTDOWN_TIMEOUT_MS: '1000' } })
  t.teardown(() => server.dispose())
  const client = await server.tenant('stuck')
  const stalled = partialRequest(
    server.port,
    `POST /t/stuck/article/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${client.token}\r\nContent-Type: application/json\r\n`,
    '[{"sku":"A","name":"a"}]',
    5,
  )
  await delay(300)
  const signalled = Date.now()
  process.kill(server.pid, 'SIGTERM')
  const code = await server.exited()
  const took = Date.now() - signalled
  t.equal(code, 0)
  t.ok(took >= 1_000 && took < 5_000, `it waited for the bound, not longer (${took} ms)`)
  t.match(server.stdout, /"pending":1,"timeoutMs":1000,"msg":"closing with requests still in flight"/)
  stalled.socket.destroy()
})
