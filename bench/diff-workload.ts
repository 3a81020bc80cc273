/**
 * The diff benches' tenant and client walk, shared by `bench:diff` (the diff's own time) and
 * `bench:diff-beside` (single GETs' latency while a diff runs), so that both measure the same
 * 100,000 x 10 tenant and walk its pages the same way. The tenant is bench/generate.ts's workload
 * (each pair's last price version is scheduled 30 days ahead, and CHILD-1 inherits NET-1's prices)
 * plus a VAT rate change and an FX publication between the two instants; answers in EUR make
 * every price go through FX.
 * @module
 */
import { generate } from './generate.js'
import type { Answer, TenantClient } from './server-process.js'
import { defaultShape, pricelists, taxAreaCode } from './workload.js'

export const dayMs = 86_400_000

/** The changes between the two instants besides the scheduled prices: a VAT rate and an FX publication. */
async function scheduleChanges(client: TenantClient, nowMs: number): Promise<void> {
  await client.expect(202, 'PUT', '/currency/EUR', { is_active: true, vat_precision: 2 })
  const day = (offsetDays: number) => new Date(nowMs + offsetDays * dayMs).toISOString().slice(0, 10)
  await client.expect(202, 'POST', '/fx/daily', { date: day(-1), rates: { SEK: '11.4321' } })
  await client.expect(202, 'POST', '/fx/daily', { date: day(10), rates: { SEK: '11.9' } })
  await client.expect(202, 'POST', '/vat/rate', {
    tax_area_code: taxAreaCode,
    vat_class_code: 'reduced',
    rate: 10,
    start_date: new Date(nowMs + 5 * dayMs).toISOString(),
  })
}

/**
 * Writes the diff tenant of `skuCount` SKUs x the workload's 10 pricelists through the API, with
 * its changes scheduled after `nowMs`; answers the two instants that frame them all.
 */
export async function buildDiffTenant(
  client: TenantClient,
  options: { skuCount: number; nowMs: number; serverCpuSeconds: () => number },
): Promise<{ from: string; to: string }> {
  await generate(client, { ...defaultShape, skuCount: options.skuCount }, options.serverCpuSeconds)
  await scheduleChanges(client, options.nowMs)
  return {
    from: new Date(Date.now() + 3_600_000).toISOString(),
    // Past the scheduled versions (30 days), the VAT change (5) and the FX publication (10).
    to: new Date(options.nowMs + 35 * dayMs).toISOString(),
  }
}

export interface DiffWalkOptions {
  readonly currency: string
  readonly from: string
  readonly to: string
  /** SKUs per page. */
  readonly limit: number
}

/** The body of the diff's first page over all SKUs of the workload's pricelists. */
export function diffBody(options: DiffWalkOptions): Record<string, unknown> {
  return {
    currency_code: options.currency,
    tax_area: taxAreaCode,
    pricelist_filter: { pricelists: pricelists.map((pricelist) => pricelist.code) },
    from: options.from,
    to: options.to,
    limit: options.limit,
  }
}

export interface Walk {
  readonly pages: number
  readonly items: number
  readonly elapsedMs: number
  readonly slowestPageMs: number
  readonly causes: Record<string, number>
}

/**
 * Every page of the diff, one request after the other, as a client walks the cursor; `post` sends
 * one page's body to POST /price/diff and answers the 200 (it throws on anything else).
 */
export async function walkDiff(options: DiffWalkOptions, post: (body: unknown) => Promise<Answer>): Promise<Walk> {
  const body = diffBody(options)
  const causes: Record<string, number> = {}
  let cursor: string | null = null
  let pages = 0
  let items = 0
  let slowestPageMs = 0
  const started = performance.now()
  do {
    const pageStarted = performance.now()
    const answer = await post(cursor === null ? body : { ...body, cursor })
    slowestPageMs = Math.max(slowestPageMs, performance.now() - pageStarted)
    const page = JSON.parse(answer.text) as { items: { causes: string[] }[]; next_cursor: string | null }
    for (const item of page.items) for (const cause of item.causes) causes[cause] = (causes[cause] ?? 0) + 1
    items += page.items.length
    cursor = page.next_cursor
    pages++
  } while (cursor !== null)
  return { pages, items, elapsedMs: performance.now() - started, slowestPageMs, causes }
}

/** One line of a walk's figures, and its causes on a second. */
export function describeWalk(name: string, result: Walk, extra = ''): string {
  const causes = Object.entries(result.causes)
    .map(([cause, count]) => `${cause} ${count.toLocaleString('en-US')}`)
    .join(', ')
  return (
    `${name}: ${result.items.toLocaleString('en-US')} items changed in ${result.pages} pages, ` +
    `${(result.elapsedMs / 1000).toFixed(2)} s (slowest page ${result.slowestPageMs.toFixed(0)} ms)${extra}` +
    `${causes === '' ? '' : `\n  causes: ${causes}`}\n`
  )
}
