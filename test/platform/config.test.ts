/**
 * Strict configuration: loadConfig reads every kind of setting from PRICING_* variables and from
 * flags in both forms, rejects unknown names with a suggestion, and reports every bad value at once
 * naming the flag or variable, the value and what is allowed. The README's configuration table is
 * the one rendered from the settings table. Secrets are refused as flags (ps shows them), read from
 * the variable or a file, and never shown in a message.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { readmeRows } from '../../server/cli/help.js'
import {
  ConfigError,
  DEFAULTS,
  envName,
  flagName,
  loadConfig,
  SETTINGS,
  TOOLING_VARIABLES,
  type Options,
} from '../../platform/config.js'

/** The problems loadConfig reports, or [] when it accepts the input. */
function problems(env: Record<string, string>, argv: string[] = [], options: Options = {}): readonly string[] {
  try {
    loadConfig(env, argv, options)
    return []
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error
    return error.problems
  }
}

t.test('no input gives the defaults, frozen', async (t) => {
  const config = loadConfig({}, [])
  t.same(config, DEFAULTS)
  t.equal(config.port, 8080)
  t.equal(config.logLevel, 'info')
  t.equal(config.demo, true)
  t.ok(Object.isFrozen(config))
})

t.test('every setting reads the text of its default back from its variable and from its flag', async (t) => {
  for (const key of Object.keys(SETTINGS) as (keyof typeof SETTINGS)[]) {
    const text = String(DEFAULTS[key])
    t.equal(loadConfig({ [envName(key)]: text }, [])[key], DEFAULTS[key], envName(key))
    const flag = `--${flagName(key)}`
    const argv = typeof DEFAULTS[key] === 'boolean' || text === '' ? [`${flag}=${text}`] : [flag, text]
    t.equal(loadConfig({}, argv)[key], DEFAULTS[key], argv.join(' '))
  }
})

t.test('integers: both flag forms, flags over variables, range and type errors name the source', async (t) => {
  t.equal(loadConfig({ PRICING_PORT: '9000' }, []).port, 9000)
  t.equal(loadConfig({}, ['--port', '9001']).port, 9001)
  t.equal(loadConfig({}, ['--port=9002']).port, 9002)
  t.equal(loadConfig({ PRICING_PORT: '9000' }, ['--port=9003']).port, 9003, 'the flag wins')
  t.equal(loadConfig({}, ['--port=1', '--port=2']).port, 2, 'the last flag wins')
  t.equal(loadConfig({}, ['--fx-fetch-interval-ms=1e3']).fxFetchIntervalMs, 1000)
  t.same(problems({}, ['--port=abc']), ['--port=abc: expected an integer from 0 to 65535'])
  t.same(problems({}, ['--port', '-1']), ['--port=-1: expected an integer from 0 to 65535'])
  t.same(problems({ PRICING_PORT: '70000' }), ['PRICING_PORT=70000: expected an integer from 0 to 65535'])
  t.same(problems({ PRICING_WORKERS: '1.5' }), ['PRICING_WORKERS=1.5: expected an integer from 0 to 256'])
  t.same(problems({ PRICING_FX_FETCH_DELAY_MS: '' }), ['PRICING_FX_FETCH_DELAY_MS=: expected an integer of at least 0'])
  t.same(problems({}, ['--fx-fetch-interval-ms=0x10']), [
    '--fx-fetch-interval-ms=0x10: expected an integer of at least 1',
  ])
  t.same(problems({}, ['--backup-interval-s=-1']), ['--backup-interval-s=-1: expected an integer of at least 0'])
})

