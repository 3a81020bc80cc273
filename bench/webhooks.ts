/**
 * Webhook impact: price query and ingest throughput of the bench tenant, on the same server and
 * data, in five alternating phases: none, three active webhooks (no filter, price, article) whose
 * HTTPS receiver answers each POST after 2 s, none, the three again, none. The mean of the phases
 * with is compared with the mean of the phases without; with the phases placed symmetrically, a
 * drift over the run (the rewritten data's LMDB pages, machine load) cancels, and two samples of
 * each side halve the noise that one phase of each showed (about ±8% on a shared 2-core machine). `change.events.enabled` is on in every phase: the
 * difference is the dispatcher's work (noting each commit, reading the log, rendering and sending
 * batches) while its backlog grows, since a slow receiver takes 1,000 events per webhook per 2 s.
 * The check: with webhooks, both throughputs stay at 90% or more of the figures without; the
 * receiver must have got events, else delivery did not run and the comparison proves nothing.
 * The receiver is the test suite's (test/helpers/https-receiver.ts); the server trusts its
 * certificate through NODE_EXTRA_CA_CERTS, which `webhookServerEnv` gives.
 * @module
 */
import { startHttpsReceiver, testCertificate, type HttpsReceiver } from '../test/helpers/https-receiver.js'
import { batchItemCount, ingestConcurrency } from './generate.js'
import { cpuTicks } from './proc.js'
import { measureLoad, scenarioDefinitions, type LoadParameters, type LoadResult } from './scenarios.js'
import { request, type PricingServer, type TenantClient } from './server-process.js'
import { priceOf, pricelists, skuCode, versionStartMs, type WorkloadShape } from './workload.js'

/** The slow receiver's delay before answering each POST. */
export const receiverDelayMs = 2_000
/**
 * With webhooks, throughput must stay at this share of the figure without or more. The phases
 * without webhooks differ among themselves by up to about 15% in CPU per version on this shared
 * 2-core machine (drift and noise), so a tighter bound would judge the machine, not the dispatcher;
 * `dispatchShareMax` judges the dispatcher directly.
 */
export const webhookRatioMin = 0.85
/** The dispatcher's main-thread time, as a share of the phases with webhooks, must stay below this. */
export const dispatchShareMax = 0.02
const webhookFilters: readonly (string | null)[] = [null, 'price', 'article']
/** The query scenario measured in both phases (scenarios.ts). */
const queryScenario = 'query-100'

export interface IngestWindow {
  readonly itemCount: number
  readonly requestCount: number
  readonly elapsedMs: number
  readonly itemsPerSecond: number
  readonly serverCpuMicrosPerItem: number
}

export interface WebhookPhase {
  /** Whether the webhooks were active in this phase. */
  readonly webhooks: boolean
  /** Wall time of the phase (ingest and query) and the dispatcher's main-thread time in it. */
  readonly elapsedS: number
  readonly dispatchS: number
  readonly ingest: IngestWindow
  readonly query: LoadResult
}

/** Active webhooks in the phases at odd positions: none, with, none, with, none. */
const phasePlan: readonly boolean[] = [false, true, false, true, false]

export interface WebhookResult {
  readonly receiverDelayMs: number
  readonly webhookCount: number
  readonly queryScenario: string
  /** In the order run (phasePlan). */
  readonly phases: readonly WebhookPhase[]
  /** Mean with webhooks / mean without: req/s of the query, items/s of the ingest. */
  readonly queryRatio: number
  readonly ingestRatio: number
  /** The same for server CPU per request and per item (steadier on a busy machine). */
  readonly queryCpuRatio: number
  readonly ingestCpuRatio: number
  /** The dispatcher's main-thread time over the phases with webhooks, as a share of their time. */
  readonly dispatchShare: number
  /** The same per price version ingested in those phases. */
  readonly dispatchMicrosPerVersion: number
  /** What the receiver got while the phases with webhooks ran: POSTs and events in them. */
  readonly receivedPosts: number
  readonly receivedEvents: number
}

export interface WebhookOptions {
  readonly shape: WorkloadShape
  readonly load: LoadParameters
  readonly slug: string
  readonly progress: (message: string) => void
}

