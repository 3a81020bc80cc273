/**
 * A sign-in link is a credential for 15 minutes, and logs travel further than the data directory:
 * without SMTP, the outbox line names the mail's file but carries its link only at debug level, or
 * in development (the demo on: test/http/routes/system.test.ts follows the demo owner's link from the log).
 */
import t from 'tap'
import { outboxLink } from '../helpers/console.js'
import { startServer, type TestServer } from '../helpers/server.js'

async function logAfterSignIn(server: TestServer, email: string): Promise<string> {
  t.equal((await server.request('POST', '/portal/sign-in', { body: { email } })).status, 202)
  for (let attempt = 0; attempt < 200 && !server.stdout.includes('mail written to the outbox'); attempt++)
    await new Promise((resolve) => setTimeout(resolve, 25))
  await new Promise((resolve) => setTimeout(resolve, 100))
  return server.stdout
}

t.test('at info level, without the demo, the log names the outbox file but not the link', async (t) => {
  const server = await startServer({ env: { PRICING_LOG_LEVEL: 'info', PRICING_DEMO: 'false' } })
  t.teardown(() => server.dispose())
  const log = await logAfterSignIn(server, 'quiet@example.com')
  const line = log.split('\n').find((text) => text.includes('mail written to the outbox'))
  t.ok(line, 'the outbox line is there')
  t.match(line!, /"file":"[^"]+\.eml"/, 'naming the file')
  const token = new URL(outboxLink(server, 'quiet@example.com')).searchParams.get('token')!
  t.notOk(log.includes(token), 'the link is nowhere in the log')
  t.notOk(log.includes('/portal/verify?token='), 'nor any link')
})

t.test('at debug level the link is logged', async (t) => {
  const server = await startServer({ env: { PRICING_LOG_LEVEL: 'debug', PRICING_DEMO: 'false' } })
  t.teardown(() => server.dispose())
  const log = await logAfterSignIn(server, 'debug@example.com')
  const token = new URL(outboxLink(server, 'debug@example.com')).searchParams.get('token')!
  const line = log.split('\n').find((text) => text.includes(token))
  t.ok(line, 'the link is in the log')
  t.match(line!, /"level":20/, 'in a debug record')
})
