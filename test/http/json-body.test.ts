/**
 * The JSON body reader (http/json-body.ts) against exact oracles: a number literal, whatever its
 * length, exponent or sign, reaches parseAmount as a value that rounds (half-up, 4 decimals) to what
 * decimal.js makes of the literal's text; a literal that is the shortest text of its double stays a
 * number; text that is not JSON stays not JSON (a rewritten literal never makes a body valid);
 * lone surrogates are found with their JSON pointer, valid pairs are not. A failure prints
 * fast-check's seed; PROPERTY_SEED=<seed> replays a run.
 */
import { Decimal } from 'decimal.js'
import fc from 'fast-check'
import t from 'tap'
import { parseAmount } from '../../engine/money.js'
import { JsonBodyProblem, needsText, quoteInexactNumbers, readJsonBody, scanJson } from '../../http/json-body.js'

const seed =
  process.env['PROPERTY_SEED'] === undefined ? Date.now() % 2_147_483_647 : Number(process.env['PROPERTY_SEED'])
const Exact = Decimal.clone({ precision: 200, rounding: Decimal.ROUND_HALF_UP })
const depthMax = 32

/** The JsonBodyProblem `run` throws, or null when it throws nothing. */
function problemOf(run: () => unknown): JsonBodyProblem | null {
  try {
    run()
    return null
  } catch (error) {
    if (error instanceof JsonBodyProblem) return error
    throw error
  }
}

function read(text: string): unknown {
  return readJsonBody(Buffer.from(text, 'utf8'), depthMax)
}

/** decimal.js: half-up to 4 decimals in scaled units, null beyond ±10^11 (parseAmount's range). */
function model(literal: string): number | null {
  const value = new Exact(literal)
  if (value.abs().gt(1e11)) return null
  const units = value.times(10_000).toDecimalPlaces(0, Decimal.ROUND_HALF_UP)
  return units.isZero() ? 0 : units.toNumber()
}

const digits = (min: number, max: number) =>
  fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: min, maxLength: max })
/** JSON number literals: long mantissas, ties at the 5th decimal padded with 9s or 0s, exponents, signs. */
const literal = fc.oneof(
  fc
    .record({ negative: fc.boolean(), whole: digits(1, 11), fraction: digits(0, 30) })
    .map(
      ({ negative, whole, fraction }) =>
        `${negative ? '-' : ''}${whole.replace(/^0+(?=\d)/, '')}${fraction === '' ? '' : `.${fraction}`}`,
    ),
  fc
    .record({
      negative: fc.boolean(),
      whole: fc.integer({ min: 0, max: 99_999 }),
      four: digits(4, 4),
      tail: fc.constantFrom('5', '49999999999999999999', '50000000000000000001', '4999', '5000000000000000'),
    })
    .map(({ negative, whole, four, tail }) => `${negative ? '-' : ''}${whole}.${four}${tail}`),
  fc
    .record({
      mantissa: digits(1, 25),
      exponent: fc.integer({ min: -30, max: 8 }),
      marker: fc.constantFrom('e', 'E+', 'e-0'),
    })
    .map(({ mantissa, exponent, marker }) => {
      const whole = mantissa.replace(/^0+(?=\d)/, '')
      if (marker === 'e-0') return `${whole}.5e-0${Math.abs(exponent)}`
      return exponent < 0 || marker === 'e' ? `${whole}.${mantissa}e${exponent}` : `${whole}.${mantissa}E+${exponent}`
    }),
)

t.test('every literal reaches parseAmount as a value that rounds like decimal.js rounds its text', async (t) => {
  fc.assert(
    fc.property(literal, (text) => {
      const parsed = read(`{"amount":${text},"list":[1,${text}],"n":null}`) as { amount: unknown; list: unknown[] }
      const expected = model(text)
      return parseAmount(parsed.amount) === expected && parseAmount(parsed.list[1]) === expected
    }),
    { seed, numRuns: 5000 },
  )
  t.pass(`5000 literals (seed ${seed})`)
})