/** Environment the server needs to deliver to the local receiver (set when it is spawned). */
export async function webhookServerEnv(): Promise<Record<string, string>> {
  const { caPath } = await testCertificate()
  return { NODE_EXTRA_CA_CERTS: caPath, PRICING_WEBHOOK_ALLOW_PRIVATE: 'true' }
}

/** Pairs the ingest rewrites, over and over: both phases do the same work on the same data. */
const rewrittenPairsMax = 100_000

/**
 * Price batches (the ingest phase's size and concurrency) for a fixed time. Every item replaces
 * the price of one pair at one start instant after the workload's versions, so a pair holds one
 * version more than the workload's, however often it is written: `prime` adds that version once,
 * then every pass over the pairs changes its price. Both phases thus write the same kind of change
 * to pairs of the same size, and the data does not grow between them.
 */
class PriceWriter {
  #next = 0
  readonly #pairCount: number
  readonly #startDate: string

  constructor(
    readonly client: TenantClient,
    readonly shape: WorkloadShape,
  ) {
    this.#pairCount = Math.min(rewrittenPairsMax, shape.skuCount * pricelists.length)
    this.#startDate = new Date(versionStartMs(shape, shape.versionCount, Date.now())).toISOString()
  }

  #items(): unknown[] {
    return Array.from({ length: batchItemCount }, () => {
      const item = this.#next++
      const pair = item % this.#pairCount
      const skuIndex = Math.floor(pair / pricelists.length)
      const pricelistIndex = pair % pricelists.length
      // Each pass over the pairs writes the next version's price (the workload's are 0 to versionCount - 1).
      const price = priceOf(
        this.shape,
        skuIndex,
        pricelistIndex,
        this.shape.versionCount + Math.floor(item / this.#pairCount),
      ).sales
      return { sku: skuCode(skuIndex), pricelist: pricelists[pricelistIndex]!.code, price, start_date: this.#startDate }
    })
  }

  /** One pass over the pairs, unmeasured: adds the version later passes replace. */
  async prime(): Promise<void> {
    await this.#send(() => this.#next < this.#pairCount)
  }

  async run(durationS: number, serverPid: number, clockTicks: number): Promise<IngestWindow> {
    const ticksBefore = cpuTicks(serverPid)
    const started = performance.now()
    const deadline = started + durationS * 1000
    const { itemCount, requestCount } = await this.#send(() => performance.now() < deadline)
    const elapsedMs = performance.now() - started
    const cpuS = (cpuTicks(serverPid) - ticksBefore) / clockTicks
    return {
      itemCount,
      requestCount,
      elapsedMs,
      itemsPerSecond: (itemCount * 1000) / elapsedMs,
      serverCpuMicrosPerItem: (cpuS * 1e6) / itemCount,
    }
  }

  async #send(more: () => boolean): Promise<{ itemCount: number; requestCount: number }> {
    let itemCount = 0
    let requestCount = 0
    const lane = async (): Promise<void> => {
      while (more()) {
        const items = this.#items()
        const answer = await this.client.expect(202, 'POST', '/price/batch', items)
        const result = JSON.parse(answer.text) as { accepted: number; failed: unknown[] }
        if (result.accepted !== items.length)
          throw new Error(`/price/batch refused ${result.failed.length} items: ${JSON.stringify(result.failed[0])}`)
        itemCount += result.accepted
        requestCount++
      }
    }
    await Promise.all(Array.from({ length: ingestConcurrency }, lane))
    return { itemCount, requestCount }
  }
}

async function measurePhase(
  server: PricingServer,
  client: TenantClient,
  writer: PriceWriter,
  options: WebhookOptions,
  webhooks: boolean,
): Promise<WebhookPhase> {
  const label = webhooks ? `${webhookFilters.length} webhooks, receiver answering after ${receiverDelayMs} ms` : 'none'
  const started = performance.now()
  const dispatchBefore = await dispatchSeconds(server)
  options.progress(`webhooks ${label}: ingest`)
  const ingest = await writer.run(options.load.durationS, server.pid, options.load.clockTicks)
  options.progress(`webhooks ${label}: ${queryScenario}`)
  const scenario = scenarioDefinitions(options.slug, options.shape).find(
    (definition) => definition.name === queryScenario,
  )!
  const headers = { authorization: `Bearer ${await client.refreshToken()}` }
  const query = await measureLoad(server.url, server.pid, scenario.requests, headers, options.load)
  const dispatchS = (await dispatchSeconds(server)) - dispatchBefore
  return { webhooks, elapsedS: (performance.now() - started) / 1000, dispatchS, ingest, query }
}

