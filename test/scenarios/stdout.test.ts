/**
 * stdout carries JSON log records only (issue 15 point 4), and no secret is ever logged: a first
 * start with the demo tenant, the most verbose level and the access log on, token requests with
 * right and wrong secrets, admin calls, a webhook with a secret and a failing request; then every
 * stdout line must parse as a JSON object and none may contain a secret. An unreachable FX feed
 * logs one warning with the URL and the error code, without a stack (point 9).
 */
import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import path from 'node:path'
import t from 'tap'
import { demoCredentialsFileName } from '../../server/demo/credentials.js'
import { createLogger } from '../../platform/log.js'
import { logRecords, stopAndReadRecords, waitForRecord } from '../helpers/logs.js'
import { adminToken, startServer } from '../helpers/server.js'

/** A loopback URL nothing listens on: a port that was free a moment ago. */
async function closedUrl(): Promise<string> {
  const probe = createServer()
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
  const port = (probe.address() as { port: number }).port
  await new Promise((resolve) => probe.close(resolve))
  return `http://127.0.0.1:${port}/eurofxref-daily.xml`
}

/** The demo client secret from the credentials file the first start wrote. */
function demoSecret(dataDir: string): string {
  const credentials = JSON.parse(readFileSync(path.join(dataDir, demoCredentialsFileName), 'utf8')) as {
    client_secret: string
  }
  return credentials.client_secret
}

async function tokenRequest(
  url: string,
  body: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: any }> {
  const response = await fetch(`${url}/oauth2/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body,
  })
  return { status: response.status, body: await response.json() }
}

t.test('a first start writes only JSON records to stdout, and no secret', async (t) => {
  const feedUrl = await closedUrl()
  const server = await startServer({
    env: {
      PRICING_DEMO: 'true',
      PRICING_LOG_LEVEL: 'trace',
      PRICING_ACCESS_LOG: 'true',
      PRICING_ACCESS_LOG_SAMPLE: '1',
      PRICING_FX_FEED_URL: feedUrl,
      PRICING_FX_FETCH_DELAY_MS: '0',
      PRICING_WEBHOOK_ALLOW_PRIVATE: 'true',
    },
  })
  t.teardown(() => server.dispose())

  const warning = await waitForRecord(
    server,
    (record) => record['msg'] === 'FX feed fetch failed; retrying at the next interval',
    'of the failed FX fetch',
  )
  t.equal(warning['level'], 40, 'the unreachable feed is a warning')
  t.equal(warning['url'], feedUrl, 'naming the URL')
  t.equal(warning['code'], 'ECONNREFUSED', 'and the error code')
  t.match(warning['error'], /unreachable.*ECONNREFUSED/, 'and the message')
  t.notOk('err' in warning || 'stack' in warning, 'no error object')
  t.notOk(JSON.stringify(warning).includes('    at '), 'no stack trace')

  const acme = await server.tenant('acme')
  const wrongSecret = 'wrong-secret-8d1c5f0e2a7b4c93'
  const refused = await tokenRequest(
    server.url,
    new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: acme.clientId,
      client_secret: wrongSecret,
    }).toString(),
  )
  t.equal(refused.status, 401, 'a token request with a wrong secret in the body fails')
  const basic = Buffer.from(`${acme.clientId}:${acme.clientSecret}`).toString('base64')
  const granted = await tokenRequest(server.url, 'grant_type=client_credentials', { authorization: `Basic ${basic}` })
  t.equal(granted.status, 200, 'Basic with the right secret gets a token')
  const wrongBasic = Buffer.from(`${acme.clientId}:${wrongSecret}`).toString('base64')
  t.equal(
    (await tokenRequest(server.url, 'grant_type=client_credentials', { authorization: `Basic ${wrongBasic}` })).status,
    401,
  )
  const webhookSecret = 'whsec-5b0e9a7c3d1f48e2a6c0'
  const hook = await acme.call('POST', '/webhooks', { url: 'https://127.0.0.1:9/hook', secret: webhookSecret })
  t.equal(hook.status, 201, 'a webhook with a secret')
  t.equal((await server.request('GET', '/admin/tenants', { token: 'not-the-admin-token-4f2e' })).status, 401)
  t.equal((await server.request('GET', '/admin/tenants', { token: adminToken })).status, 200)
  t.equal((await acme.call('POST', '/fx/fetch')).status, 502, 'a failing request')

  const records = await stopAndReadRecords(server)
  t.pass(`all ${records.length} stdout lines are JSON objects`)
  t.ok(
    records.every((record) => typeof record['level'] === 'number' && typeof record['msg'] === 'string'),
    'each a pino record (level, msg)',
  )
  t.ok(records.filter((record) => record['msg'] === 'request').length >= 8, 'the requests are among them (access log)')

  const demo = demoSecret(server.dataDir)
  t.ok(demo.length >= 32, 'the demo secret, from the credentials file')
  const secrets: [string, string][] = [
    ['admin token', adminToken],
    ['client secret', acme.clientSecret],
    ['wrong client secret', wrongSecret],
    ['Basic credentials', basic],
    ['wrong Basic credentials', wrongBasic],
    ['access token', granted.body.access_token],
    ['webhook secret', webhookSecret],
    ['demo client secret', demo],
  ]
  for (const [what, secret] of secrets) t.notOk(server.stdout.includes(secret), `no ${what} on stdout`)
  t.same(logRecords(server.stdout).length, records.length, 'nothing more was written after the close')
})

t.test('the logger redacts fields that could hold a secret', async (t) => {
  const lines: string[] = []
  const logger = createLogger('trace', { write: (line: string) => lines.push(line) })
  logger.info(
    {
      authorization: 'secret-1',
      headers: { authorization: 'secret-2' },
      req: { headers: { authorization: 'secret-3' } },
      client_secret: 'secret-4',
      key: { client_secret: 'secret-5' },
      webhook: { secret: 'secret-6', url: 'https://example.com/hook' },
      config: { adminToken: 'secret-7' },
      access_token: 'secret-8',
    },
    'a record with secrets',
  )
  t.equal(lines.length, 1)
  const record = JSON.parse(lines[0]!) as Record<string, any>
  t.notOk(/secret-\d/.test(lines[0]!), 'no secret value is written')
  t.equal(record['webhook'].secret, '[redacted]', 'a redacted field says so')
  t.equal(record['webhook'].url, 'https://example.com/hook', 'other fields stay')
  t.equal(record['msg'], 'a record with secrets')
})
