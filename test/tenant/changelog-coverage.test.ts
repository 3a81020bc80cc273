/**
 * Changelog coverage against the real server: every entity type of SPEC.md's Events table, plus
 * bundle_rule and article_taxclass, is recorded by every write path that exists for it (single and
 * batch writes, single and batch deletes, settings, POST /fx/daily and POST /fx/fetch against a
 * local feed that serves the ECB fixture files). One table row per write path says what the path
 * records (entity_type, change_type, entity_code, composite_key; changed_by is the client id) and
 * that the identical request again records nothing. A second table checks content_hash per entity
 * type: a new value gives a new hash, returning to a value gives its earlier hash, and a batch
 * write of a value gives the hash its single write gave. Last, `ingest.skip.dedup` records
 * identical prices with the same hash, and a guard compares the table with /openapi.json so that a
 * write route added later without a row fails here.
 */
import t, { type Test } from 'tap'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { expectStatus, walkChangelog, type ChangelogEntry } from '../helpers/changelog.js'
import { sharedFixturesDir } from '../helpers/fixtures.js'
import { startServer, type Answer, type TenantClient, type TestServer } from '../helpers/server.js'

/** SPEC.md "Entity types", then the two types the spec leaves unnamed (API.md / docs/api.md). */
const entityTypes = [
  'article',
  'pricelist',
  'price',
  'currency',
  'vat_rate',
  'vat_class',
  'tax_area',
  'fx_rate',
  'rounding_profile',
  'settings',
  'bundle_rule',
  'article_taxclass',
  'price_correction',
] as const
type EntityType = (typeof entityTypes)[number]

const rfc3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/

// ---------------------------------------------------------------------------------------------
// The FX feed: the ECB daily fixture served by a local HTTP server (as in fx.test.ts)

