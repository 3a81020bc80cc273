/**
 * Configuration: one table of settings (default, allowed values, meaning), read from `PRICING_*`
 * environment variables and the same names as command-line flags (`--port 9000`, `--port=9000`,
 * `--data-dir ./x`). Precedence: defaults, then environment, then flags, then explicit options.
 * Strict: an unknown flag or `PRICING_*` variable, or a value outside what a setting allows, stops
 * the start with every problem listed, each naming the flag or variable, the value and what is
 * allowed. The table also renders `--help` and the README's configuration table. Validated once,
 * frozen.
 *
 * Secrets (the admin token, the keys at rest, URLs that carry a password) come from the
 * environment or from a file (`--admin-token-file`, `PRICING_ADMIN_TOKEN_FILE`), never from the
 * command line: every local user can read a process's arguments (`ps`, /proc/PID/cmdline) and
 * they stay in the shell's history, so such a flag stops the start (exit 2) with a message
 * pointing to the other two forms. No message ever shows a secret's value.
 * @module
 */
import { readFileSync } from 'node:fs'
import { Kind, Type, type Static, type TSchema } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { didYouMean, parseFlags } from './flags.js'
import { assert } from '../engine/assert.js'

interface Setting<S extends TSchema = TSchema> {
  readonly schema: S
  readonly default: Static<S>
  /** One line for `--help` and the README (no `|`: it is a Markdown table cell). */
  readonly meaning: string
}

function setting<S extends TSchema>(schema: S, defaultValue: Static<S>, meaning: string): Setting<S> {
  return { schema, default: defaultValue, meaning }
}

/** A setting naming the file a secret setting is read from, instead of its variable. */
function secretFile(variable: string): Setting<ReturnType<typeof Type.String>> {
  return setting(
    Type.String(),
    '',
    `file holding ${variable} (one final line break is dropped); instead of the variable, never both`,
  )
}

const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const

/**
 * The shortest admin token accepted: the token is the whole of the operator's credential, and a
 * short one is guessed (wrong ones are throttled per address, not across addresses).
 */
export const adminTokenLengthMin = 32

