/**
 * Sends the fuzzer's requests byte for byte: node:http with a keep-alive agent for whole requests
 * (the body is a Buffer sent as it is, with the declared Content-Length; fetch would re-encode
 * text and refuse some headers), and a raw socket for a body cut short by the client.
 * @module
 */
import http from 'node:http'
import net from 'node:net'

export interface WireRequest {
  readonly method: string
  /** Path and query, percent-encoded as they go on the request line. */
  readonly path: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: Buffer | null
  /** Send only this many bytes of the body, then end the connection (a client that gives up). */
  readonly cutAt?: number
}

export interface WireAnswer {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  readonly body: Buffer
}

/** What happened to a request that got no whole answer. */
export type WireFailure = { readonly failure: 'timeout' | 'reset'; readonly message: string }

const answerBytesMax = 2 * 1024 * 1024

export class Wire {
  readonly #agent = new http.Agent({ keepAlive: true, maxSockets: 1 })

  constructor(
    readonly host: string,
    readonly port: number,
    readonly timeoutMs: number,
  ) {}

  send(request: WireRequest): Promise<WireAnswer | WireFailure> {
    if (request.cutAt !== undefined) return this.#cut(request, request.cutAt)
    return new Promise((resolve) => {
      const headers: Record<string, string> = { ...request.headers }
      if (request.body !== null) headers['content-length'] = String(request.body.length)
      let settled = false
      const settle = (value: WireAnswer | WireFailure): void => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        resolve(value)
      }
      const outgoing = http.request(
        { host: this.host, port: this.port, method: request.method, path: request.path, headers, agent: this.#agent },
        (response) => {
          const chunks: Buffer[] = []
          let size = 0
          response.on('data', (chunk: Buffer) => {
            size += chunk.length
            if (size <= answerBytesMax) chunks.push(chunk)
          })
          response.on('end', () =>
            settle({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks) }),
          )
          response.on('error', (error) => settle({ failure: 'reset', message: error.message }))
        },
      )
      const timer = setTimeout(() => {
        outgoing.destroy()
        settle({ failure: 'timeout', message: `no answer within ${this.timeoutMs} ms` })
      }, this.timeoutMs)
      outgoing.on('error', (error) => settle({ failure: 'reset', message: error.message }))
      outgoing.end(request.body ?? undefined)
    })
  }

  /**
   * A request whose body stops after `cutAt` bytes of the declared length; the client then closes
   * its side. Whatever the server answers (often nothing) is read for a short while.
   */
  #cut(request: WireRequest, cutAt: number): Promise<WireAnswer | WireFailure> {
    return new Promise((resolve) => {
      const socket = net.connect(this.port, this.host)
      const chunks: Buffer[] = []
      const finish = (): void => {
        clearTimeout(timer)
        socket.destroy()
        const text = Buffer.concat(chunks).toString('latin1')
        const status = /^HTTP\/1\.[01] (\d{3})/.exec(text)
        if (status === null) {
          resolve({ failure: 'reset', message: 'no answer to a cut body (expected)' })
          return
        }
        const end = text.indexOf('\r\n\r\n')
        const headers: http.IncomingHttpHeaders = {}
        for (const line of text.slice(0, end).split('\r\n').slice(1)) {
          const colon = line.indexOf(':')
          if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
        }
        resolve({ status: Number(status[1]), headers, body: Buffer.from(text.slice(end + 4), 'latin1') })
      }
      const timer = setTimeout(finish, Math.min(this.timeoutMs, 2000))
      socket.on('data', (chunk: Buffer) => chunks.push(chunk))
      socket.on('error', () => finish())
      socket.on('close', () => finish())
      const body = request.body ?? Buffer.alloc(0)
      // At least one byte short of the declared length (an empty body declares one byte), so that
      // the request is never complete: a complete one is run even when its client has gone.
      const declared = Math.max(body.length, 1)
      const head = [
        `${request.method} ${request.path} HTTP/1.1`,
        `host: ${this.host}:${this.port}`,
        `content-length: ${declared}`,
        'connection: close',
      ]
      for (const [name, value] of Object.entries(request.headers)) head.push(`${name}: ${value}`)
      socket.write(`${head.join('\r\n')}\r\n\r\n`)
      socket.end(body.subarray(0, Math.min(cutAt, declared - 1)))
    })
  }

  close(): void {
    this.#agent.destroy()
  }
}
