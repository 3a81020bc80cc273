/**
 * POST /price/diff against the real server. A tenant schedules, between the two instants, a new
 * own price, a parent's new price, a VAT rate change, a VAT reclassification, an FX publication
 * (the fixtures' SEK rate from 2998-01-01), a list whose window closes and one whose window opens,
 * and a deletion. The diff must be exactly the set two plain POST /price/query calls (as_of = from,
 * as_of = to) answer differently, name each item's cause, page without gaps or repeats, cost its
 * SKUs against the query rate, and refuse bad input with 400.
 */
import t from 'tap'
import { expectStatus, mapSkus, putPrice, putPricelist, query, setupReference } from '../../helpers/price-fixtures.js'
import type { TenantClient } from '../../helpers/server.js'
import { suiteServer } from '../../helpers/suite.js'

const from = '2997-06-01T00:00:00Z'
const to = '2998-06-01T00:00:00Z'
/** When the scheduled changes start: between the two instants. */
const change = '2998-02-01T00:00:00Z'
const lists = ['CHILD', 'OLD', 'PROMO', 'SEKL']

const {
  server,
  tenants: { acme },
} = await suiteServer({
  tenants: {
    acme: {
      // Default pages cost 1,000 items each: the bucket of the smallest plan would refuse this file's calls.
      tier: 'enterprise',
      reference: true,
      pricelists: {
        BASE: { currency_code: 'EUR', vat_mode: 'NET' },
        CHILD: { currency_code: 'EUR', parent_code: 'BASE' },
        OLD: { currency_code: 'EUR', vat_mode: 'NET', end_date: change },
        PROMO: { currency_code: 'EUR', vat_mode: 'NET', start_date: '2998-03-01T00:00:00Z' },
        SEKL: { currency_code: 'SEK', vat_mode: 'GROSS' },
      },
    },
  },
})

/** Each SKU and the causes its change must name (S-SAME does not change). */
const expectedCauses: Record<string, string[]> = {
  'S-OWN': ['own_version'],
  'S-PARENT': ['parent_version'],
  'S-VAT': ['vat_rate'],
  'S-RECLASS': ['vat_reclassification'],
  'S-FX': ['fx_rate'],
  'S-WINDOW': ['list_window'],
  'S-PROMO': ['list_window'],
  'S-GONE': ['own_version'],
}
const allSkus = [...Object.keys(expectedCauses), 'S-SAME'].sort()

await mapSkus(
  acme,
  'standard',
  allSkus.filter((sku) => sku !== 'S-VAT'),
)
await mapSkus(acme, 'reduced', ['S-VAT'])
await putPrice(acme, 'S-OWN', 'CHILD', { price: 10 })
await putPrice(acme, 'S-OWN', 'CHILD', { price: 12, start_date: change })
await putPrice(acme, 'S-PARENT', 'BASE', { price: 20 })
await putPrice(acme, 'S-PARENT', 'BASE', { price: 22, start_date: change })
await putPrice(acme, 'S-VAT', 'CHILD', { price: 30 })
await putPrice(acme, 'S-RECLASS', 'CHILD', { price: 40 })
await putPrice(acme, 'S-FX', 'SEKL', { price: 114.321 })
await putPrice(acme, 'S-WINDOW', 'OLD', { price: 5 })
await putPrice(acme, 'S-WINDOW', 'CHILD', { price: 8 })
await putPrice(acme, 'S-PROMO', 'CHILD', { price: 50 })
await putPrice(acme, 'S-PROMO', 'PROMO', { price: 45 })
await putPrice(acme, 'S-SAME', 'CHILD', { price: 60 })
await putPrice(acme, 'S-GONE', 'CHILD', { price: 70 })
await expectStatus(acme.call('DELETE', `/price/S-GONE/CHILD?when=${change}`), 202, 'scheduled delete')
// SE reduced 12% -> 6% (only S-VAT is reduced); S-RECLASS moves from standard (25%) to reduced.
await expectStatus(
  acme.call('POST', '/vat/rate', { tax_area_code: 'SE', vat_class_code: 'reduced', rate: 6, start_date: change }),
  202,
  'scheduled VAT rate',
)
await expectStatus(
  acme.call('POST', '/article-taxclass', {
    sku_code: 'S-RECLASS',
    tax_area_code: 'SE',
    vat_class_code: 'reduced',
    start_date: change,
  }),
  202,
  'scheduled reclassification',
)

type Side = { pricelist: string; net: number; vat: number; gross: number } | { reason: string }
interface DiffItem {
  sku: string
  from: Side
  to: Side
  change_percent: string | null
  causes: string[]
}

function diffBody(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { currency_code: 'EUR', tax_area: 'SE', pricelist_filter: { pricelists: lists }, from, to, ...extra }
}