/** Every setting, in the order `--help` and the README list them. Units are part of the names. */
export const SETTINGS = {
  port: setting(Type.Integer({ minimum: 0, maximum: 65535 }), 8080, 'TCP port; 0 picks a free one'),
  host: setting(Type.String({ minLength: 1 }), '127.0.0.1', 'listen address'),
  dataDir: setting(Type.String({ minLength: 1 }), './data', 'LMDB environments: system/ and tenants/{slug}/'),
  domain: setting(Type.String(), '', 'also address tenants as {slug}.{domain} (Host header); empty: only /t/{slug}'),
  region: setting(Type.String({ minLength: 1 }), 'local', 'regions this node serves, comma-separated'),
  adminToken: setting(
    Type.String(),
    '',
    `bearer token of the operator admin API, at least ${adminTokenLengthMin} characters (openssl rand -hex 32); empty turns the admin API off (404); a secret: the variable or the file, not the flag`,
  ),
  adminTokenFile: secretFile('PRICING_ADMIN_TOKEN'),
  publicUrl: setting(
    Type.String(),
    '',
    'public root URL used as the token issuer and in printed addresses; empty derives http://HOST:PORT',
  ),
  demo: setting(Type.Boolean(), true, 'provision the demo tenant on first start (an empty data directory)'),
  logLevel: setting(
    Type.Union(logLevels.map((level) => Type.Literal(level))),
    'info',
    'pino log level of the JSON lines on stdout',
  ),
  metricsTenantsMax: setting(
    Type.Integer({ minimum: 0, maximum: 10_000 }),
    100,
    'tenants with their own label in pricing_tenant_requests_total (the first called since the start); the others count as tenant="_other", which bounds the series',
  ),
  accessLog: setting(
    Type.Boolean(),
    false,
    'access log: one JSON record per request on stdout (request id, method, route pattern, status, duration, tenant, bytes), whatever the log level',
  ),
  accessLogSample: setting(
    Type.Number({ minimum: 0, maximum: 1 }),
    0.1,
    'fraction (0 to 1) of successful requests the access log records, chosen at random; 4xx and 5xx are always recorded',
  ),
  fxFeedUrl: setting(
    Type.String(),
    'https://www.ecb.europa.eu/stats/eurofxref/eurofxref-daily.xml',
    'exchange-rate feed (ECB daily XML format); empty turns automatic fetching off',
  ),
  fxFetchDelayMs: setting(
    Type.Integer({ minimum: 0 }),
    1000,
    'milliseconds from start to the first exchange-rate fetch',
  ),
  fxFetchIntervalMs: setting(
    Type.Integer({ minimum: 1 }),
    86_400_000,
    'milliseconds between exchange-rate fetches (24 hours)',
  ),
  workers: setting(
    Type.Integer({ minimum: 0, maximum: 256 }),
    0,
    'worker threads for large price queries; 0 picks one per core',
  ),
  workerThresholdSkus: setting(
    Type.Integer({ minimum: 1 }),
    500,
    'price queries with at least this many SKUs run on a worker thread (npm run bench:threshold: the workers match the main thread from 250-1,000 SKUs on the bench machine)',
  ),
  answerCacheItems: setting(
    Type.Integer({ minimum: 0, maximum: 10_000_000 }),
    50_000,
    'price query items kept per thread and tenant in the answer cache (about 350 bytes each); 0 turns the cache off',
  ),
  answerCacheMinRepeatShare: setting(
    Type.Number({ minimum: 0, maximum: 1 }),
    0.8,
    'share of price queries repeating a recent one (same settings and SKUs, within what the cache holds; a moving average) from which the answer cache serves; below it by 0.1, or when repeats keep missing (writes), it steps aside and queries are computed as without it (a miss through the cache costs several plain computations); 0: it always serves',
  ),
  mallocTuning: setting(
    Type.Boolean(),
    true,
    "Linux, Node.js 22.15+: the server re-executes itself once at start with glibc's mmap threshold fixed at 128 KiB (GLIBC_TUNABLES), so that freed buffers go back to the system; false: as started",
  ),
  webhookAllowPrivate: setting(
    Type.Boolean(),
    false,
    'accept webhook receivers on loopback/private addresses (tests, on-premises); otherwise refused (SSRF protection)',
  ),
  webhookBatchMs: setting(
    Type.Integer({ minimum: 0, maximum: 60_000 }),
    500,
    "milliseconds a webhook's first pending event waits for others to share its POST",
  ),
  webhookTimeoutMs: setting(
    Type.Integer({ minimum: 1, maximum: 600_000 }),
    10_000,
    'milliseconds a receiver has for a complete answer',
  ),
  webhookRetryScale: setting(
    Type.Number({ exclusiveMinimum: 0, maximum: 1000 }),
    1,
    'multiplies the retry delays 1, 2, 4 … 256, 300 s (tests use 0.001 to 0.01)',
  ),
  smtpUrl: setting(
    Type.String(),
    '',
    'SMTP server for sign-in mails (e.g. smtp://127.0.0.1:2525); empty: each mail is written to <data>/outbox/ as an .eml file, its link logged with the demo on or at debug level; with a password in it, the variable or the file only',
  ),
  smtpUrlFile: secretFile('PRICING_SMTP_URL'),
  mailFrom: setting(
    Type.String({ minLength: 3 }),
    'pricing-service@localhost',
    'sender address of the mails the service sends',
  ),
  autoApprove: setting(Type.Boolean(), false, "approve a person's tenant request at once, without an operator"),
  redisUrl: setting(
    Type.String({ maxLength: 2000 }),
    '',
    'Redis of a cluster of nodes (redis://host:port): they share tenants, keys and people, each region has one writing home node, and one node fetches the FX feed for all; empty: one node on its own, no Redis; with a password in it, the variable or the file only',
  ),
  redisUrlFile: secretFile('PRICING_REDIS_URL'),
  nodeId: setting(
    Type.String({ maxLength: 200 }),
    '',
    "this node's name in the cluster; empty: <host name>-<process id>",
  ),
  nodeUrl: setting(
    Type.String({ maxLength: 2000 }),
    '',
    "this node's own address for the other nodes and for redirects to it (a region's writes go to its home node); empty derives http://HOST:PORT",
  ),
  leaseTtlMs: setting(
    Type.Integer({ minimum: 100, maximum: 600_000 }),
    10_000,
    'milliseconds a cluster lease (a region home, the FX fetcher, a node registration) lasts unrenewed: a dead holder is replaced within about 1.3 times this',
  ),
  shutdownTimeoutMs: setting(
    Type.Integer({ minimum: 0, maximum: 600_000 }),
    10_000,
    'milliseconds a SIGTERM or SIGINT waits for the requests in flight before the service closes anyway',
  ),
  bodyTimeoutMs: setting(
    Type.Integer({ minimum: 1, maximum: 600_000 }),
    30_000,
    'milliseconds a request body has to arrive in full once its headers are read; a slower upload is cut off (the connection closed)',
  ),
  tokenFailuresBurst: setting(
    Type.Integer({ minimum: 1, maximum: 1_000_000 }),
    10,
    'failed token requests allowed at once per client id and address pair and per client address before 429 (then PRICING_TOKEN_FAILURES_PER_MINUTE); also the wrong admin tokens allowed per address',
  ),
  tokenFailuresPerMinute: setting(
    Type.Integer({ minimum: 1, maximum: 1_000_000 }),
    30,
    'failed token requests (and wrong admin tokens) per minute per client id and address pair and per client address once the burst is spent',
  ),
  tokenFailuresKeysMax: setting(
    Type.Integer({ minimum: 1, maximum: 10_000_000 }),
    100_000,
    'pairs, addresses and client ids whose recent token requests are remembered (each table, about 100 bytes each); when full, refilled entries are forgotten first, so a lockout survives',
  ),
  secretKey: setting(
    Type.String(),
    '',
    'key that encrypts token-signing keys and webhook secrets at rest (AES-256-GCM): 32 bytes as 64 hex digits or base64 (openssl rand -base64 32), the same on every node of a cluster; empty: stored unencrypted, with a warning at start (docs/security.md); a secret: the variable or the file, not the flag',
  ),
  secretKeyFile: secretFile('PRICING_SECRET_KEY'),
  secretKeyPrevious: setting(
    Type.String(),
    '',
    'while changing PRICING_SECRET_KEY: the key before it; what it encrypted is encrypted again with the new key at start; empty otherwise; a secret: the variable or the file, not the flag',
  ),
  secretKeyPreviousFile: secretFile('PRICING_SECRET_KEY_PREVIOUS'),
  signingKeyRotationS: setting(
    Type.Integer({ minimum: 0, maximum: 31_622_400 }),
    0,
    'seconds between automatic rotations of the token-signing key (checked every minute; the old key stays in the JWKS until its last token has expired, 930 s); 0: only on demand (POST /admin/signing-keys/rotate)',
  ),
  signInMailsBurst: setting(
    Type.Integer({ minimum: 1, maximum: 1_000_000 }),
    3,
    'sign-in mails asked for at the portal per e-mail address at once (then PRICING_SIGN_IN_MAILS_PER_HOUR); per client address ten times this; past it no mail is sent, and the answer is the same',
  ),
  signInMailsPerHour: setting(
    Type.Integer({ minimum: 1, maximum: 1_000_000 }),
    12,
    'sign-in mails per hour per e-mail address once the burst is spent (per client address ten times this)',
  ),
  sessionLifetimeS: setting(
    Type.Integer({ minimum: 1, maximum: 30 * 86_400 }),
    43_200,
    "seconds a console session lasts from sign-in (the cookie's Max-Age too)",
  ),
  operatorEmails: setting(
    Type.String({ maxLength: 4000 }),
    '',
    'comma-separated e-mail addresses of the operators: signed in to the portal, they approve and reject tenant requests at /operator',
  ),
  backupIntervalS: setting(
    Type.Integer({ minimum: 0 }),
    600,
    "seconds between a tenant's automatic backups (the first at its first start); thinning runs hourly; 0 turns automatic backups and thinning off",
  ),
  retentionIntervalS: setting(
    Type.Integer({ minimum: 0 }),
    3600,
    'seconds between history-retention passes over the tenants with retention.enabled; 0 turns the automatic passes off (POST /admin/tenants/{slug}/retention still runs one)',
  ),
  backupDiskMaxBytes: setting(
    Type.Integer({ minimum: 0 }),
    10 * 1024 ** 3,
    "bytes one tenant's backups may take together (a backup past it is refused with 507); 0: only the free-disk check",
  ),
  storageReserveMb: setting(
    Type.Integer({ minimum: 0, maximum: 1_048_576 }),
    1024,
    "MiB kept free on the data directory's file system: below it writes answer 503 storage_full with Retry-After (reads go on, background writes wait) until space is back above it plus an eighth (at most 64 MiB more); 0 turns the guard off",
  ),
}

