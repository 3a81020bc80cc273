/**
 * The torture harness's writers: several loops, each with several requests in flight over the
 * session, writing prices, articles, pricelists, VAT rates and settings through the API (single
 * writes, batches and deletes) and recording every outcome in the model. Amounts are sent as
 * strings with at most 4 decimals and compared as canonical decimal strings.
 * @module
 */
import type { Tenant } from './client.js'
import type { Kind, Model, Value } from './model.js'
import type { Prng } from './prng.js'

/** Pricelists that hold the harness's prices (created at setup, never deleted). */
export const pricePricelists = ['PA', 'PB', 'PC'] as const
export const skuCount = 1_200
export const articleCount = 2_000
/** Pricelists the writers create, change and delete (they hold no prices). */
export const extraPricelistCount = 30
export const taxAreas = ['SE', 'NO', 'DK'] as const
export const vatClasses = ['standard', 'reduced', 'zero'] as const
/** Settings the writers change: none of them changes how writes are accepted or delivered. */
export const settingValues: Record<string, readonly string[]> = {
  'default.tax.area': ['SE', 'NO', 'DK', 'FI'],
  'retention.max.versions': ['3', '4', '5', '8', '12'],
  'require.homogeneous.vat_mode': ['true', 'false'],
  'require.homogeneous.currency': ['true', 'false'],
}

export const skuOf = (index: number): string => `S-${String(index).padStart(5, '0')}`
export const articleOf = (index: number): string => `A-${String(index).padStart(5, '0')}`
export const extraPricelistOf = (index: number): string => `PX-${String(index).padStart(3, '0')}`
export const priceKey = (pricelist: string, sku: string): string => `${pricelist}|${sku}`
export const vatKey = (area: string, vatClass: string): string => `${area}|${vatClass}`

/** A decimal amount with at most 4 decimals in canonical form (no trailing zeros). */
export function canonicalAmount(amount: number | string): string {
  const number = Number(amount)
  if (!Number.isFinite(number)) return `invalid:${String(amount)}`
  return number.toFixed(4).replace(/\.?0+$/, '') || '0'
}

/** An amount of `unitsMax` ten-thousandths at most, as a string with 4 decimals. */
function amount(prng: Prng, unitsMin: number, unitsMax: number): string {
  const units = prng.between(unitsMin, unitsMax)
  return `${Math.floor(units / 10_000)}.${String(units % 10_000).padStart(4, '0')}`
}

function sortedObject<T>(
  object: Record<string, T> | null | undefined,
  map: (value: T) => unknown,
): Record<string, unknown> {
  const sorted: Record<string, unknown> = {}
  for (const key of Object.keys(object ?? {}).sort()) sorted[key] = map(object![key]!)
  return sorted
}

interface Break {
  quantity_break: number | string
  fixed_price?: number | string | null
  percent_of_base?: number | string | null
}

/** The compared fields of a price: sales, fields and quantity breaks, amounts canonical. */
export function canonicalPrice(
  price: { sales: number | string; fields?: Record<string, number | string> | null },
  breaks: Break[] | null | undefined,
): string {
  return JSON.stringify({
    sales: canonicalAmount(price.sales),
    fields: sortedObject(price.fields, canonicalAmount),
    breaks: (breaks ?? []).map((entry) => ({
      quantity: canonicalAmount(entry.quantity_break),
      fixed: entry.fixed_price === undefined || entry.fixed_price === null ? null : canonicalAmount(entry.fixed_price),
      percent:
        entry.percent_of_base === undefined || entry.percent_of_base === null
          ? null
          : canonicalAmount(entry.percent_of_base),
    })),
  })
}

export function canonicalArticle(article: {
  name: string
  type: string | null
  metadata?: Record<string, string[]> | null
}): string {
  return JSON.stringify({
    name: article.name,
    type: article.type,
    metadata: sortedObject(article.metadata, (values) => values),
  })
}

export function canonicalPricelist(pricelist: {
  currency_code: string
  vat_mode: string
  name?: string | null
  description?: string | null
  metadata?: Record<string, string[]> | null
}): string {
  return JSON.stringify({
    currency: pricelist.currency_code,
    vat_mode: pricelist.vat_mode,
    name: pricelist.name ?? null,
    description: pricelist.description ?? null,
    metadata: sortedObject(pricelist.metadata, (values) => values),
  })
}

