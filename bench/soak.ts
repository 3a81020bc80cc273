/**
 * `npm run soak -- --minutes 30` (issue 13, Soak): the server under a steady mixed load for a long
 * time, to show that it does not leak or slow down. One server (compiled, its own process and data
 * directory) with the bench workload at 10,000 SKUs; then, minute after minute:
 *   - GET taxed prices and POST /price/query of 100 SKUs x 10 pricelists (autocannon at a fixed
 *     overall rate, the bench's request sets: scenarios.ts; one client process per kind: soak-load.ts),
 *   - price writes (POST /price/batch of 100 items, paced; each pass over the pairs changes every
 *     price, at one fixed future start, so the stored data does not grow; the changelog does),
 *   - webhook deliveries of every change to a local HTTPS receiver (test/helpers/https-receiver.ts).
 * The rates are 80% (`--load`) of the capacity measured by the last bench run: the newest
 * bench/results/*.json with HTTP scenarios (its `get` and `query-100` req/s and its ingest items/s),
 * shared out by `mix` (a share of the capacity per kind, summing to 1). `--get-rate`,
 * `--query-rate`, `--write-rate` (items/s) override them.
 *
 * Each minute prints the server's RSS (and its anonymous part), heap used, active handles, open file
 * descriptors, threads, and per kind the requests, p99 and errors. At the end: the RSS slope after
 * the warm-up (least squares over the minutes after it, % of the mean RSS per 10 minutes), errors,
 * the p99 trend (the same slope for each kind's p99), the webhook events delivered, and the checks
 * (RSS slope under 1% per 10 minutes, 0 errors, p99 slopes under 10% per 10 minutes: flat within
 * the noise of one-minute windows). Writes bench/results/<timestamp>-soak.json. Exits 1 when a check
 * fails.
 *
 * Flags: --minutes N (30), --warmup-minutes N (5, or 1 for runs under 10 minutes), --window-s S (60),
 * --skus N (10,000), --load F (0.8), --get-rate, --query-rate, --write-rate.
 * @module
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { startHttpsReceiver } from '../test/helpers/https-receiver.js'
import { generate } from './generate.js'
import { clockTicksPerSecond, cpuTicks, memory } from './proc.js'
import { runSoakLoad, type KindMinute } from './soak-load.js'
import { PricingServer, provisionTenant, request, type TenantClient } from './server-process.js'
import { webhookServerEnv } from './webhooks.js'
import { defaultShape, pricelists, skuCode, type WorkloadShape } from './workload.js'

const buildRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const repositoryRoot = path.resolve(buildRoot, '..')
const resultsDir = path.join(repositoryRoot, 'bench', 'results')
const tenantSlug = 'soak'

/**
 * The share of the capacity each kind gets (they sum to 1): mostly reads, as storefronts do; the
 * writes' share is small because each written item adds a changelog entry (about 190 bytes on
 * disk): 2% of the bench's ingest rate at 80% is about 1,700 items/s, 3 million entries in 30 minutes.
 */
const mix = { get: 0.6, query: 0.38, write: 0.02 } as const
const writeBatchItems = 100
const writeConcurrency = 2
/** Targets (issue 13). */
const rssSlopeMaxPercent = 1
const p99SlopeMaxPercent = 10

interface Options {
  readonly minutes: number
  readonly warmupMinutes: number
  readonly windowS: number
  readonly skus: number
  readonly load: number
  readonly getRate: number | null
  readonly queryRate: number | null
  readonly writeRate: number | null
}

