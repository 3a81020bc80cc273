/**
 * HTTP requests from a chosen loopback source address (127.0.0.2 and up reach a server on
 * 127.0.0.1): limits that count per client address are tested as several clients would meet them.
 */
import http from 'node:http'

export interface AddressAnswer {
  status: number
  headers: http.IncomingHttpHeaders
  text: string
}

/** One request from `from` to `url`; a string body is sent as it is, anything else as JSON. */
export function requestFrom(
  from: string,
  url: string,
  method: string,
  options: { headers?: Record<string, string>; body?: unknown } = {},
): Promise<AddressAnswer> {
  const target = new URL(url)
  const body =
    options.body === undefined ? '' : typeof options.body === 'string' ? options.body : JSON.stringify(options.body)
  const headers: Record<string, string | number> = {
    ...(options.body === undefined || typeof options.body === 'string' ? {} : { 'content-type': 'application/json' }),
    ...options.headers,
  }
  if (body !== '') headers['content-length'] = Buffer.byteLength(body)
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        host: target.hostname,
        port: target.port,
        path: `${target.pathname}${target.search}`,
        method,
        localAddress: from,
        headers,
      },
      (response) => {
        let text = ''
        response.on('data', (chunk: Buffer) => (text += chunk.toString()))
        response.on('end', () => resolve({ status: response.statusCode!, headers: response.headers, text }))
      },
    )
    request.once('error', reject)
    request.end(body)
  })
}
