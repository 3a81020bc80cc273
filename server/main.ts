/**
 * Process entry: config → storage → tokens → app → listen → load tenants (readiness turns 200) →
 * first-start demo tenant. The only file that reads the environment, opens storage and listens.
 * @module
 */
import type { AppDeps } from '../http/contracts.js'
import path from 'node:path'
import { existsSync, mkdirSync } from 'node:fs'
import { createServer } from 'node:net'
import { SystemStore } from '../storage/system-store.js'
import { PricingApp } from '../http/app.js'
import { settleInterruptedRestores } from '../tenant/backups/restore.js'
import { BackupScheduler } from '../tenant/backups/scheduler.js'
import { EffectivePriceEvents } from '../tenant/effective-prices/scheduler.js'
import { RetentionScheduler } from '../tenant/retention/scheduler.js'
import { createMailer } from '../platform/mailer.js'
import { SignIn } from '../accounts/people/sign-in.js'
import { TokenService } from '../accounts/auth.js'
import { loadConfig, type Config } from '../platform/config.js'
import { provisionDemoTenant } from './demo/first-start.js'
import { FxFeedService, setActiveFxFeed } from '../tenant/fx-feed.js'
import { DataDirLock, DataDirLockedError } from '../platform/data-dir/lock.js'
import { restrictNewFiles, secureDataDir } from '../platform/data-dir/permissions.js'
import type { Logger } from 'pino'
import { createLogger } from '../platform/log.js'
import { Metrics } from '../platform/metrics.js'
import { packaged } from '../platform/packaged.js'
import { registerServiceCounts } from '../tenant/service-metrics.js'
import { recordKeyUse } from '../accounts/provision.js'
import { Periodic } from '../platform/periodic.js'
import { announceSecretsAtRest } from '../platform/secrets/announce.js'
import { SecretSealer } from '../platform/secrets/sealer.js'
import { localBuckets } from '../tenant/rate-limits.js'
import { StorageGuard } from '../tenant/storage-guard.js'
import { TenantRegistry } from '../tenant/runtime.js'
import { buildInfo } from '../platform/version.js'
import { WebhookEnvironment } from '../tenant/webhooks/environment.js'
import { setAnswerCacheItemsMax } from '../workers/execute.js'
import { QueryPool } from '../workers/pool.js'

/** How often in-memory last-used times of API keys are written to the system store. */
const keyUsageFlushMs = 30_000
/** How often signing keys whose tokens have expired are dropped, and automatic rotation is due. */
const signingKeyCheckMs = 60_000

export interface RunningServer {
  readonly port: number
  readonly app: PricingApp
  close(): Promise<void>
}

/**
 * uWebSockets.js's LIBUS_LISTEN_EXCLUSIVE_PORT (ListenOptions in its typings, an enum that does not
 * exist at run time): without it uWS listens with SO_REUSEPORT, and a second server on the same
 * port started, shared the connections and answered from another memory.
 */
const listenExclusivePort = 1

export async function start(config: Config): Promise<RunningServer> {
  const logger = createLogger(config.logLevel)
  const dataDir = path.resolve(config.dataDir)
  const lock = claimDataDir(dataDir, logger)
  try {
    return await startLocked(config, logger, dataDir, lock)
  } catch (error) {
    lock.release()
    throw error
  }
}

/**
 * The data directory, before anything in it opens: owner-only from here on, taken by this process
 * alone (platform/data-dir/lock.ts), and narrowed where an older version left it open to others
 * (platform/data-dir/permissions.ts).
 */