function priceBody(prng: Prng): { price: Record<string, unknown>; quantity_breaks?: Break[]; canonical: string } {
  const price: { sales: string; fields?: Record<string, string> } = { sales: amount(prng, 1, 100_000_000) }
  if (prng.chance(0.4))
    price.fields = {
      cost: amount(prng, 1, 50_000_000),
      ...(prng.chance(0.3) ? { list: amount(prng, 1, 100_000_000) } : {}),
    }
  let breaks: Break[] | undefined
  if (prng.chance(0.2)) {
    breaks = prng.chance(0.5)
      ? [{ quantity_break: String(prng.between(2, 50)), fixed_price: amount(prng, 1, 90_000_000) }]
      : [{ quantity_break: '10', percent_of_base: amount(prng, 1, 1_000_000) }]
  }
  return {
    price,
    ...(breaks === undefined ? {} : { quantity_breaks: breaks }),
    canonical: canonicalPrice(price, breaks),
  }
}

function articleBody(prng: Prng): {
  body: { name: string; type: string; metadata: Record<string, string[]> }
  canonical: string
} {
  const body = {
    name: `article ${prng.index(1_000_000)} ${prng.chance(0.1) ? 'ÅÄÖ ü € 日本' : ''}`.trim(),
    type: prng.pick(['good', 'service', 'bundle-part']),
    metadata: (prng.chance(0.5)
      ? { color: [prng.pick(['red', 'green', 'blue'])], size: [String(prng.between(1, 9))] }
      : {}) as Record<string, string[]>,
  }
  return { body, canonical: canonicalArticle(body) }
}

function pricelistBody(prng: Prng): { body: Record<string, unknown>; canonical: string } {
  const body = {
    currency_code: 'EUR',
    vat_mode: prng.pick(['NET', 'GROSS']),
    name: `pricelist ${prng.index(1_000_000)}`,
    description: prng.chance(0.5) ? `described ${prng.index(1000)}` : null,
    metadata: (prng.chance(0.5) ? { channel: [prng.pick(['web', 'store'])] } : {}) as Record<string, string[]>,
  }
  return { body, canonical: canonicalPricelist(body) }
}

/** Relative weights of the operations. */
export interface Mix {
  priceBatch: number
  priceSingle: number
  priceDelete: number
  articleBatch: number
  articleSingle: number
  articleDelete: number
  pricelist: number
  pricelistDelete: number
  vatRate: number
  setting: number
  /** Largest batch. */
  batchMax: number
  /** Price SKUs used (a smaller range writes many versions of the same pairs: retention). */
  skuRange: number
  /** Pricelists of the price writes. */
  pricelists: readonly string[]
}

export const ingestMix: Mix = {
  priceBatch: 25,
  priceSingle: 15,
  priceDelete: 4,
  articleBatch: 8,
  articleSingle: 10,
  articleDelete: 4,
  pricelist: 6,
  pricelistDelete: 2,
  vatRate: 5,
  setting: 4,
  batchMax: 300,
  skuRange: skuCount,
  pricelists: pricePricelists,
}

/** Many versions of few pairs, so that a retention pass has work. */
export const retentionMix: Mix = {
  ...ingestMix,
  priceBatch: 60,
  priceSingle: 10,
  priceDelete: 1,
  articleBatch: 2,
  articleSingle: 2,
  articleDelete: 1,
  pricelist: 1,
  pricelistDelete: 0,
  vatRate: 1,
  setting: 1,
  batchMax: 600,
  skuRange: 600,
}

interface Item {
  kind: Kind
  key: string
  value: Value
}

interface Operation {
  method: string
  path: string
  body?: unknown
  items: Item[]
  /** Batch answers list refused items in `failed` with these key fields. */
  failedKey?: (failed: Record<string, string>) => string
}

/** Outcome counts by HTTP status (and 'error' for no answer), for the report. */
export type StatusCounts = Map<string, number>

export class Workload {
  #running = false
  #loops: Promise<void>[] = []
  readonly statuses: StatusCounts = new Map()
  /** Answers other than success, 429 and a restore's 503 (findings unless explained). */
  readonly unexpected: string[] = []

  constructor(
    readonly tenant: Tenant,
    readonly model: Model,
  ) {}

