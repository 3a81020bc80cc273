/**
 * Exchange rates through the real server: the ECB feed served from the fixture files by a local
 * HTTP server, POST /fx/fetch, the automatic fetch, POST /fx/daily, GET /fx/rate and
 * GET /fx/currencies. Expected rates are read from the fixture files with a separate regex, not
 * with the parser under test.
 */
import t from 'tap'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { Decimal } from 'decimal.js'
import { FxFeedError, parseEcbXml } from '../../tenant/fx-feed.js'
import { readChangelog, type ChangelogEntry } from '../helpers/changelog.js'
import { sharedFixturesDir } from '../helpers/fixtures.js'
import { startServer, type TenantClient, type TestServer } from '../helpers/server.js'

const fixtures = path.join(sharedFixturesDir, 'ecb')
const fixture = (name: string): string => readFileSync(path.join(fixtures, name), 'utf8')
const daily = 'eurofxref-daily.xml'
const ninetyDays = 'eurofxref-hist-90d.xml'
const decimalComma = 'nonconforming/eurofxref-daily-2026-03-13-decimal-comma.xml'

/** date -> code -> rate text, read with a plain regex (independent of the parser under test). */
function fixtureDays(name: string): Map<string, Map<string, string>> {
  const days = new Map<string, Map<string, string>>()
  for (const day of fixture(name).matchAll(/<Cube time=["'](\d{4}-\d{2}-\d{2})["']>([\s\S]*?)<\/Cube>/g)) {
    const rates = new Map<string, string>()
    for (const rate of day[2]!.matchAll(/currency=["']([A-Z]{3})["'] rate=["']([^"']+)["']/g))
      rates.set(rate[1]!, rate[2]!)
    days.set(day[1]!, rates)
  }
  return days
}
const fixtureRate = (name: string, date: string, code: string): string => fixtureDays(name).get(date)!.get(code)!
const midnight = (date: string): string => `${date}T00:00:00Z`
const significant = (value: Decimal): number => Number(value.toSignificantDigits(10, Decimal.ROUND_HALF_UP).toString())

// ---------------------------------------------------------------------------------------------
// The feed server: each route serves the fixture file it names now (null: 503) and logs requests.

const feedRoutes: Record<string, string | null> = { main: daily, auto: daily }
const feedRequests: Record<string, number[]> = { main: [], auto: [] }
let feedUrl = ''
const feedServer = http.createServer((request, response) => {
  const route = (request.url ?? '').slice(1)
  feedRequests[route]?.push(Date.now())
  const file = feedRoutes[route]
  if (file === undefined || file === null) {
    response.writeHead(file === null ? 503 : 404).end('unavailable')
    return
  }
  response.writeHead(200, { 'content-type': 'text/xml' }).end(readFileSync(path.join(fixtures, file)))
})

async function waitFor(check: () => Promise<boolean> | boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

async function rate(client: TenantClient, base: string, quote: string, asOf?: string, name = 'as_of') {
  const query = new URLSearchParams({ base, quote, ...(asOf === undefined ? {} : { [name]: asOf }) })
  return client.get(`/fx/rate?${query}`)
}

async function fxChangelog(client: TenantClient): Promise<ChangelogEntry[]> {
  return readChangelog(client, 'entity_type=fx_rate&limit=1000')
}

t.before(async () => {
  await new Promise<void>((resolve) => feedServer.listen(0, '127.0.0.1', resolve))
  feedUrl = `http://127.0.0.1:${(feedServer.address() as AddressInfo).port}`
})
t.teardown(() => new Promise<void>((resolve) => feedServer.close(() => resolve())))

// ---------------------------------------------------------------------------------------------
// The parser, on the real files

t.test('the ECB parser reads the daily file, the 90-day file and older daily files', async (t) => {
  const one = parseEcbXml(fixture(daily))
  t.equal(one.length, 1)
  t.equal(one[0]!.date, '2025-05-09')
  t.equal(Object.keys(one[0]!.rates).length, 30)
  t.equal(one[0]!.rates['GBP'], '0.8477', 'single-quoted attributes; trailing zero dropped')
  const many = parseEcbXml(fixture(ninetyDays))
  const expected = fixtureDays(ninetyDays)
  t.equal(many.length, 61)
  t.equal(many[0]!.date, '2024-11-28', 'oldest first although the file is newest first')
  t.equal(many[60]!.date, '2025-02-25')
  let compared = 0
  for (const day of many) {
    for (const [code, text] of expected.get(day.date)!) {
      if (new Decimal(day.rates[code]!).equals(text)) compared++
    }
  }
  t.equal(compared, 61 * 30, 'every rate of the 90-day file equals the fixture text')
  const older = parseEcbXml(fixture('older-daily/eurofxref-daily-2021-12-14.xml'))
  t.equal(Object.keys(older[0]!.rates).length, 32)
  t.ok(
    older[0]!.rates['RUB'] !== undefined && older[0]!.rates['HRK'] !== undefined,
    'retired currencies are kept in history',
  )
})

t.test('the ECB parser refuses non-conforming input instead of storing garbage', async (t) => {
  t.throws(() => parseEcbXml(fixture(decimalComma)), {
    name: 'FxFeedError',
    message: /USD rate '1,1476' on 2026-03-13/,
  })
  const text = fixture(daily)
  const cases: [string, string, RegExp][] = [
    ['truncated', text.slice(0, text.length / 2), /truncated/],
    ['an HTML page', '<html><body>Service unavailable</body></html>', /not an ECB/],
    ['the CSV variant', fixture('eurofxref.csv'), /not an ECB/],
    ['a negative rate', text.replace("rate='1.1252'", "rate='-1.1252'"), /USD rate/],
    ['a zero rate', text.replace("rate='1.1252'", "rate='0'"), /USD rate/],
    ['EUR as a quote', text.replace("currency='USD'", "currency='EUR'"), /EUR/],
    ['a repeated currency', text.replace("currency='JPY'", "currency='USD'"), /USD appears twice/],
    ['an invalid date', text.replace("time='2025-05-09'", "time='2025-02-30'"), /not a date/],
    ['a rate outside a day', text.replace("<Cube time='2025-05-09'>", '<Cube>'), /inside day|outside a day|empty Cube/],
  ]
  for (const [what, xml, message] of cases) {
    t.throws(() => parseEcbXml(xml), message, what)
    t.throws(() => parseEcbXml(xml), FxFeedError, `${what} is an FxFeedError`)
  }
})

// ---------------------------------------------------------------------------------------------
// A server without automatic fetch during these tests (first fetch an hour after start)

t.test('fetch, daily rates and reads', async (t) => {
  const server: TestServer = await startServer({
    env: { PRICING_FX_FEED_URL: `${feedUrl}/main`, PRICING_FX_FETCH_DELAY_MS: '3600000' },
  })
  t.teardown(() => server.dispose())
  // Created before any fetch: a tenant created later starts with the latest fetched feed.
  const tenants: Record<string, TenantClient> = {}
  for (const name of [
    'fetcher',
    'history',
    'cross',
    'lookup',
    'manual',
    'override',
    'invalid',
    'currencies',
    'broken',
  ]) {
    tenants[name] = await server.tenant(name)
  }
  tenants['tiny'] = await server.tenant('tiny', { limits: { ingest_burst: 3, ingest_rate: 1 } })

  t.test('POST /fx/fetch stores the daily feed; GET /fx/rate answers the fixture rate and its date', async (t) => {
    feedRoutes['main'] = daily
    const acme = tenants['fetcher']!
    t.equal((await rate(acme, 'EUR', 'USD')).status, 404, 'nothing before the fetch')
    const fetched = await acme.call('POST', '/fx/fetch')
    t.equal(fetched.status, 200)
    t.same(fetched.body, { as_of: midnight('2025-05-09'), count: 30 })
    const usd = await rate(acme, 'EUR', 'USD')
    t.equal(usd.status, 200)
    t.same(usd.body, {
      base: 'EUR',
      quote: 'USD',
      as_of: midnight('2025-05-09'),
      rate: Number(fixtureRate(daily, '2025-05-09', 'USD')),
    })
    t.equal((await rate(acme, 'EUR', 'GBP')).body.rate, 0.8477)
    const entries = await fxChangelog(acme)
    t.equal(entries.length, 30, 'one changelog entry per rate')
    t.same(
      {
        type: entries[0].entity_type,
        code: entries[0].entity_code,
        change: entries[0].change_type,
        by: entries[0].changed_by,
      },
      { type: 'fx_rate', code: 'EUR', change: 'created', by: acme.clientId },
    )
    t.same(
      entries.map((entry) => entry.composite_key).sort(),
      [...fixtureDays(daily).get('2025-05-09')!.keys()].sort(),
      'composite key is the quote',
    )
    const again = await acme.call('POST', '/fx/fetch')
    t.same(again.body, { as_of: midnight('2025-05-09'), count: 30 })
    t.equal((await fxChangelog(acme)).length, 30, 'the same feed again records nothing')
  })

  t.test('the 90-day file gives history: on or before, weekends, holidays and before the first date', async (t) => {
    feedRoutes['main'] = ninetyDays
    const acme = tenants['history']!
    const fetched = await acme.call('POST', '/fx/fetch')
    t.same(fetched.body, { as_of: midnight('2025-02-25'), count: 61 * 30 })
    const check = async (asOf: string, used: string, what: string, name = 'as_of') => {
      const answer = await rate(acme, 'EUR', 'USD', asOf, name)
      t.equal(answer.status, 200, what)
      t.same(
        answer.body,
        { base: 'EUR', quote: 'USD', as_of: midnight(used), rate: Number(fixtureRate(ninetyDays, used, 'USD')) },
        what,
      )
    }
    await check('2025-01-15', '2025-01-15', 'a publication date')
    await check('2025-01-15T18:00:00+02:00', '2025-01-15', 'later that day, with an offset')
    await check('2025-01-18', '2025-01-17', 'Saturday takes Friday')
    await check('2025-01-19T23:59:59Z', '2025-01-17', 'Sunday night still takes Friday', 'asOf')
    await check('2024-12-25', '2024-12-24', 'a TARGET holiday takes the day before')
    await check('2024-11-01', '2024-11-28', 'before the first date: the earliest after')
    await check('2030-01-01', '2025-02-25', 'after the last date: the latest')
    t.equal((await fxChangelog(acme)).length, 61 * 30, 'one entry per published rate')
  })

  t.test('cross rates go through EUR and match EURtoB / EURtoA to 10 significant digits', async (t) => {
    const acme = tenants['cross']!
    feedRoutes['main'] = ninetyDays
    await acme.call('POST', '/fx/fetch')
    const date = '2025-02-25'
    const usd = new Decimal(fixtureRate(ninetyDays, date, 'USD'))
    const sek = new Decimal(fixtureRate(ninetyDays, date, 'SEK'))
    const jpy = new Decimal(fixtureRate(ninetyDays, date, 'JPY'))
    const cross = await rate(acme, 'USD', 'SEK', date)
    t.same(cross.body, { base: 'USD', quote: 'SEK', as_of: midnight(date), rate: significant(sek.div(usd)) })
    t.equal((await rate(acme, 'JPY', 'USD', date)).body.rate, significant(usd.div(jpy)))
    t.equal(
      (await rate(acme, 'USD', 'EUR', date)).body.rate,
      significant(new Decimal(1).div(usd)),
      'X -> EUR is 1 / rate',
    )
    t.equal((await rate(acme, 'EUR', 'SEK', date)).body.rate, Number(sek), 'EUR -> X is the stored rate')
    t.same((await rate(acme, 'EUR', 'EUR', date)).body, { base: 'EUR', quote: 'EUR', as_of: midnight(date), rate: 1 })
    t.equal((await rate(acme, 'SEK', 'SEK', date)).body.rate, 1)
  })

  t.test('GET /fx/rate answers 404 without a rate and 400 for bad codes', async (t) => {
    const acme = tenants['lookup']!
    feedRoutes['main'] = daily
    await acme.call('POST', '/fx/fetch')
    for (const [base, quote] of [
      ['EUR', 'ARS'],
      ['ARS', 'USD'],
      ['USD', 'XAU'],
    ]) {
      const answer = await rate(acme, base!, quote!)
      t.equal(answer.status, 404, `${base} -> ${quote}`)
      t.equal(answer.body.code, 'not_found')
      t.match(answer.body.message, /ARS|XAU/)
    }
    const cases: [Record<string, string>, string][] = [
      [{ base: 'EUR', quote: 'usd' }, 'validation_failed'],
      [{ base: 'EURO', quote: 'USD' }, 'validation_failed'],
      [{ base: 'EUR' }, 'validation_failed'],
      [{ base: 'EUR', quote: 'USD', as_of: 'yesterday' }, 'validation_failed'],
      [{ base: 'EUR', quote: 'USD', colour: 'red' }, 'validation_failed'],
      [{ base: 'EUR', quote: 'ABC' }, 'currency_unknown'],
      [{ base: 'QQQ', quote: 'USD' }, 'currency_unknown'],
    ]
    for (const [query, code] of cases) {
      const answer = await acme.get(`/fx/rate?${new URLSearchParams(query)}`)
      t.equal(answer.status, 400, JSON.stringify(query))
      t.equal(answer.body.code, code, JSON.stringify(query))
    }
  })

  t.test('POST /fx/daily stores rates at their date, past or future, and dedups per date and rate', async (t) => {
    const acme = tenants['manual']!
    const posted = await acme.call('POST', '/fx/daily', {
      date: '2025-03-03',
      rates: { USD: 1.08, JPY: '160.50', SEK: '1.1e1' },
    })
    t.equal(posted.status, 202)
    t.equal(posted.text, '')
    t.same((await rate(acme, 'EUR', 'USD', '2025-03-04')).body, {
      base: 'EUR',
      quote: 'USD',
      as_of: midnight('2025-03-03'),
      rate: 1.08,
    })
    t.equal((await rate(acme, 'EUR', 'JPY', '2025-03-03')).body.rate, 160.5)
    t.equal((await rate(acme, 'EUR', 'SEK', '2025-03-03')).body.rate, 11, 'a numeric string with an exponent')
    t.equal((await acme.call('POST', '/fx/daily', { date: '2020-01-02', rates: { USD: 1.12 } })).status, 202)
    t.same((await rate(acme, 'EUR', 'USD', '2021-06-01')).body.as_of, midnight('2020-01-02'), 'a past date is history')
    t.equal((await acme.call('POST', '/fx/daily', { date: '2099-01-01', rates: { USD: 2 } })).status, 202)
    t.equal((await rate(acme, 'EUR', 'USD')).body.rate, 1.08, 'a future date is not in force now')
    t.equal((await rate(acme, 'EUR', 'USD', '2099-06-01')).body.rate, 2, 'and is from its date')
    const before = (await fxChangelog(acme)).length
    t.equal(before, 5)
    await acme.call('POST', '/fx/daily', { date: '2025-03-03', rates: { USD: '1.0800', JPY: 160.5 } })
    t.equal((await fxChangelog(acme)).length, before, 'same date and same rates record nothing')
    await acme.call('POST', '/fx/daily', { date: '2025-03-04', rates: { USD: 1.08 } })
    const entries = await fxChangelog(acme)
    t.equal(entries.length, before + 1, 'the same rate on a new date is a new version')
    t.same(
      (await rate(acme, 'EUR', 'USD', '2025-03-05')).body.as_of,
      midnight('2025-03-04'),
      'as_of names the new date',
    )
    await acme.call('POST', '/fx/daily', { date: '2025-03-03', rates: { USD: 1.09 } })
    const latest = (await fxChangelog(acme)).at(-1)!
    t.same([latest.change_type, latest.composite_key], ['updated', 'USD'], 'a new rate for a held date replaces it')
    t.equal((await rate(acme, 'EUR', 'USD', '2025-03-03')).body.rate, 1.09)
  })

  t.test('a manual rate for a date is overwritten by a fetch of the same date', async (t) => {
    const acme = tenants['override']!
    await acme.call('POST', '/fx/daily', { date: '2025-05-09', rates: { USD: 1.5 } })
    feedRoutes['main'] = daily
    await acme.call('POST', '/fx/fetch')
    t.equal((await rate(acme, 'EUR', 'USD', '2025-05-09')).body.rate, 1.1252)
  })

  t.test('POST /fx/daily refuses bad input with 400 and stores nothing', async (t) => {
    const acme = tenants['invalid']!
    const bodies: [string, unknown][] = [
      ['no date', { rates: { USD: 1.1 } }],
      ['no rates', { date: '2025-03-03' }],
      ['empty rates', { date: '2025-03-03', rates: {} }],
      ['rates as an array', { date: '2025-03-03', rates: [1.1] }],
      ['a month 13', { date: '2025-13-01', rates: { USD: 1.1 } }],
      ['February 30', { date: '2025-02-30', rates: { USD: 1.1 } }],
      ['slashes', { date: '2025/03/03', rates: { USD: 1.1 } }],
      ['a date-time', { date: '2025-03-03T00:00:00Z', rates: { USD: 1.1 } }],
      ['EUR in rates', { date: '2025-03-03', rates: { USD: 1.1, EUR: 1 } }],
      ['a code outside ISO 4217', { date: '2025-03-03', rates: { USD: 1.1, ABC: 2 } }],
      ['a lowercase code', { date: '2025-03-03', rates: { usd: 1.1 } }],
      ['a negative rate', { date: '2025-03-03', rates: { USD: -1.1 } }],
      ['a zero rate', { date: '2025-03-03', rates: { USD: 0 } }],
      ['a non-numeric rate', { date: '2025-03-03', rates: { USD: 'abc' } }],
      ['a decimal comma', { date: '2025-03-03', rates: { USD: '1,1' } }],
      ['a boolean rate', { date: '2025-03-03', rates: { USD: true } }],
      ['11 decimals', { date: '2025-03-03', rates: { USD: '1.00000000001' } }],
      ['an unknown field', { date: '2025-03-03', rates: { USD: 1.1 }, source: 'ecb' }],
    ]
    for (const [what, body] of bodies) {
      const answer = await acme.call('POST', '/fx/daily', body)
      t.equal(answer.status, 400, what)
      t.equal(answer.body.code, 'validation_failed', what)
      t.ok(Array.isArray(answer.body.details) && answer.body.details.length > 0, `${what}: details`)
    }
    const mixed = await acme.call('POST', '/fx/daily', { date: '2025-03-03', rates: { USD: 1.1, EUR: 1, GBP: 0 } })
    t.same(
      mixed.body.details.map((detail: { path: string }) => detail.path).sort(),
      ['/rates/EUR', '/rates/GBP'],
      'every bad rate is named',
    )
    t.equal((await rate(acme, 'EUR', 'USD', '2025-03-03')).status, 404, 'a refused request stores none of its rates')
    t.equal((await fxChangelog(acme)).length, 0)
  })

  t.test('POST /fx/daily costs one item per rate', async (t) => {
    const acme = tenants['tiny']!
    const rates = { USD: 1.1, SEK: 11, NOK: 11.6, DKK: 7.46 }
    const refused = await acme.call('POST', '/fx/daily', { date: '2025-03-03', rates })
    t.equal(refused.status, 413, 'four rates cost more than a burst of three')
    t.equal(refused.body.code, 'too_many_items')
    t.equal((await rate(acme, 'EUR', 'USD', '2025-03-03')).status, 404)
    const taken = await acme.call('POST', '/fx/daily', { date: '2025-03-03', rates: { USD: 1.1, SEK: 11, NOK: 11.6 } })
    t.equal(taken.status, 202)
    t.equal(taken.headers.get('x-ratelimit-remaining'), '0', 'three rates took the whole burst')
  })

  t.test('GET /fx/currencies lists the latest feed date held, EUR included', async (t) => {
    const acme = tenants['currencies']!
    t.same((await acme.get('/fx/currencies')).body, { as_of: null, currencies: ['EUR'] }, 'EUR is always available')
    feedRoutes['main'] = ninetyDays
    await acme.call('POST', '/fx/fetch')
    const answer = await acme.get('/fx/currencies')
    t.equal(answer.status, 200)
    const codes = [...fixtureDays(ninetyDays).get('2025-02-25')!.keys(), 'EUR'].sort()
    t.same(answer.body, { as_of: midnight('2025-02-25'), currencies: codes })
    t.equal(codes.length, 31)
    t.same(
      (await acme.get('/fx/currencies?asOf=2025-01-01')).body.as_of,
      midnight('2024-12-31'),
      'as of an earlier instant',
    )
  })

  t.test('a non-conforming or unreachable feed answers 502 and stores nothing', async (t) => {
    const acme = tenants['broken']!
    for (const [file, message] of [
      [decimalComma, /1,1476/],
      [null, /HTTP 503/],
      ['eurofxref.csv', /not an ECB/],
    ] as const) {
      feedRoutes['main'] = file
      const answer = await acme.call('POST', '/fx/fetch')
      t.equal(answer.status, 502, String(file))
      t.equal(answer.body.code, 'fx_feed_unavailable')
      t.equal(answer.body.error, 'Bad Gateway')
      t.match(answer.body.message, message)
    }
    t.equal((await rate(acme, 'EUR', 'USD')).status, 404)
    t.equal((await fxChangelog(acme)).length, 0)
    t.same((await acme.get('/fx/currencies')).body.currencies, ['EUR'])
    const later = await server.tenant('after-broken')
    t.same(
      (await rate(later, 'EUR', 'USD', '2025-02-25')).body.as_of,
      midnight('2025-02-25'),
      'a failed fetch keeps the last good feed for new tenants',
    )
  })
})

// ---------------------------------------------------------------------------------------------
// The automatic fetch

t.test('the automatic fetch', async (t) => {
  feedRoutes['auto'] = daily
  const server: TestServer = await startServer({
    env: {
      PRICING_FX_FEED_URL: `${feedUrl}/auto`,
      PRICING_FX_FETCH_DELAY_MS: '3600000',
      PRICING_FX_FETCH_INTERVAL_MS: '1500',
    },
  })
  t.teardown(() => server.dispose())
  const on = await server.tenant('on')
  const off = await server.tenant('off')
  const manual = await server.tenant('manual-only')
  for (const client of [off, manual]) {
    t.equal((await client.call('PUT', '/settings/fx.rate.auto.update', { value: 'false' })).status, 202)
  }
  t.equal(feedRequests['auto']!.length, 0, 'no fetch before the configured delay')

  t.test(
    'the first fetch comes about a second after start, fails softly and is retried at the next interval',
    async (t) => {
      feedRoutes['auto'] = null
      server.env['PRICING_FX_FETCH_DELAY_MS'] = '1000'
      const restartedAt = Date.now()
      await server.restart()
      // The first fetch comes without any request (no timing bound beyond waiting for it: the
      // machine's load decides how long a restart takes).
      await waitFor(() => feedRequests['auto']!.length >= 1, 30_000, 'the first fetch')
      const first = feedRequests['auto']![0]!
      t.ok(
        first - restartedAt >= 1000,
        `first fetch ${first - restartedAt} ms after the restart began (at least the delay)`,
      )
      t.equal((await rate(on, 'EUR', 'USD')).status, 404, 'a failed fetch stores nothing')
      t.equal((await server.request('GET', '/healthz')).status, 200, 'the server keeps running')
      feedRoutes['auto'] = daily
      await waitFor(async () => (await rate(on, 'EUR', 'USD')).status === 200, 10_000, 'rates after the retry')
      const second = feedRequests['auto']![1]!
      // The interval runs from the schedule, so a first fetch delayed by a loaded machine shortens the
      // gap; it must still be a scheduled retry, not an immediate one.
      t.ok(second - first >= 750, `retried at the next interval (${second - first} ms later)`)
      t.match(server.stdout, /FX feed fetch failed/, 'the failure is logged')
      t.same((await rate(on, 'EUR', 'USD')).body, {
        base: 'EUR',
        quote: 'USD',
        as_of: midnight('2025-05-09'),
        rate: 1.1252,
      })
    },
  )

  t.test('fx.rate.auto.update off: the automatic fetch leaves the tenant alone until it is on again', async (t) => {
    const seen = feedRequests['auto']!.length
    await waitFor(() => feedRequests['auto']!.length >= seen + 2, 10_000, 'two more fetches')
    t.equal((await rate(off, 'EUR', 'USD')).status, 404)
    t.equal((await fxChangelog(off)).length, 0)
    t.equal((await fxChangelog(on)).length, 30, 'repeated fetches of the same day record nothing more')
    t.equal((await fxChangelog(on))[0].changed_by, 'system')
    await off.call('PUT', '/settings/fx.rate.auto.update', { value: 'true' })
    await waitFor(async () => (await rate(off, 'EUR', 'USD')).status === 200, 10_000, 'rates once the setting is on')
    t.pass('the setting is read at each fetch')
  })

  t.test('POST /fx/fetch works whatever the setting says', async (t) => {
    t.equal((await rate(manual, 'EUR', 'USD')).status, 404, 'the automatic fetches left it alone')
    const answer = await manual.call('POST', '/fx/fetch')
    t.same(answer.body, { as_of: midnight('2025-05-09'), count: 30 })
    t.equal((await rate(manual, 'EUR', 'USD')).body.rate, 1.1252)
  })

  t.test('a tenant created after a fetch starts with the latest fetched rates, also after a restart', async (t) => {
    const late = await server.tenant('late')
    t.same((await rate(late, 'EUR', 'SEK')).body, {
      base: 'EUR',
      quote: 'SEK',
      as_of: midnight('2025-05-09'),
      rate: 10.92,
    })
    t.same((await late.get('/fx/currencies')).body.currencies.length, 31)
    server.env['PRICING_FX_FETCH_DELAY_MS'] = '3600000'
    await server.restart()
    const seen = feedRequests['auto']!.length
    const afterRestart = await server.tenant('after-restart')
    t.equal((await rate(afterRestart, 'EUR', 'USD')).body.rate, 1.1252, 'the latest feed survives a restart')
    t.equal(feedRequests['auto']!.length, seen, 'without fetching again')
    t.equal((await fxChangelog(afterRestart))[0].changed_by, 'system')
  })
})