function claimDataDir(dataDir: string, logger: Logger): DataDirLock {
  restrictNewFiles()
  mkdirSync(dataDir, { recursive: true, mode: 0o700 })
  let lock: DataDirLock
  try {
    lock = DataDirLock.acquire(dataDir, 'pricing-service start', (stale) => {
      logger.warn(
        { dataDir, holder: stale.holder, reason: stale.reason },
        'took over the lock of a server that is gone',
      )
    })
  } catch (error) {
    if (!(error instanceof DataDirLockedError)) throw error
    const url = error.holder.url ?? 'http://<its host>:<its port>'
    throw new Error(
      `${error.message}. A data directory serves one server at a time: stop that one first, or give this one another ` +
        `--data-dir. To manage the running server, use the command line with --url ${url} (and its admin token).`,
    )
  }
  try {
    const fixed = secureDataDir(dataDir)
    if (fixed.count > 0) {
      const message = 'data directory was accessible to other users: narrowed to its owner'
      logger.warn({ dataDir, count: fixed.count, paths: fixed.paths }, message)
    }
  } catch (error) {
    lock.release()
    throw error
  }
  return lock
}

/** What the process opens before it listens; `close` shuts them in the reverse order. */
interface Services {
  readonly now: () => number
  readonly firstStart: boolean
  readonly system: SystemStore
  readonly queryPool: QueryPool
  readonly metrics: Metrics
  readonly storage: StorageGuard
  readonly cluster: ClusterNode | null
  readonly tenants: TenantRegistry
  readonly mailer: ReturnType<typeof createMailer>
  readonly deps: AppDeps
}

/** What runs beside the requests once the tenants are loaded: schedulers, key upkeep, the FX feed. */
interface Background {
  readonly backups: BackupScheduler
  readonly retention: RetentionScheduler
  /** Effective-price events at their moments (tenant/effective-prices/). */
  readonly effectivePrices: EffectivePriceEvents
  readonly signingKeys: Periodic
  readonly fxFeed: FxFeedService
  /** Writes the API keys' last-used times kept in memory (also at close). */
  readonly flushUsage: () => Promise<void>
  readonly usageTimer: NodeJS.Timeout
}

type ClusterNode = Awaited<ReturnType<typeof import('../cluster/node.js').joinCluster>>

/** Closers of what a start has opened so far, in the order it opened them. */
type Opened = (() => unknown)[]

/**
 * A refused start (a stored key that does not open, an address in use, a tenant that does not
 * load) closes what it had opened, last opened first, before the process exits with code 1: the
 * query pool's threads are still starting then, and a thread ended by the exit inside its start
 * made V8 print 'Failing script:' on stdout, or the process end by a signal (workers/pool.ts close).
 */
async function startLocked(config: Config, logger: Logger, dataDir: string, lock: DataDirLock): Promise<RunningServer> {
  const opened: Opened = []
  try {
    return await startOpening(config, logger, dataDir, lock, opened)
  } catch (error) {
    for (const close of opened.reverse()) {
      try {
        await close()
      } catch (closeError) {
        logger.warn({ err: closeError }, 'closing after a refused start failed')
      }
    }
    throw error
  }
}

/** The start proper: services, keys, listen, the tenants' load; notes each thing it opens in `opened`. */
async function startOpening(
  config: Config,
  logger: Logger,
  dataDir: string,
  lock: DataDirLock,
  opened: Opened,
): Promise<RunningServer> {
  const services = await openServices(config, logger, dataDir, opened)
  const { deps, tenants, cluster, system, now } = services
  await deps.tokens.init(deps.now())
  const app = new PricingApp(deps)
  const { port, socket } = await listen(app, config)
  opened.push(() => app.uws.close())
  const publicUrl = publicRoot(config, port)
  Object.assign(deps, { publicUrl })
  // The build first (platform/version.ts); tests and tools find port, url and dataDir in this order.
  const build = buildInfo()
  logger.info(
    { version: build.version, commit: build.commit, node: build.node, port, url: publicUrl, dataDir },
    'listening',
  )
  // Named in the messages of a second server or a CLI write on this directory (their --url).
  lock.noteUrl(listenedRoot(config, port))
  // The malloc tuning in effect (platform/malloc-tuning.ts), null when none.
  logger.info({ glibcTunables: process.env['GLIBC_TUNABLES'] ?? null }, 'malloc tuning')
  // Cluster mode: a replica this node does not hold yet starts from a copy of the home's data.
  await cluster?.bootstrap(dataDir)
  await tenants.loadAll(now(), () => settleInterruptedRestores(system, tenants, now))
  logger.info({ tenants: tenants.all().length }, 'ready')
  // A cluster starts without the demo tenant: it is for one node on a laptop (docs/cluster.md).
  if (services.firstStart && config.demo && cluster === null && system.listTenants().length === 0) {
    // The key goes to <data>/demo-credentials.json (mode 0600), never to stdout: see ./demo/credentials.ts.
    await provisionDemoTenant(deps, dataDir, now())
  }
  const background = startBackground({ services, app, config, logger, port })
  let closed = false
  return {
    port,
    app,
    async close() {
      if (closed) return
      closed = true
      await shutDown({ services, background, app, socket, config, logger, lock })
    },
  }
}