t.test('numbers: fractions accepted within bounds, exclusive and inclusive bounds in words', async (t) => {
  t.equal(loadConfig({ PRICING_WEBHOOK_RETRY_SCALE: '0.001' }, []).webhookRetryScale, 0.001)
  t.equal(loadConfig({}, ['--access-log-sample=0.25']).accessLogSample, 0.25)
  t.same(problems({}, ['--webhook-retry-scale', '0']), [
    '--webhook-retry-scale=0: expected a number greater than 0 and at most 1000',
  ])
  t.same(problems({ PRICING_ACCESS_LOG_SAMPLE: '1.5' }), [
    'PRICING_ACCESS_LOG_SAMPLE=1.5: expected a number from 0 to 1',
  ])
  t.same(problems({ PRICING_ACCESS_LOG_SAMPLE: 'half' }), [
    'PRICING_ACCESS_LOG_SAMPLE=half: expected a number from 0 to 1',
  ])
})

t.test('booleans: bare, negated, =value and a following true/false/1/0', async (t) => {
  t.equal(loadConfig({ PRICING_DEMO: 'false' }, ['--demo']).demo, true, 'bare flag is true and wins over the variable')
  t.equal(loadConfig({}, ['--no-demo']).demo, false)
  t.equal(loadConfig({}, ['--demo=false']).demo, false)
  t.equal(loadConfig({}, ['--demo', 'false']).demo, false)
  t.equal(loadConfig({}, ['--demo', '0', '--port', '1']).demo, false)
  t.equal(loadConfig({ PRICING_ACCESS_LOG: '1' }, []).accessLog, true)
  t.equal(loadConfig({}, ['--access-log', '--port', '7']).accessLog, true, 'a bare boolean does not take the next flag')
  t.same(problems({ PRICING_DEMO: 'yes' }), ['PRICING_DEMO=yes: expected true or false (also 1 or 0)'])
  t.same(problems({}, ['--demo=maybe']), ['--demo=maybe: expected true or false (also 1 or 0)'])
  t.same(problems({}, ['--no-demo=true']), ['--no-demo=true: --no-demo takes no value'])
  t.same(
    problems({}, ['--demo', 'maybe']),
    ['maybe: unexpected argument'],
    'a non-boolean word is not taken as the value',
  )
})

t.test('one-of settings list the values allowed, never the internal key or a schema message', async (t) => {
  t.equal(loadConfig({}, ['--log-level', 'debug']).logLevel, 'debug')
  const found = problems({ PRICING_LOG_LEVEL: 'loud' })
  t.same(found, ['PRICING_LOG_LEVEL=loud: expected one of fatal, error, warn, info, debug, trace, silent'])
  t.notMatch(found.join('\n'), /logLevel|Expected union/)
})

t.test('texts: empty allowed where it means off, refused where a value is needed', async (t) => {
  t.equal(loadConfig({ PRICING_DOMAIN: 'example.test' }, ['--domain=']).domain, '')
  t.equal(loadConfig({}, ['--fx-feed-url=']).fxFeedUrl, '')
  t.equal(loadConfig({}, ['--data-dir', './x']).dataDir, './x')
  t.same(problems({}, ['--host=']), ['--host=: expected a non-empty text'])
  t.same(problems({}, ['--log-level']), ['--log-level: expects a value (--log-level VALUE or --log-level=VALUE)'])
  t.same(
    problems({}, ['--log-level', '--port', '1']),
    ['--log-level: expects a value (--log-level VALUE or --log-level=VALUE)'],
    'a flag is not a value',
  )
})

t.test('unknown flags are errors with a suggestion; their values are not echoed', async (t) => {
  t.same(problems({}, ['--prot', '9000']), ['--prot: unknown flag; did you mean --port?'])
  t.same(problems({}, ['--dta-dir=./x']), ['--dta-dir: unknown flag; did you mean --data-dir?'])
  t.same(problems({}, ['--admin-tokn', 's3cret']), ['--admin-tokn: unknown flag; did you mean --admin-token?'])
  t.same(problems({}, ['--frobnicate-everything']), ['--frobnicate-everything: unknown flag'])
  t.same(problems({}, ['-p', '9000']), ['-p: unknown flag'])
  t.same(problems({}, ['9000']), ['9000: unexpected argument'])
})

