/**
 * Rounding profiles in the engine: `applyRounding` against a decimal.js model over random amounts,
 * increments, modes, offsets and tier tables (no digit may differ), the modes at ties by hand, the
 * write-time checks, the compile cache, and `resolveProfile` (currency default before global).
 */
import { Decimal } from 'decimal.js'
import fc from 'fast-check'
import t from 'tap'
import { Catalog, type RoundingMode, type RoundingProfile, type RoundingTierRule } from '../../engine/catalog.js'
import { amountAbsMax } from '../../engine/limits.js'
import { parseAmount, toDecimalString } from '../../engine/money.js'
import {
  applyRounding,
  canonicalAmount,
  compiledOf,
  compileProfile,
  isAmountInRange,
  normalizeProfile,
  profileProblems,
  resolveProfile,
  roundingModes,
  roundToIncrement,
  roundingTiersMax,
} from '../../engine/rounding.js'

const scaledMax = amountAbsMax * 10_000
const decimalModes: Record<RoundingMode, Decimal.Rounding> = {
  UP: Decimal.ROUND_UP,
  DOWN: Decimal.ROUND_DOWN,
  HALF_UP: Decimal.ROUND_HALF_UP,
  HALF_EVEN: Decimal.ROUND_HALF_EVEN,
}
const Exact = Decimal.clone({ precision: 60 })

/** The model: exact decimal division, rounding to an integer count of increments, then the offset. */
function modelRound(amount: number, increment: number, mode: RoundingMode, offset = 0): string {
  return new Exact(amount).div(increment).toDecimalPlaces(0, decimalModes[mode]).times(increment).plus(offset).toFixed()
}

function tier(
  from: string,
  to: string | null,
  increment: string,
  mode: RoundingMode = 'HALF_UP',
  offset = '0',
): RoundingTierRule {
  return { from, to, increment, mode, offset }
}

function profile(tiers: RoundingTierRule[], extra: Partial<RoundingProfile> = {}): RoundingProfile {
  return { currency_code: null, default_for_currency: false, default_global: false, tier_rules: tiers, ...extra }
}

/** Applies a profile to a decimal text amount and answers decimal text. */
function round(compiled: ReturnType<typeof compileProfile>, amount: string): string {
  return toDecimalString(applyRounding(compiled, parseAmount(amount)!))
}

const modeArbitrary = fc.constantFrom(...roundingModes)
/** Increments across magnitudes: 0.0001 to 10^11, weighted toward price-like steps. */
const incrementArbitrary = fc.oneof(
  fc.integer({ min: 1, max: 10_000 }),
  fc.constantFrom(50, 100, 500, 1000, 5000, 10_000, 50_000, 100_000, 1_000_000),
  fc.integer({ min: 1, max: scaledMax }),
)
const amountArbitrary = fc.oneof(
  fc.integer({ min: -10_000_000, max: 10_000_000 }),
  fc.integer({ min: -scaledMax, max: scaledMax }),
)
const offsetArbitrary = fc.oneof(
  fc.constantFrom(0, -100, -1, -500, 100),
  fc.integer({ min: -scaledMax, max: scaledMax }),
)

t.test('roundToIncrement agrees with the decimal.js model on every digit (random)', async (t) => {
  let checked = 0
  fc.assert(
    fc.property(amountArbitrary, incrementArbitrary, modeArbitrary, (amount, increment, mode) => {
      checked++
      return String(roundToIncrement(amount, increment, mode)) === modelRound(amount, increment, mode)
    }),
    { numRuns: 20_000 },
  )
  t.equal(checked, 20_000)
})

t.test('roundToIncrement agrees with the model at exact ties and one unit either side', async (t) => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 5_000_000_000 }).map((half) => half * 2),
      fc.integer({ min: -100_000, max: 100_000 }),
      fc.constantFrom(-1, 0, 1),
      modeArbitrary,
      (increment, multiple, nudge, mode) => {
        const amount = multiple * increment + increment / 2 + nudge
        return String(roundToIncrement(amount, increment, mode)) === modelRound(amount, increment, mode)
      },
    ),
    { numRuns: 20_000 },
  )
  t.pass('ties agree')
})

