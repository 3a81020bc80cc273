/**
 * The euro reference-rate feed (ECB XML, `PRICING_FX_FEED_URL`): parsing, fetching with a time-out,
 * applying a feed to a tenant, and the automatic fetch. The node fetches once per interval (first
 * about `fxFetchDelayMs` after start, then every `fxFetchIntervalMs`, not at a time of day) and
 * applies the result to every tenant whose `fx.rate.auto.update` is on then. The latest fetched
 * feed is kept in the system store, so a tenant created later starts with it, also after a restart.
 * A failed fetch is logged and tried again at the next interval; it never stores anything. A
 * cluster's fetcher, which looks every few seconds, backs off instead: after each failure it waits
 * twice as long as after the one before (from its look period up to the interval), and logs each
 * failure once with that wait, so an unreachable feed costs a few lines, not one every look.
 * Non-goals: the CSV and zip variants of the feed, and electing one fetching node among several.
 * @module
 */
import type { Logger } from 'pino'
import { assert } from '../engine/assert.js'
import { compareCodes, type Change } from '../engine/catalog.js'
import { canonicalFxRate, fxBaseCurrency, planFxRates, type FxChange, type FxEntry } from '../engine/fx.js'
import { settingEnabled } from '../engine/settings.js'
import { instantMax, instantMin, parseInstant } from '../engine/time.js'
import { changeContent, type EntryContent } from '../storage/log-entry.js'
import type { FxFeedRecord, SystemStore } from '../storage/system-store.js'
import type { Config } from '../platform/config.js'
import type { TenantRegistry, TenantRuntime } from './runtime.js'

/** A fetch that takes longer is abandoned (and retried at the next interval). */
export const fxFeedTimeoutMs = 30_000
/** The full-history XML is about 8 MB; anything far larger is not the feed. */
export const fxFeedBytesMax = 64 * 1024 * 1024
/** Who the automatic fetch and new-tenant seeding write as (changelog `changed_by`). */
export const fxFeedActor = 'system'
const latestKey = 'latest'

/** One publication day: date (yyyy-MM-dd) and code -> canonical rate (EUR -> code). */
export interface FeedDay {
  readonly date: string
  readonly rates: Readonly<Record<string, string>>
}

/** The feed could not be fetched or is not a conforming ECB file; nothing was stored. */
export class FxFeedError extends Error {
  override name = 'FxFeedError'
}

// ---------------------------------------------------------------------------------------------
// Parsing

const cubeTag = /<(\/?)\s*(?:[A-Za-z_][\w.-]*:)?Cube\b([^>]*)>/g
const attributePattern = /([A-Za-z_][\w.:-]*)\s*=\s*(?:"([^"]*)"|'([^']*)')/g
const datePattern = /^\d{4}-\d{2}-\d{2}$/
const codePattern = /^[A-Z]{3}$/
/** The ECB writes rates with a decimal point; a comma means a locale rewrote the file. */
const feedRatePattern = /^\d+(\.\d+)?$/

type CubeKind = 'outer' | 'day' | 'rate'

function attributesOf(text: string): Map<string, string> {
  const attributes = new Map<string, string>()
  const rest = text.replace(attributePattern, (_whole, name: string, double?: string, single?: string) => {
    if (attributes.has(name)) throw new FxFeedError(`Cube element repeats attribute ${name}`)
    attributes.set(name, double ?? single ?? '')
    return ''
  })
  if (rest.replace(/\/\s*$/, '').trim() !== '') throw new FxFeedError(`malformed Cube element: <Cube${text}>`)
  return attributes
}

function checkDate(date: string): void {
  const ms = datePattern.test(date) ? parseInstant(date) : Number.NaN
  if (Number.isNaN(ms) || ms < instantMin || ms > instantMax) {
    throw new FxFeedError(`Cube time '${date}' is not a date (yyyy-MM-dd)`)
  }
}

function checkedRate(code: string, text: string, date: string): string {
  if (!codePattern.test(code) || code === fxBaseCurrency) {
    throw new FxFeedError(`currency '${code}' on ${date} is not a 3-letter code other than EUR`)
  }
  const rate = feedRatePattern.test(text) ? canonicalFxRate(text) : null
  if (rate === null) {
    throw new FxFeedError(`${code} rate '${text}' on ${date} is not a positive decimal number with a decimal point`)
  }
  return rate
}

interface ParseState {
  /** Kinds of the Cube elements open now, innermost last. */
  readonly open: CubeKind[]
  readonly days: Map<string, Record<string, string>>
  /** The day being read, with its rate count. */
  day: { date: string; rates: Record<string, string>; count: number } | null
}

