/**
 * Rounding profiles against the real server: create/replace (POST), partial update (PUT), reads,
 * soft delete, validation (each refused write stores nothing), one default of each kind (a new
 * claim clears the old holder in the same commit), and POST /rounding-profile/apply with inline,
 * stored and `default` profiles: .99 endings, the four modes at ties and non-ties, tier bounds,
 * values outside every tier, and the per-request item limit.
 */
import t, { type Test } from 'tap'
import { startServer, type Answer, type TenantClient, type TestServer } from '../../helpers/server.js'

let server: TestServer
let acme: TenantClient

const instantPattern = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/

function expect400(t: Test, answer: Answer, code = 'validation_failed'): void {
  t.equal(answer.status, 400, `400 for ${answer.text}`)
  t.equal(answer.body?.code, code)
  t.equal(answer.body?.error, 'Bad Request')
}

async function post(body: Record<string, unknown>): Promise<void> {
  const answer = await acme.call('POST', '/rounding-profile', body)
  if (answer.status !== 202) throw new Error(`profile ${String(body['code'])}: ${answer.status} ${answer.text}`)
}

async function apply(profile: unknown, values: unknown[], extra: Record<string, unknown> = {}): Promise<Answer> {
  return acme.call('POST', '/rounding-profile/apply', { profile, values, ...extra })
}

/** Values rounded by an inline profile (asserts 200). */
async function rounded(t: Test, tierRules: unknown[], values: unknown[]): Promise<number[]> {
  const answer = await apply({ tier_rules: tierRules }, values)
  t.equal(answer.status, 200, answer.text)
  return answer.body.values
}

async function changelogCount(code: string): Promise<number> {
  const answer = await acme.get('/changelog?entity_type=rounding_profile&limit=1000')
  return answer.body.items.filter((entry: { entity_code: string }) => entry.entity_code === code).length
}

t.before(async () => {
  server = await startServer()
  acme = await server.tenant('acme')
})
t.teardown(async () => server.dispose())

// -------------------------------------------------------------------------------------------------
// CRUD

t.test('POST stores a profile; GET answers it with amounts as numbers, defaults filled, tiers sorted', async (t) => {
  const answer = await acme.call('POST', '/rounding-profile', {
    code: 'nordic',
    currency_code: 'SEK',
    tier_rules: [
      { from: '100', increment: 10, mode: 'UP', offset: -1 },
      { from: 0, to: '100', increment: '0.5' },
    ],
  })
  t.equal(answer.status, 202)
  t.equal(answer.text, '')
  const read = await acme.get('/rounding-profile/nordic')
  t.equal(read.status, 200)
  t.same(read.body, {
    code: 'nordic',
    currency_code: 'SEK',
    default_for_currency: false,
    default_global: false,
    tier_rules: [
      { from: 0, to: 100, increment: 0.5, mode: 'HALF_UP', offset: 0 },
      { from: 100, to: null, increment: 10, mode: 'UP', offset: -1 },
    ],
    updated_at: read.body.updated_at,
    updated_by: acme.clientId,
  })
  t.match(read.body.updated_at, instantPattern)
  const list = await acme.get('/rounding-profile')
  t.equal(list.status, 200)
  t.ok(Array.isArray(list.body), 'a bare array')
  t.same(
    list.body.find((entry: { code: string }) => entry.code === 'nordic'),
    read.body,
  )
})

t.test('POST with an existing code replaces the whole profile (omitted fields take their defaults)', async (t) => {
  await post({
    code: 'replace-me',
    currency_code: 'EUR',
    default_for_currency: true,
    tier_rules: [{ from: 0, increment: 1 }],
  })
  await post({ code: 'replace-me', tier_rules: [{ from: 5, to: 6, increment: 0.25, mode: 'DOWN' }] })
  const read = await acme.get('/rounding-profile/replace-me')
  t.equal(read.body.currency_code, null)
  t.equal(read.body.default_for_currency, false)
  t.same(read.body.tier_rules, [{ from: 5, to: 6, increment: 0.25, mode: 'DOWN', offset: 0 }])
  t.equal(await changelogCount('replace-me'), 2, 'created, then updated')
})

