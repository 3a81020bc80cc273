/**
 * SignIn (accounts/people/sign-in.ts) on a real system store, with its clock in the test's hands:
 * a link is good for 15 minutes and once; a session for 12 hours and until sign-out; the store
 * holds only hashes of links and sessions; cookies parse and render with the right attributes.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import t from 'tap'
import type { Mail, Mailer } from '../../platform/mailer.js'
import {
  cookieValue,
  defaultSessionLifetimeMs as sessionLifetimeMs,
  normalEmail,
  secretHash,
  sessionSetCookie,
  SignIn,
  signInLinkLifetimeMs,
} from '../../accounts/people/sign-in.js'
import { SystemStore } from '../../storage/system-store.js'

const sent: Mail[] = []
const mailer: Mailer = { send: async (mail) => void sent.push(mail), close: () => undefined }
const start = Date.UTC(2026, 10, 25, 12)

function tokenOf(mail: Mail): string {
  return new URL(mail.link!).searchParams.get('token')!
}

t.test('links: 15 minutes, once; sessions: 12 hours, until sign-out; only hashes stored', async (t) => {
  const directory = mkdtempSync(path.join(tmpdir(), 'pricing-sign-in-'))
  const system = new SystemStore(directory)
  t.teardown(async () => {
    await system.close()
    rmSync(directory, { recursive: true, force: true })
  })
  const signIn = new SignIn(system, mailer, () => 'https://pricing.example')
  await signIn.request('a@example.com', start)
  const token = tokenOf(sent.at(-1)!)
  t.match(sent.at(-1)!.link!, /^https:\/\/pricing\.example\/portal\/verify\?token=[A-Za-z0-9_-]{43}$/)
  t.equal(system.signInLinks.get(token), undefined, 'the token itself is not a key of the store')
  t.equal(system.signInLinks.get(secretHash(token))?.email, 'a@example.com', 'its hash is')
  t.equal(await signIn.verify(token, start + signInLinkLifetimeMs), null, 'at 15 minutes the link has expired')
  const session = await signIn.verify(token, start + signInLinkLifetimeMs - 1)
  t.not(session, null, 'just before, it signs in')
  t.equal(await signIn.verify(token, start + 1), null, 'once only')
  const now = start + signInLinkLifetimeMs
  t.equal(signIn.session(session!.session, now), 'a@example.com')
  t.equal(system.sessions.get(session!.session), undefined, 'the session id is not stored either')
  t.equal(signIn.session(session!.session, now + sessionLifetimeMs), null, 'after 12 hours the session has ended')
  t.equal(signIn.session('', now), null)
  await signIn.signOut(session!.session)
  t.equal(signIn.session(session!.session, now + 1), null, 'signed out')
})

t.test('addresses, cookies', async (t) => {
  t.equal(normalEmail('  Ann@Example.COM '), 'ann@example.com')
  t.equal(normalEmail('ann@example'), null)
  t.equal(normalEmail('ann example.com'), null)
  t.equal(normalEmail(`${'a'.repeat(250)}@example.com`), null)
  t.equal(cookieValue('a=1; pricing_session=xyz; b=2', 'pricing_session'), 'xyz')
  t.equal(cookieValue('pricing_session_other=1', 'pricing_session'), '')
  t.match(sessionSetCookie('s', true), /; Secure$/)
  t.notMatch(sessionSetCookie('s', false), /Secure/)
})

t.test('one link used ten times at once gives exactly one session', async (t) => {
  const directory = mkdtempSync(path.join(tmpdir(), 'pricing-sign-in-'))
  const system = new SystemStore(directory)
  t.teardown(async () => {
    await system.close()
    rmSync(directory, { recursive: true, force: true })
  })
  const signIn = new SignIn(system, mailer, () => 'https://pricing.example')
  await signIn.request('race@example.com', start)
  const token = tokenOf(sent.at(-1)!)
  const uses = await Promise.all(Array.from({ length: 10 }, () => signIn.verify(token, start + 1)))
  const sessions = uses.filter((use) => use !== null)
  t.equal(sessions.length, 1, 'one use wins, nine get nothing')
  t.equal([...system.sessions.getRange({ snapshot: false })].length, 1, 'one session is stored')
  t.not(system.signInLinks.get(secretHash(token))?.used_at ?? null, null, 'the link is marked used')
  t.equal(await signIn.verify(token, start + 2), null, 'and stays used')
})