/**
 * Parses the ECB XML (`<Cube time='yyyy-MM-dd'><Cube currency='USD' rate='1.1'/>…`): the daily
 * file (one day) and the 90-day and full-history files (many days, newest first), with either
 * quote style and any whitespace. Answers the days oldest first. Refuses anything else (an HTML
 * error page, a truncated download, decimal commas, repeated days or currencies) with FxFeedError.
 */
export function parseEcbXml(xml: string): FeedDay[] {
  const state: ParseState = { open: [], days: new Map(), day: null }
  for (const match of xml.replace(/<!--[\s\S]*?-->/g, '').matchAll(cubeTag)) {
    if (match[1] === '/') closeCube(state)
    else openCube(state, match[2]!)
  }
  if (state.open.length > 0) throw new FxFeedError('the feed ends inside a Cube element (truncated?)')
  if (state.days.size === 0) throw new FxFeedError('no <Cube time=…> element: not an ECB euro reference-rate feed')
  return [...state.days.entries()]
    .sort(([left], [right]) => (left < right ? -1 : 1))
    .map(([date, rates]) => ({ date, rates }))
}

function closeCube(state: ParseState): void {
  const kind = state.open.pop()
  if (kind === undefined) throw new FxFeedError('unbalanced </Cube>')
  if (kind !== 'day') return
  if (state.day!.count === 0) throw new FxFeedError(`day ${state.day!.date} has no rates`)
  state.day = null
}

/** Classifies one opening Cube and records what it carries; throws on anything unexpected. */
function openCube(state: ParseState, body: string): void {
  const attributes = attributesOf(body)
  const selfClosing = /\/\s*$/.test(body)
  const kind = cubeKind(state, attributes, selfClosing)
  if (!selfClosing) state.open.push(kind)
}

function cubeKind(state: ParseState, attributes: Map<string, string>, selfClosing: boolean): CubeKind {
  const { day, days } = state
  const time = attributes.get('time')
  const currency = attributes.get('currency')
  const rate = attributes.get('rate')
  if (attributes.size === 0) {
    if (day !== null) throw new FxFeedError(`an empty Cube inside day ${day.date}`)
    return 'outer'
  }
  if (time !== undefined && attributes.size === 1) {
    if (day !== null) throw new FxFeedError(`day ${time} inside day ${day.date}`)
    checkDate(time)
    if (days.has(time)) throw new FxFeedError(`day ${time} appears twice`)
    if (selfClosing) throw new FxFeedError(`day ${time} has no rates`)
    const rates: Record<string, string> = {}
    days.set(time, rates)
    state.day = { date: time, rates, count: 0 }
    return 'day'
  }
  if (currency !== undefined && rate !== undefined && attributes.size === 2) {
    if (day === null) throw new FxFeedError(`rate of ${currency} outside a day`)
    const value = checkedRate(currency, rate, day.date)
    if (day.rates[currency] !== undefined) throw new FxFeedError(`${currency} appears twice on ${day.date}`)
    day.rates[currency] = value
    day.count++
    return 'rate'
  }
  throw new FxFeedError(`unexpected Cube attributes: ${[...attributes.keys()].join(', ')}`)
}

// ---------------------------------------------------------------------------------------------
// Fetching

async function readLimited(response: Response): Promise<string> {
  const declared = Number(response.headers.get('content-length') ?? '0')
  if (declared > fxFeedBytesMax) {
    throw new FxFeedError(`the feed is ${declared} bytes; at most ${fxFeedBytesMax} are read`)
  }
  if (response.body === null) return ''
  const chunks: Uint8Array[] = []
  let size = 0
  for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength
    if (size > fxFeedBytesMax) throw new FxFeedError(`the feed exceeds ${fxFeedBytesMax} bytes`)
    chunks.push(chunk)
  }
  return Buffer.concat(chunks).toString('utf8')
}