t.test('edge cases against decimal.js: ties at the 5th decimal, 30 digits, exponents, negatives', async (t) => {
  const cases = [
    '0.100049999999999999999999999',
    '0.10005',
    '0.100050000000000000000000001',
    '-0.100049999999999999999999999',
    '1.00005e0',
    '1.000049999999999999999e0',
    '100004.9999999999999999e-5',
    '-1.49995',
    '1.499949999999999999999999999999',
    '123456789012.34565',
    '99999999999.99995',
    '99999999999.999949999999999999',
    '0.000049999999999999999',
    '5e-5',
  ]
  for (const text of cases) {
    const value = (read(`[${text}]`) as unknown[])[0]
    t.equal(parseAmount(value), model(text), `${text}: ${JSON.stringify(value)} -> ${model(text)}`)
  }
  t.equal(parseAmount((read('[0.100049999999999999999999999]') as unknown[])[0]), 1000, 'worked out: 0.1000')
  t.equal(
    parseAmount(JSON.parse('[0.100049999999999999999999999]')[0]),
    1001,
    'JSON.parse alone rounds it twice to 0.1001',
  )
})

t.test('a literal that is the shortest text of its double stays a number', async (t) => {
  for (const text of [
    '0.30000000000000004',
    '8.991000000000001',
    '1.7976931348623157e308',
    '5e-324',
    '123456789012345680',
    '-0.1234567890123456',
  ]) {
    const value = (read(`[${text}]`) as unknown[])[0]
    t.equal(typeof value, 'number', `${text} stays a number`)
    t.equal(value, Number(text))
  }
  t.equal(needsText('1.00000000000000000000'), false, 'trailing zeros are no significant digits')
  t.equal(needsText('0.00000000000000000001'), false, 'nor are leading ones')
  t.equal(needsText('0.1234567890123456789'), true)
  t.equal(needsText('1e400'), false, 'one significant digit: a number, Infinity, which parseAmount refuses')
  t.equal(parseAmount((read('[1e400]') as unknown[])[0]), null)
})

t.test('text that is not JSON stays not JSON; strings and keys are never rewritten', async (t) => {
  const long = '1.00000000000000000001'
  for (const text of [
    `{${long}: 1}`,
    `{"a": 1, ${long}: 2}`,
    `[0${long}]`,
    `[${long}x]`,
    `[-${long}.5]`,
    `[${long}"a"]`,
    `[+${long}]`,
    `[${long}`,
  ]) {
    t.throws(() => JSON.parse(quoteInexactNumbers(text)), SyntaxError, `${text} is still malformed`)
    t.equal(problemOf(() => read(text))?.kind, 'syntax', `${text} is refused as malformed`)
  }
  const parsed = read(`{"${long}": "${long}", "k": [${long}, {"x": ${long}}], "t": true}`)
  t.same(parsed, { [long]: long, k: [long, { x: long }], t: true })
  t.equal(
    quoteInexactNumbers('{"a":1.5,"b":"1.00000000000000000001"}'),
    '{"a":1.5,"b":"1.00000000000000000001"}',
    'a body with nothing to rewrite is the same string',
  )
})

t.test('the scan: depth, long digit runs outside strings, \\u escapes inside them', async (t) => {
  const scan = (text: string) => scanJson(Buffer.from(text), 3)
  t.same(scan('[[[1]]]'), { deep: false, longNumber: false, unicodeEscape: false })
  t.same(scan('[[[[1]]]]').deep, true)
  t.same(scan('{"a":"1234567890123456789"}').longNumber, false, 'digits in a string are not a number')
  t.same(scan('{"a":123456789.0123456}').longNumber, true)
  t.same(scan('{"a":"\\\\u0041"}').unicodeEscape, false, 'an escaped backslash then u is no escape')
  t.same(scan('{"a":"\\u0041"}').unicodeEscape, true)
  t.same(scan('{"a":"x\\"[[[[["}').deep, false, 'brackets in a string with an escaped quote do not count')
})

t.test('lone surrogates are found with their JSON pointer; pairs and U+FFFD are text', async (t) => {
  const problem = (text: string): JsonBodyProblem | null => problemOf(() => read(text))
  t.equal(problem('{"name":"N\\udfffN"}')?.path, '/name')
  t.equal(problem('[{"a":["ok","\\ud800"]}]')?.path, '/0/a/1')
  t.equal(problem('{"a/b~":{"\\udc00":1}}')?.path, '/a~1b~0/\ufffd', 'keys are pointer-escaped and shown well-formed')
  t.equal(problem('{"x":"\\ud83d\\ude00 \\ufffd \\u00e9"}'), null)
  t.same(read('{"x":"\\ud83d\\ude00"}'), { x: '\u{1F600}' })
  t.equal(problem('{"x":"\\ud83d"}')?.kind, 'unicode', 'a high surrogate without its pair')
  const bytes = Buffer.from([0x7b, 0x22, 0x78, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d])
  t.equal(problemOf(() => readJsonBody(bytes, depthMax))?.kind, 'encoding', 'bytes that are not UTF-8')
})
