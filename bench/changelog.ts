/**
 * Changelog reads from the middle of a large log while writes go on: a tenant provisioned through
 * the operator API gets a synthetic log (changelog-log.ts; 10 million entries, 200,000 in quick
 * mode), the server restarts on it, and autocannon reads 1,000-entry pages at cursors spread over
 * the middle of the log, unfiltered and with entity_type=article, while a loop writes 100-item
 * price batches through the API to the same tenant. The bound: a 1,000-entry page from the
 * middle of a 10-million-entry log answers in milliseconds (checked as p99 < 50 ms).
 * @module
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { Request } from 'autocannon'
import { encodeCursor } from '../tenant/changelog.js'
import { prepareLog, type LogGeneration } from './changelog-log.js'
import { measureLoad, type LoadParameters, type LoadResult } from './scenarios.js'
import { PricingServer, provisionTenant, request, type TenantClient } from './server-process.js'
import { currencyCode, skuCode } from './workload.js'

const tenantSlug = 'changelog'
export const changelogPageSize = 1_000
/** The "answers in milliseconds", as a bound on the 99th percentile. */
export const changelogP99MaxMs = 50
/** Concurrent readers: a few sync clients paging through the log, not a crowd. */
export const readConnections = 2
/** Cursors per scenario, spread over the middle tenth of the log, so no single page is hot. */
const cursorCount = 64
/** The concurrent writer: 100-item price batches, this many requests in flight. */
export const writeBatchItems = 100
export const writeLanes = 2
const writeSkuCount = 10_000
const writePricelists = ['NET-1', 'NET-2', 'NET-3', 'NET-4']

export interface ChangelogOptions {
  readonly buildRoot: string
  readonly entryCount: number
  readonly seed: number
  /** Where the generated log is cached between runs; null: generated every run. */
  readonly cacheDir: string | null
  readonly load: LoadParameters
  readonly progress: (message: string) => void
}

export interface ConcurrentWrites {
  readonly batchCount: number
  readonly itemsPerSecond: number
  readonly batchP50Ms: number
  readonly batchP99Ms: number
  /** Batches not answered 202 with every item accepted. */
  readonly refused: number
}

export interface ChangelogRead {
  readonly name: string
  readonly title: string
  readonly responseBytes: number
  readonly load: LoadResult
  readonly writes: ConcurrentWrites
}

export interface ChangelogResult {
  readonly log: LogGeneration
  /** Spawn to /readyz 200 on the data directory holding the log. */
  readonly startToReadyMs: number
  readonly readConnections: number
  readonly reads: ChangelogRead[]
}

/** 100-item price batches in a loop until stopped; every batch changes every price it names. */
class WriteLoop {
  readonly durations: number[] = []
  items = 0
  refused = 0
  #batch = 0
  #running = true
  #failure: unknown = null
  readonly #lanes: Promise<void>[]

