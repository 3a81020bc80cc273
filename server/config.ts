/**
 * Configuration: `PRICING_*` environment variables and the same names as command-line flags
 * (`--port 9000`, `--data-dir ./x`), over one defaults object. Validated once, deep-frozen.
 * @module
 */
import { Type, type Static } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'

export const DEFAULTS = {
  /** TCP port; 0 picks a free one (tests). */
  port: 8080,
  host: '127.0.0.1',
  dataDir: './data',
  /** Tenants are also addressed as `{slug}.{domain}` when set. */
  domain: '',
  /** Regions this node serves, comma-separated. */
  region: 'local',
  /** Bearer token of the operator admin API; empty turns the admin API off (404). */
  adminToken: '',
  smtpUrl: '',
  autoApprove: false,
  fxFeedUrl: 'https://www.ecb.europa.eu/stats/eurofxref/eurofxref-daily.xml',
  /** Milliseconds from start to the first automatic FX fetch (spec: about 1 s). */
  fxFetchDelayMs: 1000,
  /** Milliseconds between automatic FX fetches (spec: 24 hours; tests shorten it). */
  fxFetchIntervalMs: 86_400_000,
  /** Seconds between automatic backups. */
  backupIntervalS: 600,
  /** Worker threads for large price queries; 0 picks from the core count. */
  workers: 0,
  /** Price queries with at least this many SKUs run on a worker thread (measured: bench/README.md). */
  workerThresholdSkus: 500,
  logLevel: 'info',
  /** Provision the demo tenant on first start (an empty data directory). */
  demo: true,
  /** Public root URL used as the token issuer and printed addresses; empty derives it. */
  publicUrl: '',
  /** Accept webhook URLs on loopback/private addresses (tests, on-premises receivers). */
  webhookAllowPrivate: false,
  /** Milliseconds a webhook's first pending event waits for others to share its POST (spec: about 500). */
  webhookBatchMs: 500,
  /** Milliseconds a receiver has for a complete answer (spec: 10 s). */
  webhookTimeoutMs: 10_000,
  /** Multiplies the retry delays 1, 2, 4 ... 300 s (tests: 0.001-0.01). */
  webhookRetryScale: 1,
  /** Access log: one JSON record per request (method, route pattern, status, duration, tenant, bytes). */
  accessLog: false,
  /** Fraction of successful requests the access log records (0..1); 4xx and 5xx are always recorded. */
  accessLogSample: 1,
}

const ConfigSchema = Type.Object({
  port: Type.Integer({ minimum: 0, maximum: 65535 }),
  host: Type.String({ minLength: 1 }),
  dataDir: Type.String({ minLength: 1 }),
  domain: Type.String(),
  region: Type.String({ minLength: 1 }),
  adminToken: Type.String(),
  smtpUrl: Type.String(),
  autoApprove: Type.Boolean(),
  fxFeedUrl: Type.String(),
  fxFetchDelayMs: Type.Integer({ minimum: 0 }),
  fxFetchIntervalMs: Type.Integer({ minimum: 1 }),
  backupIntervalS: Type.Integer({ minimum: 1 }),
  workers: Type.Integer({ minimum: 0, maximum: 256 }),
  workerThresholdSkus: Type.Integer({ minimum: 1 }),
  logLevel: Type.Union(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((level) => Type.Literal(level))),
  demo: Type.Boolean(),
  publicUrl: Type.String(),
  webhookAllowPrivate: Type.Boolean(),
  webhookBatchMs: Type.Integer({ minimum: 0, maximum: 60_000 }),
  webhookTimeoutMs: Type.Integer({ minimum: 1, maximum: 600_000 }),
  webhookRetryScale: Type.Number({ exclusiveMinimum: 0, maximum: 1000 }),
  accessLog: Type.Boolean(),
  accessLogSample: Type.Number({ minimum: 0, maximum: 1 }),
})
export type Config = Readonly<Static<typeof ConfigSchema>>
export type Options = Partial<Config>
const checkConfig = TypeCompiler.Compile(ConfigSchema)

function envName(key: string): string {
  return `PRICING_${key.replace(/[A-Z]/g, (letter) => `_${letter}`).toUpperCase()}`
}

function flagName(key: string): string {
  return `--${key.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`)}`
}

function coerce(key: keyof typeof DEFAULTS, text: string): unknown {
  const fallback = DEFAULTS[key]
  if (typeof fallback === 'number') return text.trim() === '' ? Number.NaN : Number(text)
  if (typeof fallback === 'boolean') return text === 'true' || text === '1' ? true : text === 'false' || text === '0' ? false : text
  return text
}

/** Builds the frozen config from defaults, environment, flags and explicit options (in that order). */
export function loadConfig(
  env: NodeJS.ProcessEnv = process.env,
  argv: readonly string[] = [],
  options: Options = {},
): Config {
  const merged: Record<string, unknown> = { ...DEFAULTS }
  for (const key of Object.keys(DEFAULTS) as (keyof typeof DEFAULTS)[]) {
    const fromEnv = env[envName(key)]
    if (fromEnv !== undefined) merged[key] = coerce(key, fromEnv)
    const flag = flagName(key)
    const index = argv.indexOf(flag)
    if (index >= 0 && index + 1 < argv.length) merged[key] = coerce(key, argv[index + 1]!)
  }
  Object.assign(merged, options)
  if (!checkConfig.Check(merged)) {
    const problems = [...checkConfig.Errors(merged)].map((error) => `${error.path.slice(1)}: ${error.message}`)
    throw new Error(`Invalid configuration: ${problems.join('; ')}`)
  }
  return Object.freeze(merged) as Config
}