t.test('applyRounding agrees with a decimal.js model over random tier tables and offsets', async (t) => {
  const tableArbitrary = fc
    .uniqueArray(fc.integer({ min: -scaledMax, max: scaledMax }), { minLength: 1, maxLength: 12 })
    .chain((bounds) => {
      const sorted = [...bounds].sort((left, right) => left - right)
      const count = Math.max(1, sorted.length - 1)
      return fc.tuple(
        fc.constant(sorted),
        fc.array(fc.tuple(incrementArbitrary, modeArbitrary, offsetArbitrary, fc.boolean()), {
          minLength: count,
          maxLength: count,
        }),
        fc.boolean(),
      )
    })
  fc.assert(
    fc.property(
      tableArbitrary,
      fc.array(amountArbitrary, { minLength: 1, maxLength: 20 }),
      ([bounds, specs, openEnd], amounts) => {
        // Tiers between consecutive bounds; some are skipped to leave gaps; the last may be unbounded.
        const tiers: RoundingTierRule[] = []
        for (let index = 0; index < specs.length; index++) {
          const [increment, mode, offset, keep] = specs[index]!
          const from = bounds[index]!
          const last = index === specs.length - 1
          const to = last && openEnd ? null : (bounds[index + 1] ?? null)
          if (!keep && !last) continue
          tiers.push(
            tier(
              toDecimalString(from),
              to === null ? null : toDecimalString(to),
              toDecimalString(increment),
              mode,
              toDecimalString(offset),
            ),
          )
        }
        const compiled = compileProfile(normalizeProfile(profile([...tiers].reverse())))
        for (const amount of [...amounts, ...bounds, ...bounds.map((bound) => bound - 1)]) {
          if (Math.abs(amount) > scaledMax) continue
          const match = tiers.find((rule) => {
            const value = new Exact(amount).div(10_000)
            return value.gte(rule.from) && (rule.to === null || value.lt(rule.to))
          })
          const expected =
            match === undefined
              ? new Exact(amount).div(10_000).toFixed()
              : new Exact(modelRound(amount, parseAmount(match.increment)!, match.mode, parseAmount(match.offset)!))
                  .div(10_000)
                  .toFixed()
          if (toDecimalString(applyRounding(compiled, amount)) !== expected) return false
        }
        return true
      },
    ),
    { numRuns: 2_000 },
  )
  t.pass('tiers agree')
})

t.test('.99 endings: increment 1 with offset -0.01 under each mode', async (t) => {
  const ninetyNine = (mode: RoundingMode) => compileProfile(profile([tier('1', null, '1', mode, '-0.01')]))
  t.equal(round(ninetyNine('HALF_UP'), '12.34'), '11.99', '12.34 rounds to 12, then 11.99')
  t.equal(round(ninetyNine('HALF_UP'), '12.5'), '12.99', 'a tie goes up')
  t.equal(round(ninetyNine('HALF_UP'), '12.4999'), '11.99')
  t.equal(round(ninetyNine('UP'), '12.01'), '12.99')
  t.equal(round(ninetyNine('UP'), '12'), '11.99', 'an exact multiple stays')
  t.equal(round(ninetyNine('DOWN'), '12.99'), '11.99')
  t.equal(round(ninetyNine('HALF_EVEN'), '12.5'), '11.99', 'a tie goes to the even 12')
  t.equal(round(ninetyNine('HALF_EVEN'), '13.5'), '13.99', 'a tie goes to the even 14')
  t.equal(round(ninetyNine('HALF_EVEN'), '13.5001'), '13.99')
  t.equal(round(ninetyNine('HALF_EVEN'), '12.5001'), '12.99', 'above the tie goes up')
})