/** Fetches and parses the feed at `url`. Every failure is an FxFeedError naming the cause. */
export async function fetchFeed(url: string, signal?: AbortSignal): Promise<FeedDay[]> {
  if (url === '') throw new FxFeedError('no FX feed is configured (PRICING_FX_FEED_URL is empty)')
  const timeout = AbortSignal.timeout(fxFeedTimeoutMs)
  const combined = signal === undefined ? timeout : AbortSignal.any([signal, timeout])
  let text: string
  try {
    const response = await fetch(url, { signal: combined, headers: { accept: 'application/xml, text/xml' } })
    if (!response.ok) {
      await response.body?.cancel()
      throw new FxFeedError(`the FX feed answered HTTP ${response.status}`)
    }
    text = await readLimited(response)
  } catch (error) {
    if (error instanceof FxFeedError) throw error
    // fetch() says only "fetch failed"; the reason (ECONNREFUSED, ENOTFOUND, ...) is its cause.
    const cause = (error as Error).cause as (Error & { code?: string }) | undefined
    const reason = cause?.code ?? cause?.message
    throw new FxFeedError(
      `the FX feed is unreachable: ${(error as Error).message}${reason === undefined ? '' : ` (${reason})`}`,
      { cause: error },
    )
  }
  return parseEcbXml(text)
}

// ---------------------------------------------------------------------------------------------
// Applying

/** What applying a feed to a tenant did. */
export interface FeedApplied {
  /** Newest publication date in the feed (epoch ms, midnight UTC). */
  readonly asOf: number
  /** Rates in the feed: each is now held by the tenant (an unchanged one records nothing). */
  readonly count: number
  /** Versions written (changelog entries recorded). */
  readonly recorded: number
}

/**
 * Stores planned rate changes with their changelog entries in one durable transaction. All changes
 * of one currency carry the same final version list (planFxRates), so the list is written once per
 * currency and the other days of that currency are recorded as log entries only: a history file
 * costs linear, not quadratic, storage work.
 */
export async function commitFxChanges(tenant: TenantRuntime, changes: readonly Change[]): Promise<void> {
  const first = new Map<string, Change>()
  const extra: EntryContent[] = []
  for (const change of changes) {
    const stored = first.get(change.key)
    if (stored === undefined) {
      first.set(change.key, change)
      continue
    }
    assert(stored.versions === change.versions, 'changes of one currency share their version list')
    extra.push(changeContent(change))
  }
  await tenant.commit([...first.values()], extra)
}

/** Plans every rate of `days` for one tenant, ordered by date then currency. */
export function planFeed(tenant: TenantRuntime, days: readonly FeedDay[], actor: string, nowMs: number): FxChange[] {
  const byQuote = new Map<string, FxEntry[]>()
  for (const day of days) {
    const from = parseInstant(day.date)
    for (const [quote, rate] of Object.entries(day.rates)) {
      let entries = byQuote.get(quote)
      if (entries === undefined) byQuote.set(quote, (entries = []))
      entries.push({ from, rate })
    }
  }
  const changes: FxChange[] = []
  for (const [quote, entries] of byQuote) {
    entries.sort((left, right) => left.from - right.from)
    changes.push(...planFxRates(tenant.catalog, quote, entries, nowMs, actor))
  }
  return changes.sort((left, right) => left.from - right.from || compareCodes(left.key, right.key))
}

/** Applies a parsed feed to one tenant (dedup per date and rate) and stores it durably. */
export async function applyFeed(
  tenant: TenantRuntime,
  days: readonly FeedDay[],
  actor: string,
  nowMs: number,
): Promise<FeedApplied> {
  assert(days.length > 0, 'a parsed feed has at least one day')
  const changes = planFeed(tenant, days, actor, nowMs)
  await commitFxChanges(tenant, changes)
  let count = 0
  let asOf = Number.NEGATIVE_INFINITY
  for (const day of days) {
    count += Object.keys(day.rates).length
    asOf = Math.max(asOf, parseInstant(day.date))
  }
  return { asOf, count, recorded: changes.length }
}

/**
 * A new tenant starts with the latest fetched feed (API.md §9), when its `fx.rate.auto.update` is
 * on (the default). Failures are logged: creating the tenant does not depend on rates.
 */
export async function applyStoredFeed(system: SystemStore, tenant: TenantRuntime, nowMs: number): Promise<void> {
  try {
    const stored = system.fxFeed.get(latestKey)
    if (stored === undefined || stored.days.length === 0 || tenant.role !== 'home') return
    if (!settingEnabled(tenant.catalog, 'fx.rate.auto.update', nowMs)) return
    const applied = await applyFeed(tenant, stored.days, fxFeedActor, nowMs)
    tenant.log.info(
      { recorded: applied.recorded, fetchedAt: stored.fetched_at },
      'FX rates seeded from the latest fetched feed',
    )
  } catch (error) {
    tenant.log.error({ err: error }, 'seeding FX rates from the latest fetched feed failed')
  }
}

// ---------------------------------------------------------------------------------------------
// The automatic fetch