t.test('an identical rewrite stores nothing (no changelog entry)', async (t) => {
  const body = { code: 'same', tier_rules: [{ from: 0, increment: 1 }] }
  await post(body)
  const before = await changelogCount('same')
  await post({ ...body, tier_rules: [{ from: '0.0', increment: '1.000', mode: 'HALF_UP', offset: 0, to: null }] })
  t.equal(await changelogCount('same'), before, 'same content in another spelling')
})

t.test('a GET answer can be sent back unchanged (GET, edit, PUT round trip)', async (t) => {
  await post({ code: 'roundtrip', tier_rules: [{ from: 0, increment: 1 }] })
  const read = await acme.get('/rounding-profile/roundtrip')
  const put = await acme.call('PUT', '/rounding-profile/roundtrip', { ...read.body, default_global: false })
  t.equal(put.status, 202, put.text)
  const again = await acme.call('POST', '/rounding-profile', read.body)
  t.equal(again.status, 202, again.text)
})

t.test('PUT of an absent profile answers 404 and creates nothing', async (t) => {
  const answer = await acme.call('PUT', '/rounding-profile/ghost', { tier_rules: [{ from: 0, increment: 1 }] })
  t.equal(answer.status, 404)
  t.equal(answer.body.code, 'not_found')
  t.equal((await acme.get('/rounding-profile/ghost')).status, 404)
})

t.test('PUT merges the given fields; tier_rules when given replaces every tier; null clears currency', async (t) => {
  await post({ code: 'partial', currency_code: 'NOK', tier_rules: [{ from: 0, increment: 1, offset: -0.01 }] })
  t.equal((await acme.call('PUT', '/rounding-profile/partial', { default_global: true })).status, 202)
  let read = await acme.get('/rounding-profile/partial')
  t.equal(read.body.default_global, true)
  t.equal(read.body.currency_code, 'NOK', 'kept')
  t.same(read.body.tier_rules, [{ from: 0, to: null, increment: 1, mode: 'HALF_UP', offset: -0.01 }], 'kept')
  t.equal(
    (
      await acme.call('PUT', '/rounding-profile/partial', {
        tier_rules: [{ from: 10, increment: 5 }],
        currency_code: null,
      })
    ).status,
    202,
  )
  read = await acme.get('/rounding-profile/partial')
  t.equal(read.body.currency_code, null)
  t.equal(read.body.default_global, true, 'kept')
  t.same(read.body.tier_rules, [{ from: 10, to: null, increment: 5, mode: 'HALF_UP', offset: 0 }])
  await acme.call('PUT', '/rounding-profile/partial', { default_global: false })
})

t.test('PUT with a body code other than the path code answers 400 and changes nothing', async (t) => {
  await post({ code: 'pathcode', tier_rules: [{ from: 0, increment: 1 }] })
  const answer = await acme.call('PUT', '/rounding-profile/pathcode', {
    code: 'other',
    tier_rules: [{ from: 0, increment: 2 }],
  })
  expect400(t, answer)
  t.equal(answer.body.details[0].path, '/code')
  t.equal((await acme.get('/rounding-profile/pathcode')).body.tier_rules[0].increment, 1)
})

t.test('PUT that makes a profile invalid answers 400 and keeps the stored one', async (t) => {
  await post({ code: 'keepme', tier_rules: [{ from: 0, increment: 1 }] })
  const answer = await acme.call('PUT', '/rounding-profile/keepme', { default_for_currency: true })
  expect400(t, answer)
  t.equal(answer.body.details[0].path, '/currency_code')
  t.equal((await acme.get('/rounding-profile/keepme')).body.default_for_currency, false)
})

t.test('DELETE soft-deletes: 404 afterwards, absent from the list, shown with include_deleted', async (t) => {
  await post({ code: 'doomed', tier_rules: [{ from: 0, increment: 1 }] })
  const deleted = await acme.call('DELETE', '/rounding-profile/doomed')
  t.equal(deleted.status, 202)
  t.equal(deleted.text, '')
  t.equal((await acme.get('/rounding-profile/doomed')).status, 404)
  const list = await acme.get('/rounding-profile')
  t.notOk(list.body.some((entry: { code: string }) => entry.code === 'doomed'))
  const shown = await acme.get('/rounding-profile/doomed?include_deleted=true')
  t.equal(shown.status, 200)
  t.match(shown.body.deleted_at, instantPattern)
  t.equal((await acme.call('DELETE', '/rounding-profile/doomed')).status, 404, 'a second delete')
  t.equal(
    (await acme.call('PUT', '/rounding-profile/doomed', { default_global: false })).status,
    404,
    'PUT after delete',
  )
  t.equal((await apply('doomed', [1])).status, 404, 'apply by code after delete')
  t.equal((await acme.call('DELETE', '/rounding-profile/never')).status, 404, 'delete of an unknown code')
  t.equal(await changelogCount('doomed'), 2, 'created, deleted')
})

