/**
 * The wait of a new key's secret for its page (http/pages/console/new-key-secrets.ts): one read, by the
 * session that created the key, within 5 minutes; at most 1,000 wait at once, the oldest dropped.
 */
import t from 'tap'
import { NewKeySecrets, secretWaitMs } from '../../../http/pages/console/new-key-secrets.js'

t.test('one read by the same session, within the wait', async (t) => {
  const secrets = new NewKeySecrets()
  secrets.put('session-a', 'key-1', 'secret-1', 1_000)
  t.equal(secrets.take('session-b', 'key-1', 1_001), null, 'another session: nothing')
  t.equal(secrets.size, 1, 'nor does it take the secret away from its session')
  t.equal(secrets.take('session-a', 'key-2', 1_001), null, 'another key: nothing')
  t.equal(
    secrets.take('session-a', 'key-1', 1_000 + secretWaitMs - 1),
    'secret-1',
    'the same session, in time: the secret',
  )
  t.equal(secrets.take('session-a', 'key-1', 1_002), null, 'once')
  secrets.put('session-a', 'key-3', 'secret-3', 0)
  t.equal(secrets.take('session-a', 'key-3', secretWaitMs), null, 'after 5 minutes: gone')
})

t.test('expired secrets are dropped, and at most 1,000 wait', async (t) => {
  const secrets = new NewKeySecrets()
  for (let index = 0; index < 1_500; index++) secrets.put('session', `key-${index}`, `secret-${index}`, 0)
  t.equal(secrets.size, 1_000, 'bounded')
  t.equal(secrets.take('session', 'key-0', 1), null, 'the oldest went first')
  t.equal(secrets.take('session', 'key-1499', 1), 'secret-1499', 'the newest waits')
  secrets.put('session', 'late', 'secret', secretWaitMs + 1)
  t.equal(secrets.size, 1, 'a put drops the expired ones')
})