export type SettingKey = keyof typeof SETTINGS
type Key = SettingKey

/**
 * The settings that hold a secret: `always`, whatever the value; `password`, a URL when it carries
 * a password (`redis://:pw@host`). Each has a `…File` setting it can be read from instead.
 */
export const SECRETS: Readonly<Partial<Record<Key, 'always' | 'password'>>> = {
  adminToken: 'always',
  secretKey: 'always',
  secretKeyPrevious: 'always',
  smtpUrl: 'password',
  redisUrl: 'password',
}

/** A secret setting's file setting: `adminToken` → `adminTokenFile`. */
export function fileSettingOf(key: Key): Key {
  return `${key}File` as Key
}

/** Whether `text`, given for a secret setting, holds a secret (a URL without a password does not). */
export function holdsSecret(key: Key, text: string): boolean {
  if (SECRETS[key] === 'always') return text !== ''
  if (SECRETS[key] !== 'password') return false
  try {
    return new URL(text).password !== ''
  } catch {
    // Not a URL at all: it may still be one with a typo; treated as a secret, never shown.
    return text.includes('@')
  }
}

/** The value as a message may show it: a secret setting's never. */
function shown(key: Key, text: string): string {
  return SECRETS[key] === undefined ? text : '[hidden]'
}

/** The refusal of a secret on the command line, pointing to the variable and the file. */
export function commandLineSecretProblem(flag: string, variable: string, fileFlag: string): string {
  return `${flag}: a secret on the command line is shown to every local user (ps, /proc/PID/cmdline) and kept in the shell's history; set ${variable} or ${fileFlag} FILE instead`
}

