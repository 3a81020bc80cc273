/**
 * What the torture harness checks after every restart, through the API only:
 * - every key of the model reads back as acknowledged (or as one of its in-flight writes);
 * - the changelog from its oldest held entry to its head: sequences strictly increasing by one
 *   (no gap, no duplicate), the head never behind one read before, and no more evicted than the
 *   capacity allows;
 * - the webhook's receiver got every sequence recorded since the webhook was registered
 *   (duplicates allowed: at-least-once).
 * @module
 */
import type { HttpsReceiver } from '../helpers/https-receiver.js'
import type { Tenant } from './client.js'
import { kinds, type Kind, type Mismatch, type Model, type Value } from './model.js'
import {
  canonicalAmount,
  canonicalArticle,
  canonicalPrice,
  canonicalPricelist,
  pricePricelists,
  priceKey,
  settingValues,
  vatKey,
} from './workload.js'

const pageSize = 1000
const pagesMax = 10_000

async function pages(tenant: Tenant, path: string): Promise<any[]> {
  const items: any[] = []
  for (let page = 1; page <= pagesMax; page++) {
    const separator = path.includes('?') ? '&' : '?'
    const answer = await tenant.api('GET', `${path}${separator}page=${page}&size=${pageSize}`)
    if (answer.status !== 200)
      throw new Error(`GET ${path} page ${page}: ${answer.status} ${answer.text.slice(0, 300)}`)
    items.push(...answer.body.items)
    if (page * pageSize >= answer.body.total) return items
  }
  throw new Error(`GET ${path}: more than ${pagesMax} pages`)
}

/** What the service holds now for every key the writers use, in the model's canonical form. */
export async function readState(tenant: Tenant): Promise<Map<Kind, Map<string, Value>>> {
  const state = new Map<Kind, Map<string, Value>>(kinds.map((kind) => [kind, new Map()]))
  for (const pricelist of pricePricelists) {
    for (const record of await pages(tenant, `/price?pricelist=${pricelist}`)) {
      state
        .get('price')!
        .set(priceKey(record.pricelist, record.sku), canonicalPrice(record.price, record.quantity_breaks))
    }
  }
  for (const article of await pages(tenant, '/article')) {
    if (article.sku.startsWith('A-')) state.get('article')!.set(article.sku, canonicalArticle(article))
  }
  for (const pricelist of await pages(tenant, '/pricelist')) {
    if (pricelist.code.startsWith('PX-')) state.get('pricelist')!.set(pricelist.code, canonicalPricelist(pricelist))
  }
  const rates = await tenant.api('GET', '/vat/rates')
  if (rates.status !== 200) throw new Error(`GET /vat/rates: ${rates.status} ${rates.text.slice(0, 300)}`)
  for (const rate of rates.body)
    state.get('vat_rate')!.set(vatKey(rate.tax_area_code, rate.vat_class_code), canonicalAmount(rate.rate))
  const settings = await tenant.api('GET', '/settings')
  if (settings.status !== 200) throw new Error(`GET /settings: ${settings.status} ${settings.text.slice(0, 300)}`)
  for (const setting of settings.body)
    if (setting.key in settingValues) state.get('setting')!.set(setting.key, setting.value)
  return state
}

export interface StateCheck {
  keys: number
  mismatches: Mismatch[]
  /** Keys the service holds that the model never wrote (outside setup data). */
  phantoms: string[]
}

/** Compares every key of the model with what the service holds (and adopts what it holds). */
export function checkState(model: Model, state: Map<Kind, Map<string, Value>>): StateCheck {
  const mismatches: Mismatch[] = []
  const phantoms: string[] = []
  let keys = 0
  for (const kind of kinds) {
    const observed = state.get(kind)!
    const known = new Set(model.keys(kind))
    for (const key of known) {
      keys++
      const mismatch = model.check(kind, key, observed.get(key) ?? null)
      if (mismatch !== null) mismatches.push(mismatch)
    }
    for (const key of observed.keys()) if (!known.has(key)) phantoms.push(`${kind} ${key}`)
  }
  return { keys, mismatches, phantoms }
}

export interface ChangelogCheck {
  oldest: number
  head: number
  entries: number
  gaps: string[]
  duplicates: number[]
}

/**
 * Walks the changelog from its oldest held entry to its head. `previousHead` is the head read after
 * the last restart: an entry once read never disappears, so the head may not fall behind it.
 */
export async function checkChangelog(tenant: Tenant, previousHead: number, capacity: number): Promise<ChangelogCheck> {
  const gaps: string[] = []
  const duplicates: number[] = []
  let cursor: string | undefined
  let oldest = 0
  let head = 0
  let entries = 0
  for (let page = 1; page <= pagesMax; page++) {
    const answer = await tenant.api(
      'GET',
      `/changelog?limit=1000${cursor === undefined ? '' : `&cursor=${encodeURIComponent(cursor)}`}`,
    )
    if (answer.status !== 200) throw new Error(`GET /changelog: ${answer.status} ${answer.text.slice(0, 300)}`)
    for (const entry of answer.body.items as { sequence: number }[]) {
      entries++
      if (oldest === 0) oldest = entry.sequence
      else if (entry.sequence === head) duplicates.push(entry.sequence)
      else if (entry.sequence < head) gaps.push(`sequence fell from ${head} to ${entry.sequence}`)
      else if (entry.sequence !== head + 1) gaps.push(`${head + 1}-${entry.sequence - 1} missing`)
      head = Math.max(head, entry.sequence)
    }
    cursor = answer.body.next_cursor
    if (!answer.body.has_more) {
      if (head < previousHead) gaps.push(`head ${head} is behind ${previousHead}, read before the kill`)
      const oldestAllowed = Math.max(1, head - capacity + 1)
      if (entries > 0 && oldest > oldestAllowed)
        gaps.push(`oldest held ${oldest}, but a capacity of ${capacity} keeps from ${oldestAllowed}`)
      return { oldest, head, entries, gaps, duplicates }
    }
  }
  throw new Error('the changelog did not end')
}

/** The sequences a receiver got, drained from its request list as they come. */
export class Deliveries {
  readonly seen = new Set<number>()
  duplicates = 0
  posts = 0

  constructor(readonly receiver: HttpsReceiver) {}

  drain(): void {
    for (const request of this.receiver.requests.splice(0)) {
      this.posts++
      for (const event of request.body?.events ?? []) {
        if (this.seen.has(event.sequence)) this.duplicates++
        else this.seen.add(event.sequence)
      }
    }
  }

  /** Waits until every sequence in (after, through] has arrived; answers those still missing at the time-out. */
  async waitFor(after: number, through: number, timeoutMs: number): Promise<number[]> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      this.drain()
      const missing: number[] = []
      for (let sequence = after + 1; sequence <= through; sequence++)
        if (!this.seen.has(sequence)) missing.push(sequence)
      if (missing.length === 0 || Date.now() > deadline) return missing
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }
}
