/**
 * `npm run bench:effective-events`: effective-price events (issue 30, point 4), on one server with the
 * bench's workload (bench/workload.ts, `--skus` SKUs, mapped to a VAT class in SE only, so a price
 * moves one read: one event), `change.events.enabled` on and a webhook filtered to `effective_price`
 * pointing at the test suite's HTTPS receiver on 127.0.0.1 (test/helpers/https-receiver.ts, as
 * bench/webhooks.ts uses it), with the server's own webhook batch window (PRICING_WEBHOOK_BATCH_MS).
 *  1. Delay: rounds that each schedule `--sizes` prices on NET-2 (a list nothing inherits from) for
 *     a whole second T 2-3 s ahead, then wait for their events at the receiver. Each event's delay is
 *     its POST's receipt time minus its `effective_at` (T); the server's part, `delivered_at` of the
 *     POST minus T, is printed beside it. p50, p99 and max per batch size, and the count received
 *     against the count scheduled (each event of the round's moment once; anything else is counted
 *     as a duplicate or an other), and the POSTs that carried them.
 *  2. Query path: the full bench's `query-100` scenario (100 SKUs x 10 lists, 4,096 distinct bodies,
 *     the answer cache as shipped) with `effective_price.events.enabled` off and on, each also while
 *     moments fire (`--firing-skus` prices scheduled for every whole second of the run, written before
 *     it), in rounds of off, on, on+firing, off+firing and back. Server CPU per request (every thread
 *     and the main thread), latency p50 and p99, medians over the rounds, and the ratio on / off. With
 *     moments firing, the CPU per request also carries the events' computing, commit and delivery,
 *     which run on the main thread beside the queries: the figures without firing are the query
 *     path's alone.
 * Prints its tables; writes no result file (as bench:edge and the other single-figure scripts).
 * Flags: --skus N (1,000), --rounds N (10 per batch size), --sizes 1000,1, --query-rounds N (4),
 * --seconds S (5), --warmup S (1), --connections N (64), --firing-skus N (100 per moment), --server DIR.
 * @module
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import autocannon, { type Request, type Result } from 'autocannon'
import { DEFAULTS } from '../platform/config.js'
import { startHttpsReceiver, type HttpsReceiver, type ReceivedRequest } from '../test/helpers/https-receiver.js'
import { flagValue } from './flags.js'
import { generate } from './generate.js'
import { clockTicksPerSecond, cpuTicks, threadTicks } from './proc.js'
import { renderText } from './report.js'
import { loadResult, scenarioDefinitions, type LoadResult } from './scenarios.js'
import { PricingServer, provisionTenant, type TenantClient } from './server-process.js'
import { webhookServerEnv } from './webhooks.js'
import { defaultShape, priceOf, pricelists, skuCode, type WorkloadShape } from './workload.js'

const buildRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const argv = process.argv.slice(2)
const numberFlag = (name: string, fallback: number): number => Number(flagValue(argv, name) ?? fallback)
const shape: WorkloadShape = { ...defaultShape, skuCount: numberFlag('skus', 1_000) }
const roundCount = numberFlag('rounds', 10)
const sizes = (flagValue(argv, 'sizes') ?? '1000,1').split(',').map(Number)
const queryRounds = numberFlag('query-rounds', 4)
const seconds = numberFlag('seconds', 5)
const warmupS = numberFlag('warmup', 1)
const connections = numberFlag('connections', 64)
const firingSkus = numberFlag('firing-skus', 100)
const serverRoot = path.resolve(flagValue(argv, 'server') ?? buildRoot)
const slug = 'effective'
const clockTicks = clockTicksPerSecond()
const batchMs = Number(process.env['PRICING_WEBHOOK_BATCH_MS'] ?? DEFAULTS.webhookBatchMs)
const batchLabel = `PRICING_WEBHOOK_BATCH_MS ${batchMs}${process.env['PRICING_WEBHOOK_BATCH_MS'] === undefined ? ' (default)' : ''}`
/** The list the prices are scheduled on: one that no list inherits from, so a price moves one read. */
const listIndex = 1
const list = pricelists[listIndex]!
if (pricelists.some((other) => other.parentCode === list.code)) throw new Error(`${list.code} has children`)
/** The least time from a round's write to its moment. */
const leadMs = 2_000
/** After the last expected event, how long the receiver is watched for more. */
const quietMs = batchMs + 1_000

function progress(message: string): void {
  process.stderr.write(`[effective ${new Date().toISOString().slice(11, 19)}] ${message}\n`)
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)))
/** An instant as the API writes it (whole seconds without milliseconds). */
const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z')