async function diff(
  client: TenantClient,
  body: Record<string, unknown>,
): Promise<{ items: DiffItem[]; next_cursor: string | null }> {
  const answer = await client.call('POST', '/price/diff', body)
  if (answer.status !== 200) throw new Error(`diff: ${answer.status} ${answer.text}`)
  return answer.body
}

/** The side of one SKU as a plain query at `at` answers it. */
async function plainSides(at: string): Promise<Map<string, Side>> {
  const answer = await expectStatus(
    acme.call('POST', '/price/query', query(allSkus, lists, { as_of: at })),
    200,
    'query',
  )
  const sides = new Map<string, Side>()
  for (const item of answer.body.items)
    sides.set(item.sku, { pricelist: item.pricelist, net: item.net, vat: item.vat, gross: item.gross })
  for (const missing of answer.body.unavailable) sides.set(missing.sku, { reason: missing.reason })
  return sides
}

t.test('the diff is the set two plain queries answer differently, each with its cause', async (t) => {
  const before = await plainSides(from)
  const after = await plainSides(to)
  const expected = allSkus
    .filter((sku) => JSON.stringify(before.get(sku)) !== JSON.stringify(after.get(sku)))
    .filter((sku) => !('reason' in before.get(sku)! && 'reason' in after.get(sku)!))
    .map((sku) => ({ sku, from: before.get(sku), to: after.get(sku) }))
  t.same(
    expected.map((item) => item.sku),
    Object.keys(expectedCauses).sort(),
    'the fixture changes every SKU but S-SAME',
  )
  const answer = await diff(acme, diffBody({ skus: allSkus }))
  t.same(
    answer.items.map(({ sku, from, to }) => ({ sku, from, to })),
    expected,
  )
  t.equal(answer.next_cursor, null)
  for (const item of answer.items) t.same(item.causes, expectedCauses[item.sku], `causes of ${item.sku}`)
})

t.test('hand-computed sides and change percents', async (t) => {
  const { items } = await diff(acme, diffBody({ skus: ['S-OWN', 'S-FX', 'S-VAT', 'S-GONE', 'S-PROMO'] }))
  const bySku = new Map(items.map((item) => [item.sku, item]))
  // 10 net + 25% = 12.50 gross -> 12 net + 3 = 15.00: +20%.
  t.same(bySku.get('S-OWN'), {
    sku: 'S-OWN',
    from: { pricelist: 'CHILD', net: 10, vat: 2.5, gross: 12.5 },
    to: { pricelist: 'CHILD', net: 12, vat: 3, gross: 15 },
    change_percent: '20.0000',
    causes: ['own_version'],
  })
  // 114.321 SEK gross / 11.4321 = 10 EUR gross (VAT 10 x 25 / 125 = 2.00 backed out); / 12 = 9.52675 -> 9.5268,
  // VAT 9.5268 x 25 / 125 = 1.90536 -> 1.91, net 7.6168: -4.7320%.
  t.same(bySku.get('S-FX')!.from, { pricelist: 'SEKL', net: 8, vat: 2, gross: 10 })
  t.same(bySku.get('S-FX')!.to, { pricelist: 'SEKL', net: 7.6168, vat: 1.91, gross: 9.5268 })
  t.equal(bySku.get('S-FX')!.change_percent, '-4.7320')
  // 30 net: 12% -> 3.60 VAT, 33.60 gross; 6% -> 1.80, 31.80: -5.357142...% -> -5.3571.
  t.equal(bySku.get('S-VAT')!.change_percent, '-5.3571')
  // Unavailable at `to`: no percent.
  t.same(bySku.get('S-GONE')!.to, { reason: 'no_price' })
  t.equal(bySku.get('S-GONE')!.change_percent, null)
  // CHILD 50 (62.50 gross) -> PROMO 45 (56.25): -10%.
  t.same(
    [bySku.get('S-PROMO')!.to, bySku.get('S-PROMO')!.change_percent],
    [{ pricelist: 'PROMO', net: 45, vat: 11.25, gross: 56.25 }, '-10.0000'],
  )
})

t.test('all SKUs of the lists, paged: the pages together are the whole diff, no SKU twice', async (t) => {
  const whole = await diff(acme, diffBody())
  t.same(
    whole.items.map((item) => item.sku),
    Object.keys(expectedCauses).sort(),
  )
  t.equal(whole.next_cursor, null)
  const seen: DiffItem[] = []
  let cursor: string | null = null
  let pages = 0
  do {
    const page: { items: DiffItem[]; next_cursor: string | null } = await diff(
      acme,
      diffBody(cursor === null ? { limit: 2 } : { limit: 2, cursor }),
    )
    seen.push(...page.items)
    cursor = page.next_cursor
    pages++
  } while (cursor !== null && pages < 50)
  t.same(seen, whole.items)
  t.equal(new Set(seen.map((item) => item.sku)).size, seen.length)
  // 9 SKUs with prices, 2 per page.
  t.equal(pages, 5)
})