/**
 * Opens what the requests need, in order: secrets at rest (a malformed key stops the start here,
 * before anything opens), the system store, the query pool, metrics, webhooks, the storage guard,
 * the cluster (cluster mode only), the tenant registry (not loaded yet) and the mailer.
 */
async function openServices(config: Config, logger: Logger, dataDir: string, opened: Opened): Promise<Services> {
  // The process's one clock: every service above storage reads the time of day through it (tests
  // of a service pass their own); durations are measured with performance.now.
  const now: () => number = Date.now
  const sealer = SecretSealer.fromSettings(config.secretKey, config.secretKeyPrevious)
  announceSecretsAtRest(logger, sealer)
  const firstStart = !existsSync(path.join(dataDir, 'system'))
  const system = new SystemStore(path.join(dataDir, 'system'))
  opened.push(() => system.close())
  setAnswerCacheItemsMax(config.answerCacheItems, config.answerCacheMinRepeatShare)
  const queryPool = new QueryPool(
    config.workers,
    config.answerCacheItems,
    config.answerCacheMinRepeatShare,
    packaged()?.file('price-task.cjs') ?? null,
  )
  opened.push(() => queryPool.close())
  const metrics = new Metrics(config.metricsTenantsMax)
  registerServiceCounts(metrics)
  const webhookEnvironment = new WebhookEnvironment(
    {
      batchMs: config.webhookBatchMs,
      timeoutMs: config.webhookTimeoutMs,
      retryScale: config.webhookRetryScale,
      allowPrivate: config.webhookAllowPrivate,
    },
    metrics,
    now,
    sealer,
  )
  // The data directory's free space (tenant/storage-guard.ts): sampled before the first request,
  // then once a second; below the reserve, writes answer 503 and background writers wait.
  const storage = new StorageGuard(dataDir, config.storageReserveMb * 1024 * 1024, logger, now)
  storage.start()
  opened.push(() => storage.stop())
  metrics.registerStorage(() => storage.state)
  // Cluster mode only: without PRICING_REDIS_URL the Redis client is never even loaded. The shared
  // directory is brought in step first, so that a joining node adopts the cluster's tenants and keys.
  const clusterModule = config.redisUrl === '' ? null : await import('../cluster/node.js')
  const cluster = clusterModule === null ? null : await clusterModule.joinCluster({ config, system, logger, now })
  opened.push(() => cluster?.stop())
  const tenants = new TenantRegistry({
    system,
    dataDir,
    logger,
    now,
    queryPool,
    workerThresholdSkus: config.workerThresholdSkus,
    webhookEnvironment,
    backupDiskMaxBytes: config.backupDiskMaxBytes,
    // Cluster mode shares the rate-limit buckets through Redis (cluster/rate-limits.ts).
    bucketFactory: cluster?.bucketFactory ?? localBuckets,
    storage,
    onDurable: (bytes) => storage.noteWritten(bytes),
  })
  opened.push(() => tenants.close())
  // Sign-in links in the info log only in development (the demo on); at debug level otherwise.
  const mailer = createMailer({
    smtpUrl: config.smtpUrl,
    from: config.mailFrom,
    outboxDir: path.join(dataDir, 'outbox'),
    logger,
    logLinks: config.demo,
  })
  opened.push(() => mailer.close())
  const deps: AppDeps = {
    config,
    system,
    // Links point at the public URL, final only once listening: read when used.
    signIn: new SignIn(system, mailer, () => deps.publicUrl, config.sessionLifetimeS * 1000, {
      burst: config.signInMailsBurst,
      perHour: config.signInMailsPerHour,
    }),
    mailer,
    tenants,
    // The issuer is the public URL, final only once listening (port 0 picks the port): read when used.
    // A stored private key that does not open with PRICING_SECRET_KEY stops the start at init().
    tokens: new TokenService(system, () => deps.publicUrl, { sealer, logger }),
    logger,
    metrics,
    storage,
    publicUrl: publicRoot(config, config.port),
    now,
  }
  return { now, firstStart, system, queryPool, metrics, storage, cluster, tenants, mailer, deps }
}