/**
 * The cluster's one fetcher (issue 10, SPEC `fx.rate.auto.update`: only the master node fetches):
 * cluster/fx.ts over Redis. Absent on a single node, which fetches for itself.
 */
export interface FxFeedCluster {
  /** Whether this node holds the fetcher's lease now. */
  isFetcher(): boolean
  /** The fetcher shares what it fetched (refused for a holder whose lease was taken over). */
  publish(record: FxFeedRecord): Promise<void>
  /** What the fetcher shared last, or null. */
  latest(): Promise<FxFeedRecord | null>
  /** How often the nodes look: the fetcher whether a fetch is due, the others for a new feed. */
  readonly checkEveryMs: number
}

export interface FxFeedDeps {
  readonly config: Config
  readonly system: SystemStore
  readonly tenants: TenantRegistry
  readonly logger: Logger
  readonly now: () => number
  readonly cluster?: FxFeedCluster | null
}

/** Milliseconds between looks while a round waits for storage to have room. */
const postponedRoundMs = 60_000

/** Fetches the feed for this node: on a timer for every tenant, and on demand (POST /fx/fetch). */
export class FxFeedService {
  readonly #deps: FxFeedDeps
  readonly #abort = new AbortController()
  #timer: NodeJS.Timeout | null = null
  #running: Promise<void> | null = null
  #stopped = false
  /** A round waits for storage to have room (logged once per wait). */
  #postponed = false
  /** A cluster fetcher's failed fetches in a row, and when (own clock) it may try again. */
  #failures = 0
  #retryAtMs = 0

  constructor(deps: FxFeedDeps) {
    this.#deps = deps
  }

  /** Schedules the first automatic fetch; an empty feed URL leaves the automatic fetch off. */
  start(): void {
    if (this.#deps.config.fxFeedUrl === '') {
      this.#deps.logger.info('no FX feed URL configured: automatic exchange-rate fetch is off')
      return
    }
    this.#schedule(this.#deps.config.fxFetchDelayMs)
  }

  #schedule(delayMs: number): void {
    if (this.#stopped) return
    this.#timer = setTimeout(() => this.#tick(), delayMs)
    this.#timer.unref()
  }