const dailyFile = path.join(sharedFixturesDir, 'ecb/eurofxref-daily.xml')
const dailyDate = '2025-05-09'
/** code -> rate text of the daily fixture, read with a plain regex (not the parser under test). */
const dailyRates = new Map<string, string>(
  [...readFileSync(dailyFile, 'utf8').matchAll(/currency=["']([A-Z]{3})["'] rate=["']([^"']+)["']/g)].map((match) => [
    match[1]!,
    match[2]!,
  ]),
)
const feedServer = http.createServer((_request, response) => {
  response.writeHead(200, { 'content-type': 'text/xml' }).end(readFileSync(dailyFile))
})

let server: TestServer
let shop: TenantClient
/** Where the next read of the log starts: everything before it has been looked at. */
let position = ''

t.before(async () => {
  await new Promise<void>((resolve) => feedServer.listen(0, '127.0.0.1', resolve))
  const feedUrl = `http://127.0.0.1:${(feedServer.address() as AddressInfo).port}/daily.xml`
  // No automatic fetch during the test: only POST /fx/fetch fetches.
  server = await startServer({ env: { PRICING_FX_FEED_URL: feedUrl, PRICING_FX_FETCH_DELAY_MS: '3600000' } })
  shop = await server.tenant('cover')
  const first = await shop.get('/changelog')
  if (first.status !== 200 || first.body.items.length !== 0)
    throw new Error(`a new tenant's log is not empty: ${first.text}`)
  position = first.body.next_cursor
})
t.teardown(async () => {
  await server.dispose()
  await new Promise<void>((resolve) => feedServer.close(() => resolve()))
})

/** Every entry recorded since the last call (walks pages; moves `position` to the end). */
async function recorded(): Promise<ChangelogEntry[]> {
  const walk = await walkChangelog(shop, 'limit=1000', position)
  position = walk.nextCursor
  return walk.entries
}

// ---------------------------------------------------------------------------------------------
// The write paths, one row each

/** [change_type, entity_code, composite_key] of one expected entry. */
type Expected = readonly [string, string, string | null]

interface Row {
  readonly entity: EntityType
  /** Method and path as /openapi.json names it, without the /t/{slug} prefix. */
  readonly route: string
  readonly kind: 'single write' | 'batch write' | 'single delete' | 'batch delete' | 'feed fetch'
  readonly what: string
  /** Writes the row needs that are not part of what it checks (recorded, then skipped). */
  readonly setup?: () => Promise<void>
  readonly act: () => Promise<Answer>
  readonly status?: number
  /** Checks of the answer body (batch results, the fetch answer). */
  readonly answer?: (t: Test, answer: Answer) => void
  readonly records: readonly Expected[]
  /** The identical request again: its status, and that it records nothing (false: not repeatable). */
  readonly repeat?: number | false
  /** The entries' order is not part of the contract (a feed's currencies). */
  readonly unordered?: boolean
}

const call = (method: string, urlPath: string, body?: unknown) => (): Promise<Answer> =>
  shop.call(method, urlPath, body)
const batchResult =
  (accepted: number, failedKeys: Record<string, unknown>[]) =>
  (t: Test, answer: Answer): void => {
    t.equal(answer.body.accepted, accepted, 'accepted')
    t.same(
      answer.body.failed.map((entry: Record<string, unknown>) => {
        const keys: Record<string, unknown> = {}
        for (const name of Object.keys(failedKeys[0] ?? {})) keys[name] = entry[name]
        return keys
      }),
      failedKeys,
      'failed items with their key fields',
    )
    for (const entry of answer.body.failed) t.type(entry.message, 'string', 'each failed item has a message')
  }
const tier = (increment: number | string) => [{ from: 0, increment }]
const feedCodes = (): string[] => [...dailyRates.keys()].sort()

const rows: Row[] = [
  // Articles
  {
    entity: 'article',
    route: 'PUT /article/{sku}',
    kind: 'single write',
    what: 'a new SKU',
    act: call('PUT', '/article/A-1', { name: 'one' }),
    records: [['created', 'A-1', null]],
  },
  {
    entity: 'article',
    route: 'PUT /article/{sku}',
    kind: 'single write',
    what: 'a changed SKU',
    act: call('PUT', '/article/A-1', { name: 'uno' }),
    records: [['updated', 'A-1', null]],
  },
  {
    entity: 'article',
    route: 'POST /article/batch',
    kind: 'batch write',
    what: 'new SKUs; an unchanged and an invalid item record nothing',
    act: call('POST', '/article/batch', [
      { sku: 'A-2', name: 'two' },
      { sku: 'A-1', name: 'uno' },
      { sku: 'A-3', name: 'three' },
      { sku: '', name: 'bad' },
    ]),
    answer: batchResult(3, [{ sku: '' }]),
    records: [
      ['created', 'A-2', null],
      ['created', 'A-3', null],
    ],
  },
  {
    entity: 'article',
    route: 'POST /article/batch',
    kind: 'batch write',
    what: 'two items of one SKU, in order',
    act: call('POST', '/article/batch', [
      { sku: 'A-4', name: 'x' },
      { sku: 'A-4', name: 'y' },
      { sku: 'A-1', name: 'eins' },
    ]),
    answer: batchResult(3, []),
    records: [
      ['created', 'A-4', null],
      ['updated', 'A-4', null],
      ['updated', 'A-1', null],
    ],
    repeat: false,
  },
  {
    entity: 'article',
    route: 'DELETE /article/{sku}',
    kind: 'single delete',
    what: 'a live SKU',
    act: call('DELETE', '/article/A-4'),
    records: [['deleted', 'A-4', null]],
    repeat: 404,
  },
  {
    entity: 'article',
    route: 'DELETE /article/batch',
    kind: 'batch delete',
    what: 'SKUs as text and as {sku}; an unknown one fails',
    act: call('DELETE', '/article/batch', ['A-2', { sku: 'A-3' }, 'A-404']),
    answer: batchResult(2, [{ sku: 'A-404' }]),
    records: [
      ['deleted', 'A-2', null],
      ['deleted', 'A-3', null],
    ],
  },
  {
    entity: 'article',
    route: 'PUT /article/{sku}',
    kind: 'single write',
    what: 'a deleted SKU again (created anew)',
    act: call('PUT', '/article/A-4', { name: 'back' }),
    records: [['created', 'A-4', null]],
  },
  {
    entity: 'article',
    route: 'PUT /article/{sku}',
    kind: 'single write',
    what: 'a refused write (unknown field)',
    act: call('PUT', '/article/A-9', { colour: 'red' }),
    status: 400,
    records: [],
  },

  // Pricelists
  {
    entity: 'pricelist',
    route: 'PUT /pricelist/{code}',
    kind: 'single write',
    what: 'a new pricelist',
    act: call('PUT', '/pricelist/PL-1', { currency_code: 'EUR', vat_mode: 'NET', name: 'one' }),
    records: [['created', 'PL-1', null]],
  },
  {
    entity: 'pricelist',
    route: 'PUT /pricelist/{code}',
    kind: 'single write',
    what: 'a changed pricelist',
    act: call('PUT', '/pricelist/PL-1', { currency_code: 'EUR', vat_mode: 'NET', name: 'uno' }),
    records: [['updated', 'PL-1', null]],
  },
  {
    entity: 'pricelist',
    route: 'POST /pricelist/batch',
    kind: 'batch write',
    what: 'a parent and its child; an invalid item fails',
    act: call('POST', '/pricelist/batch', [
      { code: 'PL-2', currency_code: 'EUR', vat_mode: 'GROSS' },
      { code: 'PL-3', currency_code: 'EUR', parent_code: 'PL-2' },
      { code: 'PL-1', currency_code: 'EUR', vat_mode: 'NET', name: 'uno' },
      { code: 'PL-X', currency_code: 'EUR' },
    ]),
    answer: batchResult(3, [{ code: 'PL-X' }]),
    records: [
      ['created', 'PL-2', null],
      ['created', 'PL-3', null],
    ],
  },
  {
    entity: 'pricelist',
    route: 'DELETE /pricelist/{code}',
    kind: 'single delete',
    what: 'a live pricelist',
    act: call('DELETE', '/pricelist/PL-3'),
    records: [['deleted', 'PL-3', null]],
    repeat: 404,
  },
  {
    entity: 'pricelist',
    route: 'DELETE /pricelist/batch',
    kind: 'batch delete',
    what: 'codes; an unknown one fails',
    act: call('DELETE', '/pricelist/batch', [{ code: 'PL-2' }, 'PL-404']),
    answer: batchResult(1, [{ code: 'PL-404' }]),
    records: [['deleted', 'PL-2', null]],
  },

  // Prices (code: SKU, key: pricelist)
  {
    entity: 'price',
    route: 'PUT /price/{sku}/{pricelist}',
    kind: 'single write',
    what: 'the first version',
    act: call('PUT', '/price/P-1/PL-1', { price: 10 }),
    records: [['created', 'P-1', 'PL-1']],
  },
  {
    entity: 'price',
    route: 'PUT /price/{sku}/{pricelist}',
    kind: 'single write',
    what: 'a later version',
    act: call('PUT', '/price/P-1/PL-1', { price: 11 }),
    records: [['updated', 'P-1', 'PL-1']],
  },
  {
    entity: 'price',
    route: 'PUT /price/{sku}/{pricelist}',
    kind: 'single write',
    what: 'the same amount spelled otherwise',
    act: call('PUT', '/price/P-1/PL-1', { price: '11.0000' }),
    records: [],
  },
  {
    entity: 'price',
    route: 'POST /price/batch',
    kind: 'batch write',
    what: 'new prices; an unchanged and an invalid item record nothing',
    act: call('POST', '/price/batch', [
      { sku: 'P-2', pricelist: 'PL-1', price: 5 },
      { sku: 'P-1', pricelist: 'PL-1', price: 11 },
      { sku: 'P-3', pricelist: 'PL-1', price: { sales: '7.5', fields: { cost: 3 } } },
      { sku: 'P-4', pricelist: 'PL-1', price: 'abc' },
    ]),
    answer: batchResult(3, [{ sku: 'P-4', pricelist: 'PL-1' }]),
    records: [
      ['created', 'P-2', 'PL-1'],
      ['created', 'P-3', 'PL-1'],
    ],
  },
  {
    entity: 'price',
    route: 'DELETE /price/{sku}/{pricelist}',
    kind: 'single delete',
    what: 'a live price',
    act: call('DELETE', '/price/P-3/PL-1'),
    records: [['deleted', 'P-3', 'PL-1']],
    repeat: 404,
  },
  {
    entity: 'price',
    route: 'DELETE /price/batch',
    kind: 'batch delete',
    what: 'a live price; an absent one fails',
    act: call('DELETE', '/price/batch', [
      { sku: 'P-2', pricelist: 'PL-1' },
      { sku: 'P-404', pricelist: 'PL-1' },
    ]),
    answer: batchResult(1, [{ sku: 'P-404', pricelist: 'PL-1' }]),
    records: [['deleted', 'P-2', 'PL-1']],
  },

  // Currencies (deactivation is recorded as updated)
  {
    entity: 'currency',
    route: 'PUT /currency/{code}',
    kind: 'single write',
    what: 'a new currency',
    act: call('PUT', '/currency/SEK', {}),
    records: [['created', 'SEK', null]],
  },
  {
    entity: 'currency',
    route: 'PUT /currency/{code}',
    kind: 'single write',
    what: 'a deactivation',
    act: call('PUT', '/currency/SEK', { is_active: false }),
    records: [['updated', 'SEK', null]],
  },
  {
    entity: 'currency',
    route: 'PUT /currency/{code}',
    kind: 'single write',
    what: 'a reactivation',
    act: call('PUT', '/currency/SEK', {}),
    records: [['updated', 'SEK', null]],
  },
  {
    entity: 'currency',
    route: 'PUT /currency/{code}',
    kind: 'single write',
    what: 'a new vat_precision',
    act: call('PUT', '/currency/SEK', { vat_precision: 3 }),
    records: [['updated', 'SEK', null]],
  },
  {
    entity: 'currency',
    route: 'PUT /currency/{code}',
    kind: 'single write',
    what: 'a refused write (not ISO 4217)',
    act: call('PUT', '/currency/XYZ', {}),
    status: 400,
    records: [],
  },

  // Tax areas
  {
    entity: 'tax_area',
    route: 'PUT /tax-area/{code}',
    kind: 'single write',
    what: 'a new tax area',
    act: call('PUT', '/tax-area/NO', { name: 'Norway' }),
    records: [['created', 'NO', null]],
  },
  {
    entity: 'tax_area',
    route: 'PUT /tax-area/{code}',
    kind: 'single write',
    what: 'a changed tax area',
    act: call('PUT', '/tax-area/NO', { name: 'Norge' }),
    records: [['updated', 'NO', null]],
  },
  {
    entity: 'tax_area',
    route: 'DELETE /tax-area/{code}',
    kind: 'single delete',
    what: 'a live tax area',
    setup: async () =>
      void (await expectStatus(shop.call('PUT', '/tax-area/XX', { name: 'gone soon' }), 202, 'tax area XX')),
    act: call('DELETE', '/tax-area/XX'),
    records: [['deleted', 'XX', null]],
    repeat: 404,
  },

  // VAT classes
  {
    entity: 'vat_class',
    route: 'PUT /vat/class/{code}',
    kind: 'single write',
    what: 'a new VAT class',
    act: call('PUT', '/vat/class/STD', { name: 'Standard' }),
    records: [['created', 'STD', null]],
  },
  {
    entity: 'vat_class',
    route: 'PUT /vat/class/{code}',
    kind: 'single write',
    what: 'a changed VAT class',
    act: call('PUT', '/vat/class/STD', { name: 'Standard', description: 'most goods' }),
    records: [['updated', 'STD', null]],
  },
  {
    entity: 'vat_class',
    route: 'DELETE /vat/class/{code}',
    kind: 'single delete',
    what: 'a live VAT class',
    setup: async () =>
      void (await expectStatus(shop.call('PUT', '/vat/class/OLD', { name: 'gone soon' }), 202, 'VAT class OLD')),
    act: call('DELETE', '/vat/class/OLD'),
    records: [['deleted', 'OLD', null]],
    repeat: 404,
  },

  // VAT rates (code: tax area, key: VAT class)
  {
    entity: 'vat_rate',
    route: 'POST /vat/rate',
    kind: 'single write',
    what: 'a new rate',
    act: call('POST', '/vat/rate', { tax_area_code: 'NO', vat_class_code: 'STD', rate: 25 }),
    records: [['created', 'NO', 'STD']],
  },
  {
    entity: 'vat_rate',
    route: 'POST /vat/rate',
    kind: 'single write',
    what: 'the same rate spelled otherwise',
    act: call('POST', '/vat/rate', { tax_area_code: 'NO', vat_class_code: 'STD', rate: '25.00' }),
    records: [],
  },
  {
    entity: 'vat_rate',
    route: 'POST /vat/rate',
    kind: 'single write',
    what: 'a changed rate',
    act: call('POST', '/vat/rate', { tax_area_code: 'NO', vat_class_code: 'STD', rate: '12.5' }),
    records: [['updated', 'NO', 'STD']],
  },
  {
    entity: 'vat_rate',
    route: 'POST /vat/rate',
    kind: 'single write',
    what: 'a refused write (unknown tax area)',
    act: call('POST', '/vat/rate', { tax_area_code: 'ZZ', vat_class_code: 'STD', rate: 5 }),
    status: 400,
    records: [],
  },
  {
    entity: 'vat_rate',
    route: 'DELETE /vat/rate/{taxArea}/{vatClass}',
    kind: 'single delete',
    what: 'a live rate',
    act: call('DELETE', '/vat/rate/NO/STD'),
    records: [['deleted', 'NO', 'STD']],
    repeat: 404,
  },

  // Article-to-VAT-class mappings (code: SKU, key: tax area)
  {
    entity: 'article_taxclass',
    route: 'POST /article-taxclass',
    kind: 'single write',
    what: 'a new mapping',
    act: call('POST', '/article-taxclass', { sku_code: 'A-1', tax_area_code: 'NO', vat_class_code: 'STD' }),
    records: [['created', 'A-1', 'NO']],
  },
  {
    entity: 'article_taxclass',
    route: 'POST /article-taxclass',
    kind: 'single write',
    what: 'a changed VAT class',
    setup: async () =>
      void (await expectStatus(shop.call('PUT', '/vat/class/RED', { name: 'Reduced' }), 202, 'VAT class RED')),
    act: call('POST', '/article-taxclass', { sku_code: 'A-1', tax_area_code: 'NO', vat_class_code: 'RED' }),
    records: [['updated', 'A-1', 'NO']],
  },
  {
    entity: 'article_taxclass',
    route: 'POST /article-taxclass/batch',
    kind: 'batch write',
    what: 'a new mapping; unchanged and refused items record nothing',
    act: call('POST', '/article-taxclass/batch', [
      { sku_code: 'A-5', tax_area_code: 'NO', vat_class_code: 'STD' },
      { sku_code: 'A-1', tax_area_code: 'NO', vat_class_code: 'RED' },
      { sku_code: 'A-6', tax_area_code: 'ZZ', vat_class_code: 'STD' },
    ]),
    answer: batchResult(2, [{ sku_code: 'A-6', tax_area_code: 'ZZ' }]),
    records: [['created', 'A-5', 'NO']],
  },
  {
    entity: 'article_taxclass',
    route: 'DELETE /article-taxclass/{sku}/{taxArea}',
    kind: 'single delete',
    what: 'a live mapping',
    act: call('DELETE', '/article-taxclass/A-5/NO'),
    records: [['deleted', 'A-5', 'NO']],
    repeat: 404,
  },

  // Exchange rates (code: EUR, key: the target currency)
  {
    entity: 'fx_rate',
    route: 'POST /fx/fetch',
    kind: 'feed fetch',
    what: "the feed's first rates",
    act: call('POST', '/fx/fetch'),
    status: 200,
    answer: (t, answer) => t.same(answer.body, { as_of: `${dailyDate}T00:00:00Z`, count: dailyRates.size }),
    records: feedCodes().map((code): Expected => ['created', 'EUR', code]),
    unordered: true,
  },
  {
    entity: 'fx_rate',
    route: 'POST /fx/daily',
    kind: 'single write',
    what: "another rate for the feed's date",
    act: call('POST', '/fx/daily', { date: dailyDate, rates: { USD: 1.5 } }),
    records: [['updated', 'EUR', 'USD']],
  },
  {
    entity: 'fx_rate',
    route: 'POST /fx/fetch',
    kind: 'feed fetch',
    what: 'the feed again: only the rate changed since',
    act: call('POST', '/fx/fetch'),
    status: 200,
    records: [['updated', 'EUR', 'USD']],
  },
  {
    entity: 'fx_rate',
    route: 'POST /fx/daily',
    kind: 'single write',
    what: 'two rates of a later date, one entry per currency (sorted)',
    act: call('POST', '/fx/daily', { date: '2025-05-12', rates: { USD: '1.13', GBP: 0.85 } }),
    records: [
      ['updated', 'EUR', 'GBP'],
      ['updated', 'EUR', 'USD'],
    ],
  },
  {
    entity: 'fx_rate',
    route: 'POST /fx/daily',
    kind: 'single write',
    what: 'the first rate of a currency the feed lacks',
    act: call('POST', '/fx/daily', { date: '2025-05-12', rates: { ARS: 1200 } }),
    records: [['created', 'EUR', 'ARS']],
  },
  {
    entity: 'fx_rate',
    route: 'POST /fx/daily',
    kind: 'single write',
    what: 'a refused request (one bad rate refuses all)',
    act: call('POST', '/fx/daily', { date: '2025-05-13', rates: { USD: 1.2, GBP: -1 } }),
    status: 400,
    records: [],
  },

  // Rounding profiles
  {
    entity: 'rounding_profile',
    route: 'POST /rounding-profile',
    kind: 'single write',
    what: 'a new profile',
    act: call('POST', '/rounding-profile', { code: 'R-1', tier_rules: tier(1) }),
    records: [['created', 'R-1', null]],
  },
  {
    entity: 'rounding_profile',
    route: 'PUT /rounding-profile/{code}',
    kind: 'single write',
    what: 'changed tiers',
    act: call('PUT', '/rounding-profile/R-1', { tier_rules: tier('0.5') }),
    records: [['updated', 'R-1', null]],
  },
  {
    entity: 'rounding_profile',
    route: 'POST /rounding-profile',
    kind: 'single write',
    what: 'a replacement',
    act: call('POST', '/rounding-profile', { code: 'R-1', tier_rules: tier(1) }),
    records: [['updated', 'R-1', null]],
  },
  {
    entity: 'rounding_profile',
    route: 'POST /rounding-profile',
    kind: 'single write',
    what: 'a default claim, which clears the previous holder',
    setup: async () =>
      void (await expectStatus(
        shop.call('POST', '/rounding-profile', { code: 'R-2', default_global: true, tier_rules: tier(1) }),
        202,
        'profile R-2',
      )),
    act: call('POST', '/rounding-profile', { code: 'R-3', default_global: true, tier_rules: tier(5) }),
    records: [
      ['created', 'R-3', null],
      ['updated', 'R-2', null],
    ],
  },
  {
    entity: 'rounding_profile',
    route: 'DELETE /rounding-profile/{code}',
    kind: 'single delete',
    what: 'a live profile',
    act: call('DELETE', '/rounding-profile/R-3'),
    records: [['deleted', 'R-3', null]],
    repeat: 404,
  },

  // Settings
  {
    entity: 'settings',
    route: 'PUT /settings/{key}',
    kind: 'single write',
    what: 'a first value',
    act: call('PUT', '/settings/default.tax.area', { value: 'NO' }),
    records: [['created', 'default.tax.area', null]],
  },
  {
    entity: 'settings',
    route: 'PUT /settings/{key}',
    kind: 'single write',
    what: 'a new value',
    act: call('PUT', '/settings/default.tax.area', { value: 'SE' }),
    records: [['updated', 'default.tax.area', null]],
  },
  {
    entity: 'settings',
    route: 'PUT /settings/{key}',
    kind: 'single write',
    what: 'a refused value',
    act: call('PUT', '/settings/ingest.skip.dedup', { value: 'yes' }),
    status: 400,
    records: [],
  },
  {
    entity: 'settings',
    route: 'DELETE /settings/{key}',
    kind: 'single delete',
    what: 'a written setting',
    act: call('DELETE', '/settings/default.tax.area'),
    records: [['deleted', 'default.tax.area', null]],
    repeat: 404,
  },

  // Bundle rules (code: bundle SKU, key: pricelist)
  {
    entity: 'bundle_rule',
    route: 'PUT /bundle/{bundleSku}/{pricelistCode}',
    kind: 'single write',
    what: 'a new rule',
    act: call('PUT', '/bundle/B-1/PL-1', { method: 'FIXED', fixed_price: 20 }),
    records: [['created', 'B-1', 'PL-1']],
  },
  {
    entity: 'bundle_rule',
    route: 'PUT /bundle/{bundleSku}/{pricelistCode}',
    kind: 'single write',
    what: 'a changed rule',
    act: call('PUT', '/bundle/B-1/PL-1', {
      method: 'SUM_OF_PARTS',
      components: [{ sku: 'P-1', quantity: 2 }],
      discount_type: 'PERCENTAGE',
      discount_value: 10,
    }),
    records: [['updated', 'B-1', 'PL-1']],
  },
  {
    entity: 'bundle_rule',
    route: 'PUT /bundle/{bundleSku}/{pricelistCode}',
    kind: 'single write',
    what: 'a refused rule (unknown pricelist)',
    act: call('PUT', '/bundle/B-1/PL-404', { method: 'FIXED', fixed_price: 1 }),
    status: 400,
    records: [],
  },
  {
    entity: 'bundle_rule',
    route: 'DELETE /bundle/{bundleSku}/{pricelistCode}',
    kind: 'single delete',
    what: 'a live rule',
    act: call('DELETE', '/bundle/B-1/PL-1'),
    records: [['deleted', 'B-1', 'PL-1']],
    repeat: 404,
  },

  // Price corrections (code: SKU, key: pricelist): the first version of P-1 on PL-1 marked as an error
  {
    entity: 'price_correction',
    route: 'POST /price/corrections/{pricelist}/{sku}',
    kind: 'single write',
    what: 'a version marked as an error (again: unchanged)',
    act: correction('POST'),
    records: [['created', 'P-1', 'PL-1']],
    repeat: 202,
  },
  {
    entity: 'price_correction',
    route: 'DELETE /price/corrections/{pricelist}/{sku}',
    kind: 'single delete',
    what: 'the mark taken back (the last: the key is deleted)',
    act: correction('DELETE'),
    records: [['deleted', 'P-1', 'PL-1']],
    repeat: 404,
  },
]

/** Marks (POST) or unmarks (DELETE) the first version of P-1 on PL-1, its start read from the history. */
function correction(method: 'POST' | 'DELETE') {
  return async (): Promise<Answer> => {
    const history = await shop.call('GET', '/price/history/PL-1/P-1?days=1')
    const first = (history.body as { change_at: string }[]).at(-1)!.change_at
    return method === 'POST'
      ? shop.call('POST', '/price/corrections/PL-1/P-1', { start_date: first, reason: 'a typo: 10 for 100' })
      : shop.call('DELETE', `/price/corrections/PL-1/P-1?start_date=${encodeURIComponent(first)}`)
  }
}

function sortedEntries(entries: readonly Expected[]): Expected[] {
  const text = (entry: Expected): string => entry.join('\u0000')
  return [...entries].sort((left, right) => (text(left) < text(right) ? -1 : text(left) > text(right) ? 1 : 0))
}

/** The fields every entry must carry, whatever wrote it. */
function checkEntryFields(t: Test, entry: ChangelogEntry, window: { from: number; to: number }): void {
  t.equal(entry.changed_by, shop.clientId, 'changed_by is the client id')
  t.match(entry.changed_at, rfc3339, 'changed_at is UTC RFC 3339')
  const changedAt = Date.parse(entry.changed_at)
  t.ok(
    changedAt >= window.from - 1 && changedAt <= window.to + 1,
    `changed_at ${entry.changed_at} lies within the request`,
  )
  if (entry.change_type === 'deleted') t.equal(entry.content_hash, '', 'a delete has an empty content_hash')
  else t.match(entry.content_hash, /^\S+$/, 'a write has a content_hash')
  t.ok(Number.isSafeInteger(entry.sequence) && entry.sequence > 0, 'sequence is a positive integer')
}

function rowName(row: Row): string {
  const records =
    row.records.length === 0
      ? 'records nothing'
      : row.unordered
        ? `records ${row.records.length} x ${row.entity} ${row.records[0]![0]}`
        : `records ${row.records.map(([change, code, key]) => `${change} ${code}${key === null ? '' : `/${key}`}`).join(', ')}`
  const repeat = row.records.length > 0 && row.repeat !== false ? '; the identical request again records nothing' : ''
  return `${row.entity} ${row.kind} ${row.route} (${row.what}) ${records}${repeat}`
}

t.test('every write path records its entries; the identical request again records nothing', async (t) => {
  for (const row of rows) {
    await t.test(rowName(row), async (t) => {
      if (row.setup !== undefined) {
        await row.setup()
        await recorded()
      }
      const from = Date.now()
      const answer = await row.act()
      const to = Date.now()
      t.equal(answer.status, row.status ?? 202, `answer status (${answer.text})`)
      row.answer?.(t, answer)
      const entries = await recorded()
      const got = entries.map((entry): Expected => [entry.change_type, entry.entity_code, entry.composite_key])
      t.same(
        row.unordered ? sortedEntries(got) : got,
        row.unordered ? sortedEntries(row.records) : row.records,
        'the entries recorded',
      )
      t.same(
        entries.map((entry) => entry.entity_type),
        row.records.map(() => row.entity),
        `entity_type ${row.entity}`,
      )
      for (let index = 1; index < entries.length; index++) {
        t.equal(entries[index]!.sequence, entries[index - 1]!.sequence + 1, 'one commit takes consecutive sequences')
      }
      for (const entry of entries) checkEntryFields(t, entry, { from, to })
      if (row.repeat === false || row.records.length === 0) return
      const again = await row.act()
      t.equal(again.status, row.repeat ?? row.status ?? 202, `the repeat answers ${row.repeat ?? row.status ?? 202}`)
      t.same(await recorded(), [], 'the repeat records nothing')
    })
  }
})

// ---------------------------------------------------------------------------------------------
// content_hash per entity type: value 1, value 1 again, value 2, value 1, then the batch path

interface HashRow {
  readonly entity: EntityType
  /** [entity_code, composite_key] every write of the row records. */
  readonly key: readonly [string, string | null]
  readonly write: (value: 1 | 2) => Promise<Answer>
  /** The batch path of the same key, when one exists. */
  readonly batch?: (value: 1 | 2) => Promise<Answer>
  readonly status?: number
}

const hashRows: HashRow[] = [
  {
    entity: 'article',
    key: ['H-1', null],
    write: (value) =>
      shop.call('PUT', '/article/H-1', { name: `name ${value}`, metadata: { colour: [value === 1 ? 'red' : 'blue'] } }),
    batch: (value) =>
      shop.call('POST', '/article/batch', [
        { sku: 'H-1', name: `name ${value}`, metadata: { colour: [value === 1 ? 'red' : 'blue'] } },
      ]),
  },
  {
    entity: 'pricelist',
    key: ['H-PL', null],
    write: (value) =>
      shop.call('PUT', '/pricelist/H-PL', { currency_code: 'EUR', vat_mode: value === 1 ? 'NET' : 'GROSS' }),
    batch: (value) =>
      shop.call('POST', '/pricelist/batch', [
        { code: 'H-PL', currency_code: 'EUR', vat_mode: value === 1 ? 'NET' : 'GROSS' },
      ]),
  },
  {
    entity: 'price',
    key: ['H-1', 'PL-1'],
    write: (value) => shop.call('PUT', '/price/H-1/PL-1', { price: value * 10 }),
    batch: (value) => shop.call('POST', '/price/batch', [{ sku: 'H-1', pricelist: 'PL-1', price: `${value * 10}.00` }]),
  },
  {
    entity: 'currency',
    key: ['NOK', null],
    write: (value) => shop.call('PUT', '/currency/NOK', { vat_precision: value }),
  },
  {
    entity: 'tax_area',
    key: ['HA', null],
    write: (value) => shop.call('PUT', '/tax-area/HA', { name: `area ${value}` }),
  },
  {
    entity: 'vat_class',
    key: ['HC', null],
    write: (value) => shop.call('PUT', '/vat/class/HC', { name: `class ${value}` }),
  },
  {
    entity: 'vat_rate',
    key: ['NO', 'RED'],
    write: (value) =>
      shop.call('POST', '/vat/rate', { tax_area_code: 'NO', vat_class_code: 'RED', rate: value === 1 ? 15 : '12.5' }),
  },
  {
    entity: 'article_taxclass',
    key: ['H-1', 'NO'],
    write: (value) =>
      shop.call('POST', '/article-taxclass', {
        sku_code: 'H-1',
        tax_area_code: 'NO',
        vat_class_code: value === 1 ? 'STD' : 'RED',
      }),
    batch: (value) =>
      shop.call('POST', '/article-taxclass/batch', [
        { sku_code: 'H-1', tax_area_code: 'NO', vat_class_code: value === 1 ? 'STD' : 'RED' },
      ]),
  },
  {
    entity: 'fx_rate',
    key: ['EUR', 'CHF'],
    write: (value) =>
      shop.call('POST', '/fx/daily', { date: '2024-01-02', rates: { CHF: value === 1 ? 0.93 : '0.9500' } }),
  },
  {
    entity: 'rounding_profile',
    key: ['H-R', null],
    write: (value) =>
      shop.call('POST', '/rounding-profile', { code: 'H-R', tier_rules: tier(value === 1 ? 1 : '0.05') }),
  },
  {
    entity: 'settings',
    key: ['require.homogeneous.currency', null],
    write: (value) =>
      shop.call('PUT', '/settings/require.homogeneous.currency', { value: value === 1 ? 'false' : 'true' }),
  },
  {
    entity: 'bundle_rule',
    key: ['H-B', 'PL-1'],
    write: (value) =>
      shop.call(
        'PUT',
        '/bundle/H-B/PL-1',
        value === 1
          ? { method: 'FIXED', fixed_price: 5 }
          : { method: 'SUM_OF_PARTS', components: [{ sku: 'P-1', quantity: 1 }] },
      ),
  },
]

/** Writes and answers the one entry the write recorded (or none). */
async function hashOf(
  t: Test,
  row: HashRow,
  write: () => Promise<Answer>,
  expected: 'one' | 'none',
  what: string,
): Promise<ChangelogEntry | null> {
  const answer = await write()
  t.equal(answer.status, row.status ?? 202, `${what}: answer status (${answer.text})`)
  const entries = await recorded()
  if (expected === 'none') {
    t.same(entries, [], `${what} records nothing`)
    return null
  }
  t.equal(entries.length, 1, `${what} records one entry`)
  const entry = entries[0]
  if (entry === undefined) return null
  t.same(
    [entry.entity_type, entry.entity_code, entry.composite_key],
    [row.entity, ...row.key],
    `${what}: entity_type, entity_code, composite_key`,
  )
  t.equal(entry.changed_by, shop.clientId, `${what}: changed_by`)
  t.not(entry.content_hash, '', `${what}: a content_hash`)
  return entry
}

t.test(
  'content_hash: a new value gives a new hash, the earlier value its earlier hash, a batch the same hash',
  async (t) => {
    for (const row of hashRows) {
      await t.test(
        `${row.entity}: value 1, value 1 again (nothing), value 2, value 1${row.batch === undefined ? '' : ', then the batch path'}`,
        async (t) => {
          const first = await hashOf(t, row, () => row.write(1), 'one', 'value 1')
          await hashOf(t, row, () => row.write(1), 'none', 'value 1 again')
          const second = await hashOf(t, row, () => row.write(2), 'one', 'value 2')
          const back = await hashOf(t, row, () => row.write(1), 'one', 'value 1 once more')
          t.equal(first?.change_type, 'created', 'the first write creates')
          t.equal(second?.change_type, 'updated', 'a new value updates')
          t.not(second?.content_hash, first?.content_hash, 'value 2 has another hash')
          t.equal(back?.content_hash, first?.content_hash, 'value 1 has its earlier hash again')
          if (row.batch === undefined) return
          const batched = await hashOf(t, row, () => row.batch!(2), 'one', 'value 2 by batch')
          t.equal(batched?.content_hash, second?.content_hash, 'the batch path gives the hash the single path gave')
          await hashOf(t, row, () => row.batch!(2), 'none', 'value 2 by batch again')
        },
      )
    }
  },
)

t.test('the FX feed and POST /fx/daily give one rate the same hash', async (t) => {
  // The feed's USD rate of its date, written by /fx/daily on another date, hashes as the feed's did.
  const usdFeedRate = dailyRates.get('USD')!
  await expectStatus(shop.call('POST', '/fx/daily', { date: dailyDate, rates: { USD: 2 } }), 202, 'USD 2')
  await recorded()
  await expectStatus(shop.call('POST', '/fx/fetch'), 200, 'fetch')
  const fetched = await recorded()
  t.same(
    fetched.map((entry) => [entry.change_type, entry.composite_key]),
    [['updated', 'USD']],
    'the fetch restores the feed rate',
  )
  await expectStatus(
    shop.call('POST', '/fx/daily', { date: '2025-05-20', rates: { USD: Number(usdFeedRate) } }),
    202,
    'USD feed rate by hand',
  )
  const manual = await recorded()
  t.equal(manual.length, 1)
  t.equal(manual[0]?.content_hash, fetched[0]?.content_hash, 'same rate, same hash')
})

t.test(
  'a tenant created after a fetch starts with the stored feed, recorded as fx_rate entries by system',
  async (t) => {
    // The same applyFeed as the scheduled fetch, with the service as the writer (no client is involved).
    const later = await server.tenant('seeded')
    const answer = await later.get('/changelog?limit=1000')
    t.equal(answer.status, 200)
    const entries = answer.body.items as ChangelogEntry[]
    t.same(
      sortedEntries(entries.map((entry): Expected => [entry.change_type, entry.entity_code, entry.composite_key])),
      sortedEntries(feedCodes().map((code): Expected => ['created', 'EUR', code])),
      'one created entry per rate of the feed',
    )
    t.same(
      [...new Set(entries.map((entry) => `${entry.entity_type} ${entry.changed_by}`))],
      ['fx_rate system'],
      'fx_rate, changed_by system',
    )
  },
)

// ---------------------------------------------------------------------------------------------
// ingest.skip.dedup

t.test(
  'with ingest.skip.dedup an identical price records an entry with the same content_hash; without it, nothing',
  async (t) => {
    await expectStatus(shop.call('PUT', '/price/D-1/PL-1', { price: 3 }), 202, 'price D-1')
    const [created] = await recorded()
    t.equal(created?.change_type, 'created')
    await expectStatus(shop.call('PUT', '/settings/ingest.skip.dedup', { value: 'true' }), 202, 'skip.dedup on')
    t.same(
      (await recorded()).map((entry) => [entry.entity_type, entry.entity_code]),
      [['settings', 'ingest.skip.dedup']],
    )

    await expectStatus(shop.call('PUT', '/price/D-1/PL-1', { price: '3.0' }), 202, 'identical single write')
    const single = await recorded()
    t.same(
      single.map((entry) => [entry.entity_type, entry.change_type, entry.entity_code, entry.composite_key]),
      [['price', 'updated', 'D-1', 'PL-1']],
      'the single write records',
    )
    t.equal(single[0]?.content_hash, created?.content_hash, 'with the same content_hash')
    t.equal(single[0]?.changed_by, shop.clientId)

    const batch = await expectStatus(
      shop.call('POST', '/price/batch', [
        { sku: 'D-1', pricelist: 'PL-1', price: 3 },
        { sku: 'D-1', pricelist: 'PL-1', price: 3 },
      ]),
      202,
      'identical batch',
    )
    t.same(batch.body, { accepted: 2, failed: [] })
    const batched = await recorded()
    t.same(
      batched.map((entry) => [entry.change_type, entry.content_hash]),
      [
        ['updated', created?.content_hash],
        ['updated', created?.content_hash],
      ],
      'each batch item records, same hash',
    )

    await expectStatus(shop.call('PUT', '/article/A-1', { name: 'eins' }), 202, 'identical article')
    t.same(await recorded(), [], 'articles are still deduplicated (the setting is about prices)')

    await expectStatus(shop.call('PUT', '/settings/ingest.skip.dedup', { value: 'false' }), 202, 'skip.dedup off')
    await recorded()
    await expectStatus(shop.call('PUT', '/price/D-1/PL-1', { price: 3 }), 202, 'identical write after')
    t.same(await recorded(), [], 'off again: an identical price records nothing')
  },
)

// ---------------------------------------------------------------------------------------------
// The table covers every write route and every entity type

/**
 * Non-GET tenant routes that record nothing by design: reads with a body (a simulation answers as
 * if its writes were made and stores nothing), and webhooks.
 */
const notLogged = new Set([
  'POST /article/search',
  'POST /pricelist/query',
  'POST /pricelist/search',
  'POST /price/diff',
  'POST /price/query',
  'POST /price/simulate',
  'POST /rounding-profile/apply',
])
const notLoggedPrefixes = ['/webhooks', '/management', '/oauth2']

t.test('the table has a row for every write route of /openapi.json and every entity type', async (t) => {
  const openapi = await server.request('GET', '/openapi.json')
  t.equal(openapi.status, 200)
  const writes: string[] = []
  for (const [fullPath, operations] of Object.entries(openapi.body.paths as Record<string, Record<string, unknown>>)) {
    if (!fullPath.startsWith('/t/{slug}/')) continue
    const routePath = fullPath.slice('/t/{slug}'.length)
    if (notLoggedPrefixes.some((prefix) => routePath.startsWith(prefix))) continue
    for (const method of Object.keys(operations)) {
      const route = `${method.toUpperCase()} ${routePath}`
      if (method !== 'get' && !notLogged.has(route)) writes.push(route)
    }
  }
  t.ok(writes.length >= 25, `found ${writes.length} write routes`)
  const covered = new Set(rows.map((row) => row.route))
  t.same(writes.filter((route) => !covered.has(route)).sort(), [], 'write routes without a row')
  t.same([...covered].filter((route) => !writes.includes(route)).sort(), [], 'rows naming no write route')
  const types = new Set(rows.map((row) => row.entity))
  t.same(
    entityTypes.filter((type) => !types.has(type)),
    [],
    'entity types without a row',
  )
  const table = entityTypes.map((type) => {
    const paths = [...new Set(rows.filter((row) => row.entity === type).map((row) => `${row.kind}: ${row.route}`))]
    return `${type.padEnd(17)} ${paths.join('; ')}`
  })
  t.comment(`coverage (entity type: write paths)\n${table.join('\n')}`)
})
