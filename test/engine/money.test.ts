/**
 * Money arithmetic (engine/money.ts) against exact oracles: `parseAmount` against decimal.js over
 * numbers, strings, exponents, ties, bounds and garbage; `mulDivRound` against BigInt and decimal.js
 * over random operands including products far above 2^53; `roundTo` and the scaled-unit printers.
 * A failure prints fast-check's seed; PROPERTY_SEED=<seed> replays a run.
 */
import { Decimal } from 'decimal.js'
import fc from 'fast-check'
import t from 'tap'
import { amountAbsMax } from '../../engine/limits.js'
import {
  amountScale,
  amountUnit,
  mulDivRound,
  parseAmount,
  roundTo,
  scaleQuantity,
  toDecimalString,
  toNumber,
} from '../../engine/money.js'

const seed =
  process.env['PROPERTY_SEED'] === undefined ? Date.now() % 2_147_483_647 : Number(process.env['PROPERTY_SEED'])
const Exact = Decimal.clone({ precision: 200, rounding: Decimal.ROUND_HALF_UP })
const scaledMax = amountAbsMax * amountUnit

function assertProperty<T>(arbitrary: fc.Arbitrary<T>, predicate: (value: T) => boolean | void, numRuns = 5000): void {
  fc.assert(fc.property(arbitrary, predicate), { seed, numRuns })
}

/** The model: the text's exact decimal, refused outside ±amountAbsMax, else half-up (away from zero) to 10^-4. */
function modelParse(text: string): number | null {
  const value = new Exact(text)
  if (value.abs().gt(amountAbsMax)) return null
  const units = value.times(amountUnit).toDecimalPlaces(0, Decimal.ROUND_HALF_UP)
  return units.isZero() ? 0 : units.toNumber()
}

/** Equal amounts; -0 counts as 0 here (the -0 rule has its own test). */
function same(actual: number | null, expected: number | null): boolean {
  return actual === expected
}

/** Decimal text with a random sign spelling, leading zeros and up to `decimals` decimals. */
const digits = (min: number, max: number) =>
  fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: min, maxLength: max })
const plainText = fc
  .record({
    sign: fc.constantFrom('', '', '-', '+'),
    whole: digits(1, 12),
    fraction: fc.option(digits(0, 8)),
    pad: fc.constantFrom('', ' ', '\t'),
  })
  .map(({ sign, whole, fraction, pad }) => `${pad}${sign}${whole}${fraction === null ? '' : `.${fraction}`}${pad}`)
const exponentText = fc
  .record({
    mantissa: plainText.map((text) => text.trim()),
    marker: fc.constantFrom('e', 'E'),
    exponent: fc.integer({ min: -20, max: 20 }),
    plus: fc.boolean(),
  })
  .map(({ mantissa, marker, exponent, plus }) => `${mantissa}${marker}${exponent >= 0 && plus ? '+' : ''}${exponent}`)

// ---------------------------------------------------------------------------------------------
// parseAmount

t.test('parseAmount reads a JSON number as the decimal it prints as, half-up to 4 decimals', async (t) => {
  t.equal(parseAmount(19.99), 199_900)
  t.equal(parseAmount(0.1 + 0.2), 3000, '0.30000000000000004 prints with 17 digits and rounds to 0.3')
  t.equal(parseAmount(1.00005), 10_001, 'a tie at the 5th decimal goes up')
  t.equal(parseAmount(-1.00005), -10_001, 'and away from zero when negative')
  t.equal(parseAmount(1.00004999), 10_000)
  t.equal(parseAmount(1e-7), 0, 'exponent form of a tiny number')
  t.equal(parseAmount(5e-5), 1, '5e-5 is a tie')
  t.equal(parseAmount(1e11), scaledMax, 'the bound itself')
  t.equal(parseAmount(-1e11), -scaledMax)
  t.equal(parseAmount(1e21), null, 'exponent form of a huge number')
  assertProperty(fc.double({ min: -2e11, max: 2e11, noNaN: true }), (value) =>
    same(parseAmount(value), modelParse(String(value))),
  )
  assertProperty(
    fc.integer({ min: -scaledMax, max: scaledMax }),
    (units) => parseAmount(units / amountUnit) === units || Object.is(units, -0),
  )
  t.pass('numbers agree with the model')
})