/** Listens on the configured address (exclusively); a refusal names its reason. */
function listen(
  app: PricingApp,
  config: Config,
): Promise<{ port: number; socket: import('uWebSockets.js').us_listen_socket }> {
  return new Promise((resolve, reject) => {
    const uws = app.uws as unknown as ExclusiveListen
    uws.listen(config.host, config.port, listenExclusivePort, (socket) => {
      if (socket === false) {
        void listenFailure(config.host, config.port).then((reason) => {
          reject(new Error(`Cannot listen on ${config.host}:${config.port}: ${reason}`))
        })
      } else {
        resolve({ port: app.native.us_socket_local_port(socket), socket })
      }
    })
  })
}

/** Starts the work beside the requests, once the tenants are loaded. */
function startBackground(options: {
  services: Services
  app: PricingApp
  config: Config
  logger: Logger
  port: number
}): Background {
  const { services, app, config, logger, port } = options
  const { tenants, deps, cluster, storage, system, metrics, now } = services
  const backups = new BackupScheduler(tenants, config.backupIntervalS * 1000, logger, now)
  if (config.backupIntervalS > 0) backups.start()
  const retention = new RetentionScheduler(tenants, config.retentionIntervalS * 1000, logger, now)
  if (config.retentionIntervalS > 0) retention.start()
  const effectivePrices = new EffectivePriceEvents(tenants, logger, now)
  effectivePrices.start()
  // Signing keys (accounts/signing-keys.ts): older keys dropped once their tokens have expired, and
  // a rotation every PRICING_SIGNING_KEY_ROTATION_S (0: on demand only).
  const signingKeys = new Periodic(
    () =>
      deps.tokens.keys
        .maintain(now(), config.signingKeyRotationS * 1000)
        .catch((error: unknown) => logger.error({ err: error }, 'signing key upkeep failed')),
    signingKeyCheckMs,
  )
  signingKeys.start(signingKeyCheckMs)
  if (cluster !== null) {
    cluster.serve({
      tenants,
      tokens: deps.tokens,
      nodeUrl: config.nodeUrl !== '' ? config.nodeUrl.replace(/\/+$/, '') : listenedRoot(config, port),
      now: deps.now,
    })
    Object.assign(deps, {
      placement: cluster.placement,
      clusterStatus: () => cluster.status(),
      clusterSecret: () => cluster.secret,
    })
    metrics.registerCluster(() => cluster.status())
  }
  // Rates are fetched once tenants are loaded, so every tenant takes part in the first fetch.
  const fxFeed = new FxFeedService({ ...deps, cluster: cluster?.fx ?? null })
  setActiveFxFeed(fxFeed)
  fxFeed.start()
  const flushUsage = async (): Promise<void> => {
    // Storage nearly full: the last-used times wait in memory for room (a stop meanwhile loses
    // them: they inform, nothing depends on them).
    if (storage.nearlyFull) return
    const used = [...app.keyUsage]
    app.keyUsage.clear()
    for (const [clientId, usedMs] of used) await recordKeyUse(system, clientId, usedMs)
  }
  const usageTimer = setInterval(() => void flushUsage(), keyUsageFlushMs)
  usageTimer.unref()
  return { backups, retention, effectivePrices, signingKeys, fxFeed, flushUsage, usageTimer }
}

/**
 * Stops accepting, lets the requests in flight finish (bounded), drops idle keep-alive connections,
 * then stops the background work and closes what `openServices` opened, the data directory's lock last.
 */