  constructor(readonly client: TenantClient) {
    this.#lanes = Array.from({ length: writeLanes }, () =>
      this.#lane().catch((error: unknown) => {
        // A failed request (the server gone) ends the loop; stop() reports it.
        this.#running = false
        this.#failure = error
      }),
    )
  }

  async #lane(): Promise<void> {
    while (this.#running) {
      const batch = this.#batch++
      const first = (batch * writeBatchItems) % writeSkuCount
      // The price rises with the batch number, so no item is dropped as unchanged.
      const price = (10_000 + batch) / 100
      const items = Array.from({ length: writeBatchItems }, (_, offset) => ({
        sku: skuCode(first + offset),
        pricelist: writePricelists[batch % writePricelists.length]!,
        price,
      }))
      const started = performance.now()
      const answer = await this.client.call('POST', '/price/batch', items)
      this.durations.push(performance.now() - started)
      const accepted = answer.status === 202 ? (JSON.parse(answer.text) as { accepted: number }).accepted : 0
      this.items += accepted
      if (accepted !== items.length) this.refused++
    }
  }

  mark(): { at: number; items: number; batches: number; refused: number } {
    return { at: performance.now(), items: this.items, batches: this.durations.length, refused: this.refused }
  }

  since(mark: ReturnType<WriteLoop['mark']>): ConcurrentWrites {
    const now = this.mark()
    const durations = this.durations.slice(mark.batches).sort((a, b) => a - b)
    const percentile = (share: number) =>
      durations.length === 0
        ? Number.NaN
        : durations[Math.min(durations.length - 1, Math.floor(share * durations.length))]!
    return {
      batchCount: durations.length,
      itemsPerSecond: ((now.items - mark.items) * 1000) / (now.at - mark.at),
      batchP50Ms: percentile(0.5),
      batchP99Ms: percentile(0.99),
      refused: now.refused - mark.refused,
    }
  }

  async stop(): Promise<void> {
    this.#running = false
    await Promise.all(this.#lanes)
    if (this.#failure !== null) throw this.#failure
  }
}

function readRequests(entryCount: number, filter: string): Request[] {
  const low = Math.floor(entryCount * 0.45)
  const step = Math.floor((entryCount * 0.1) / cursorCount)
  return Array.from({ length: cursorCount }, (_, index) => ({
    method: 'GET',
    path: `/t/${tenantSlug}/changelog?cursor=${encodeCursor(low + index * step)}&limit=${changelogPageSize}${filter}`,
  }))
}

/** The first request must answer a full page of the right entries: otherwise the figures mean nothing. */
async function checkPage(
  server: PricingServer,
  client: TenantClient,
  first: Request,
  entityType: string | null,
): Promise<number> {
  const answer = await request(`${server.url}${first.path}`, 'GET', { token: client.token })
  if (answer.status !== 200) throw new Error(`changelog read answered ${answer.status} ${answer.text.slice(0, 300)}`)
  const page = JSON.parse(answer.text) as { items: { entity_type: string }[]; has_more: boolean }
  const wrongType = entityType !== null && page.items.some((item) => item.entity_type !== entityType)
  if (page.items.length !== changelogPageSize || !page.has_more || wrongType) {
    throw new Error(
      `changelog read answered ${page.items.length} items (has_more ${page.has_more}, wrong type ${wrongType})`,
    )
  }
  return Buffer.byteLength(answer.text)
}

async function writeReference(client: TenantClient): Promise<void> {
  await client.expect(202, 'PUT', `/currency/${currencyCode}`, { is_active: true, vat_precision: 2 })
  for (const code of writePricelists)
    await client.expect(202, 'PUT', `/pricelist/${code}`, { currency_code: currencyCode, name: code, vat_mode: 'NET' })
}

async function measureReads(
  server: PricingServer,
  client: TenantClient,
  options: ChangelogOptions,
): Promise<ChangelogRead[]> {
  const scenarios = [
    {
      name: 'changelog-page',
      title: 'GET /changelog 1,000 entries from the middle',
      requests: readRequests(options.entryCount, ''),
      entityType: null,
    },
    {
      name: 'changelog-article',
      title: 'GET /changelog?entity_type=article 1,000 entries from the middle',
      requests: readRequests(options.entryCount, '&entity_type=article'),
      entityType: 'article',
    },
  ]
  const writes = new WriteLoop(client)
  try {
    const reads: ChangelogRead[] = []
    for (const scenario of scenarios) {
      const responseBytes = await checkPage(server, client, scenario.requests[0]!, scenario.entityType)
      const headers = { authorization: `Bearer ${await client.refreshToken()}` }
      const parameters = { ...options.load, connections: readConnections }
      options.progress(`changelog ${scenario.name}: reads during ingest`)
      // The warm-up runs apart, so that the write figures cover the measured interval only.
      await measureLoad(server.url, server.pid, scenario.requests, headers, {
        ...parameters,
        durationS: parameters.warmupS,
        warmupS: 0,
      })
      const mark = writes.mark()
      const load = await measureLoad(server.url, server.pid, scenario.requests, headers, { ...parameters, warmupS: 0 })
      reads.push({ name: scenario.name, title: scenario.title, responseBytes, load, writes: writes.since(mark) })
    }
    return reads
  } finally {
    await writes.stop()
  }
}

export async function runChangelogBench(options: ChangelogOptions): Promise<ChangelogResult> {
  const workDir = mkdtempSync(path.join(os.tmpdir(), 'pricing-bench-changelog-'))
  const dataDir = path.join(workDir, 'data')
  const server = new PricingServer({
    entry: path.join(options.buildRoot, 'server', 'start.js'),
    dataDir,
    adminToken: randomBytes(16).toString('hex'),
  })
  try {
    await server.start()
    await server.waitReady()
    const client = await provisionTenant(server, tenantSlug)
    await server.stop()
    const log = await prepareLog(
      path.join(dataDir, 'tenants', tenantSlug),
      options.entryCount,
      options.seed,
      options.cacheDir,
      options.progress,
    )
    const started = performance.now()
    await server.start()
    await server.waitReady()
    const startToReadyMs = performance.now() - started
    await client.refreshToken()
    await writeReference(client)
    const reads = await measureReads(server, client, options)
    return { log, startToReadyMs, readConnections, reads }
  } finally {
    await server.stop()
    rmSync(workDir, { recursive: true, force: true })
  }
}
