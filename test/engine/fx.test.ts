/**
 * Exchange-rate engine: the lookup rule, planning of rate writes (dedup per date and rate), exact
 * cross rates, the display rate and conversion of scaled amounts against decimal.js as the oracle.
 */
import t from 'tap'
import fc from 'fast-check'
import { Decimal } from 'decimal.js'
import { Catalog } from '../../engine/catalog.js'
import {
  canonicalFxRate,
  convertAmount,
  displayRate,
  fxKey,
  fxLookup,
  fxRateMax,
  latestFeedCurrencies,
  planFxRates,
  rateFraction,
  resolveFx,
  type FxEntry,
  type FxResolved,
} from '../../engine/fx.js'
import { parseInstant } from '../../engine/time.js'

const exact = Decimal.clone({ precision: 200, rounding: Decimal.ROUND_HALF_UP })
const day = (date: string): number => parseInstant(date)
const now = day('2030-01-01')

/** Writes rates the way the routes do: plan, then apply the final version list. */
function write(catalog: Catalog, quote: string, entries: FxEntry[], by = 'test') {
  const changes = planFxRates(catalog, quote, entries, now, by)
  for (const change of changes) catalog.apply(change.type, change.key, change.versions)
  return changes
}

function seeded(): Catalog {
  const catalog = new Catalog()
  write(catalog, 'USD', [
    { from: day('2025-05-07'), rate: '1.13' },
    { from: day('2025-05-08'), rate: '1.1214' },
    { from: day('2025-05-09'), rate: '1.1252' },
  ])
  write(catalog, 'SEK', [
    { from: day('2025-05-08'), rate: '10.9' },
    { from: day('2025-05-09'), rate: '10.92' },
  ])
  return catalog
}

t.test('canonicalFxRate accepts positive decimals with at most 10 decimals and canonicalises them', async (t) => {
  t.equal(canonicalFxRate('1.10'), '1.1', 'trailing zeros dropped')
  t.equal(canonicalFxRate(1.1252), '1.1252', 'a JSON number keeps the decimal the client wrote')
  t.equal(canonicalFxRate('0404.90'), '404.9', 'leading zeros dropped')
  t.equal(canonicalFxRate('1e-3'), '0.001', 'exponent form becomes plain decimal')
  t.equal(canonicalFxRate(' 7.4604 '), '7.4604')
  t.equal(canonicalFxRate('0.0000000001'), '0.0000000001', '10 decimals allowed')
  t.equal(canonicalFxRate('0.00000000001'), null, '11 decimals refused')
  t.equal(canonicalFxRate('1.12345678900'), '1.123456789', 'trailing zeros do not count as decimals')
  t.equal(canonicalFxRate(String(fxRateMax)), String(fxRateMax))
  t.equal(canonicalFxRate(fxRateMax + 1), null, 'above the maximum')
  for (const bad of [
    '0',
    0,
    -1,
    '-1.5',
    '1,1476',
    'abc',
    '',
    '1.2.3',
    Number.NaN,
    Number.POSITIVE_INFINITY,
    true,
    null,
    {},
  ]) {
    t.equal(canonicalFxRate(bad), null, `refuses ${JSON.stringify(bad)}`)
  }
})