/** Nearest rank; NaN for none. */
function percentile(sorted: readonly number[], share: number): number {
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(share * sorted.length) - 1))]!
}

function median(values: readonly number[]): number {
  return percentile(
    [...values].sort((left, right) => left - right),
    0.5,
  )
}

/** One effective-price event as the receiver got it. */
interface Received {
  readonly sku: string
  readonly list: string | null
  readonly effectiveAt: number
  /** The POST's receipt (receiver) and its `delivered_at` (server), ms since the epoch. */
  readonly receivedAt: number
  readonly deliveredAt: number
  /** Which POST (its index among the receiver's requests) carried it. */
  readonly post: number
}

function receivedEvents(requests: readonly ReceivedRequest[]): Received[] {
  const events: Received[] = []
  for (const [post, request] of requests.entries()) {
    const body = request.body as { delivered_at?: string; events?: Record<string, unknown>[] } | null
    if (request.method !== 'POST' || !Array.isArray(body?.events)) continue
    const deliveredAt = Date.parse(body.delivered_at ?? '')
    for (const event of body.events) {
      if (event['entity_type'] !== 'effective_price') continue
      events.push({
        sku: String(event['entity_code']),
        list: (event['composite_key'] as string | null) ?? null,
        effectiveAt: Date.parse(String(event['effective_at'])),
        receivedAt: request.at,
        deliveredAt,
        post,
      })
    }
  }
  return events
}

/** The scheduled prices of one write: SKU code and moment per item. */
type Schedule = Map<string, number>
const keyOf = (sku: string, at: number) => `${sku}@${at}`

/** Writes prices on `list` and remembers what they schedule; each moment a new price per SKU. */
class Scheduler {
  #version = shape.versionCount
  #cursor = 0

  constructor(readonly client: TenantClient) {}

  /** `count` SKUs (rotating over the workload's) per moment of `moments`, all in one or a few batches. */
  async write(moments: readonly number[], count: number): Promise<Schedule> {
    const schedule: Schedule = new Map()
    const items: unknown[] = []
    for (const at of moments) {
      const version = this.#version++
      for (let index = 0; index < count; index++) {
        const skuIndex = this.#cursor++ % shape.skuCount
        const sku = skuCode(skuIndex)
        schedule.set(keyOf(sku, at), at)
        items.push({
          sku,
          pricelist: list.code,
          price: priceOf(shape, skuIndex, listIndex, version).sales,
          start_date: iso(at),
        })
      }
    }
    for (let start = 0; start < items.length; start += 2_500) {
      const chunk = items.slice(start, start + 2_500)
      const answer = await this.client.expect(202, 'POST', '/price/batch', chunk)
      const result = JSON.parse(answer.text) as { accepted: number; failed: unknown[] }
      if (result.accepted !== chunk.length) throw new Error(`price batch refused: ${JSON.stringify(result.failed[0])}`)
    }
    return schedule
  }
}

/** What the receiver got of a schedule: its events once each, duplicates, and anything else. */
interface Tally {
  readonly matched: Received[]
  /** POSTs that carried them. */
  readonly posts: number
  readonly duplicates: number
  readonly others: number
}

function tally(schedule: Schedule, events: readonly Received[]): Tally {
  const seen = new Set<string>()
  const matched: Received[] = []
  let duplicates = 0
  let others = 0
  for (const event of events) {
    const key = keyOf(event.sku, event.effectiveAt)
    if (event.list !== list.code || !schedule.has(key)) others++
    else if (seen.has(key)) duplicates++
    else {
      seen.add(key)
      matched.push(event)
    }
  }
  return { matched, posts: new Set(matched.map((event) => event.post)).size, duplicates, others }
}

interface DelayRound {
  readonly size: number
  readonly tally: Tally
  /** Receipt minus the moment, and delivered_at minus the moment, per matched event (ms). */
  readonly delays: number[]
  readonly serverDelays: number[]
}

async function delayRound(receiver: HttpsReceiver, scheduler: Scheduler, size: number): Promise<DelayRound> {
  receiver.clear()
  const at = Math.ceil((Date.now() + leadMs) / 1000) * 1000
  const schedule = await scheduler.write([at], size)
  if (Date.now() > at - 100) throw new Error(`the write of ${size} prices ended ${Date.now() - at} ms after its moment`)
  const enough = (requests: ReceivedRequest[]) => tally(schedule, receivedEvents(requests)).matched.length >= size
  await receiver.waitFor(enough, at - Date.now() + 30_000).catch(() => undefined)
  await sleep(quietMs)
  const counted = tally(schedule, receivedEvents(receiver.requests))
  return {
    size,
    tally: counted,
    delays: counted.matched.map((event) => event.receivedAt - event.effectiveAt),
    serverDelays: counted.matched.map((event) => event.deliveredAt - event.effectiveAt),
  }
}