t.test('a profile survives a restart and still applies', async (t) => {
  await post({ code: 'durable', tier_rules: [{ from: 0, increment: 0.05, mode: 'UP' }] })
  await server.restart()
  await acme.refreshToken()
  t.equal((await acme.get('/rounding-profile/durable')).body.tier_rules[0].increment, 0.05)
  t.same((await apply('durable', [1.01])).body, { values: [1.05] })
})

// -------------------------------------------------------------------------------------------------
// Validation: 400 and nothing stored

t.test('invalid profiles answer 400 with the path of the problem and store nothing', async (t) => {
  const cases: [string, unknown[], string, Record<string, unknown>?][] = [
    [
      'overlapping tiers',
      [
        { from: 0, to: 10, increment: 1 },
        { from: 9.99, increment: 1 },
      ],
      '/tier_rules/1',
    ],
    [
      'an unbounded tier before another',
      [
        { from: 0, increment: 1 },
        { from: 50, to: 60, increment: 1 },
      ],
      '/tier_rules/1',
    ],
    [
      'equal from',
      [
        { from: 5, to: 6, increment: 1 },
        { from: 5, to: 7, increment: 1 },
      ],
      '/tier_rules/1',
    ],
    ['to equal to from', [{ from: 5, to: 5, increment: 1 }], '/tier_rules/0/to'],
    ['to below from', [{ from: 5, to: 4, increment: 1 }], '/tier_rules/0/to'],
    ['zero increment', [{ from: 0, increment: 0 }], '/tier_rules/0/increment'],
    ['negative increment', [{ from: 0, increment: '-0.05' }], '/tier_rules/0/increment'],
    ['more than 4 decimals', [{ from: 0, increment: 0.00001 }], '/tier_rules/0/increment'],
    ['a non-numeric amount', [{ from: 'ten', increment: 1 }], '/tier_rules/0/from'],
    ['an amount out of range', [{ from: 0, increment: 1, offset: 1e12 }], '/tier_rules/0/offset'],
    ['a missing increment', [{ from: 0 }], '/tier_rules/0'],
    ['a missing from', [{ increment: 1 }], '/tier_rules/0'],
    ['an unknown mode', [{ from: 0, increment: 1, mode: 'CEILING' }], '/tier_rules/0/mode'],
    ['an unknown tier field', [{ from: 0, increment: 1, step: 2 }], '/tier_rules/0'],
    ['no tiers', [], '/tier_rules'],
    [
      '51 tiers',
      Array.from({ length: 51 }, (_, index) => ({ from: index, to: index + 1, increment: 1 })),
      '/tier_rules',
    ],
    [
      'default_for_currency without currency_code',
      [{ from: 0, increment: 1 }],
      '/currency_code',
      { default_for_currency: true },
    ],
    ['an unknown body field', [{ from: 0, increment: 1 }], '/colour', { colour: 'red' }],
    ['the reserved code default', [{ from: 0, increment: 1 }], '/code', { code: 'default' }],
  ]
  for (const [name, tierRules, path, extra] of cases) {
    const code = typeof extra?.['code'] === 'string' ? extra['code'] : 'invalid'
    const answer = await acme.call('POST', '/rounding-profile', { code: 'invalid', tier_rules: tierRules, ...extra })
    expect400(t, answer)
    t.ok(
      answer.body.details.some((detail: { path: string }) => detail.path.startsWith(path)),
      `${name}: ${answer.text}`,
    )
    t.equal((await acme.get(`/rounding-profile/${code}`)).status, 404, `${name}: nothing stored`)
  }
})

t.test('50 tiers are accepted', async (t) => {
  const tiers = Array.from({ length: 50 }, (_, index) => ({ from: index, to: index + 1, increment: 0.5 }))
  t.equal((await acme.call('POST', '/rounding-profile', { code: 'fifty', tier_rules: tiers })).status, 202)
  t.equal((await acme.get('/rounding-profile/fifty')).body.tier_rules.length, 50)
})