t.test('unknown PRICING_* variables are errors with a suggestion; tooling variables and others are not', async (t) => {
  t.same(problems({ PRICING_PROT: '1' }), ['PRICING_PROT: unknown variable; did you mean PRICING_PORT?'])
  t.same(problems({ PRICING_ADMIN_TOKN: 's3cret' }), [
    'PRICING_ADMIN_TOKN: unknown variable; did you mean PRICING_ADMIN_TOKEN?',
  ])
  t.same(problems({ PRICING_COLOUR: 'blue' }), ['PRICING_COLOUR: unknown variable'])
  const tooling = Object.fromEntries(TOOLING_VARIABLES.map((name) => [name, 'x']))
  t.same(problems({ ...tooling, PATH: '/bin', PORT: 'x', pricing_port: 'x' }), [])
  for (const name of TOOLING_VARIABLES) t.notOk(name in DEFAULTS, `${name} is not a setting`)
})

t.test('every problem is reported together, as one ConfigError', async (t) => {
  try {
    loadConfig({ PRICING_PROT: '1', PRICING_LOG_LEVEL: 'loud' }, ['--port=abc', '--demo=maybe', '--prot', '2'])
    t.fail('accepted')
  } catch (error) {
    t.type(error, ConfigError)
    const { problems: found, message } = error as ConfigError
    t.equal(found.length, 5)
    for (const problem of found) t.match(message, problem)
    t.match(message, /^Invalid configuration \(see pricing-service --help\):\n {2}/)
  }
})

t.test('explicit options win and are checked like the rest', async (t) => {
  t.equal(loadConfig({ PRICING_PORT: '1' }, ['--port=2'], { port: 3 }).port, 3)
  t.same(problems({}, [], { port: 1.5 }), ['option port=1.5: expected an integer from 0 to 65535'])
  t.same(problems({}, [], { prot: 1 } as unknown as Options), ['option prot: unknown setting'])
})

t.test("the README's configuration table is the one the settings table renders", async (t) => {
  const readmePath = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../README.md')
  const rows = readFileSync(readmePath, 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('| `PRICING_'))
  t.same(rows, readmeRows(), 'README.md rows, in order (paste the expected rows into the table)')
  t.equal(readmeRows().length, Object.keys(DEFAULTS).length)
  for (const row of readmeRows()) t.equal(row.split(' | ').length, 4, `no | inside a cell: ${row}`)
})

t.test(
  'secrets are refused on the command line, with the variable and the file to use instead; never echoed',
  async (t) => {
    const refusal = (flag: string, variable: string): string =>
      `--${flag}: a secret on the command line is shown to every local user (ps, /proc/PID/cmdline) and kept in the shell's history; set ${variable} or --${flag}-file FILE instead`
    const secret = 'c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LTEyMzQ='
    t.same(problems({}, ['--admin-token', secret]), [refusal('admin-token', 'PRICING_ADMIN_TOKEN')])
    t.same(problems({}, [`--secret-key=${secret}`]), [refusal('secret-key', 'PRICING_SECRET_KEY')])
    t.same(problems({}, ['--secret-key-previous', secret]), [
      refusal('secret-key-previous', 'PRICING_SECRET_KEY_PREVIOUS'),
    ])
    t.same(
      problems({}, ['--redis-url', 'redis://:hunter2@127.0.0.1:6379']),
      [refusal('redis-url', 'PRICING_REDIS_URL')],
      'a URL with a password',
    )
    t.same(problems({}, ['--smtp-url', 'smtp://mailer:hunter2@mail.test:587']), [
      refusal('smtp-url', 'PRICING_SMTP_URL'),
    ])
    t.equal(
      loadConfig({}, ['--redis-url', 'redis://127.0.0.1:6379']).redisUrl,
      'redis://127.0.0.1:6379',
      'a URL without a password is no secret',
    )
    t.equal(loadConfig({}, ['--smtp-url', 'smtp://127.0.0.1:2525']).smtpUrl, 'smtp://127.0.0.1:2525')
    t.equal(loadConfig({ PRICING_ADMIN_TOKEN: secret }, []).adminToken, secret, 'the variable is the way')
    const long = `redis://:hunter2@${'h'.repeat(2000)}:6379`
    const tooLong = problems({ PRICING_REDIS_URL: long })
    t.same(tooLong, ['PRICING_REDIS_URL=[hidden]: expected any text'], 'a bad secret value is not shown')
    t.notMatch(tooLong.join('\n'), /hunter2/)
  },
)