t.test('fxLookup takes the most recent rate on or before the instant, else the earliest after', async (t) => {
  const catalog = seeded()
  t.same(fxLookup(catalog, 'USD', day('2025-05-08')), { rate: '1.1214', asOf: day('2025-05-08') }, 'exact date')
  t.same(
    fxLookup(catalog, 'USD', day('2025-05-08') + 3_600_000),
    { rate: '1.1214', asOf: day('2025-05-08') },
    'later that day',
  )
  t.same(
    fxLookup(catalog, 'USD', day('2025-05-11')),
    { rate: '1.1252', asOf: day('2025-05-09') },
    'weekend takes Friday',
  )
  t.same(
    fxLookup(catalog, 'USD', day('2025-05-09') - 1),
    { rate: '1.1214', asOf: day('2025-05-08') },
    'one ms before a date',
  )
  t.same(
    fxLookup(catalog, 'USD', day('2020-01-01')),
    { rate: '1.13', asOf: day('2025-05-07') },
    'before the first: earliest after',
  )
  t.same(
    fxLookup(catalog, 'SEK', day('2025-05-07')),
    { rate: '10.9', asOf: day('2025-05-08') },
    'per currency: earliest after',
  )
  t.equal(fxLookup(catalog, 'JPY', day('2025-05-09')), null, 'a currency without any rate')
  t.same(fxLookup(catalog, 'EUR', 1234), { rate: '1', asOf: 1234 }, 'EUR is 1 at any instant')
})

t.test(
  'a rate equal to the one of the same date records nothing; the same rate on a new date is a version',
  async (t) => {
    const catalog = seeded()
    t.same(
      planFxRates(catalog, 'USD', [{ from: day('2025-05-09'), rate: '1.1252' }], now, 'x'),
      [],
      'same date, same rate',
    )
    const next = write(catalog, 'USD', [{ from: day('2025-05-12'), rate: '1.1252' }])
    t.equal(next.length, 1, 'same rate as in force, new date')
    t.equal(next[0]!.changeType, 'updated')
    t.same(
      fxLookup(catalog, 'USD', day('2025-05-13')),
      { rate: '1.1252', asOf: day('2025-05-12') },
      'as_of names the new date',
    )
    const replaced = write(catalog, 'USD', [{ from: day('2025-05-09'), rate: '1.2' }])
    t.equal(replaced.length, 1)
    t.equal(replaced[0]!.changeType, 'updated', 'a new rate for a held date replaces it')
    const versions = catalog.versions('fx_rate', fxKey('USD'))!
    t.same(
      versions.map((version) => [version.from, version.value?.rate]),
      [
        [day('2025-05-07'), '1.13'],
        [day('2025-05-08'), '1.1214'],
        [day('2025-05-09'), '1.2'],
        [day('2025-05-12'), '1.1252'],
      ],
      'one version per date, sorted',
    )
    const first = write(catalog, 'NOK', [{ from: day('2025-05-09'), rate: '11.6725' }])
    t.equal(first[0]!.changeType, 'created', 'the first rate of a currency is created')
    const earlier = write(catalog, 'NOK', [{ from: day('2025-05-01'), rate: '11.5' }])
    t.equal(earlier[0]!.changeType, 'created', 'a date before every held one has nothing in force before it')
    t.equal(earlier[0]!.from, day('2025-05-01'))
  },
)

t.test('planFxRates gives the same versions as catalog.plan with force after the exact-date check', async (t) => {
  const dates = fc.integer({ min: 0, max: 40 }).map((offset) => day('2025-01-01') + offset * 86_400_000)
  const rates = fc.constantFrom('1.1', '1.2', '1.3')
  const batch = fc.uniqueArray(fc.record({ from: dates, rate: rates }), {
    selector: (entry) => entry.from,
    maxLength: 8,
  })
  fc.assert(
    fc.property(fc.array(batch, { minLength: 1, maxLength: 6 }), (batches) => {
      const merged = new Catalog()
      const planned = new Catalog()
      let recorded = 0
      let expectedRecorded = 0
      for (const entries of batches) {
        const sorted = [...entries].sort((left, right) => left.from - right.from)
        const changes = planFxRates(merged, 'USD', sorted, now, 'x')
        recorded += changes.length
        if (changes.length > 0) merged.apply('fx_rate', fxKey('USD'), changes[0]!.versions)
        for (const entry of sorted) {
          const held = planned.versions('fx_rate', fxKey('USD'))?.find((version) => version.from === entry.from)
          if (held?.value?.rate === entry.rate) continue
          const change = planned.plan('fx_rate', fxKey('USD'), { rate: entry.rate }, entry.from, now, 'x', {
            force: true,
          })!
          planned.apply(change.type, change.key, change.versions)
          expectedRecorded++
        }
      }
      const shape = (catalog: Catalog) =>
        (catalog.versions('fx_rate', fxKey('USD')) ?? []).map((version) => [
          version.from,
          version.value?.rate,
          version.hash,
        ])
      t.same(shape(merged), shape(planned))
      return recorded === expectedRecorded
    }),
    { numRuns: 300 },
  )
})

