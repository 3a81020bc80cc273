/**
 * A real HTTPS webhook receiver for tests: a node:https server on 127.0.0.1 with a self-signed
 * certificate generated at test time (selfsigned), recording every request with its raw body so
 * signatures can be checked byte for byte. The server under test trusts the certificate through
 * NODE_EXTRA_CA_CERTS=<caPath>.
 */
import { createHmac } from 'node:crypto'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:https'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { generate } from 'selfsigned'

export interface ReceivedRequest {
  /** Date.now() when the whole body had arrived. */
  at: number
  method: string
  path: string
  headers: Record<string, string | string[] | undefined>
  raw: Buffer
  /** The body parsed as JSON, or null when it is empty or not JSON. */
  body: any
}

export interface Reply {
  status: number
  /** Wait this long before answering. */
  delayMs?: number
  /** Never answer (the connection stays open until the client gives up or close() runs). */
  hang?: boolean
}

export interface HttpsReceiver {
  /** e.g. https://localhost:PORT (append a path of your choice). */
  readonly url: string
  readonly requests: ReceivedRequest[]
  /** Decides the answer to each request; index counts requests since the start or the last clear(). Default: 200 at once. */
  respondWith(handler: (request: ReceivedRequest, index: number) => Reply): void
  /** Resolves with the requests once predicate holds; rejects with a clear message on time-out. */
  waitFor(predicate: (requests: ReceivedRequest[]) => boolean, timeoutMs: number): Promise<ReceivedRequest[]>
  clear(): void
  /** Stops listening and ends every open connection, hanging requests included. */
  close(): Promise<void>
}

interface Certificate {
  caPath: string
  cert: string
  key: string
}

let certificate: Promise<Certificate> | null = null

/** One certificate per process (generation takes a moment), its PEM written to a temp dir for NODE_EXTRA_CA_CERTS. */
export function testCertificate(): Promise<Certificate> {
  certificate ??= createCertificate()
  return certificate
}

async function createCertificate(): Promise<Certificate> {
  const pems = await generate([{ name: 'commonName', value: 'localhost' }], {
    keySize: 2048,
    algorithm: 'sha256',
    extensions: [
      { name: 'basicConstraints', cA: true },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, keyCertSign: true },
      { name: 'extKeyUsage', serverAuth: true },
      {
        name: 'subjectAltName',
        altNames: [
          { type: 2, value: 'localhost' },
          { type: 7, ip: '127.0.0.1' },
        ],
      },
    ],
  })
  const caPath = path.join(mkdtempSync(path.join(tmpdir(), 'pricing-test-cert-')), 'ca.pem')
  writeFileSync(caPath, pems.cert)
  return { caPath, cert: pems.cert, key: pems.private }
}

/** The value of X-Signature-256 for a body: 'sha256=' + hex HMAC-SHA256 of the raw bytes. */
export function signatureOf(secret: string, raw: Buffer): string {
  return 'sha256=' + createHmac('sha256', secret).update(raw).digest('hex')
}

type Waiter = { check: () => void }

class Receiver implements HttpsReceiver {
  readonly requests: ReceivedRequest[] = []
  url = ''
  #handler: (request: ReceivedRequest, index: number) => Reply = () => ({ status: 200 })
  #index = 0
  #waiters = new Set<Waiter>()
  #sockets = new Set<Socket>()
  #timers = new Set<NodeJS.Timeout>()

  constructor(readonly server: Server) {
    server.on('connection', (socket: Socket) => {
      this.#sockets.add(socket)
      socket.once('close', () => this.#sockets.delete(socket))
    })
    server.on('secureConnection', (socket: Socket) => {
      this.#sockets.add(socket)
      socket.once('close', () => this.#sockets.delete(socket))
    })
    server.on('request', (request: IncomingMessage, response: ServerResponse) => this.#receive(request, response))
  }

  #receive(request: IncomingMessage, response: ServerResponse): void {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const raw = Buffer.concat(chunks)
      const received: ReceivedRequest = {
        at: Date.now(),
        method: request.method ?? '',
        path: request.url ?? '',
        headers: { ...request.headers },
        raw,
        body: parseJson(raw),
      }
      const index = this.#index++
      this.requests.push(received)
      let reply: Reply
      try {
        reply = this.#handler(received, index)
      } catch {
        // A throwing handler in a test must not kill the receiver: answer 500 so it shows up as a failure.
        reply = { status: 500 }
      }
      this.#notify()
      this.#answer(response, reply)
    })
  }

  #answer(response: ServerResponse, reply: Reply): void {
    if (reply.hang === true) return
    const send = (): void => {
      if (response.writableEnded || response.destroyed) return
      // A redirect names a target so a client that (wrongly) follows redirects has somewhere to go.
      const headers: Record<string, string> = { 'content-type': 'text/plain' }
      if (reply.status >= 300 && reply.status < 400) headers['location'] = `${this.url}/redirected`
      response.writeHead(reply.status, headers)
      response.end(String(reply.status))
    }
    if (reply.delayMs === undefined || reply.delayMs <= 0) return send()
    const timer = setTimeout(() => {
      this.#timers.delete(timer)
      send()
    }, reply.delayMs)
    this.#timers.add(timer)
  }

  #notify(): void {
    for (const waiter of [...this.#waiters]) waiter.check()
  }

  respondWith(handler: (request: ReceivedRequest, index: number) => Reply): void {
    this.#handler = handler
  }

  waitFor(predicate: (requests: ReceivedRequest[]) => boolean, timeoutMs: number): Promise<ReceivedRequest[]> {
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        check: () => {
          let done = false
          try {
            done = predicate(this.requests)
          } catch (error) {
            finish()
            reject(error)
            return
          }
          if (done) {
            finish()
            resolve(this.requests)
          }
        },
      }
      const timer = setTimeout(() => {
        this.#waiters.delete(waiter)
        reject(
          new Error(
            `https receiver: condition not met within ${timeoutMs} ms; ${this.requests.length} request(s) received: ${describe(this.requests)}`,
          ),
        )
      }, timeoutMs)
      const finish = (): void => {
        clearTimeout(timer)
        this.#waiters.delete(waiter)
      }
      this.#waiters.add(waiter)
      waiter.check()
    })
  }

  clear(): void {
    this.requests.length = 0
    this.#index = 0
  }

  close(): Promise<void> {
    for (const timer of this.#timers) clearTimeout(timer)
    this.#timers.clear()
    return new Promise((resolve) => {
      this.server.close(() => resolve())
      for (const socket of this.#sockets) socket.destroy()
      this.server.closeAllConnections()
    })
  }
}

function parseJson(raw: Buffer): any {
  if (raw.length === 0) return null
  try {
    return JSON.parse(raw.toString('utf8'))
  } catch {
    return null
  }
}

function describe(requests: ReceivedRequest[]): string {
  const last = requests
    .slice(-5)
    .map((request) => `${request.method} ${request.path} ${request.raw.toString('utf8').slice(0, 200)}`)
  return last.length === 0 ? '(none)' : (requests.length > 5 ? '…, ' : '') + last.join(' | ')
}

/** Starts a receiver on 127.0.0.1 (a free port unless given); its url names localhost, which the certificate covers. */
export async function startHttpsReceiver(options: { port?: number } = {}): Promise<HttpsReceiver> {
  const { cert, key } = await testCertificate()
  const server = createServer({ cert, key })
  const receiver = new Receiver(server)
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject)
      resolve()
    })
  })
  receiver.url = `https://localhost:${(server.address() as AddressInfo).port}`
  return receiver
}
