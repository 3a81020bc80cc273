/**
 * The bare endpoint: the limit of the HTTP and JSON layer on this machine. A uWebSockets.js server
 * (the same native binary the service loads) that reads what the real server must read (URL,
 * authorization, body), JSON.parses a body, and answers a response captured from the real server,
 * so the bytes on the wire match. Run as its own process: `node bare-server.js <answers.json>`;
 * it prints `{"port":N}` once listening. Non-goal: any pricing work.
 * @module
 */
import { readFileSync } from 'node:fs'
import type { HttpResponse } from 'uWebSockets.js'
import { loadNativeUws } from '../http/uws/load.js'

/** A captured answer: the body and the headers the real server sent with it. */
export interface CapturedAnswer {
  readonly body: string
  readonly headers: Record<string, string>
}

/** What the bare server answers: GETs one answer, POSTs by the number of SKUs in the body. */
export interface BareAnswers {
  readonly get: CapturedAnswer
  readonly queries: Record<string, CapturedAnswer>
}

function send(res: HttpResponse, state: { aborted: boolean }, answer: CapturedAnswer | undefined): void {
  if (state.aborted) return
  res.cork(() => {
    if (answer === undefined) {
      res.writeStatus('400 Bad Request').end('{}')
      return
    }
    res.writeStatus('200 OK')
    for (const name in answer.headers) res.writeHeader(name, answer.headers[name]!)
    res.end(answer.body)
  })
}

function main(): void {
  const answersPath = process.argv[2]
  if (answersPath === undefined) throw new Error('usage: bare-server.js <answers.json>')
  const answers = JSON.parse(readFileSync(answersPath, 'utf8')) as BareAnswers
  const uws = loadNativeUws()
  const app = uws.App()
  app.get('/*', (res, req) => {
    const state = { aborted: false }
    res.onAborted(() => (state.aborted = true))
    // Copy what a real handler needs from the stack-allocated request.
    const path = req.getUrl()
    const authorization = req.getHeader('authorization')
    const ok = path.split('/').length >= 6 && authorization.startsWith('Bearer ')
    send(res, state, ok ? answers.get : undefined)
  })
  app.post('/*', (res, req) => {
    const state = { aborted: false }
    res.onAborted(() => (state.aborted = true))
    const authorization = req.getHeader('authorization')
    const declared = Number(req.getHeader('content-length') || '0')
    let body = Buffer.allocUnsafe(declared > 0 ? declared : 1024)
    let length = 0
    res.onData((chunk, isLast) => {
      const bytes = new Uint8Array(chunk)
      if (length + bytes.length > body.length) {
        const grown = Buffer.allocUnsafe(Math.max(body.length * 2, length + bytes.length))
        body.copy(grown, 0, 0, length)
        body = grown
      }
      body.set(bytes, length)
      length += bytes.length
      if (!isLast) return
      const parsed = JSON.parse(body.toString('utf8', 0, length)) as { skus?: unknown[] }
      const count = Array.isArray(parsed.skus) ? parsed.skus.length : 0
      send(res, state, authorization.startsWith('Bearer ') ? answers.queries[String(count)] : undefined)
    })
  })
  app.listen('127.0.0.1', 0, (socket) => {
    if (socket === false) throw new Error('bare server could not listen')
    process.stdout.write(`${JSON.stringify({ port: uws.us_socket_local_port(socket) })}\n`)
  })
  process.once('SIGTERM', () => process.exit(0))
}

main()