t.test('resolveFx computes cross rates through EUR exactly and dates them by the later leg', async (t) => {
  const catalog = seeded()
  const cross = resolveFx(catalog, 'USD', 'SEK', day('2025-05-09'))!
  // 10.92 / 1.1252 = 109200 / 11252 = 27300 / 2813 in lowest terms.
  t.equal(cross.numerator, 27300n)
  t.equal(cross.denominator, 2813n)
  t.equal(cross.rate, Number(new exact(10.92).div(1.1252).toSignificantDigits(10).toString()))
  t.equal(cross.asOf, day('2025-05-09'))
  const mixed = resolveFx(catalog, 'USD', 'SEK', day('2025-05-07'))!
  t.equal(mixed.asOf, day('2025-05-08'), 'USD from 05-07, SEK only from 05-08: the later leg dates it')
  const direct = resolveFx(catalog, 'EUR', 'USD', day('2025-05-11'))!
  t.same(
    [direct.numerator, direct.denominator, direct.rate, direct.asOf],
    [2813n, 2500n, 1.1252, day('2025-05-09')],
    'EUR -> X is the stored rate, dated by X',
  )
  const inverse = resolveFx(catalog, 'USD', 'EUR', day('2025-05-11'))!
  t.same(
    [inverse.numerator, inverse.denominator, inverse.asOf],
    [2500n, 2813n, day('2025-05-09')],
    'X -> EUR is 1 / rate',
  )
  t.equal(inverse.rate, 0.8887308923)
  t.equal(resolveFx(catalog, 'USD', 'USD', day('2025-05-09'))!.rate, 1, 'a currency to itself is 1')
  t.equal(resolveFx(catalog, 'EUR', 'EUR', 77)!.asOf, 77)
  t.equal(resolveFx(catalog, 'USD', 'JPY', day('2025-05-09')), null, 'no rate for one leg')
  t.equal(resolveFx(catalog, 'JPY', 'EUR', day('2025-05-09')), null)
})

const rateText = (integerMax: number) =>
  fc
    .tuple(fc.integer({ min: 0, max: integerMax }), fc.stringMatching(/^[0-9]{0,10}$/))
    .map(([whole, fraction]) => canonicalFxRate(fraction === '' ? String(whole) : `${whole}.${fraction}`))
    .filter((rate): rate is string => rate !== null)

t.test('displayRate is the exact rate rounded half-up to 10 significant digits', async (t) => {
  fc.assert(
    fc.property(
      fc.bigInt({ min: 1n, max: 10n ** 30n }),
      fc.bigInt({ min: 1n, max: 10n ** 30n }),
      (numerator, denominator) => {
        const expected = new exact(numerator.toString())
          .div(denominator.toString())
          .toSignificantDigits(10, Decimal.ROUND_HALF_UP)
        return displayRate(numerator, denominator) === Number(expected.toString())
      },
    ),
    { numRuns: 2000 },
  )
  t.equal(displayRate(99999999995n, 10n), 10000000000, 'rounding up to a new digit')
  t.equal(displayRate(2n, 3n), 0.6666666667)
  t.equal(displayRate(1n, 8n), 0.125)
})

function expectedConversion(amount: number, fx: FxResolved): number {
  const product = new exact(amount).times(fx.numerator.toString()).div(fx.denominator.toString())
  return product.toDecimalPlaces(0, Decimal.ROUND_HALF_UP).toNumber()
}

