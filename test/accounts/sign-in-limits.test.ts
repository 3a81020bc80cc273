/**
 * What a stranger can make the service do with a sign-in form and the operator API, against the
 * real server: sign-in mails are limited per e-mail address and per client address (the answer
 * stays the same, so it tells nothing), wrong admin tokens are throttled per address (429 with
 * Retry-After, the right token from elsewhere still served), and an admin token shorter than 32
 * characters stops the start (exit 2) without being echoed.
 */
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { loadConfig } from '../../platform/config.js'
import { requestFrom } from '../helpers/from-address.js'
import { adminToken, startServer, TestServer } from '../helpers/server.js'

let server: TestServer

t.before(async () => {
  // The defaults: 3 mails at once per e-mail address (30 per client address); 3 wrong admin tokens.
  server = await startServer({
    env: {
      PRICING_SIGN_IN_MAILS_BURST: '3',
      PRICING_SIGN_IN_MAILS_PER_HOUR: '12',
      PRICING_TOKEN_FAILURES_BURST: '3',
      PRICING_TOKEN_FAILURES_PER_MINUTE: '1',
    },
  })
})
t.teardown(async () => server.dispose())

function mailsTo(email: string): number {
  const outbox = path.join(server.dataDir, 'outbox')
  let count = 0
  for (const file of readdirSync(outbox))
    if (readFileSync(path.join(outbox, file), 'utf8').includes(`To: ${email}`)) count++
  return count
}

t.test('30 sign-in requests for one address send 3 mails, and all get the same answer', async (t) => {
  const answers = []
  for (let index = 0; index < 30; index++)
    answers.push(
      await requestFrom(`127.0.10.${index + 1}`, `${server.url}/portal/sign-in`, 'POST', {
        body: { email: 'victim@example.com' },
      }),
    )
  t.same(
    new Set(answers.map((answer) => `${answer.status} ${answer.text}`)),
    new Set(['202 {"status":"sent"}']),
    'every answer is 202 sent',
  )
  t.equal(mailsTo('victim@example.com'), 3, 'three mails reached the mailbox')
  const form = await requestFrom('127.0.10.40', `${server.url}/portal/sign-in`, 'POST', {
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: server.url },
    body: 'email=victim%40example.com',
  })
  t.equal(form.status, 303, 'the form is answered as usual')
  t.equal(form.headers.location, '/portal?notice=sign-in-link-sent', 'with the usual message')
  t.equal(mailsTo('victim@example.com'), 3, 'and sends nothing more')
  await requestFrom('127.0.10.41', `${server.url}/portal/sign-in`, 'POST', { body: { email: 'other@example.com' } })
  t.equal(mailsTo('other@example.com'), 1, 'another address gets its mail')
})

t.test('one client address gets 30 mails sent, whatever the addresses it asks for', async (t) => {
  for (let index = 0; index < 40; index++) {
    const answer = await requestFrom('127.0.11.1', `${server.url}/portal/sign-in`, 'POST', {
      body: { email: `person-${index}@example.org` },
    })
    t.equal(answer.status, 202)
  }
  let sent = 0
  for (let index = 0; index < 40; index++) sent += mailsTo(`person-${index}@example.org`)
  t.equal(sent, 30, '30 of 40 sent, the rest held back')
  await requestFrom('127.0.11.2', `${server.url}/portal/sign-in`, 'POST', { body: { email: 'person-39@example.org' } })
  t.equal(mailsTo('person-39@example.org'), 1, 'from another client the held-back address gets its mail')
})

t.test('wrong admin tokens are throttled per address: 429 with Retry-After, even for the right one', async (t) => {
  const admin = (from: string, token: string) =>
    requestFrom(from, `${server.url}/admin/tenants`, 'GET', { headers: { authorization: `Bearer ${token}` } })
  for (let attempt = 1; attempt <= 3; attempt++)
    t.equal((await admin('127.0.12.1', `wrong-${attempt}`)).status, 401, `wrong token ${attempt}: 401`)
  const throttled = await admin('127.0.12.1', 'wrong-4')
  t.equal(throttled.status, 429)
  t.ok(Number(throttled.headers['retry-after']) >= 1, `Retry-After ${throttled.headers['retry-after']}`)
  t.equal(JSON.parse(throttled.text).code, 'rate_limited')
  t.equal((await admin('127.0.12.1', adminToken)).status, 429, 'the right token waits too from that address')
  t.equal((await admin('127.0.12.2', adminToken)).status, 200, 'the operator elsewhere is served')
})

t.test('an admin token shorter than 32 characters stops the start with exit 2, unechoed', async (t) => {
  const short = 'short-token-1234'
  t.throws(
    () => loadConfig({ PRICING_ADMIN_TOKEN: short }),
    /PRICING_ADMIN_TOKEN \(or its file\): 16 characters; expected empty \(admin API off\) or at least 32/,
  )
  t.doesNotThrow(() => loadConfig({ PRICING_ADMIN_TOKEN: 'x'.repeat(32) }), '32 characters are enough')
  t.doesNotThrow(() => loadConfig({ PRICING_ADMIN_TOKEN: '' }), 'empty turns the admin API off')
  const weak = new TestServer(server.dataDir.replace(/$/, '-weak'), { PRICING_ADMIN_TOKEN: short })
  const error = await weak.start().then(
    () => null,
    (failure: Error) => failure,
  )
  t.teardown(() => weak.dispose())
  t.match(error?.message ?? '', /server exited with 2/, 'the start stops with exit 2')
  t.match(error?.message ?? '', /at least 32/, 'and says why')
  t.notMatch(error?.message ?? '', short, 'without repeating the token')
})