const utf8 = new TextDecoder('utf-8', { fatal: true })

/**
 * A secret's value from a file: its text less one final line break (what `echo` or an editor
 * adds). Unreadable, empty or not UTF-8 text: a problem naming the file, never its content.
 */
export function readSecretFile(file: string, label: string, problems: string[]): string | undefined {
  let bytes: Buffer
  try {
    bytes = readFileSync(file)
  } catch (error) {
    problems.push(
      `${label}=${file}: cannot read it (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
    )
    return undefined
  }
  let value: string
  try {
    value = utf8.decode(bytes).replace(/\r?\n$/, '')
  } catch {
    problems.push(`${label}=${file}: not UTF-8 text`)
    return undefined
  }
  if (value !== '') return value
  problems.push(`${label}=${file}: the file is empty`)
  return undefined
}
type Schemas = { [K in Key]: (typeof SETTINGS)[K]['schema'] }
/** The settings' names, in the table's order. */
export const settingKeys = Object.keys(SETTINGS) as readonly Key[]
const keys = settingKeys

const ConfigSchema = Type.Object(Object.fromEntries(keys.map((key) => [key, SETTINGS[key].schema])) as Schemas, {
  additionalProperties: false,
})
export type Config = Readonly<Static<typeof ConfigSchema>>
export type Options = Partial<Config>
export const DEFAULTS: Config = Object.freeze(
  Object.fromEntries(keys.map((key) => [key, SETTINGS[key].default])) as Config,
)

const checkConfig = TypeCompiler.Compile(ConfigSchema)
const checkSetting = new Map(keys.map((key) => [key, TypeCompiler.Compile<TSchema>(SETTINGS[key].schema)]))

/**
 * `PRICING_*` variables that are not server settings, read by the tooling around the server (which
 * passes its whole environment on to the servers it starts), so they are not reported as unknown.
 */
export const TOOLING_VARIABLES: readonly string[] = [
  'PRICING_BUILD_DIR', // test/run.mjs, bench: the folder the TypeScript is compiled to
  'PRICING_TEST_NODE_VERSIONS', // test/run.mjs: Node.js versions to run the suites on
  'PRICING_TEST_COVERAGE', // test/run.mjs: collect coverage (true/false) whatever the run
  'PRICING_TEST_JOBS', // test/run.mjs: suites run at once
  'PRICING_VERIFY', // engine/assert.ts: turns on the O(n) verification assertions
]

export function envName(key: string): string {
  return `PRICING_${key.replace(/[A-Z]/g, (letter) => `_${letter}`).toUpperCase()}`
}

/** The flag without its dashes: `dataDir` → `data-dir`. */
export function flagName(key: string): string {
  return key.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`)
}

function isBoolean(key: Key): boolean {
  return SETTINGS[key].schema[Kind] === 'Boolean'
}

/** What a setting accepts, in words: `an integer from 0 to 65535`, `one of fatal, error, …`. */
export function allowedValues(key: Key): string {
  const schema = SETTINGS[key].schema as TSchema & Record<string, unknown>
  switch (schema[Kind]) {
    case 'Boolean':
      return 'true or false (also 1 or 0)'
    case 'Union':
      return `one of ${(schema['anyOf'] as { const: string }[]).map((member) => member.const).join(', ')}`
    case 'String':
      return schema['minLength'] === 1 ? 'a non-empty text' : 'any text'
    default: {
      const noun = schema[Kind] === 'Integer' ? 'an integer' : 'a number'
      const { minimum, maximum, exclusiveMinimum } = schema as {
        minimum?: number
        maximum?: number
        exclusiveMinimum?: number
      }
      if (minimum !== undefined && maximum !== undefined) return `${noun} from ${minimum} to ${maximum}`
      const bounds = [
        minimum === undefined ? '' : `at least ${minimum}`,
        exclusiveMinimum === undefined ? '' : `greater than ${exclusiveMinimum}`,
        maximum === undefined ? '' : `at most ${maximum}`,
      ].filter((bound) => bound !== '')
      if (bounds.length === 0) return noun
      return `${noun} ${bounds[0]!.startsWith('at') ? 'of ' : ''}${bounds.join(' and ')}`
    }
  }
}

const numberPattern = /^[+-]?(\d+(\.\d*)?|\.\d+)(e[+-]?\d+)?$/i

/** The value a text stands for, or undefined when it is not even of the right type. */
function parseText(key: Key, text: string): unknown {
  const kind = SETTINGS[key].schema[Kind]
  if (kind === 'Boolean')
    return text === 'true' || text === '1' ? true : text === 'false' || text === '0' ? false : undefined
  if (kind === 'Integer' || kind === 'Number') return numberPattern.test(text) ? Number(text) : undefined
  return text
}

export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(
      `Invalid configuration (see pricing-service --help):\n${problems.map((problem) => `  ${problem}`).join('\n')}`,
    )
    this.name = 'ConfigError'
  }
}