t.test('a currency outside ISO 4217 answers 400 currency_unknown and stores nothing', async (t) => {
  const answer = await acme.call('POST', '/rounding-profile', {
    code: 'badcur',
    currency_code: 'XYZ',
    tier_rules: [{ from: 0, increment: 1 }],
  })
  expect400(t, answer, 'currency_unknown')
  t.equal((await acme.get('/rounding-profile/badcur')).status, 404)
})

// -------------------------------------------------------------------------------------------------
// Defaults

t.test('a new default_global claim clears the previous holder in the same commit', async (t) => {
  await post({ code: 'g1', default_global: true, tier_rules: [{ from: 0, increment: 1 }] })
  await post({ code: 'g2', default_global: true, tier_rules: [{ from: 0, increment: 2 }] })
  t.equal((await acme.get('/rounding-profile/g1')).body.default_global, false, 'cleared')
  t.equal((await acme.get('/rounding-profile/g2')).body.default_global, true)
  const globals = (await acme.get('/rounding-profile')).body.filter(
    (entry: { default_global: boolean }) => entry.default_global,
  )
  t.same(
    globals.map((entry: { code: string }) => entry.code),
    ['g2'],
    'exactly one global default',
  )
  t.equal(await changelogCount('g1'), 2, 'the clearing is recorded as an update of g1')
  t.same((await apply('default', [3.2])).body, { values: [4] }, 'g2 applies: 3.2 to a multiple of 2')
})

t.test('a currency default claim clears only the same currency; PUT can claim too', async (t) => {
  await post({
    code: 'sek1',
    currency_code: 'SEK',
    default_for_currency: true,
    tier_rules: [{ from: 0, increment: 10 }],
  })
  await post({
    code: 'dkk1',
    currency_code: 'DKK',
    default_for_currency: true,
    tier_rules: [{ from: 0, increment: 5 }],
  })
  await post({ code: 'sek2', currency_code: 'SEK', tier_rules: [{ from: 0, increment: 100 }] })
  t.equal((await acme.get('/rounding-profile/sek1')).body.default_for_currency, true, 'not a claim: nothing cleared')
  t.equal((await acme.call('PUT', '/rounding-profile/sek2', { default_for_currency: true })).status, 202)
  t.equal((await acme.get('/rounding-profile/sek1')).body.default_for_currency, false, 'cleared by the PUT')
  t.equal((await acme.get('/rounding-profile/sek2')).body.default_for_currency, true)
  t.equal(
    (await acme.get('/rounding-profile/dkk1')).body.default_for_currency,
    true,
    'another currency keeps its default',
  )
})

t.test('profile default: the currency default wins over the global one, which applies to the rest', async (t) => {
  // g2 (increment 2) is the global default; sek2 (increment 100) and dkk1 (increment 5) are currency defaults.
  t.same((await apply('default', [123], { currency_code: 'SEK' })).body, { values: [100] })
  t.same((await apply('default', [123], { currency_code: 'DKK' })).body, { values: [125] })
  t.same(
    (await apply('default', [123], { currency_code: 'EUR' })).body,
    { values: [124] },
    'no EUR default: the global one',
  )
  t.same((await apply('default', [123])).body, { values: [124] }, 'no currency: the global one')
  await acme.call('DELETE', '/rounding-profile/g2')
  t.same(
    (await apply('default', [123.45], { currency_code: 'EUR' })).body,
    { values: [123.45] },
    'no default at all: unchanged',
  )
  t.same((await apply('default', [123], { currency_code: 'SEK' })).body, { values: [100] })
})

// -------------------------------------------------------------------------------------------------
// Apply

t.test('apply: .99 endings with increment 1 and offset -0.01', async (t) => {
  const tiers = [{ from: 1, increment: 1, offset: -0.01 }]
  t.same(await rounded(t, tiers, [12.34, 12.5, 12.49, 99.99, 100]), [11.99, 12.99, 11.99, 99.99, 99.99])
  t.same(await rounded(t, [{ from: 1, increment: 1, offset: -0.01, mode: 'UP' }], [12.01, 12]), [12.99, 11.99])
})