t.test('modes are symmetric around zero (java.math.RoundingMode), tiers match by the signed amount', async (t) => {
  const cases: [RoundingMode, string, string][] = [
    ['UP', '-2.01', '-2.1'],
    ['DOWN', '-2.09', '-2'],
    ['HALF_UP', '-2.05', '-2.1'],
    ['HALF_UP', '-2.0499', '-2'],
    ['HALF_EVEN', '-2.05', '-2'],
    ['HALF_EVEN', '-2.15', '-2.2'],
  ]
  for (const [mode, input, expected] of cases) {
    const compiled = compileProfile(profile([tier('-100', '0', '0.1', mode)]))
    t.equal(round(compiled, input), expected, `${mode} ${input}`)
    t.equal(round(compiled, input.slice(1)), input.slice(1), 'a positive amount is outside the negative tier')
  }
})

t.test('from is inclusive, to exclusive; amounts outside every tier are unchanged', async (t) => {
  const compiled = compileProfile(
    profile([tier('10', '100', '1', 'DOWN'), tier('100', '1000', '10', 'DOWN'), tier('2000', null, '100', 'UP')]),
  )
  t.equal(round(compiled, '9.9999'), '9.9999', 'below the first tier')
  t.equal(round(compiled, '10'), '10')
  t.equal(round(compiled, '10.5'), '10')
  t.equal(round(compiled, '99.9999'), '99', 'just below to: still the first tier')
  t.equal(round(compiled, '100'), '100', 'at to: the next tier')
  t.equal(round(compiled, '999.99'), '990')
  t.equal(round(compiled, '1500.55'), '1500.55', 'in the gap between tiers')
  t.equal(round(compiled, '2000.01'), '2100', 'unbounded last tier')
  t.equal(round(compiled, '99999999999'), '100000000000', 'up to the largest amount')
})

t.test('isAmountInRange bounds rounded results at ±amountAbsMax', async (t) => {
  const up = compileProfile(profile([tier('0', null, '70000000000', 'UP')]))
  const result = applyRounding(up, parseAmount('90000000000')!)
  t.equal(toDecimalString(result), '140000000000', 'still exact past the range')
  t.notOk(isAmountInRange(result))
  t.ok(isAmountInRange(scaledMax))
  t.ok(isAmountInRange(-scaledMax))
  t.notOk(isAmountInRange(-scaledMax - 1))
})

t.test('compileProfile sorts tiers by from and keeps amounts as scaled integers', async (t) => {
  const compiled = compileProfile(profile([tier('100', null, '0.05', 'UP', '-0.01'), tier('0', '100', '1')]))
  t.same(
    compiled.tiers.map((entry) => [entry.from, entry.to, entry.increment, entry.offset]),
    [
      [0, 1_000_000, 10_000, 0],
      [1_000_000, null, 500, -100],
    ],
  )
  t.ok(Object.isFrozen(compiled.tiers), 'compiled tiers are frozen')
})

t.test('compiledOf compiles a stored value once and reuses it', async (t) => {
  const stored = profile([tier('0', null, '1')])
  t.equal(compiledOf(stored), compiledOf(stored), 'same object for the same value')
  t.not(compiledOf(stored), compiledOf(profile([tier('0', null, '1')])), 'another version compiles anew')
})

t.test('canonicalAmount accepts plain decimals with at most 4 decimals inside the amount range', async (t) => {
  t.equal(canonicalAmount(12.5), '12.5')
  t.equal(canonicalAmount('0012.5000'), '12.5')
  t.equal(canonicalAmount(' -0.01 '), '-0.01')
  t.equal(canonicalAmount(-0), '0')
  t.equal(canonicalAmount('1.2345'), '1.2345')
  t.equal(canonicalAmount(100_000_000_000), '100000000000')
  for (const bad of [
    '1.23456',
    0.00001,
    '1e2',
    'abc',
    '',
    Number.NaN,
    Number.POSITIVE_INFINITY,
    100_000_000_001,
    null,
    true,
  ]) {
    t.equal(canonicalAmount(bad), null, `refuses ${String(bad)}`)
  }
})