t.test('a page runs on a price worker: the main thread stays free for single reads', async (t) => {
  const answer = await acme.call('POST', '/price/diff', diffBody({ skus: ['S-OWN'] }))
  t.same([answer.status, answer.headers.get('x-price-engine'), answer.body.items.length], [200, 'worker', 1])
})

t.test('from equal to answers no change; the same moment twice is the empty diff', async (t) => {
  const answer = await diff(acme, diffBody({ to: from, skus: allSkus }))
  t.same(answer.items, [])
})

t.test('bad input answers 400 with the error body', async (t) => {
  const cases: [string, Record<string, unknown>, string][] = [
    ['to before from', diffBody({ from: to, to: from }), '/to'],
    ['a limit over the maximum', diffBody({ limit: 2501 }), '/limit'],
    ['a limit of 0', diffBody({ limit: 0 }), '/limit'],
    ['skus with a cursor', diffBody({ skus: ['S-OWN'], cursor: 'S-A' }), '/cursor'],
    ['an unknown tax area', diffBody({ tax_area: 'XX' }), '/tax_area'],
    ['a filter that selects nothing', diffBody({ pricelist_filter: { pricelists: ['NONE'] } }), '/pricelist_filter'],
  ]
  for (const [name, body, path] of cases) {
    const answer = await acme.call('POST', '/price/diff', body)
    t.equal(answer.status, 400, name)
    t.equal(answer.body.code, 'validation_failed', name)
    t.ok(
      JSON.stringify(answer.body.details ?? []).includes(path),
      `${name}: names ${path} (${JSON.stringify(answer.body.details)})`,
    )
  }
  for (const missing of ['from', 'to', 'tax_area', 'currency_code', 'pricelist_filter']) {
    const body = diffBody()
    delete body[missing]
    const answer = await acme.call('POST', '/price/diff', body)
    t.equal(answer.status, 400, `without ${missing}`)
    t.equal(answer.body.code, 'validation_failed', `without ${missing}`)
  }
  // Over the plan's items per request (2,500), as the query: 413 before validation.
  const many = await acme.call(
    'POST',
    '/price/diff',
    diffBody({ skus: Array.from({ length: 2501 }, (_, index) => `X${index}`) }),
  )
  t.same([many.status, many.body.code], [413, 'too_many_items'], 'too many SKUs')
  const profile = await acme.call('POST', '/price/diff', diffBody({ rounding_profile: 'NOPE' }))
  t.equal(profile.status, 404, 'an unknown rounding profile')
})

t.test('a page costs its SKUs against the query rate', async (t) => {
  const slow = await server.tenant('diff-cost', { limits: { query_rate: 1, query_burst: 1000 } })
  await setupReference(slow)
  await putPricelist(slow, 'PL', { currency_code: 'EUR', vat_mode: 'NET' })
  const body = { currency_code: 'EUR', tax_area: 'SE', pricelist_filter: { pricelists: ['PL'] }, from, to }
  const first = await slow.call('POST', '/price/diff', { ...body, skus: ['A'] })
  const skus = Array.from({ length: 40 }, (_, index) => `C-${index}`)
  const second = await slow.call('POST', '/price/diff', { ...body, skus })
  t.equal(second.status, 200)
  const drop = Number(first.headers.get('x-ratelimit-remaining')) - Number(second.headers.get('x-ratelimit-remaining'))
  t.ok(drop >= 39 && drop <= 40, `an explicit set costs its SKUs (dropped by ${drop})`)
  const third = await slow.call('POST', '/price/diff', { ...body, limit: 300 })
  const paged = Number(second.headers.get('x-ratelimit-remaining')) - Number(third.headers.get('x-ratelimit-remaining'))
  t.ok(paged >= 299 && paged <= 300, `a page costs its limit (dropped by ${paged})`)
  const refused = await slow.call('POST', '/price/diff', { ...body, limit: 1000 })
  t.equal(refused.status, 429, 'a page beyond the bucket is refused')
})

t.test('the diff is in the OpenAPI document', async (t) => {
  const answer = await server.request('GET', '/openapi.json')
  const key = Object.keys(answer.body.paths).find((path) => path.endsWith('/price/diff'))
  const operation = answer.body.paths[key ?? '']?.post
  t.equal(operation?.operationId, 'diffPrices')
  const item = operation?.responses?.['200']?.content?.['application/json']?.schema?.properties?.items?.items
  t.same(item?.properties?.causes?.items?.anyOf?.length, 10, 'the causes are the closed enum')
})
