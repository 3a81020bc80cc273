/**
 * A tenant with one RETAIL pricelist (EUR, NET) and many SKUs priced `base + index`, for the
 * restore and retention suites: the reference data a query needs (currency, tax area SE, a VAT
 * class at 25% mapped to every SKU), prices written in batches of 2,500, and a check that reads
 * every price back through 1,000-SKU queries.
 */
import { expectStatus, query } from './price-fixtures.js'
import type { TenantClient } from './server.js'

export async function retailReference(client: TenantClient, skus: readonly string[]): Promise<void> {
  await expectStatus(client.call('PUT', '/currency/EUR', { is_active: true, vat_precision: 2 }), 202, 'currency')
  await expectStatus(client.call('PUT', '/tax-area/SE', { name: 'Sweden' }), 202, 'tax area')
  await expectStatus(client.call('PUT', '/vat/class/standard', { name: 'standard' }), 202, 'VAT class')
  await expectStatus(
    client.call('POST', '/vat/rate', { tax_area_code: 'SE', vat_class_code: 'standard', rate: 25 }),
    202,
    'VAT rate',
  )
  await expectStatus(
    client.call('PUT', '/pricelist/RETAIL', { currency_code: 'EUR', vat_mode: 'NET' }),
    202,
    'pricelist',
  )
  for (let start = 0; start < skus.length; start += 2_500) {
    const chunk = skus.slice(start, start + 2_500)
    await expectStatus(
      client.call(
        'POST',
        '/article-taxclass/batch',
        chunk.map((sku) => ({ sku_code: sku, tax_area_code: 'SE', vat_class_code: 'standard' })),
      ),
      202,
      'mappings',
    )
  }
}

/** Every SKU's RETAIL price set to `base + index` (batches of 2,500); `extra` goes into each item. */
export async function writeRetailPrices(
  client: TenantClient,
  skus: readonly string[],
  base: number,
  extra: Record<string, unknown> = {},
): Promise<void> {
  for (let start = 0; start < skus.length; start += 2_500) {
    const items = skus
      .slice(start, start + 2_500)
      .map((sku, offset) => ({ sku, pricelist: 'RETAIL', price: base + start + offset, ...extra }))
    const answer = await expectStatus(client.call('POST', '/price/batch', items), 202, 'prices')
    if (answer.body.failed.length > 0) throw new Error(`prices refused: ${answer.text.slice(0, 500)}`)
  }
}

/** The base every SKU's net price is at (net = base + the SKU's index, its code after `prefix`), or 'mixed'. */
export async function retailBase(
  client: TenantClient,
  skus: readonly string[],
  prefix: string,
): Promise<number | 'mixed'> {
  const bases = new Set<number>()
  for (let start = 0; start < skus.length; start += 1_000) {
    const chunk = skus.slice(start, start + 1_000)
    const answer = await expectStatus(client.call('POST', '/price/query', query(chunk, ['RETAIL'])), 200, 'query')
    if (answer.body.items.length !== chunk.length) return 'mixed'
    for (const item of answer.body.items as { sku: string; net: number }[])
      bases.add(item.net - Number(item.sku.slice(prefix.length)))
  }
  return bases.size === 1 ? [...bases][0]! : 'mixed'
}