t.test('parseAmount reads numeric strings (signs, padding, leading zeros, exponents) exactly', async (t) => {
  t.equal(parseAmount(' 12.5 '), 125_000, 'padding is trimmed')
  t.equal(parseAmount('+3'), 30_000, 'a plus sign')
  t.equal(parseAmount('.5'), 5000, 'no whole part')
  t.equal(parseAmount('5.'), 50_000, 'no fraction digits')
  t.equal(parseAmount('000000000000000007.25'), 72_500, 'leading zeros beyond the fast path')
  t.equal(parseAmount('1.5e3'), 15_000_000)
  t.equal(parseAmount('1.5E-4'), 2, '0.00015 is a tie and goes up')
  t.equal(parseAmount('-2.5e-4'), -3, '-0.00025 goes away from zero')
  t.equal(parseAmount('123456789.12345'), 1_234_567_891_235, 'a tie on a big amount')
  t.equal(parseAmount('-123456789.12345'), -1_234_567_891_235)
  t.equal(parseAmount('0.00004999999999'), 0, 'just below a tie')
  assertProperty(plainText, (text) => same(parseAmount(text), modelParse(text.trim())), 10_000)
  assertProperty(exponentText, (text) => same(parseAmount(text), modelParse(text)), 10_000)
  t.pass('strings agree with the model')
})

t.test('parseAmount rounds every x.xxxx5 tie away from zero and its neighbours to the nearest unit', async (t) => {
  const tieText = fc.tuple(
    fc.bigInt({ min: -(10n ** 15n), max: 10n ** 15n }),
    fc.constantFrom('5', '49', '51', '4999999', '5000001'),
  )
  assertProperty(
    tieText,
    ([units, tail]) => {
      const magnitude = units < 0n ? -units : units
      const text = `${units < 0n ? '-' : ''}${magnitude / 10_000n}.${(magnitude % 10_000n).toString().padStart(4, '0')}${tail}`
      return same(parseAmount(text), modelParse(text))
    },
    10_000,
  )
  t.pass('ties agree')
})

t.test('parseAmount refuses amounts outside ±100000000000 and keeps those on the bound', async (t) => {
  t.equal(parseAmount('100000000000'), scaledMax)
  t.equal(parseAmount('-100000000000.0000'), -scaledMax)
  t.equal(parseAmount('99999999999.99995'), scaledMax, 'rounds onto the bound')
  t.equal(parseAmount('99999999999.9999'), scaledMax - 1)
  t.equal(parseAmount('100000000000.0001'), null)
  t.equal(parseAmount('100000000000.00001'), null, 'above the bound before rounding')
  t.equal(parseAmount('-100000000000.0001'), null)
  t.equal(parseAmount('1e12'), null)
  t.equal(parseAmount('1e400'), null, 'an exponent beyond any double')
  t.equal(parseAmount('1e-400'), 0, 'a tiny exponent is zero')
  t.equal(parseAmount(Number.MAX_VALUE), null)
})

t.test('parseAmount answers null for anything that is not a finite decimal number', async (t) => {
  const garbage: unknown[] = [
    '',
    ' ',
    'abc',
    '1,5',
    '1.2.3',
    '0x10',
    '0b1',
    'NaN',
    'Infinity',
    '-Infinity',
    '1e',
    'e5',
    '.',
    '+',
    '-',
    '--1',
    '+-1',
    '1 2',
    '1_000',
    '١٢',
    '1e5.5',
    '1.5e+',
    ' - 1',
    '12abc',
    '$12',
    '12%',
    Number.NaN,
    Number.POSITIVE_INFINITY,
    Number.NEGATIVE_INFINITY,
    null,
    undefined,
    {},
    [],
    [1],
    true,
    false,
    10n,
    Symbol('1'),
    () => 1,
  ]
  for (const input of garbage)
    t.equal(
      parseAmount(input),
      null,
      `refuses ${typeof input === 'string' ? JSON.stringify(input) : String(typeof input === 'symbol' ? 'a symbol' : input)}`,
    )
  assertProperty(
    fc.string({ maxLength: 12 }),
    (text) => {
      const parsed = parseAmount(text)
      const valid = /^\s*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\s*$/.test(text)
      return valid ? same(parsed, modelParse(text.trim())) : parsed === null
    },
    5000,
  )
})

