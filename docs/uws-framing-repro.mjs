// A self-contained reproduction, for uWebSockets.js's maintainers, of how its HTTP/1.1 parser
// frames requests that RFC 9112 says to refuse (docs/uws-framing-report.md has the report text).
// It starts a bare uWS app on a loopback port whose handler echoes what it was given, sends each
// case's raw bytes on a fresh connection, and prints what came back beside what the RFC requires.
// Run: node docs/uws-framing-repro.mjs (with uWebSockets.js installed; in this repository, after
// a build, it loads the binary through the service's loader, which handles an older glibc).
import net from 'node:net'
import { createRequire } from 'node:module'
import { existsSync } from 'node:fs'

async function loadUws() {
  for (const build of ['dist', 'dist-test']) {
    const loader = new URL(`../${build}/http/uws/load.js`, import.meta.url)
    if (existsSync(loader)) return (await import(loader.href)).loadNativeUws()
  }
  return createRequire(import.meta.url)('uWebSockets.js')
}

const uws = await loadUws()
const app = uws.App()
const seen = []
app.any('/*', (res, req) => {
  const url = req.getUrl()
  const requestId = req.getHeader('x-request-id')
  seen.push(`${req.getMethod()} ${url}${requestId === '' ? '' : ` (X-Request-Id seen: ${JSON.stringify(requestId)})`}`)
  let aborted = false
  res.onAborted(() => (aborted = true))
  const answer = () => !aborted && res.cork(() => res.end(`ran ${url}`))
  // A POST to /slow answers 50 ms later, as a handler that waits for a database does.
  res.onData((_chunk, isLast) => {
    if (!isLast) return
    if (url === '/slow') setTimeout(answer, 50)
    else answer()
  })
})

const smuggled = 'GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n'
const cases = [
  [
    'two different Content-Length values',
    `POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 40\r\n\r\nabc${smuggled}`,
    '400 and close (section 6.3, item 5); uWS takes the first value and runs the rest as a request',
  ],
  [
    'an empty Content-Length',
    `POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: \r\n\r\n${smuggled}`,
    '400 and close (6.3, item 5)',
  ],
  [
    'Transfer-Encoding: xchunked',
    'POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n',
    '400 and close: chunked is not the final coding (6.3, item 4)',
  ],
  [
    'Transfer-Encoding: chunked, identity',
    'POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n3\r\nabc\r\n0\r\n\r\n',
    '400 and close (6.3, item 4)',
  ],
  [
    'chunk size with a leading space',
    'POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n 3\r\nabc\r\n0\r\n\r\n',
    '400: chunk-size = 1*HEXDIG (7.1)',
  ],
  [
    'two bytes other than CRLF after chunk data',
    `POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcXY0\r\n\r\n${smuggled}`,
    '400: chunk-data is followed by CRLF (7.1); uWS runs the bytes after as a request',
  ],
  [
    'bare LF chunk lines',
    `POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\nabc\n0\n\n${smuggled}`,
    '400: chunk lines end in CRLF (7.1)',
  ],
  [
    'a chunked body with a trailer field',
    'POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-T: 1\r\n\r\n',
    'accepted (7.1.2: trailer section); uWS answers 505 after the handler ran',
  ],
  [
    'a bare CR in a header value',
    'GET /a HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n',
    '400, or the CR read as SP (2.2); uWS sends nothing until its idle time-out',
  ],
  [
    'bytes >= 0x80 at the end of a header value',
    'GET /a HTTP/1.1\r\nHost: x\r\nX-Request-Id: id\xe9\xff\r\n\r\n',
    'kept: obs-text is field content (RFC 9110 5.5); uWS drops them, as though they were whitespace',
  ],
  [
    'an absolute-form target',
    'GET http://x/a HTTP/1.1\r\nHost: x\r\n\r\n',
    'accepted: a server MUST accept absolute-form (3.2.2)',
  ],
  ['OPTIONS *', 'OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n', 'accepted: asterisk-form (3.2.4)'],
  [
    'a 10 KB path',
    `GET /${'a'.repeat(10_000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
    "414 or 431; the body is the application's to choose",
  ],
  [
    'a request pipelined behind one answered later',
    `POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n${smuggled}`,
    'both answered, in order (9.3.2); uWS closes the connection and drops the first answer',
  ],
]

function send(port, bytes) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1')
    let received = ''
    const done = (how) => {
      clearTimeout(timer)
      socket.destroy()
      resolve(`${received.replace(/\r\nDate: [^\r]*|\r\nuWebSockets: 20/g, '')} [${how}]`)
    }
    const timer = setTimeout(() => done('no close within 1 s'), 1000)
    socket.on('data', (chunk) => (received += chunk.toString('latin1')))
    socket.on('close', () => done('closed'))
    socket.on('error', () => {})
    socket.write(Buffer.from(bytes, 'latin1'))
  })
}

app.listen('127.0.0.1', 0, async (listenSocket) => {
  const port = uws.us_socket_local_port(listenSocket)
  for (const [name, bytes, rfc] of cases) {
    seen.length = 0
    const answer = await send(port, bytes)
    console.log(`\n## ${name}\nsent:     ${JSON.stringify(bytes.length > 200 ? `${bytes.slice(0, 60)}...` : bytes)}`)
    console.log(`handler:  ${seen.map((line) => line.slice(0, 80)).join(', ') || '(not called)'}`)
    console.log(`answered: ${JSON.stringify(answer.length > 300 ? `${answer.slice(0, 300)}...` : answer)}`)
    console.log(`RFC 9112: ${rfc}`)
  }
  process.exit(0)
})