t.test(
  'profileProblems names overlaps, empty ranges, non-positive increments, tier count, missing currency',
  async (t) => {
    t.same(profileProblems(profile([tier('0', '10', '1'), tier('10', null, '1')])), [], 'adjacent tiers are fine')
    t.same(profileProblems(profile([tier('10', null, '1'), tier('0', '10.0001', '1')])), [
      { path: '/tier_rules/0', message: 'overlaps tier 1 (tiers cover [from, to) and must not overlap)' },
    ])
    t.equal(
      profileProblems(profile([tier('0', null, '1'), tier('50', '60', '1')]))[0]?.path,
      '/tier_rules/1',
      'an unbounded tier overlaps later ones',
    )
    t.equal(profileProblems(profile([tier('5', '5', '1')]))[0]?.path, '/tier_rules/0/to')
    t.equal(profileProblems(profile([tier('5', '4', '1')]))[0]?.path, '/tier_rules/0/to')
    t.equal(profileProblems(profile([tier('0', null, '0')]))[0]?.path, '/tier_rules/0/increment')
    t.equal(profileProblems(profile([tier('0', null, '-1')]))[0]?.path, '/tier_rules/0/increment')
    const many = Array.from({ length: roundingTiersMax + 1 }, (_, index) => tier(String(index), String(index + 1), '1'))
    t.equal(profileProblems(profile(many))[0]?.path, '/tier_rules')
    t.same(profileProblems(profile(many.slice(1))), [], 'the maximum itself is fine')
    t.equal(profileProblems(profile([tier('0', null, '1')], { default_for_currency: true }))[0]?.path, '/currency_code')
  },
)

function catalogWith(profiles: Record<string, RoundingProfile>, at = 1000): Catalog {
  const catalog = new Catalog()
  for (const [code, value] of Object.entries(profiles)) {
    const change = catalog.plan('rounding_profile', code, value, at, at, 'test')!
    catalog.apply(change.type, change.key, change.versions)
  }
  return catalog
}

t.test('resolveProfile: absent means no rounding; a name finds that profile or not_found', async (t) => {
  const catalog = catalogWith({ cents: profile([tier('0', null, '0.05')]) })
  t.equal(resolveProfile(catalog, undefined, 'EUR', 2000), null)
  const found = resolveProfile(catalog, 'cents', 'EUR', 2000)
  t.equal(found !== null && found !== 'not_found' ? found.code : null, 'cents')
  t.equal(resolveProfile(catalog, 'nope', 'EUR', 2000), 'not_found')
  t.equal(resolveProfile(catalog, 'cents', 'EUR', 500), 'not_found', 'not yet written at that instant')
})

t.test('resolveProfile default: the currency default wins over the global one, else global, else none', async (t) => {
  const catalog = catalogWith({
    a_global: profile([tier('0', null, '1')], { default_global: true }),
    sek: profile([tier('0', null, '10')], { currency_code: 'SEK', default_for_currency: true }),
    eur_plain: profile([tier('0', null, '0.1')], { currency_code: 'EUR' }),
  })
  const code = (currency: string) => {
    const resolved = resolveProfile(catalog, 'default', currency, 2000)
    return resolved === null || resolved === 'not_found' ? resolved : resolved.code
  }
  t.equal(code('SEK'), 'sek', 'currency default before the global one (which sorts first)')
  t.equal(code('EUR'), 'a_global', 'a currency profile that is not a default does not count')
  const sek = resolveProfile(catalog, 'default', 'SEK', 2000)
  t.equal(sek !== null && sek !== 'not_found' ? toDecimalString(applyRounding(sek.compiled, 123_4500)) : null, '120')
  const none = catalogWith({ plain: profile([tier('0', null, '1')]) })
  t.equal(resolveProfile(none, 'default', 'EUR', 2000), null, 'no default: no rounding')
  t.equal(resolveProfile(catalogWith({}), 'default', 'EUR', 2000), null)
})