t.test('parseAmount never answers negative zero (one spelling per amount)', async (t) => {
  t.ok(Object.is(parseAmount('-0'), 0), "'-0'")
  t.ok(Object.is(parseAmount(-0), 0), '-0 as a number')
  t.ok(Object.is(parseAmount('-0.00001'), 0), "'-0.00001' rounds to zero, not -0")
  t.ok(Object.is(parseAmount(-1e-7), 0), '-1e-7 rounds to zero, not -0')
})

t.test('parseAmount rounds once however many digits a string has', async (t) => {
  // 0.0000499…9 is below the tie however many 9s follow; a 40-digit working precision must not round it up first.
  const long = `0.0000${'4'}${'9'.repeat(45)}`
  t.equal(parseAmount(long), 0, `${long.length}-character string just below a tie`)
  assertProperty(
    fc.tuple(fc.bigInt({ min: 0n, max: 10n ** 14n }), fc.integer({ min: 30, max: 60 }), fc.boolean()),
    ([units, nines, negative]) => {
      const text = `${negative ? '-' : ''}${units / 10_000n}.${(units % 10_000n).toString().padStart(4, '0')}4${'9'.repeat(nines)}`
      return same(parseAmount(text), modelParse(text))
    },
    1000,
  )
})

// ---------------------------------------------------------------------------------------------
// mulDivRound

/** round_half_up(a × b / c) in BigInt, ties away from zero. */
function modelMulDiv(a: number, b: number, c: number): bigint {
  const product = BigInt(a) * BigInt(b)
  const magnitude = product < 0n ? -product : product
  const divisor = BigInt(c)
  let quotient = magnitude / divisor
  if ((magnitude % divisor) * 2n >= divisor) quotient += 1n
  return product < 0n ? -quotient : quotient
}

const safe = fc.integer({ min: Number.MIN_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER })
const operand = fc.oneof(
  fc.integer({ min: -10_000, max: 10_000 }),
  fc.integer({ min: -(2 ** 31), max: 2 ** 31 }),
  safe,
  fc.constantFrom(0, 1, -1, 2 ** 26, 2 ** 52, -(2 ** 52), Number.MAX_SAFE_INTEGER),
)
const divisor = fc.oneof(
  fc.integer({ min: 1, max: 1_000_000 }),
  fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
  fc.constantFrom(1, 2, 10_000, 1_000_000, 2 ** 52, 2 ** 52 + 1, Number.MAX_SAFE_INTEGER),
)

t.test('mulDivRound equals the exact BigInt result (products above 2^53 too)', async (t) => {
  let large = 0
  assertProperty(
    fc.tuple(operand, operand, divisor),
    ([a, b, c]) => {
      const expected = modelMulDiv(a, b, c)
      if (Math.abs(a * b) >= 2 ** 53) large++
      // Beyond 2^53 the answer is the double nearest the exact quotient.
      return mulDivRound(a, b, c) === Number(expected)
    },
    20_000,
  )
  t.ok(large > 1000, `${large} products above 2^53`)
})

t.test('mulDivRound agrees with decimal.js half-up at exact ties and one unit either side', async (t) => {
  const tie = fc.tuple(
    fc.integer({ min: 1, max: 2 ** 40 }).map((half) => half * 2),
    fc.integer({ min: -(2 ** 40), max: 2 ** 40 }),
    fc.constantFrom(-1, 0, 1),
    fc.integer({ min: 1, max: 2 ** 20 }),
  )
  assertProperty(
    tie,
    ([c, quotient, nudge, b]) => {
      // a × b = quotient × c + c/2 + nudge, with a = that / b when it divides, else b = 1.
      const target = BigInt(quotient) * BigInt(c) + BigInt(c / 2) + BigInt(nudge)
      const factor = target % BigInt(b) === 0n ? b : 1
      const a = Number(target / BigInt(factor))
      if (!Number.isSafeInteger(a)) return true
      const expected = new Exact(a).times(factor).div(c).toDecimalPlaces(0, Decimal.ROUND_HALF_UP)
      return mulDivRound(a, factor, c) === expected.toNumber()
    },
    20_000,
  )
  t.equal(mulDivRound(5, 1, 2), 3, '2.5 -> 3')
  t.equal(mulDivRound(-5, 1, 2), -3, '-2.5 -> -3')
  t.equal(mulDivRound(5, -1, 2), -3, 'the sign may come from either factor')
  t.equal(mulDivRound(2 ** 52 + 1, 3, 2), Number(modelMulDiv(2 ** 52 + 1, 3, 2)), 'a product above 2^53 with a tie')
  t.equal(
    mulDivRound(Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER),
    Number.MAX_SAFE_INTEGER,
    'n × n / n = n at the top',
  )
  t.equal(
    mulDivRound(Number.MAX_SAFE_INTEGER, -3, 6),
    -Math.round(Number.MAX_SAFE_INTEGER / 2),
    'half of an odd safe integer, away from zero',
  )
  t.throws(() => mulDivRound(1, 1, 0), 'a zero divisor is a programmer error')
  t.throws(() => mulDivRound(1, 1, -2), 'a negative divisor is a programmer error')
})