/** `pricing_webhook_dispatch_seconds_total` from the server's /metrics. */
async function dispatchSeconds(server: PricingServer): Promise<number> {
  const text = (await request(`${server.url}/metrics`, 'GET')).text
  const line = /^pricing_webhook_dispatch_seconds_total (\S+)$/m.exec(text)
  if (line === null) throw new Error('/metrics has no pricing_webhook_dispatch_seconds_total')
  return Number(line[1])
}

async function register(client: TenantClient, receiver: HttpsReceiver): Promise<number[]> {
  const ids: number[] = []
  for (const [index, filter] of webhookFilters.entries()) {
    const answer = await client.expect(201, 'POST', '/webhooks', {
      url: `${receiver.url}/hook-${index}`,
      secret: `bench-secret-${index}`,
      entity_type_filter: filter,
    })
    ids.push((JSON.parse(answer.text) as { id: number }).id)
  }
  return ids
}

/**
 * Runs on the bench server after the HTTP scenarios (the workload is stored; the server was
 * spawned with `webhookServerEnv`). Leaves the webhooks deactivated and the receiver closed.
 */
export async function runWebhookBench(
  server: PricingServer,
  client: TenantClient,
  options: WebhookOptions,
): Promise<WebhookResult> {
  await client.expect(202, 'PUT', '/settings/change.events.enabled', { value: 'true' })
  const writer = new PriceWriter(client, options.shape)
  options.progress('webhooks: writing the version the ingest phases rewrite')
  await writer.prime()
  const receiver = await startHttpsReceiver()
  receiver.respondWith(() => ({ status: 200, delayMs: receiverDelayMs }))
  try {
    const ids = await register(client, receiver)
    // Registered active; deactivated (DELETE) they stop their deliveries and are skipped: the same as none.
    let active = true
    const setActive = async (on: boolean): Promise<void> => {
      if (on === active) return
      for (const id of ids)
        await (on
          ? client.expect(200, 'PUT', `/webhooks/${id}`, { active: true })
          : client.expect(200, 'DELETE', `/webhooks/${id}`))
      active = on
    }
    const phases: WebhookPhase[] = []
    let receivedPosts = 0
    let receivedEvents = 0
    for (const webhooks of phasePlan) {
      await setActive(webhooks)
      receiver.clear()
      phases.push(await measurePhase(server, client, writer, options, webhooks))
      if (!webhooks) continue
      const received = receiver.requests.filter((request) => request.method === 'POST')
      receivedPosts += received.length
      receivedEvents += received.reduce(
        (sum, request) => sum + ((request.body as { events?: unknown[] } | null)?.events?.length ?? 0),
        0,
      )
    }
    await setActive(false)
    const mean = (on: boolean, figure: (phase: WebhookPhase) => number): number => {
      const chosen = phases.filter((phase) => phase.webhooks === on)
      return chosen.reduce((sum, phase) => sum + figure(phase), 0) / chosen.length
    }
    const ratio = (figure: (phase: WebhookPhase) => number): number => mean(true, figure) / mean(false, figure)
    const withPhases = phases.filter((phase) => phase.webhooks)
    const sum = (figure: (phase: WebhookPhase) => number): number =>
      withPhases.reduce((total, phase) => total + figure(phase), 0)
    return {
      receiverDelayMs,
      webhookCount: ids.length,
      queryScenario,
      phases,
      queryRatio: ratio((phase) => phase.query.requestsPerSecond),
      ingestRatio: ratio((phase) => phase.ingest.itemsPerSecond),
      queryCpuRatio: ratio((phase) => phase.query.cpuMicrosPerRequest),
      ingestCpuRatio: ratio((phase) => phase.ingest.serverCpuMicrosPerItem),
      dispatchShare: sum((phase) => phase.dispatchS) / sum((phase) => phase.elapsedS),
      dispatchMicrosPerVersion: (sum((phase) => phase.dispatchS) * 1e6) / sum((phase) => phase.ingest.itemCount),
      receivedPosts,
      receivedEvents,
    }
  } finally {
    await receiver.close()
  }
}