function parseOptions(argv: readonly string[]): Options {
  const flag = (name: string): number | null => {
    const index = argv.indexOf(`--${name}`)
    if (index < 0) return null
    const value = Number(argv[index + 1])
    if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} needs a positive number`)
    return value
  }
  const minutes = flag('minutes') ?? 30
  return {
    minutes,
    warmupMinutes: flag('warmup-minutes') ?? (minutes < 10 ? 1 : 5),
    windowS: flag('window-s') ?? 60,
    skus: flag('skus') ?? 10_000,
    load: flag('load') ?? 0.8,
    getRate: flag('get-rate'),
    queryRate: flag('query-rate'),
    writeRate: flag('write-rate'),
  }
}

function progress(message: string): void {
  process.stderr.write(`[soak ${new Date().toISOString().slice(11, 19)}] ${message}\n`)
}

interface Capacity {
  readonly source: string
  readonly getPerSecond: number
  readonly queryPerSecond: number
  readonly ingestItemsPerSecond: number
}

/** The newest bench result with HTTP scenarios and an ingest figure (cluster and soak files have neither). */
function benchCapacity(): Capacity {
  const files = readdirSync(resultsDir)
    .filter((name) => name.endsWith('.json') && !name.endsWith('-soak.json') && !name.endsWith('-cluster.json'))
    .sort()
    .reverse()
  for (const name of files) {
    try {
      const result = JSON.parse(readFileSync(path.join(resultsDir, name), 'utf8')) as {
        scenarios?: { name: string; real: { requestsPerSecond: number } }[]
        ingest?: { itemsPerSecond: number }
      }
      const get = result.scenarios?.find((scenario) => scenario.name === 'get')?.real.requestsPerSecond
      const query = result.scenarios?.find((scenario) => scenario.name === 'query-100')?.real.requestsPerSecond
      const ingest = result.ingest?.itemsPerSecond
      if (get !== undefined && query !== undefined && ingest !== undefined) {
        return {
          source: `bench/results/${name}`,
          getPerSecond: get,
          queryPerSecond: query,
          ingestItemsPerSecond: ingest,
        }
      }
    } catch {
      // Not a bench result: the next.
    }
  }
  throw new Error(
    'no bench result with scenarios in bench/results/: run npm run bench (or bench:quick) first, or give --get-rate, --query-rate and --write-rate',
  )
}

interface Minute {
  readonly minute: number
  readonly rssBytes: number
  readonly rssAnonBytes: number
  readonly heapUsedBytes: number
  readonly activeHandles: number
  readonly openFiles: number
  readonly threads: number
  readonly cpuCores: number
  readonly get: KindMinute
  readonly query: KindMinute
  readonly write: KindMinute & { readonly items: number }
  readonly webhookEvents: number
}

/** Least squares slope of y over x. */
function slope(points: readonly [number, number][]): number {
  const n = points.length
  if (n < 2) return Number.NaN
  const meanX = points.reduce((sum, [x]) => sum + x, 0) / n
  const meanY = points.reduce((sum, [, y]) => sum + y, 0) / n
  let numerator = 0
  let denominator = 0
  for (const [x, y] of points) {
    numerator += (x - meanX) * (y - meanY)
    denominator += (x - meanX) ** 2
  }
  return numerator / denominator
}

/** The slope of `value` over the minutes after the warm-up, as % of its mean per 10 minutes. */
function slopePercentPer10Min(minutes: readonly Minute[], value: (minute: Minute) => number): number {
  const points = minutes.map((minute) => [minute.minute, value(minute)] as [number, number])
  const mean = points.reduce((sum, [, y]) => sum + y, 0) / points.length
  return ((slope(points) * 10) / mean) * 100
}

function p99(values: number[]): number {
  if (values.length === 0) return Number.NaN
  values.sort((left, right) => left - right)
  return values[Math.ceil(values.length * 0.99) - 1]!
}

/** Metrics the server exposes (prom-client's default process and Node.js metrics, and the service's). */
async function serverMetrics(
  url: string,
): Promise<{ heapUsedBytes: number; activeHandles: number; webhookEvents: number }> {
  const text = (await request(`${url}/metrics`, 'GET')).text
  const value = (name: string): number =>
    Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN)
  // Heap used over every space: nodejs_heap_space_size_used_bytes summed, or the total gauge.
  let heap = value('nodejs_heap_size_used_bytes')
  if (Number.isNaN(heap)) {
    heap = [...text.matchAll(/^nodejs_heap_space_size_used_bytes\{[^}]*\} (\S+)$/gm)].reduce(
      (sum, match) => sum + Number(match[1]),
      0,
    )
  }
  return {
    heapUsedBytes: heap,
    activeHandles: value('nodejs_active_handles_total'),
    webhookEvents: value('pricing_webhook_events_total'),
  }
}

function processFacts(pid: number): { openFiles: number; threads: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  return {
    openFiles: readdirSync(`/proc/${pid}/fd`).length,
    threads: Number(/^Threads:\s+(\d+)/m.exec(status)?.[1] ?? Number.NaN),
  }
}

/**
 * Price writes at `itemsPerSecond`, in batches of `writeBatchItems`: pair after pair of (SKU,
 * pricelist), each at the same future start, its price alternating between two values per pass, so
 * every item is a change and the number of stored versions stays fixed.
 */
class Writer {
  #next = 0
  #stopped = false
  latencies: number[] = []
  errors = 0
  items = 0
  requests = 0
  readonly #pairCount: number
  readonly #startDate = new Date(Date.now() + 400 * 86_400_000).toISOString().slice(0, 10)

  constructor(
    readonly client: TenantClient,
    readonly shape: WorkloadShape,
    readonly itemsPerSecond: number,
  ) {
    this.#pairCount = shape.skuCount * pricelists.length
  }

  #batch(): unknown[] {
    return Array.from({ length: writeBatchItems }, () => {
      const item = this.#next++
      const pair = item % this.#pairCount
      const pass = Math.floor(item / this.#pairCount)
      const skuIndex = Math.floor(pair / pricelists.length)
      const price = (10 + (skuIndex % 1000) / 100 + (pass % 2) / 100).toFixed(2)
      return {
        sku: skuCode(skuIndex),
        pricelist: pricelists[pair % pricelists.length]!.code,
        price,
        start_date: this.#startDate,
      }
    })
  }

  /** Paced lanes: each sends a batch, then waits for its turn (a schedule, not a closed loop). */
  run(): Promise<void> {
    const intervalMs = (writeBatchItems * 1000 * writeConcurrency) / this.itemsPerSecond
    const lane = async (offset: number): Promise<void> => {
      let due = performance.now() + offset
      while (!this.#stopped) {
        const wait = due - performance.now()
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
        if (this.#stopped) break
        due += intervalMs
        const started = performance.now()
        try {
          const answer = await this.client.call('POST', '/price/batch', this.#batch())
          const result =
            answer.status === 202 ? (JSON.parse(answer.text) as { accepted: number; failed: unknown[] }) : null
          if (result === null || result.failed.length > 0) {
            this.errors++
            if (this.errors <= 3) progress(`write refused: ${answer.status} ${answer.text.slice(0, 300)}`)
          } else {
            this.items += result.accepted
          }
        } catch (error) {
          this.errors++
          if (this.errors <= 3) progress(`write failed: ${(error as Error).message}`)
        }
        this.requests++
        this.latencies.push(performance.now() - started)
      }
    }
    return Promise.all(
      Array.from({ length: writeConcurrency }, (_, index) => lane((index * intervalMs) / writeConcurrency)),
    ).then(() => undefined)
  }

  /** This window's figures; the counts start again. */
  take(): KindMinute & { items: number } {
    const figures = { requests: this.requests, p99Ms: p99(this.latencies), errors: this.errors, items: this.items }
    this.latencies = []
    this.errors = 0
    this.items = 0
    this.requests = 0
    return figures
  }

  stop(): void {
    this.#stopped = true
  }
}

const megabytes = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(1)} MB`

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2))
  const capacity: Capacity | null =
    options.getRate !== null && options.queryRate !== null && options.writeRate !== null ? null : benchCapacity()
  const rates = {
    get: options.getRate ?? capacity!.getPerSecond * options.load * mix.get,
    query: options.queryRate ?? capacity!.queryPerSecond * options.load * mix.query,
    write: options.writeRate ?? capacity!.ingestItemsPerSecond * options.load * mix.write,
  }
  progress(
    `capacity from ${capacity?.source ?? 'the flags'}: ${capacity === null ? '' : `GET ${capacity.getPerSecond.toFixed(0)} req/s, query-100 ${capacity.queryPerSecond.toFixed(0)} req/s, ingest ${capacity.ingestItemsPerSecond.toFixed(0)} items/s; `}` +
      `load ${options.load * 100}% shared ${mix.get}/${mix.query}/${mix.write}: GET ${rates.get.toFixed(0)} req/s, query ${rates.query.toFixed(0)} req/s, writes ${rates.write.toFixed(0)} items/s`,
  )
  const shape: WorkloadShape = { ...defaultShape, skuCount: options.skus }
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'pricing-soak-'))
  const server = new PricingServer({
    entry: path.join(buildRoot, 'server', 'start.js'),
    dataDir,
    adminToken: 'soak-admin-token-0123456789abcdef',
    env: await webhookServerEnv(),
  })
  const receiver = await startHttpsReceiver()
  let writer: Writer | null = null
  let writing: Promise<void> | null = null
  try {
    await server.start()
    await server.waitReady()
    const client = await provisionTenant(server, tenantSlug)
    progress(
      `writing the workload: ${shape.skuCount} SKUs x ${pricelists.length} pricelists x ${shape.versionCount} versions`,
    )
    await generate(client, shape, () => 0)
    await client.expect(202, 'PUT', '/settings/change.events.enabled', { value: 'true' })
    await client.expect(201, 'POST', '/webhooks', {
      url: `${receiver.url}/soak`,
      secret: 'soak-secret',
      entity_type_filter: 'price',
    })
    writer = new Writer(client, shape, rates.write)
    writing = writer.run()
    const minutes: Minute[] = []
    let ticks = cpuTicks(server.pid)
    let events = (await serverMetrics(server.url)).webhookEvents
    const clockTicks = clockTicksPerSecond()
    progress(`running ${options.minutes} windows of ${options.windowS} s (warm-up: the first ${options.warmupMinutes})`)
    console.log(
      'minute   RSS (anon)            heap      handles fds threads cpu   GET req p99 err   query req p99 err   write items p99 err   webhook events',
    )
    for (let minute = 1; minute <= options.minutes; minute++) {
      const headers = { authorization: `Bearer ${await client.refreshToken()}` }
      const common = { url: server.url, slug: tenantSlug, shape, durationS: options.windowS, headers }
      // Each kind's client in a process of its own (./soak-load.ts); autocannon's overallRate is per
      // connection group, with enough connections that latency never limits the rate.
      const gets = runSoakLoad({
        ...common,
        scenario: 'get',
        connections: 32,
        overallRate: Math.max(1, Math.round(rates.get)),
      })
      const queries = runSoakLoad({
        ...common,
        scenario: 'query-100',
        connections: 16,
        overallRate: Math.max(1, Math.round(rates.query)),
      })
      const [getResult, queryResult] = await Promise.all([gets, queries])
      const write = writer.take()
      receiver.clear()
      const metrics = await serverMetrics(server.url)
      const facts = processFacts(server.pid)
      const rss = memory(server.pid)
      const nowTicks = cpuTicks(server.pid)
      const sample: Minute = {
        minute,
        rssBytes: rss.rssBytes,
        rssAnonBytes: rss.rssAnonBytes,
        heapUsedBytes: metrics.heapUsedBytes,
        activeHandles: metrics.activeHandles,
        openFiles: facts.openFiles,
        threads: facts.threads,
        cpuCores: (nowTicks - ticks) / clockTicks / options.windowS,
        get: getResult,
        query: queryResult,
        write,
        webhookEvents: metrics.webhookEvents - events,
      }
      ticks = nowTicks
      events = metrics.webhookEvents
      minutes.push(sample)
      const kind = (figures: KindMinute): string =>
        `${String(figures.requests).padStart(7)} ${figures.p99Ms.toFixed(0).padStart(4)} ${String(figures.errors).padStart(3)}`
      console.log(
        `${String(minute).padStart(3)}${minute <= options.warmupMinutes ? 'w' : ' '}   ${megabytes(sample.rssBytes).padStart(9)} (${megabytes(sample.rssAnonBytes).padStart(9)})  ${megabytes(sample.heapUsedBytes).padStart(9)}  ${String(sample.activeHandles).padStart(4)} ${String(sample.openFiles).padStart(5)} ${String(sample.threads).padStart(4)}   ${sample.cpuCores.toFixed(2)}  ${kind(sample.get)}   ${kind(sample.query)}   ${String(write.items).padStart(7)} ${write.p99Ms.toFixed(0).padStart(4)} ${String(write.errors).padStart(3)}   ${String(sample.webhookEvents).padStart(8)}`,
      )
    }
    writer.stop()
    await writing
    writing = null
    const after = minutes.filter((minute) => minute.minute > options.warmupMinutes)
    const measured = after.length >= 2 ? after : minutes
    const errors = minutes.reduce(
      (sum, minute) => sum + minute.get.errors + minute.query.errors + minute.write.errors,
      0,
    )
    const summary = {
      rssSlopePercentPer10Min: slopePercentPer10Min(measured, (minute) => minute.rssBytes),
      rssAnonSlopePercentPer10Min: slopePercentPer10Min(measured, (minute) => minute.rssAnonBytes),
      heapSlopePercentPer10Min: slopePercentPer10Min(measured, (minute) => minute.heapUsedBytes),
      getP99SlopePercentPer10Min: slopePercentPer10Min(measured, (minute) => minute.get.p99Ms),
      queryP99SlopePercentPer10Min: slopePercentPer10Min(measured, (minute) => minute.query.p99Ms),
      writeP99SlopePercentPer10Min: slopePercentPer10Min(measured, (minute) => minute.write.p99Ms),
      errors,
      requests: minutes.reduce(
        (sum, minute) => sum + minute.get.requests + minute.query.requests + minute.write.requests,
        0,
      ),
      writtenItems: minutes.reduce((sum, minute) => sum + minute.write.items, 0),
      webhookEvents: minutes.reduce((sum, minute) => sum + minute.webhookEvents, 0),
      minutesMeasured: measured.length,
      /** What the load reached, per second over all minutes, beside `rates` (a busy machine may not reach them). */
      achieved: {
        get: minutes.reduce((sum, minute) => sum + minute.get.requests, 0) / (minutes.length * options.windowS),
        query: minutes.reduce((sum, minute) => sum + minute.query.requests, 0) / (minutes.length * options.windowS),
        write: minutes.reduce((sum, minute) => sum + minute.write.items, 0) / (minutes.length * options.windowS),
      },
    }
    const checks = [
      {
        figure: 'RSS slope after warm-up, % per 10 minutes',
        measured: summary.rssSlopePercentPer10Min,
        target: `< ${rssSlopeMaxPercent}`,
        pass: summary.rssSlopePercentPer10Min < rssSlopeMaxPercent,
      },
      {
        figure: 'errors (non-2xx, failed and timed-out requests, refused write items)',
        measured: errors,
        target: '0',
        pass: errors === 0,
      },
      {
        figure: 'GET p99 slope after warm-up, % per 10 minutes',
        measured: summary.getP99SlopePercentPer10Min,
        target: `< ${p99SlopeMaxPercent}`,
        pass: !(summary.getP99SlopePercentPer10Min >= p99SlopeMaxPercent),
      },
      {
        figure: 'query p99 slope after warm-up, % per 10 minutes',
        measured: summary.queryP99SlopePercentPer10Min,
        target: `< ${p99SlopeMaxPercent}`,
        pass: !(summary.queryP99SlopePercentPer10Min >= p99SlopeMaxPercent),
      },
      {
        figure: 'webhook events delivered',
        measured: summary.webhookEvents,
        target: '> 0',
        pass: summary.webhookEvents > 0,
      },
    ]
    console.log('')
    console.log(
      `after the warm-up (${measured.length} minutes): RSS slope ${summary.rssSlopePercentPer10Min.toFixed(2)}% per 10 min (anonymous ${summary.rssAnonSlopePercentPer10Min.toFixed(2)}%, heap ${summary.heapSlopePercentPer10Min.toFixed(2)}%)`,
    )
    console.log(
      `p99 slope per 10 min: GET ${summary.getP99SlopePercentPer10Min.toFixed(1)}%, query ${summary.queryP99SlopePercentPer10Min.toFixed(1)}%, write ${summary.writeP99SlopePercentPer10Min.toFixed(1)}%`,
    )
    console.log(
      `requests ${summary.requests}, errors ${errors}, price items written ${summary.writtenItems}, webhook events delivered ${summary.webhookEvents}`,
    )
    console.log(
      `reached: GET ${summary.achieved.get.toFixed(0)} of ${rates.get.toFixed(0)} req/s, query ${summary.achieved.query.toFixed(0)} of ${rates.query.toFixed(0)} req/s, writes ${summary.achieved.write.toFixed(0)} of ${rates.write.toFixed(0)} items/s`,
    )
    for (const check of checks)
      console.log(
        `${check.pass ? 'pass' : 'FAIL'}  ${check.figure}: ${typeof check.measured === 'number' && !Number.isInteger(check.measured) ? check.measured.toFixed(2) : check.measured} (target ${check.target})`,
      )
    const stamp = new Date().toISOString().replace(/[:.]/g, '-')
    const file = path.join(resultsDir, `${stamp}-soak.json`)
    writeFileSync(
      file,
      `${JSON.stringify(
        {
          generatedAt: new Date().toISOString(),
          environment: {
            node: process.version,
            cores: os.cpus().length,
            loadAverageAtEnd: os.loadavg()[0]!.toFixed(2),
          },
          options,
          capacity,
          mix,
          rates,
          minutes,
          summary,
          checks,
        },
        null,
        2,
      )}\n`,
    )
    console.log(`written to ${path.relative(repositoryRoot, file)}`)
    if (checks.some((check) => !check.pass)) process.exitCode = 1
  } finally {
    writer?.stop()
    if (writing !== null) await writing.catch(() => {})
    await server.stop()
    await receiver.close()
    rmSync(dataDir, { recursive: true, force: true })
  }
}

await main()