t.test('apply: each mode at ties and off ties (increment 0.1)', async (t) => {
  const values = [2.05, 2.15, 2.04, 2.06, 2.1, -2.05, -2.15]
  const expected: Record<string, number[]> = {
    HALF_UP: [2.1, 2.2, 2, 2.1, 2.1, -2.1, -2.2],
    HALF_EVEN: [2, 2.2, 2, 2.1, 2.1, -2, -2.2],
    UP: [2.1, 2.2, 2.1, 2.1, 2.1, -2.1, -2.2],
    DOWN: [2, 2.1, 2, 2, 2.1, -2, -2.1],
  }
  for (const [mode, want] of Object.entries(expected)) {
    t.same(await rounded(t, [{ from: -10, increment: 0.1, mode }], values), want, mode)
  }
})

t.test('apply: from is inclusive, to exclusive, and values outside every tier are unchanged', async (t) => {
  const tiers = [
    { from: 10, to: 100, increment: 1, mode: 'DOWN' },
    { from: 100, to: 1000, increment: 10, mode: 'DOWN', offset: -0.01 },
    { from: 5000, increment: 1000, mode: 'UP' },
  ]
  t.same(
    await rounded(t, tiers, [9.9999, 10, 10.9, 99.9999, 100, 999.99, 1000, 4999.5, 5000.01, -3]),
    [9.9999, 10, 10, 99, 99.99, 989.99, 1000, 4999.5, 6000, -3],
  )
})

t.test('apply: numeric strings are accepted, values keep 4 decimals, an empty list answers empty', async (t) => {
  // 0.00005 is taken half-up to 0.0001, which lies outside the tier [0.5, 1).
  t.same(await rounded(t, [{ from: 0.5, to: 1, increment: 0.5 }], ['0.74', '1.23456', 0.00005]), [0.5, 1.2346, 0.0001])
  t.same(await rounded(t, [{ from: 0, increment: 1 }], []), [])
})

t.test('apply with a stored profile by code; an unknown code answers 404', async (t) => {
  await post({ code: 'nickel', tier_rules: [{ from: 0, increment: 0.05, mode: 'HALF_EVEN' }] })
  t.same((await apply('nickel', [1.025, 1.075, 1.03])).body, { values: [1, 1.1, 1.05] })
  const missing = await apply('no-such-profile', [1])
  t.equal(missing.status, 404)
  t.equal(missing.body.code, 'not_found')
})

t.test('apply: an invalid inline profile or value answers 400 with its path', async (t) => {
  let answer = await apply(
    {
      tier_rules: [
        { from: 0, to: 10, increment: 1 },
        { from: 5, increment: 1 },
      ],
    },
    [1],
  )
  expect400(t, answer)
  t.equal(answer.body.details[0].path, '/profile/tier_rules/1')
  answer = await apply({ tier_rules: [{ from: 0, increment: 0 }] }, [1])
  expect400(t, answer)
  t.equal(answer.body.details[0].path, '/profile/tier_rules/0/increment')
  answer = await apply({ tier_rules: [{ from: 0, increment: 1 }] }, [1, 'x', 2e12])
  expect400(t, answer)
  t.same(
    answer.body.details.map((detail: { path: string }) => detail.path),
    ['/values/1', '/values/2'],
  )
  answer = await apply({ tier_rules: [{ from: 0, increment: 70_000_000_000, mode: 'UP' }] }, [1, 90_000_000_000])
  expect400(t, answer)
  t.same(
    answer.body.details,
    [{ path: '/values/1', message: 'rounds to beyond ±100000000000' }],
    'a result past the amount range',
  )
  answer = await acme.call('POST', '/rounding-profile/apply', { profile: 'nickel' })
  expect400(t, answer)
  answer = await apply({ tier_rules: [{ from: 0, increment: 1 }], currency_code: 'QQQ' }, [1])
  expect400(t, answer, 'currency_unknown')
})

t.test('apply: at most 2500 values per request (413 too_many_items)', async (t) => {
  const full = await apply(
    { tier_rules: [{ from: 0, increment: 1 }] },
    Array.from({ length: 2500 }, (_, index) => index + 0.4),
  )
  t.equal(full.status, 200)
  t.equal(full.body.values.length, 2500)
  t.equal(full.body.values[2499], 2499)
  const over = await apply(
    { tier_rules: [{ from: 0, increment: 1 }] },
    Array.from({ length: 2501 }, () => 1),
  )
  t.equal(over.status, 413)
  t.equal(over.body.code, 'too_many_items')
})