  get inFlight(): boolean {
    return this.#running
  }

  start(prng: Prng, concurrency: number, mix: Mix): void {
    if (this.#running) throw new Error('writers already running')
    this.#running = true
    this.#loops = Array.from({ length: concurrency }, () => this.#loop(prng.fork(), mix))
  }

  /** Stops the loops and waits for every request in flight to settle (answered or failed). */
  async stop(): Promise<void> {
    this.#running = false
    await Promise.all(this.#loops)
    this.#loops = []
  }

  async #loop(prng: Prng, mix: Mix): Promise<void> {
    while (this.#running) {
      const operation = this.#operation(prng, mix)
      if (operation === null) {
        await new Promise((resolve) => setTimeout(resolve, 1))
        continue
      }
      await this.execute(operation)
    }
  }

  async execute(operation: Operation): Promise<void> {
    const { model } = this
    try {
      const answer = await this.tenant
        .api(operation.method, operation.path, operation.body)
        .catch((error: Error) => error)
      if (answer instanceof Error) {
        // No answer (the kill cut the connection): written or not.
        this.#count('error')
        for (const item of operation.items) model.maybe(item.kind, item.key, item.value)
        return
      }
      this.#count(String(answer.status))
      if (answer.status === 202) {
        const failed = new Set<string>(
          (answer.body?.failed ?? []).map((entry: Record<string, string>) => operation.failedKey!(entry)),
        )
        if (failed.size > 0)
          this.unexpected.push(
            `${operation.method} ${operation.path}: ${failed.size} refused: ${JSON.stringify(answer.body.failed.slice(0, 3))}`,
          )
        for (const item of operation.items) {
          if (failed.has(item.key)) model.refused++
          else model.acknowledge(item.kind, item.key, item.value)
        }
        return
      }
      if (answer.status >= 500 && answer.status !== 503) {
        // The outcome of a 500 is unknown: it may have been written.
        this.unexpected.push(`${operation.method} ${operation.path}: ${answer.status} ${answer.text.slice(0, 200)}`)
        for (const item of operation.items) model.maybe(item.kind, item.key, item.value)
        return
      }
      // 503 (restoring, storage nearly full), 429 and 4xx change nothing.
      const expected = answer.status === 429 || (answer.status === 503 && answer.body?.code === 'restoring')
      if (!expected) {
        this.unexpected.push(`${operation.method} ${operation.path}: ${answer.status} ${answer.text.slice(0, 200)}`)
        model.refused += operation.items.length
      }
    } finally {
      for (const item of operation.items) model.unlock(item.kind, item.key)
    }
  }

  #count(status: string): void {
    this.statuses.set(status, (this.statuses.get(status) ?? 0) + 1)
  }

