/**
 * Writes the bench workload through the public API, as a client would: currency, tax area, VAT
 * classes and rates, articles and their VAT mappings in 2,500-item batches, the pricelists, then
 * every price version through POST /price/batch. Only the price phase is timed: items/s counts
 * price versions acknowledged by durable 202s, with a few requests in flight.
 * @module
 */
import {
  currencyCode,
  priceOf,
  pricelists,
  skuCode,
  taxAreaCode,
  vatClasses,
  vatClassOf,
  versionStartMs,
  writtenNowCount,
  pricedPairs,
  type WorkloadShape,
} from './workload.js'
import type { TenantClient } from './server-process.js'

/** Items per batch request: the API's maximum. */
export const batchItemCount = 2_500
/** Batch requests in flight during ingest: enough to overlap parsing with the durable commit. */
export const ingestConcurrency = 4

export interface IngestResult {
  readonly priceVersionCount: number
  readonly requestCount: number
  readonly elapsedMs: number
  readonly itemsPerSecond: number
  /** Server CPU time (all threads) over the price phase per acknowledged version. */
  readonly serverCpuMicrosPerItem: number
  /** Server CPU time over the price phase divided by its length: cores kept busy. */
  readonly serverCores: number
}

export interface GenerateResult {
  readonly articleCount: number
  readonly referenceMs: number
  readonly ingest: IngestResult
}

async function writeReference(client: TenantClient): Promise<void> {
  await client.expect(202, 'PUT', `/currency/${currencyCode}`, { is_active: true, vat_precision: 2 })
  await client.expect(202, 'PUT', `/tax-area/${taxAreaCode}`, { name: 'Sweden' })
  for (const vatClass of vatClasses) {
    await client.expect(202, 'PUT', `/vat/class/${vatClass.code}`, { name: vatClass.code })
    await client.expect(202, 'POST', '/vat/rate', {
      tax_area_code: taxAreaCode,
      vat_class_code: vatClass.code,
      rate: vatClass.rate,
    })
  }
}

/** Sends `chunkCount` batches built by `build`, `concurrency` at a time; checks every item was accepted. */
async function sendBatches(
  client: TenantClient,
  path: string,
  chunkCount: number,
  concurrency: number,
  build: (chunkIndex: number) => unknown[],
): Promise<number> {
  let next = 0
  let accepted = 0
  const lane = async (): Promise<void> => {
    while (next < chunkCount) {
      const items = build(next++)
      const answer = await client.expect(202, 'POST', path, items)
      const result = JSON.parse(answer.text) as { accepted: number; failed: { message: string }[] }
      if (result.failed.length > 0 || result.accepted !== items.length) {
        throw new Error(`${path}: ${result.failed.length} items refused, first: ${JSON.stringify(result.failed[0])}`)
      }
      accepted += result.accepted
    }
  }
  await Promise.all(Array.from({ length: concurrency }, lane))
  return accepted
}

async function writeArticles(client: TenantClient, shape: WorkloadShape): Promise<void> {
  const chunkCount = Math.ceil(shape.skuCount / batchItemCount)
  const range = (chunk: number) => {
    const first = chunk * batchItemCount
    return Array.from({ length: Math.min(batchItemCount, shape.skuCount - first) }, (_, offset) => first + offset)
  }
  await sendBatches(client, '/article/batch', chunkCount, 2, (chunk) =>
    range(chunk).map((index) => ({
      sku: skuCode(index),
      name: `Article ${index}`,
      type: 'product',
      metadata: { group: [`G${index % 50}`] },
    })),
  )
  await sendBatches(client, '/article-taxclass/batch', chunkCount, 2, (chunk) =>
    range(chunk).map((index) => ({
      sku_code: skuCode(index),
      tax_area_code: taxAreaCode,
      vat_class_code: vatClassOf(shape, index),
    })),
  )
}

async function writePricelists(client: TenantClient): Promise<void> {
  for (const pricelist of pricelists) {
    const body: Record<string, unknown> = { currency_code: currencyCode, name: pricelist.code }
    if (pricelist.vatMode !== null) body['vat_mode'] = pricelist.vatMode
    if (pricelist.parentCode !== null) body['parent_code'] = pricelist.parentCode
    await client.expect(202, 'PUT', `/pricelist/${pricelist.code}`, body)
  }
}

/**
 * The items of one price batch: version phases in order (each phase writes over the one before),
 * SKU-major within a phase; `pairs` from `pricedPairs`.
 */
function priceChunk(
  shape: WorkloadShape,
  pairs: Int32Array,
  chunk: number,
  startDates: readonly (string | null)[],
): unknown[] {
  const pairCount = pairs.length
  const items: unknown[] = []
  for (
    let item = chunk * batchItemCount;
    item < Math.min((chunk + 1) * batchItemCount, pairCount * shape.versionCount);
    item++
  ) {
    const version = Math.floor(item / pairCount)
    const pair = pairs[item % pairCount]!
    const skuIndex = Math.floor(pair / pricelists.length)
    const pricelistIndex = pair % pricelists.length
    const price = priceOf(shape, skuIndex, pricelistIndex, version)
    const entry: Record<string, unknown> = {
      sku: skuCode(skuIndex),
      pricelist: pricelists[pricelistIndex]!.code,
      price: price.sales,
    }
    if (price.breaks !== null) entry['quantity_breaks'] = price.breaks
    const start = startDates[version]
    if (start !== null) entry['start_date'] = start
    items.push(entry)
  }
  return items
}

async function writePrices(
  client: TenantClient,
  shape: WorkloadShape,
  serverCpuSeconds: () => number,
): Promise<IngestResult> {
  const nowMs = Date.now()
  // All but the last version have no start date: each is in force from its write and supersedes
  // the one before (stored as history). The last is scheduled ahead.
  const startDates = Array.from({ length: shape.versionCount }, (_, version) =>
    version < writtenNowCount(shape) ? null : new Date(versionStartMs(shape, version, nowMs)).toISOString(),
  )
  const pairs = pricedPairs(shape)
  const total = pairs.length * shape.versionCount
  const chunkCount = Math.ceil(total / batchItemCount)
  const cpuBefore = serverCpuSeconds()
  const started = performance.now()
  const accepted = await sendBatches(client, '/price/batch', chunkCount, ingestConcurrency, (chunk) =>
    priceChunk(shape, pairs, chunk, startDates),
  )
  const elapsedMs = performance.now() - started
  const cpuS = serverCpuSeconds() - cpuBefore
  return {
    priceVersionCount: accepted,
    requestCount: chunkCount,
    elapsedMs,
    itemsPerSecond: (accepted * 1000) / elapsedMs,
    serverCpuMicrosPerItem: (cpuS * 1e6) / accepted,
    serverCores: (cpuS * 1000) / elapsedMs,
  }
}

/** `serverCpuSeconds` reads the server's CPU time so far (it is a process of its own). */
export async function generate(
  client: TenantClient,
  shape: WorkloadShape,
  serverCpuSeconds: () => number,
): Promise<GenerateResult> {
  const started = performance.now()
  await writeReference(client)
  await writeArticles(client, shape)
  await writePricelists(client)
  const referenceMs = performance.now() - started
  const ingest = await writePrices(client, shape, serverCpuSeconds)
  return { articleCount: shape.skuCount, referenceMs, ingest }
}