async function shutDown(options: {
  services: Services
  background: Background
  app: PricingApp
  socket: import('uWebSockets.js').us_listen_socket
  config: Config
  logger: Logger
  lock: DataDirLock
}): Promise<void> {
  const { services, background, app, socket, config, logger, lock } = options
  clearInterval(background.usageTimer)
  app.native.us_listen_socket_close(socket)
  app.traffic.closing = true
  logger.info({ pending: app.traffic.pending }, 'shutting down: no new connections, waiting for the requests in flight')
  const drained = await settled(() => app.traffic.pending === 0, config.shutdownTimeoutMs)
  if (!drained)
    logger.warn(
      { pending: app.traffic.pending, timeoutMs: config.shutdownTimeoutMs },
      'closing with requests still in flight',
    )
  app.uws.close()
  await background.backups.stop()
  await background.retention.stop()
  await background.effectivePrices.stop()
  await background.signingKeys.stop()
  await background.fxFeed.stop()
  setActiveFxFeed(null)
  await services.cluster?.stop()
  await background.flushUsage()
  await services.queryPool.close()
  await services.tenants.close()
  await services.system.close()
  services.mailer.close()
  services.storage.stop()
  app.accessLog.flush()
  lock.release()
  logger.info('closed')
}

/** uWS's listen with options, which its typings declare only without a host. */
interface ExclusiveListen {
  listen(
    host: string,
    port: number,
    options: number,
    cb: (socket: import('uWebSockets.js').us_listen_socket | false) => void,
  ): unknown
}

/**
 * uWS answers a failed listen with `false` and no reason; Node's own listen on the same address
 * names it (EADDRINUSE, EACCES, EADDRNOTAVAIL), so the operator reads "address in use".
 */
function listenFailure(host: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const probe = createServer()
    probe.once('error', (error: NodeJS.ErrnoException) => {
      const reasons: Record<string, string> = {
        EADDRINUSE: 'address in use (another process listens on this port)',
        EACCES: 'permission denied (a port below 1024 needs privileges)',
        EADDRNOTAVAIL: 'address not available on this machine',
      }
      resolve(reasons[error.code ?? ''] ?? error.message)
    })
    probe.listen({ host, port, exclusive: true }, () => {
      probe.close(() => resolve('uWebSockets.js refused it (the port is free now)'))
    })
  })
}

/** Waits until `done()` holds (checked every 10 ms) or `timeoutMs` passes; answers whether it held. */
async function settled(done: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs
  while (!done()) {
    if (Date.now() >= deadline) return false
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  return true
}

/**
 * The public root URL without a trailing slash: the token issuer (`iss`), the metadata's `issuer`
 * and the base of every advertised address. Unset, it is the address listened on.
 */
function publicRoot(config: Config, port: number): string {
  if (config.publicUrl !== '') return config.publicUrl.replace(/\/+$/, '')
  return listenedRoot(config, port)
}

/** The address listened on, as a URL. */
function listenedRoot(config: Config, port: number): string {
  const host = config.host.includes(':') ? `[${config.host}]` : config.host
  return `http://${host}:${port}`
}

export async function main(argv: readonly string[]): Promise<void> {
  let config: Config
  try {
    config = loadConfig(process.env, argv)
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n`)
    process.exit(2)
  }
  // A stop asked during the start (a service manager's or a test's SIGTERM right after 'listening',
  // before the tenants are loaded) shuts down as any stop once the start is over: without a handler
  // yet, the signal ended the process mid-start, by the signal and without its 'closed' line.
  let server: RunningServer | null = null
  let stopAsked = false
  const stop = (): void => {
    stopAsked = true
    if (server !== null) void server.close().then(() => process.exit(0))
  }
  process.once('SIGTERM', stop)
  process.once('SIGINT', stop)
  try {
    server = await start(config)
  } catch (error) {
    process.stderr.write(`pricing-service failed to start: ${(error as Error).message}\n`)
    process.exit(1)
  }
  if (stopAsked) stop()
}