function pair(base: string, quote: string): FxResolved {
  const toBase = base === 'EUR' ? { numerator: 1n, denominator: 1n } : rateFraction(base)
  const toQuote = quote === 'EUR' ? { numerator: 1n, denominator: 1n } : rateFraction(quote)
  const numerator = toQuote.numerator * toBase.denominator
  const denominator = toQuote.denominator * toBase.numerator
  return { base, quote, asOf: 0, numerator, denominator, rate: displayRate(numerator, denominator) }
}

t.test('convertAmount equals decimal.js half-up for direct and cross rates: no cent differs', async (t) => {
  const amount = fc.integer({ min: -1e15, max: 1e15 })
  let compared = 0
  fc.assert(
    fc.property(amount, rateText(100_000), rateText(100_000), (scaled, baseRate, quoteRate) => {
      const catalog = new Catalog()
      write(catalog, 'USD', [{ from: 0, rate: baseRate }])
      write(catalog, 'SEK', [{ from: 0, rate: quoteRate }])
      for (const [base, quote] of [
        ['EUR', 'SEK'],
        ['USD', 'EUR'],
        ['USD', 'SEK'],
      ] as const) {
        const fx = resolveFx(catalog, base, quote, 0)!
        const expected = expectedConversion(scaled, fx)
        if (!Number.isSafeInteger(expected)) continue
        compared++
        if (convertAmount(scaled, fx) !== expected) return false
      }
      return true
    }),
    { numRuns: 5000 },
  )
  fc.assert(
    fc.property(
      fc.integer({ min: -1e6, max: 1e6 }),
      rateText(fxRateMax),
      rateText(fxRateMax),
      (scaled, baseRate, quoteRate) => {
        const fx = pair(baseRate, quoteRate)
        const expected = expectedConversion(scaled, fx)
        if (!Number.isSafeInteger(expected)) return true
        compared++
        return convertAmount(scaled, fx) === expected
      },
    ),
    { numRuns: 5000 },
  )
  t.ok(compared > 10_000, `${compared} conversions compared with decimal.js`)
})

t.test('convertAmount rounds exact halves away from zero', async (t) => {
  const half = pair('EUR', '0.5')
  t.equal(convertAmount(5, half), 3, '2.5 -> 3')
  t.equal(convertAmount(-5, half), -3, '-2.5 -> -3')
  t.equal(convertAmount(3, half), 2, '1.5 -> 2')
  t.equal(convertAmount(0, half), 0)
  const cross = pair('4', '2')
  t.equal(convertAmount(3, cross), 2, '3 × 2 / 4 = 1.5 -> 2')
  const big = pair('0.0000000003', '999999999.9999999999')
  t.ok(big.numerator > BigInt(Number.MAX_SAFE_INTEGER), 'BigInt path')
  t.equal(convertAmount(1, big), expectedConversion(1, big))
  t.equal(convertAmount(-7, big), expectedConversion(-7, big))
})

t.test('latestFeedCurrencies lists the currencies of the latest publication date, EUR included', async (t) => {
  const catalog = seeded()
  write(catalog, 'RUB', [{ from: day('2022-03-01'), rate: '117.3' }])
  write(catalog, 'JPY', [{ from: day('2025-05-12'), rate: '163' }])
  t.same(
    latestFeedCurrencies(catalog, day('2025-05-10')),
    { asOf: day('2025-05-09'), currencies: ['EUR', 'SEK', 'USD'] },
    'a currency the feed stopped is absent',
  )
  t.same(latestFeedCurrencies(catalog, day('2025-05-12')), { asOf: day('2025-05-12'), currencies: ['EUR', 'JPY'] })
  t.same(
    latestFeedCurrencies(catalog, day('2000-01-01')),
    { asOf: day('2022-03-01'), currencies: ['EUR', 'RUB'] },
    'before all: the earliest date',
  )
  t.same(latestFeedCurrencies(new Catalog(), now), { asOf: null, currencies: ['EUR'] }, 'nothing held: EUR only')
})