  /**
   * The next fetch is due one interval after this one starts; a run still going skips a turn. In a
   * cluster every node looks more often (`checkEveryMs`): the fetcher fetches when the interval
   * since the cluster's last fetch has passed, the others apply a feed newer than theirs.
   */
  #tick(): void {
    const cluster = this.#deps.cluster ?? null
    // Storage nearly full (tenant/storage-guard.ts): the round waits, looked at again every minute.
    if (this.#deps.tenants.storage.nearlyFull) {
      if (!this.#postponed) this.#deps.logger.warn('FX feed round postponed: storage is nearly full')
      this.#postponed = true
      this.#schedule(Math.min(postponedRoundMs, this.#deps.config.fxFetchIntervalMs))
      return
    }
    this.#postponed = false
    this.#schedule(
      cluster === null
        ? this.#deps.config.fxFetchIntervalMs
        : Math.min(cluster.checkEveryMs, this.#deps.config.fxFetchIntervalMs),
    )
    if (this.#running !== null) return
    this.#running = (cluster === null ? this.runOnce() : this.#clusterRound(cluster)).finally(
      () => (this.#running = null),
    )
  }

  /** Epoch ms of the feed this node applied last (a cluster's follower applies each feed once). */
  #appliedFetchedAt = 0

  async #clusterRound(cluster: FxFeedCluster): Promise<void> {
    let shared: FxFeedRecord | null
    try {
      shared = await cluster.latest()
    } catch {
      return // Redis unreachable: the next round looks again.
    }
    if (cluster.isFetcher()) {
      const now = this.#deps.now()
      const due = shared === null || now - shared.fetched_at >= this.#deps.config.fxFetchIntervalMs
      if (due && now >= this.#retryAtMs) await this.#round(cluster.checkEveryMs)
      return
    }
    if (shared === null || shared.fetched_at <= this.#appliedFetchedAt || shared.days.length === 0) return
    this.#appliedFetchedAt = shared.fetched_at
    await this.#deps.system.put(this.#deps.system.fxFeed, latestKey, shared)
    this.#deps.logger.info(
      { days: shared.days.length, newest: shared.days[shared.days.length - 1]!.date, fetchedAt: shared.fetched_at },
      "FX feed from the cluster's fetcher",
    )
    await this.#applyToTenants(shared.days)
  }

  /** Fetches the feed, keeps it as the latest, and keeps it in the system store for later tenants. */
  async fetchLatest(): Promise<FeedDay[]> {
    const days = await fetchFeed(this.#deps.config.fxFeedUrl, this.#abort.signal)
    const record: FxFeedRecord = {
      fetched_at: this.#deps.now(),
      source: this.#deps.config.fxFeedUrl,
      days: days.map((day) => ({ date: day.date, rates: { ...day.rates } })),
    }
    await this.#deps.system.put(this.#deps.system.fxFeed, latestKey, record)
    this.#appliedFetchedAt = record.fetched_at
    await this.#deps.cluster
      ?.publish(record)
      .catch((error: unknown) =>
        this.#deps.logger.warn({ error: (error as Error).message }, 'FX feed not shared with the cluster'),
      )
    return days
  }

  /** One automatic round: fetch, then apply to each loaded tenant whose setting is on now. */
  runOnce(): Promise<void> {
    return this.#round(null)
  }

  /** A round; `backoffBaseMs` (a cluster's fetcher): a failure delays the next try, doubling up to the interval. */
  async #round(backoffBaseMs: number | null): Promise<void> {
    const logger = this.#deps.logger
    let days: FeedDay[]
    try {
      days = await this.fetchLatest()
    } catch (error) {
      if (this.#stopped) return
      // One line without a stack: an unreachable feed is an operating condition, not a bug.
      const failure = { url: this.#deps.config.fxFeedUrl, error: (error as Error).message, code: failureCode(error) }
      if (backoffBaseMs === null) {
        logger.warn(failure, 'FX feed fetch failed; retrying at the next interval')
        return
      }
      this.#failures++
      const retryInMs = Math.min(
        backoffBaseMs * 2 ** Math.min(this.#failures - 1, 40),
        this.#deps.config.fxFetchIntervalMs,
      )
      this.#retryAtMs = this.#deps.now() + retryInMs
      logger.warn({ ...failure, failures: this.#failures, retryInMs }, 'FX feed fetch failed; retrying after a backoff')
      return
    }
    this.#failures = 0
    this.#retryAtMs = 0
    logger.info({ days: days.length, newest: days[days.length - 1]!.date }, 'FX feed fetched')
    await this.#applyToTenants(days)
  }

  /** Applies a feed to each loaded tenant whose `fx.rate.auto.update` is on now. */
  async #applyToTenants(days: FeedDay[]): Promise<void> {
    for (const tenant of this.#deps.tenants.all()) {
      if (this.#stopped) return
      const nowMs = this.#deps.now()
      // A replica gets the rates from its home's log (cluster mode).
      if (!tenant.loaded || tenant.role !== 'home' || !settingEnabled(tenant.catalog, 'fx.rate.auto.update', nowMs))
        continue
      if (tenant.restoring !== null) {
        // The restore's result is the backup's rates; the next fetch (or POST /fx/fetch) adds these.
        tenant.log.warn({ backup: tenant.restoring }, 'FX rates from the feed skipped: a restore is in progress')
        continue
      }
      if (tenant.storage.nearlyFull) {
        // Storage filled during the round (tenant/storage-guard.ts); the next fetch (or POST /fx/fetch) adds these.
        tenant.log.warn('FX rates from the feed skipped: storage is nearly full')
        continue
      }
      try {
        const applied = await applyFeed(tenant, days, fxFeedActor, nowMs)
        tenant.log.info({ recorded: applied.recorded }, 'FX rates applied from the feed')
      } catch (error) {
        tenant.log.error({ err: error }, 'applying FX rates failed')
      }
    }
  }

  /** Stops the timer, aborts a fetch in flight and waits for a round that is writing. */
  async stop(): Promise<void> {
    this.#stopped = true
    if (this.#timer !== null) clearTimeout(this.#timer)
    this.#abort.abort()
    await this.#running
  }
}

/** The first `code` (ECONNREFUSED, ENOTFOUND, UND_ERR_...) along an error's causes, or null. */
function failureCode(error: unknown): string | null {
  let current = error as { code?: unknown; cause?: unknown } | undefined
  for (let depth = 0; depth < 4 && current !== undefined && current !== null; depth++) {
    if (typeof current.code === 'string') return current.code
    current = current.cause as typeof current
  }
  return null
}

/**
 * The node's feed service, for POST /fx/fetch: tenant routes get no server dependencies, and one
 * server runs per process, so main.ts registers it here.
 */
let activeService: FxFeedService | null = null

export function setActiveFxFeed(service: FxFeedService | null): void {
  activeService = service
}

export function activeFxFeed(): FxFeedService | null {
  return activeService
}