t.test('secrets from files: PRICING_*_FILE or --*-file, one final line break dropped, never both forms', async (t) => {
  const folder = mkdtempSync(path.join(tmpdir(), 'pricing-secrets-'))
  t.teardown(() => rmSync(folder, { recursive: true, force: true }))
  const file = (name: string, content: string | Buffer): string => {
    const where = path.join(folder, name)
    writeFileSync(where, content, { mode: 0o600 })
    return where
  }
  const token = file('admin-token', 'from-a-file-0123456789abcdef0123456789\n')
  t.equal(loadConfig({ PRICING_ADMIN_TOKEN_FILE: token }, []).adminToken, 'from-a-file-0123456789abcdef0123456789')
  t.equal(
    loadConfig({}, ['--admin-token-file', token]).adminToken,
    'from-a-file-0123456789abcdef0123456789',
    'the file flag: a path is no secret',
  )
  const key = '0'.repeat(64)
  t.equal(loadConfig({ PRICING_SECRET_KEY_FILE: file('key', `${key}\r\n`) }, []).secretKey, key, 'CRLF too')
  t.equal(
    loadConfig({ PRICING_SECRET_KEY_PREVIOUS_FILE: file('old-key', key) }, []).secretKeyPrevious,
    key,
    'no line break',
  )
  t.equal(
    loadConfig({ PRICING_REDIS_URL_FILE: file('redis', 'redis://:pw@127.0.0.1:6379\n') }, []).redisUrl,
    'redis://:pw@127.0.0.1:6379',
  )
  t.equal(
    loadConfig({ PRICING_SMTP_URL_FILE: file('smtp', 'smtp://u:pw@127.0.0.1:2525\n') }, []).smtpUrl,
    'smtp://u:pw@127.0.0.1:2525',
  )
  t.equal(
    loadConfig({ PRICING_ADMIN_TOKEN_FILE: file('spaces', ' a b 0123456789abcdef0123456789ab \n\n') }, []).adminToken,
    ' a b 0123456789abcdef0123456789ab \n',
    'only one line break is dropped',
  )
  t.same(problems({ PRICING_ADMIN_TOKEN_FILE: token, PRICING_ADMIN_TOKEN: 'x'.repeat(32) }), [
    'PRICING_ADMIN_TOKEN and PRICING_ADMIN_TOKEN_FILE: set one of them, not both',
  ])
  const missing = path.join(folder, 'missing')
  t.same(problems({ PRICING_ADMIN_TOKEN_FILE: missing }), [
    `PRICING_ADMIN_TOKEN_FILE=${missing}: cannot read it (ENOENT)`,
  ])
  const empty = file('empty', '\n')
  t.same(problems({}, ['--admin-token-file', empty]), [`PRICING_ADMIN_TOKEN_FILE=${empty}: the file is empty`])
  const binary = file('binary', Buffer.from([0x73, 0xff, 0xfe, 0x0a]))
  t.same(problems({ PRICING_SECRET_KEY_FILE: binary }), [`PRICING_SECRET_KEY_FILE=${binary}: not UTF-8 text`])
  const tooLong = file('too-long', `redis://:hunter2@${'h'.repeat(2000)}`)
  const found = problems({ PRICING_REDIS_URL_FILE: tooLong })
  t.same(
    found,
    [`PRICING_REDIS_URL_FILE=${tooLong} (its content): expected any text`],
    'checked like the variable, content not shown',
  )
})