/** The flags of every setting, for the parser. */
export const settingFlags = keys.map((key) => ({ name: flagName(key), boolean: isBoolean(key) }))

/** Problems with `PRICING_*` variables that name no setting (their values are not shown: secrets). */
export function unknownVariables(env: NodeJS.ProcessEnv): string[] {
  const known = new Set([...keys.map(envName), ...TOOLING_VARIABLES])
  const suffixes = keys.map((key) => envName(key).slice('PRICING_'.length))
  return Object.keys(env)
    .filter((name) => name.startsWith('PRICING_') && !known.has(name))
    .map((name) => `${name}: unknown variable${didYouMean(name.slice('PRICING_'.length), suffixes, 'PRICING_')}`)
}

/** Builds the frozen config from defaults, environment, flags and explicit options (in that order). */
export function loadConfig(
  env: NodeJS.ProcessEnv = process.env,
  argv: readonly string[] = [],
  options: Options = {},
): Config {
  const flags = parseFlags(argv, settingFlags)
  const problems = [
    ...unknownVariables(env),
    ...flags.problems,
    ...flags.positionals.map((text) => `${text}: unexpected argument`),
  ]
  const merged: Record<string, unknown> = { ...DEFAULTS }
  const take = (key: Key, value: unknown, source: string): void => {
    if (value !== undefined && checkSetting.get(key)!.Check(value)) merged[key] = value
    else problems.push(`${source}: expected ${allowedValues(key)}`)
  }
  for (const key of keys) {
    const fromEnv = env[envName(key)]
    if (fromEnv !== undefined) take(key, parseText(key, fromEnv), `${envName(key)}=${shown(key, fromEnv)}`)
    const fromFlag = flags.values.get(flagName(key))
    if (fromFlag !== undefined && holdsSecret(key, fromFlag)) {
      problems.push(commandLineSecretProblem(`--${flagName(key)}`, envName(key), `--${flagName(fileSettingOf(key))}`))
    } else if (fromFlag !== undefined) take(key, parseText(key, fromFlag), `--${flagName(key)}=${shown(key, fromFlag)}`)
    if (options[key] !== undefined) take(key, options[key], `option ${key}=${shown(key, String(options[key]))}`)
  }
  for (const key of Object.keys(options)) if (!(key in SETTINGS)) problems.push(`option ${key}: unknown setting`)
  for (const key of Object.keys(SECRETS) as Key[]) {
    const file = merged[fileSettingOf(key)] as string
    if (file === '') continue
    const fileVariable = envName(fileSettingOf(key))
    if (merged[key] !== '') problems.push(`${envName(key)} and ${fileVariable}: set one of them, not both`)
    else {
      const value = readSecretFile(file, fileVariable, problems)
      if (value !== undefined) take(key, value, `${fileVariable}=${file} (its content)`)
    }
  }
  const adminToken = merged['adminToken'] as string
  if (adminToken !== '' && adminToken.length < adminTokenLengthMin) {
    // The value is not repeated: it is a secret, if a weak one.
    const expected = `expected empty (admin API off) or at least ${adminTokenLengthMin} (openssl rand -hex 32)`
    problems.push(`${envName('adminToken')} (or its file): ${adminToken.length} characters; ${expected}`)
  }
  if (problems.length > 0) throw new ConfigError(problems)
  if (!checkConfig.Check(merged)) {
    // Every setting passed its own check, so this is a bug here; values are left out (secrets).
    const paths = [...checkConfig.Errors(merged)].map((error) => error.path)
    assert(false, `config: every setting passed its check, yet the whole fails at ${paths.join(', ')}`)
  }
  return Object.freeze(merged) as Config
}