interface DelaySummary {
  readonly label: string
  readonly rounds: number
  readonly scheduled: number
  readonly received: number
  readonly posts: number
  readonly duplicates: number
  readonly others: number
  readonly delays: number[]
  readonly serverDelays: number[]
}

function summarise(label: string, rounds: readonly DelayRound[]): DelaySummary {
  const all = (pick: (round: DelayRound) => number[]) => rounds.flatMap(pick).sort((left, right) => left - right)
  return {
    label,
    rounds: rounds.length,
    scheduled: rounds.reduce((sum, round) => sum + round.size, 0),
    received: rounds.reduce((sum, round) => sum + round.tally.matched.length, 0),
    posts: rounds.reduce((sum, round) => sum + round.tally.posts, 0),
    duplicates: rounds.reduce((sum, round) => sum + round.tally.duplicates, 0),
    others: rounds.reduce((sum, round) => sum + round.tally.others, 0),
    delays: all((round) => round.delays),
    serverDelays: all((round) => round.serverDelays),
  }
}

interface QueryState {
  readonly events: boolean
  readonly firing: boolean
}

const stateLabel = (state: QueryState) =>
  `events ${state.events ? 'on' : 'off'}${state.firing ? `, ${firingSkus} prices/s coming into force` : ''}`

interface QueryRun {
  readonly state: QueryState
  readonly load: LoadResult
  readonly mainMicrosPerRequest: number
  /** With moments firing: the schedule's events the receiver got (and their delays), and what was due. */
  readonly due: number
  readonly delay: DelayRound | null
}

/** The query path under one state: a warm-up, then the measured autocannon run (and its settling). */
class QueryBench {
  #events = true
  readonly #requests: Request[]

  constructor(
    readonly server: PricingServer,
    readonly client: TenantClient,
    readonly receiver: HttpsReceiver,
    readonly scheduler: Scheduler,
  ) {
    this.#requests = scenarioDefinitions(slug, shape).find((definition) => definition.name === 'query-100')!.requests
  }

