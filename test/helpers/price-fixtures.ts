/**
 * Reference data the price suites share: currencies, tax areas, VAT classes and rates, FX rates,
 * pricelists, prices and mappings, written through the real API. Each helper throws with the answer
 * when a setup call is refused, so a broken fixture reads as such and not as a failed assertion.
 */
import type { Answer, TenantClient } from './server.js'

/** EUR -> X rates in force now (published 2024-01-02) and from 2998-01-01. */
export const fxNow = { SEK: '11.4321', JPY: '160', USD: '1.1' }
export const fxFuture = { SEK: '12' }
export const fxNowDate = '2024-01-02'
export const fxFutureDate = '2998-01-01'

/** Fails loudly when a setup call does not answer `status`. */
export async function expectStatus(pending: Promise<Answer>, status: number, what: string): Promise<Answer> {
  const answer = await pending
  if (answer.status !== status) throw new Error(`${what}: expected ${status}, got ${answer.status} ${answer.text}`)
  return answer
}

/**
 * POST /fx/daily belongs to another module; while it is being built it may answer 404 for a moment,
 * so a setup retries for up to a minute before failing.
 */
export async function postFx(
  client: TenantClient,
  date: string,
  rates: Record<string, string | number>,
): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const answer = await client.call('POST', '/fx/daily', { date, rates })
    if (answer.status === 202) return
    if (attempt >= 60) throw new Error(`POST /fx/daily: ${answer.status} ${answer.text}`)
    await new Promise((resolve) => setTimeout(resolve, 1000))
  }
}

/**
 * Currencies EUR and SEK (VAT to 2 decimals) and JPY (to 0); tax areas SE and DE; VAT classes
 * standard, reduced and zero; rates SE 25 / 12, DE 19 / 7 (zero has no rate anywhere); FX rates.
 */
export async function setupReference(client: TenantClient): Promise<void> {
  for (const [code, precision] of [
    ['EUR', 2],
    ['SEK', 2],
    ['JPY', 0],
  ] as const) {
    await expectStatus(
      client.call('PUT', `/currency/${code}`, { is_active: true, vat_precision: precision }),
      202,
      `currency ${code}`,
    )
  }
  for (const code of ['SE', 'DE'])
    await expectStatus(client.call('PUT', `/tax-area/${code}`, { name: code }), 202, `tax area ${code}`)
  for (const code of ['standard', 'reduced', 'zero']) {
    await expectStatus(client.call('PUT', `/vat/class/${code}`, { name: code }), 202, `VAT class ${code}`)
  }
  const rates: [string, string, number][] = [
    ['SE', 'standard', 25],
    ['SE', 'reduced', 12],
    ['DE', 'standard', 19],
    ['DE', 'reduced', 7],
  ]
  for (const [area, vatClass, rate] of rates) {
    await expectStatus(
      client.call('POST', '/vat/rate', { tax_area_code: area, vat_class_code: vatClass, rate }),
      202,
      `VAT rate ${area}/${vatClass}`,
    )
  }
  await postFx(client, fxNowDate, fxNow)
  await postFx(client, fxFutureDate, fxFuture)
}

/** Maps SKUs to a VAT class in both SE and DE. */
export async function mapSkus(
  client: TenantClient,
  vatClass: string,
  skus: readonly string[],
  areas: readonly string[] = ['SE', 'DE'],
): Promise<void> {
  const items = skus.flatMap((sku) =>
    areas.map((area) => ({ sku_code: sku, tax_area_code: area, vat_class_code: vatClass })),
  )
  const answer = await expectStatus(client.call('POST', '/article-taxclass/batch', items), 202, 'mappings')
  if (answer.body.failed.length > 0) throw new Error(`mappings failed: ${answer.text}`)
}

export async function putPricelist(client: TenantClient, code: string, body: Record<string, unknown>): Promise<void> {
  await expectStatus(client.call('PUT', `/pricelist/${code}`, body), 202, `pricelist ${code}`)
}

export async function putArticle(client: TenantClient, sku: string, body: Record<string, unknown>): Promise<void> {
  await expectStatus(client.call('PUT', `/article/${sku}`, body), 202, `article ${sku}`)
}

export async function putPrice(
  client: TenantClient,
  sku: string,
  pricelist: string,
  body: Record<string, unknown>,
): Promise<void> {
  await expectStatus(client.call('PUT', `/price/${sku}/${pricelist}`, body), 202, `price ${sku}/${pricelist}`)
}

export async function putSetting(client: TenantClient, key: string, value: string): Promise<void> {
  await expectStatus(client.call('PUT', `/settings/${key}`, { value }), 202, `setting ${key}`)
}

/** Price entries of the changelog for one SKU (entity_code), oldest first. */
export async function priceChanges(
  client: TenantClient,
  sku: string,
): Promise<{ change_type: string; composite_key: string; content_hash: string }[]> {
  const answer = await expectStatus(client.get('/changelog?entity_type=price&limit=1000'), 200, 'changelog')
  return answer.body.items.filter((item: { entity_code: string }) => item.entity_code === sku)
}

/** The body of a price query with the usual defaults. */
export function query(
  skus: string[],
  pricelists: string[],
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return { currency_code: 'EUR', tax_area: 'SE', skus, pricelist_filter: { pricelists }, ...extra }
}

/** The instants of scheduled histories (a write cannot start in the past): day 0 is 2998-01-01. */
const futureEpoch = Date.parse('2998-01-01T00:00:00Z')

/** The API's instant of a day after 2998-01-01 (no milliseconds when there are none). */
export function futureDay(count: number): string {
  return new Date(futureEpoch + count * 86_400_000).toISOString().replace('.000Z', 'Z')
}
