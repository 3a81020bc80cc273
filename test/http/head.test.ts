/**
 * HEAD (RFC 9110 section 9.3.2): the answer has the GET answer's status and headers, its
 * Content-Length included, and no content. Bytes after the head would be read by a keep-alive
 * client as the start of the next answer (found by the fuzzer: Node's client failed with "Parse
 * Error: Expected HTTP/" on the request after a HEAD).
 */
import net from 'node:net'
import t from 'tap'
import { suiteServer } from '../helpers/suite.js'

const {
  server,
  tenants: { heads: shop },
} = await suiteServer({ tenants: { heads: {} } })

t.before(async () => {
  if ((await shop.call('PUT', '/article/A-1', { name: 'a' })).status !== 202) throw new Error('setup')
})

/** Writes each request in turn on one connection, 300 ms apart; answers everything the server sent. */
function exchange(...requests: string[]): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect(server.port, '127.0.0.1')
    let received = ''
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')))
    const next = (index: number): void => {
      if (index === requests.length) {
        socket.destroy()
        resolve(received)
        return
      }
      socket.write(requests[index]!)
      setTimeout(() => next(index + 1), 300)
    }
    next(0)
  })
}

for (const [name, path, auth] of [
  ['a root route', '/healthz', 'none'],
  ['a tenant read answered at once (a token verified before)', '/t/heads/article/A-1', 'known'],
  ['a tenant read answered later (a new token, verified first)', '/t/heads/article/A-1', 'new'],
  ['an error answer', '/t/heads/article/NONE', 'known'],
] as const) {
  t.test(
    `HEAD of ${name}: the GET answer's headers and Content-Length, no content; the next answer on the connection is whole`,
    async (t) => {
      if (auth === 'new') await shop.refreshToken()
      else if (auth === 'known') await shop.get('/article/A-1')
      const authorization = auth === 'none' ? '' : `authorization: Bearer ${shop.token}\r\n`
      const received = await exchange(
        `HEAD ${path} HTTP/1.1\r\nhost: x\r\n${authorization}\r\n`,
        'GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n',
      )
      const get = await exchange(`GET ${path} HTTP/1.1\r\nhost: x\r\n${authorization}\r\n`)
      const getLength = /content-length: (\d+)/i.exec(get)?.[1]
      const [headAnswer, next] = received.split(/(?=HTTP\/1\.1 )/)
      t.equal(headAnswer!.slice(0, 12), get.slice(0, 12), 'the same status as GET')
      t.equal(/content-length: (\d+)/i.exec(headAnswer!)?.[1], getLength, 'the Content-Length of the GET answer')
      t.ok(headAnswer!.endsWith('\r\n\r\n'), 'nothing after the head')
      t.match(
        next,
        /^HTTP\/1\.1 200 OK[\s\S]*\r\n\r\n\{"status":"ok","version":"[^"]+","commit":("[0-9a-f]{12}"|null)\}$/,
        'the next answer follows at once, whole',
      )
    },
  )
}