// ---------------------------------------------------------------------------------------------
// roundTo and the printers

t.test('roundTo rounds scaled units to 0-4 decimals half-up, away from zero at ties', async (t) => {
  t.equal(roundTo(5, 3), 10, '0.0005 -> 0.001')
  t.equal(roundTo(-5, 3), -10, '-0.0005 -> -0.001')
  t.equal(roundTo(-15, 3), -20)
  t.equal(roundTo(12_345, 2), 12_300, '1.2345 -> 1.23')
  t.equal(roundTo(12_350, 2), 12_400, '1.235 -> 1.24')
  t.equal(roundTo(-12_350, 2), -12_400)
  t.equal(roundTo(5000, 0), 10_000, '0.5 -> 1')
  t.equal(roundTo(-5000, 0), -10_000, '-0.5 -> -1')
  t.equal(roundTo(4999, 0), 0)
  t.equal(roundTo(123_456, amountScale), 123_456, '4 decimals is the identity')
  t.throws(() => roundTo(1, 5), 'more decimals than amounts keep')
  t.throws(() => roundTo(1, -1))
  assertProperty(
    fc.tuple(
      fc.oneof(fc.integer({ min: -1_000_000, max: 1_000_000 }), fc.integer({ min: -scaledMax, max: scaledMax })),
      fc.integer({ min: 0, max: 4 }),
    ),
    ([units, decimals]) => {
      const expected = new Exact(units)
        .div(amountUnit)
        .toDecimalPlaces(decimals, Decimal.ROUND_HALF_UP)
        .times(amountUnit)
        .toNumber()
      return roundTo(units, decimals) === expected
    },
    20_000,
  )
})

t.test('toDecimalString and toNumber print scaled units as the exact decimal', async (t) => {
  t.equal(toDecimalString(199_900), '19.99')
  t.equal(toDecimalString(-1), '-0.0001')
  t.equal(toDecimalString(scaledMax), '100000000000')
  t.equal(toNumber(-scaledMax), -1e11)
  assertProperty(
    fc.integer({ min: -scaledMax, max: scaledMax }),
    (units) => {
      const exact = new Exact(units).div(amountUnit).toFixed()
      return toDecimalString(units) === exact && String(toNumber(units)) === exact
    },
    20_000,
  )
  t.pass('printers agree')
})

t.test('scaleQuantity rounds a quantity half-up to 4 decimals from its decimal, not its binary product', async (t) => {
  // 1.49995 x 10^4 is 14999.499999999998 in doubles: Math.round gave 14999, the decimal is 15000.
  t.equal(Math.round(1.49995 * amountUnit), 14_999, 'the double product (the bug)')
  t.equal(scaleQuantity(1.49995), 15_000)
  t.equal(scaleQuantity(1.49994), 14_999)
  t.equal(scaleQuantity(0.57), 5_700)
  t.equal(scaleQuantity(1e300), Number.MAX_SAFE_INTEGER, 'beyond every break')
  // Quantities as a client writes them: up to 9 integer digits and up to 6 decimals (15 digits at most).
  const quantityText = fc
    .record({ whole: fc.integer({ min: 0, max: 999_999_999 }), fraction: digits(1, 6) })
    .map(({ whole, fraction }) => `${whole}.${fraction}`)
    .filter((text) => text.replace(/^0+|\./g, '').length <= 15 && Number(text) > 0)
  assertProperty(quantityText, (text) => scaleQuantity(Number(text)) === modelParse(text), 20_000)
  t.pass('agrees with decimal.js')
})