  #operation(prng: Prng, mix: Mix): Operation | null {
    const weights: [keyof Mix, number][] = (
      [
        'priceBatch',
        'priceSingle',
        'priceDelete',
        'articleBatch',
        'articleSingle',
        'articleDelete',
        'pricelist',
        'pricelistDelete',
        'vatRate',
        'setting',
      ] as const
    ).map((name): [keyof Mix, number] => [name, mix[name]])
    let roll = prng.next() * weights.reduce((sum, [, weight]) => sum + weight, 0)
    let chosen: keyof Mix = 'priceSingle'
    for (const [name, weight] of weights) {
      roll -= weight
      if (roll < 0) {
        chosen = name
        break
      }
    }
    switch (chosen) {
      case 'priceBatch':
        return this.#priceBatch(prng, mix)
      case 'priceSingle':
        return this.#priceSingle(prng, mix)
      case 'priceDelete':
        return this.#delete('price', () => {
          const pricelist = prng.pick(mix.pricelists)
          const sku = skuOf(prng.index(mix.skuRange))
          return [priceKey(pricelist, sku), `/price/${sku}/${pricelist}`]
        })
      case 'articleBatch':
        return this.#articleBatch(prng, mix)
      case 'articleSingle': {
        const sku = articleOf(prng.index(articleCount))
        if (!this.model.lock('article', sku)) return null
        const { body, canonical } = articleBody(prng)
        return {
          method: 'PUT',
          path: `/article/${sku}`,
          body,
          items: [{ kind: 'article', key: sku, value: canonical }],
        }
      }
      case 'articleDelete':
        return this.#delete('article', () => {
          const sku = articleOf(prng.index(articleCount))
          return [sku, `/article/${sku}`]
        })
      case 'pricelist': {
        const code = extraPricelistOf(prng.index(extraPricelistCount))
        if (!this.model.lock('pricelist', code)) return null
        const { body, canonical } = pricelistBody(prng)
        return {
          method: 'PUT',
          path: `/pricelist/${code}`,
          body,
          items: [{ kind: 'pricelist', key: code, value: canonical }],
        }
      }
      case 'pricelistDelete':
        return this.#delete('pricelist', () => {
          const code = extraPricelistOf(prng.index(extraPricelistCount))
          return [code, `/pricelist/${code}`]
        })
      case 'vatRate': {
        const area = prng.pick(taxAreas)
        const vatClass = prng.pick(vatClasses)
        const key = vatKey(area, vatClass)
        if (!this.model.lock('vat_rate', key)) return null
        const rate = amount(prng, 0, 300_000)
        return {
          method: 'POST',
          path: '/vat/rate',
          body: { tax_area_code: area, vat_class_code: vatClass, rate },
          items: [{ kind: 'vat_rate', key, value: canonicalAmount(rate) }],
        }
      }
      default: {
        const key = prng.pick(Object.keys(settingValues))
        if (!this.model.lock('setting', key)) return null
        const value = prng.pick(settingValues[key]!)
        return { method: 'PUT', path: `/settings/${key}`, body: { value }, items: [{ kind: 'setting', key, value }] }
      }
    }
  }

  /** A delete of a key the model knows to be live (a delete of an absent key answers 404). */
  #delete(kind: Kind, choose: () => [key: string, path: string]): Operation | null {
    for (let attempt = 0; attempt < 8; attempt++) {
      const [key, path] = choose()
      if (!this.model.lock(kind, key)) continue
      const known = this.model.known(kind, key)
      if (known === null || known === undefined) {
        this.model.unlock(kind, key)
        continue
      }
      return { method: 'DELETE', path, items: [{ kind, key, value: null }] }
    }
    return null
  }

  #priceSingle(prng: Prng, mix: Mix): Operation | null {
    const pricelist = prng.pick(mix.pricelists)
    const sku = skuOf(prng.index(mix.skuRange))
    const key = priceKey(pricelist, sku)
    if (!this.model.lock('price', key)) return null
    const { price, quantity_breaks, canonical } = priceBody(prng)
    return {
      method: 'PUT',
      path: `/price/${sku}/${pricelist}`,
      body: { price, ...(quantity_breaks === undefined ? {} : { quantity_breaks }) },
      items: [{ kind: 'price', key, value: canonical }],
    }
  }

  #priceBatch(prng: Prng, mix: Mix): Operation | null {
    const size = prng.between(1, mix.batchMax)
    const items: Item[] = []
    const body: unknown[] = []
    for (let attempt = 0; attempt < size * 2 && items.length < size; attempt++) {
      const pricelist = prng.pick(mix.pricelists)
      const sku = skuOf(prng.index(mix.skuRange))
      const key = priceKey(pricelist, sku)
      if (!this.model.lock('price', key)) continue
      const { price, quantity_breaks, canonical } = priceBody(prng)
      body.push({ sku, pricelist, price, ...(quantity_breaks === undefined ? {} : { quantity_breaks }) })
      items.push({ kind: 'price', key, value: canonical })
    }
    if (items.length === 0) return null
    return {
      method: 'POST',
      path: '/price/batch',
      body,
      items,
      failedKey: (failed) => priceKey(failed['pricelist']!, failed['sku']!),
    }
  }

  #articleBatch(prng: Prng, mix: Mix): Operation | null {
    const size = prng.between(1, mix.batchMax)
    const items: Item[] = []
    const body: unknown[] = []
    for (let attempt = 0; attempt < size * 2 && items.length < size; attempt++) {
      const sku = articleOf(prng.index(articleCount))
      if (!this.model.lock('article', sku)) continue
      const article = articleBody(prng)
      body.push({ sku, ...article.body })
      items.push({ kind: 'article', key: sku, value: article.canonical })
    }
    if (items.length === 0) return null
    return { method: 'POST', path: '/article/batch', body, items, failedKey: (failed) => failed['sku']! }
  }
}