  async setEvents(on: boolean): Promise<void> {
    if (on === this.#events) return
    await this.client.expect(202, 'PUT', '/settings/effective_price.events.enabled', { value: String(on) })
    this.#events = on
  }

  async load(durationS: number): Promise<Result> {
    const headers = { authorization: `Bearer ${await this.client.refreshToken()}` }
    const options = { url: this.server.url, connections, pipelining: 1, timeout: 30, headers }
    return autocannon({ ...options, requests: this.#requests, duration: durationS })
  }

  async run(state: QueryState): Promise<QueryRun> {
    await this.setEvents(state.events)
    await sleep(500)
    this.receiver.clear()
    let schedule: Schedule = new Map()
    if (state.firing) {
      // Every whole second from the warm-up's end to the run's end.
      const first = Math.ceil((Date.now() + warmupS * 1000 + 200) / 1000) * 1000
      const moments: number[] = []
      for (let at = first; at <= Date.now() + (warmupS + seconds) * 1000; at += 1000) moments.push(at)
      schedule = await this.scheduler.write(moments, firingSkus)
    }
    if (warmupS > 0) await this.load(warmupS)
    const pid = this.server.pid
    const ticksBefore = cpuTicks(pid)
    const mainBefore = threadTicks(pid).get('main') ?? 0
    const started = performance.now()
    const result = await this.load(seconds)
    const elapsedS = (performance.now() - started) / 1000
    const load = loadResult(result, elapsedS, (cpuTicks(pid) - ticksBefore) / clockTicks)
    const mainS = ((threadTicks(pid).get('main') ?? 0) - mainBefore) / clockTicks
    // The last moments' events, delivered after the run, and nothing left to fire in the next.
    await sleep(Math.max(...schedule.values(), 0) + quietMs - Date.now())
    const counted = tally(schedule, receivedEvents(this.receiver.requests))
    const delay: DelayRound = {
      size: schedule.size,
      tally: counted,
      delays: counted.matched.map((event) => event.receivedAt - event.effectiveAt),
      serverDelays: counted.matched.map((event) => event.deliveredAt - event.effectiveAt),
    }
    return {
      state,
      load,
      mainMicrosPerRequest: (mainS * 1e6) / load.requestCount,
      due: state.events ? schedule.size : 0,
      delay: state.firing ? delay : null,
    }
  }
}

const number = (value: number, digits = 0) =>
  Number.isFinite(value)
    ? value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })
    : '-'

function delayTable(summaries: readonly DelaySummary[]): string {
  return renderText({
    header: [
      'batch (prices at one moment)',
      'rounds',
      'scheduled',
      'received',
      'POSTs',
      'dup/other',
      'p50 ms',
      'p99 ms',
      'max ms',
      'server p50/max ms',
    ],
    rows: summaries.map((summary) => [
      summary.label,
      String(summary.rounds),
      number(summary.scheduled),
      number(summary.received),
      number(summary.posts),
      `${summary.duplicates}/${summary.others}`,
      number(percentile(summary.delays, 0.5)),
      number(percentile(summary.delays, 0.99)),
      number(summary.delays.at(-1) ?? Number.NaN),
      `${number(percentile(summary.serverDelays, 0.5))}/${number(summary.serverDelays.at(-1) ?? Number.NaN)}`,
    ]),
    rightAligned: [false, true, true, true, true, true, true, true, true, true],
  })
}

interface StateFigures {
  readonly state: QueryState
  readonly requestsPerSecond: number
  readonly p50: number
  readonly p99: number
  readonly cpu: number
  readonly main: number
  readonly cpuRange: [number, number]
  readonly errors: number
}

function figuresOf(state: QueryState, runs: readonly QueryRun[]): StateFigures {
  const own = runs.filter((run) => run.state === state)
  const cpus = own.map((run) => run.load.cpuMicrosPerRequest)
  return {
    state,
    requestsPerSecond: median(own.map((run) => run.load.requestsPerSecond)),
    p50: median(own.map((run) => run.load.latencyP50Ms)),
    p99: median(own.map((run) => run.load.latencyP99Ms)),
    cpu: median(cpus),
    main: median(own.map((run) => run.mainMicrosPerRequest)),
    cpuRange: [Math.min(...cpus), Math.max(...cpus)],
    errors: own.reduce((sum, run) => sum + run.load.errors + run.load.non2xx, 0),
  }
}

function queryTable(figures: readonly StateFigures[]): string {
  return renderText({
    header: ['POST /price/query 100 SKUs', 'req/s', 'p50 ms', 'p99 ms', 'CPU us/req (range)', 'main us/req', 'errors'],
    rows: figures.map((figure) => [
      stateLabel(figure.state),
      number(figure.requestsPerSecond),
      number(figure.p50, 1),
      number(figure.p99, 1),
      `${number(figure.cpu)} (${number(figure.cpuRange[0])}-${number(figure.cpuRange[1])})`,
      number(figure.main),
      String(figure.errors),
    ]),
    rightAligned: [false, true, true, true, true, true, true],
  })
}

/** on / off of the medians, and the range of the rounds' own ratios (each round has one run of each). */
function ratioLine(runs: readonly QueryRun[], off: StateFigures, on: StateFigures, what: string): string {
  const pick = (state: QueryState) => runs.filter((run) => run.state === state)
  const paired = pick(on.state).map(
    (run, round) => run.load.cpuMicrosPerRequest / pick(off.state)[round]!.load.cpuMicrosPerRequest,
  )
  return (
    `${what}: on / off CPU us/req ${number(on.cpu / off.cpu, 3)} (rounds ${number(Math.min(...paired), 3)}-${number(Math.max(...paired), 3)}), ` +
    `main thread ${number(on.main / off.main, 3)}, p50 ${number(on.p50 / off.p50, 3)}, p99 ${number(on.p99 / off.p99, 3)}, req/s ${number(on.requestsPerSecond / off.requestsPerSecond, 3)}`
  )
}

async function setUp(server: PricingServer): Promise<{ client: TenantClient; receiver: HttpsReceiver }> {
  await server.start(await webhookServerEnv())
  await server.waitReady()
  const client = await provisionTenant(server, slug)
  progress(`generating ${shape.skuCount.toLocaleString('en-US')} SKUs x ${pricelists.length} lists`)
  await generate(client, shape, () => cpuTicks(server.pid) / clockTicks)
  const receiver = await startHttpsReceiver()
  await client.expect(202, 'PUT', '/settings/change.events.enabled', { value: 'true' })
  await client.expect(201, 'POST', '/webhooks', {
    url: `${receiver.url}/effective`,
    entity_type_filter: 'effective_price',
  })
  await client.expect(202, 'PUT', '/settings/effective_price.events.enabled', { value: 'true' })
  await sleep(1_000)
  return { client, receiver }
}

async function delayPart(receiver: HttpsReceiver, scheduler: Scheduler): Promise<DelaySummary[]> {
  const rounds: DelayRound[] = []
  for (let round = 0; round < roundCount; round++) {
    for (const size of sizes) {
      const result = await delayRound(receiver, scheduler, size)
      progress(
        `delay round ${round + 1}/${roundCount}, ${size} prices: ${result.tally.matched.length} events, ` +
          `max ${number(Math.max(...result.delays))} ms`,
      )
      rounds.push(result)
    }
  }
  return sizes.map((size) =>
    summarise(
      size === 1 ? '1 price' : `${number(size)} prices`,
      rounds.filter((round) => round.size === size),
    ),
  )
}

async function queryPart(bench: QueryBench): Promise<{ runs: QueryRun[]; states: QueryState[] }> {
  const states: QueryState[] = [
    { events: false, firing: false },
    { events: true, firing: false },
    { events: true, firing: true },
    { events: false, firing: true },
  ]
  progress('query path: warm-up')
  await bench.load(3)
  const runs: QueryRun[] = []
  for (let round = 0; round < queryRounds; round++) {
    for (const state of round % 2 === 0 ? states : [...states].reverse()) {
      const run = await bench.run(state)
      progress(
        `query round ${round + 1}/${queryRounds}, ${stateLabel(state)}: ${number(run.load.cpuMicrosPerRequest)} us/req, ` +
          `p99 ${number(run.load.latencyP99Ms, 1)} ms` +
          (run.delay === null ? '' : `, ${run.delay.tally.matched.length} of ${run.due} events due`),
      )
      runs.push(run)
    }
  }
  return { runs, states }
}

function report(delays: readonly DelaySummary[], runs: readonly QueryRun[], states: readonly QueryState[]): void {
  const figures = states.map((state) => figuresOf(state, runs))
  const [off, on, onFiring, offFiring] = figures as [StateFigures, StateFigures, StateFigures, StateFigures]
  const firingRuns = runs.filter((run) => run.state.firing && run.state.events)
  const underLoad = summarise(
    `${firingSkus} prices/s, under the query load`,
    firingRuns.map((run) => run.delay!),
  )
  const quietFiring = runs.filter((run) => run.state.firing && !run.state.events)
  const lines = [
    '',
    `Effective-price events on this machine (Node.js ${process.version}, ${os.availableParallelism()} cores, ` +
      `load average ${os.loadavg()[0]!.toFixed(1)} at the end), ${number(shape.skuCount)} SKUs x ${pricelists.length} lists, ` +
      `prices scheduled on ${list.code}, ${batchLabel}, scheduler tick 200 ms`,
    '',
    'Delay from the moment to the webhook receipt (receipt minus effective_at; server = delivered_at minus effective_at)',
    delayTable([...delays, underLoad]),
    '',
    `Query path: ${connections} connections, ${queryRounds} rounds of ${seconds} s (after ${warmupS} s of warm-up) per state, medians`,
    queryTable(figures),
    '',
    ratioLine(runs, off, on, 'idle (no moment firing)'),
    ratioLine(runs, offFiring, onFiring, 'moments firing'),
    `events off while firing: ${quietFiring.reduce((sum, run) => sum + (run.delay?.tally.matched.length ?? 0) + (run.delay?.tally.others ?? 0), 0)} events received (must be 0)`,
    '',
  ]
  process.stdout.write(lines.join('\n'))
}

const workDir = mkdtempSync(path.join(os.tmpdir(), 'pricing-effective-'))
const server = new PricingServer({
  entry: path.join(serverRoot, 'server', 'start.js'),
  dataDir: path.join(workDir, 'data'),
  adminToken: randomBytes(16).toString('hex'),
  // No backup inside a measured window.
  env: { PRICING_BACKUP_INTERVAL_S: '0' },
})
let receiver: HttpsReceiver | null = null
try {
  const setup = await setUp(server)
  receiver = setup.receiver
  const scheduler = new Scheduler(setup.client)
  progress(`delay: ${roundCount} rounds of ${sizes.join(' and ')} prices, ${batchLabel}`)
  const delays = await delayPart(receiver, scheduler)
  const { runs, states } = await queryPart(new QueryBench(server, setup.client, receiver, scheduler))
  report(delays, runs, states)
} finally {
  await receiver?.close()
  await server.stop()
  rmSync(workDir, { recursive: true, force: true })
}
