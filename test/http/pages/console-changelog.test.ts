/**
 * The console's changelog page (issue 30, point 5) against the real server: every entry newest
 * first in words (type, what, change, by whom), the same entries as `GET /changelog` in reverse;
 * pages of 50 whose Older links walk the whole log and whose Newer links come back to the same
 * pages, also under a type filter and a code filter (entries of the kind interleaved with others);
 * the effective-price filter with each event's gross and net before → after, cause and moment, a
 * summary's count linking to "what changes" between the moment before and the moment (which lists
 * exactly the SKUs it counted), and the cause filter; bad filter values as 400 messages in the form;
 * codes with markup shown as text; the query rate; who sees the page. Effective-price events come
 * from `effective_price.events.enabled` and prices written on a GROSS list (25% VAT in SE), each
 * awaited through the JSON changelog (the scheduler's tick is 200 ms).
 */
import t, { type Test } from 'tap'
import { readChangelog, type ChangelogEntry } from '../../helpers/changelog.js'
import { consoleHeaders, plain, signIn, tableRows } from '../../helpers/console.js'
import {
  expectStatus,
  mapSkus,
  putPrice,
  putPricelist,
  putSetting,
  setupReference,
} from '../../helpers/price-fixtures.js'
import { TenantClient, type Answer } from '../../helpers/server.js'
import { suiteServer } from '../../helpers/suite.js'

const { server } = await suiteServer()
const owner = 'owner@log.example'

async function ownedTenant(slug: string): Promise<TenantClient> {
  const body = { slug, tier: 'standard', region: 'local', owner_email: owner }
  await expectStatus(server.admin('POST', '/admin/tenants', body), 201, `tenant ${slug}`)
  const key = await expectStatus(server.admin('POST', `/admin/tenants/${slug}/keys`, { name: 'test' }), 201, 'key')
  const client = new TenantClient(server, slug, key.body.client_id, key.body.client_secret)
  await client.refreshToken()
  return client
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
/** An instant as the API writes it (whole seconds without milliseconds). */
const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z')

/** Waits until the changelog holds `count` effective-price events (the scheduler's tick is 200 ms). */
async function effectiveEvents(client: TenantClient, count: number): Promise<ChangelogEntry[]> {
  for (let waited = 0; waited < 10_000; waited += 100) {
    const events = await readChangelog(client, 'entity_type=effective_price&limit=1000')
    if (events.length >= count) return events
    await sleep(100)
  }
  throw new Error(`fewer than ${count} effective-price events after 10 s`)
}

const shop = await ownedTenant('log')
await setupReference(shop)
await putPricelist(shop, 'RETAIL', { currency_code: 'EUR', vat_mode: 'GROSS' })
await putPricelist(shop, 'BULK', { currency_code: 'EUR', vat_mode: 'NET' })
// 80 prices of SKUs without a VAT class: more than a page, and no effective-price events.
const bulk = Array.from({ length: 80 }, (_, index) => ({ sku: `B-${index}`, pricelist: 'BULK', price: 1 + index }))
await expectStatus(shop.call('POST', '/price/batch', bulk), 202, 'bulk prices')
await expectStatus(shop.call('PUT', `/article/${encodeURIComponent('<b>Q&x')}`, { name: 'markup' }), 202, 'article')
await mapSkus(shop, 'standard', ['E-1', 'E-2'], ['SE'])
await putSetting(shop, 'effective_price.events.enabled', 'true')
// 100 gross (80 net) for E-1, 50 (40) for E-2, then E-1 at 120 (96): three written events.
await putPrice(shop, 'E-1', 'RETAIL', { price: 100 })
await effectiveEvents(shop, 1)
await putPrice(shop, 'E-2', 'RETAIL', { price: 50 })
await effectiveEvents(shop, 2)
await putPrice(shop, 'E-1', 'RETAIL', { price: 120 })
await effectiveEvents(shop, 3)
// E-2 at 60 (48 net) from a moment two seconds ahead: a scheduled start.
const scheduledAt = Math.ceil((Date.now() + 2000) / 1000) * 1000
await putPrice(shop, 'E-2', 'RETAIL', { price: 60, start_date: iso(scheduledAt) })
await effectiveEvents(shop, 4)
// Half price on RETAIL: a rule moves the whole list, one summary of its 2 SKUs.
await putPricelist(shop, 'RETAIL', {
  currency_code: 'EUR',
  vat_mode: 'GROSS',
  price_rules: [{ expression: 'sales * 0.5' }],
})
const events = await effectiveEvents(shop, 5)
const everything = await readChangelog(shop, 'limit=1000')

const cookie = `pricing_session=${await signIn(server, owner)}`

function page(path: string, session = cookie): Promise<Answer> {
  return server.request('GET', path, { headers: { cookie: session, accept: 'text/html' }, redirect: 'manual' })
}

/** A link of the page by its text, as a path to request (null when the page has none). */
function link(text: string, name: string): string | null {
  const match = new RegExp(`<a href="([^"]+)"[^>]*>${name}</a>`).exec(text)
  return match === null ? null : match[1]!.replaceAll('&amp;', '&')
}

/** The sequences of a page's rows, from its first column ("#123"). */
const sequences = (text: string): number[] => tableRows(text).map((row) => Number(row[0]!.slice(1)))

/** Every page from `path` on by its Older links: each page's sequences. */
async function olderPages(t: Test, path: string): Promise<{ pages: number[][]; paths: string[] }> {
  const pages: number[][] = []
  const paths: string[] = []
  for (let next: string | null = path; next !== null && pages.length < 20; ) {
    const answer: Answer = await page(next)
    t.equal(answer.status, 200, next)
    pages.push(sequences(answer.text))
    paths.push(next)
    next = link(answer.text, 'Older')
  }
  return { pages, paths }
}

/** An instant of the API as the page writes it. */
const shown = (instant: string): string => `${instant.replace('T', ' ').replace('Z', '')} UTC`
const newestFirst = (entries: readonly ChangelogEntry[]): number[] => entries.map((entry) => entry.sequence).reverse()
const byKey = `API key "test" (${shop.clientId})`
const effectiveWhy = {
  written: 'a price written took effect at once',
  rule: 'price rules changed (a list, a bundle rule, an article a rule reads, a rounding profile)',
}
const changeWords: Readonly<Record<string, string>> = { created: 'Created', updated: 'Updated', deleted: 'Deleted' }

t.test('all changes: the newest 50 first, in words', async (t) => {
  const answer = await page('/console/log/changelog')
  t.equal(answer.status, 200)
  t.same(sequences(answer.text), newestFirst(everything).slice(0, 50), "the API's newest 50, newest first")
  t.match(plain(answer.text), new RegExp(`50 changes, newest first: sequences ${everything.length} down to`))
  const rows = tableRows(answer.text)
  const summary = events[events.length - 1]!
  // The newest: the rule's summary, then the list's new version that caused it.
  t.same(rows[0], [
    `#${summary.sequence}`,
    shown(summary.changed_at),
    'Effective price',
    'RETAIL',
    'Prices changed',
    'the service',
    `2 SKUs on RETAIL changed Tax area SE, from ${shown(summary.changed_at)} Why: price rules changed (a list, a bundle rule, an article a rule reads, a rounding profile)`,
  ])
  const list = everything.find((entry) => entry.entity_type === 'pricelist' && entry.change_type === 'updated')!
  t.same(rows[1], [`#${list.sequence}`, shown(list.changed_at), 'Pricelist', 'RETAIL', 'Updated', byKey, '–'])
  const write = [...everything].reverse().find((entry) => entry.entity_type === 'price' && entry.entity_code === 'E-1')!
  const writeRow = rows.find((row) => row[0] === `#${write.sequence}`)!
  t.same(writeRow.slice(2), ['Price', 'E-1 on RETAIL', 'Updated', byKey, '–'], 'a price write: SKU on list, the key')
  const setting = rows.find((row) => row[2] === 'Setting')!
  t.same(setting.slice(3, 5), ['effective_price.events.enabled', 'Created'])
  const mapping = rows.find((row) => row[2] === "Article's VAT class" && row[3] === 'E-1 in SE')
  t.ok(mapping, "an article's VAT class: SKU in tax area")
  t.match(answer.text, /<a href="\/console\/log\/changelog" aria-current="page">Changelog<\/a>/, 'its tab')
  t.equal(link(answer.text, 'Newer'), null, 'the newest page has no Newer link')
  t.equal(link(answer.text, 'Newest'), null, 'nor a Newest link')
})

t.test('paging: Older walks the whole log, Newer comes back to the same pages', async (t) => {
  const { pages, paths } = await olderPages(t, '/console/log/changelog')
  t.ok(everything.length > 100, `${everything.length} entries: three pages at least`)
  t.equal(pages.length, Math.ceil(everything.length / 50), 'pages of 50')
  t.same(pages.flat(), newestFirst(everything), 'together: every entry once, newest first')
  t.ok(
    pages.slice(0, -1).every((sequencesOfPage) => sequencesOfPage.length === 50),
    'every page but the last has 50',
  )
  const last = await page(paths[paths.length - 1]!)
  t.equal(link(last.text, 'Older'), null, 'the oldest page has no Older link')
  t.equal(sequences(last.text).at(-1), everything[0]!.sequence, 'and ends on the oldest entry')
  // Newer from each page after the first shows the page before it.
  for (let index = 1; index < paths.length; index++) {
    const answer = await page(paths[index]!)
    t.not(link(answer.text, 'Newest'), null, `page ${index + 1} links the newest`)
    const newer = await page(link(answer.text, 'Newer')!)
    t.same(sequences(newer.text), pages[index - 1], `Newer from page ${index + 1} is page ${index}`)
    t.equal(link(newer.text, 'Newer') === null, index === 1, 'only the first page has no Newer link')
  }
})

t.test('a type filter and a code filter page over entries of the kind only', async (t) => {
  const prices = everything.filter((entry) => entry.entity_type === 'price')
  const byType = await olderPages(t, '/console/log/changelog?entity_type=price')
  t.same(byType.pages.flat(), newestFirst(prices), 'the price writes, newest first, over two pages')
  t.same(
    byType.pages.map((sequencesOfPage) => sequencesOfPage.length),
    [50, prices.length - 50],
  )
  const first = await page(byType.paths[0]!)
  const newest = prices[prices.length - 1]!
  t.same(
    tableRows(first.text)[0]!.slice(2),
    ['E-2 on RETAIL', changeWords[newest.change_type], byKey],
    'a type chosen: no type column, no details',
  )
  const onBulk = everything.filter((entry) => entry.entity_code === 'BULK' || entry.composite_key === 'BULK')
  const byCode = await olderPages(t, '/console/log/changelog?code=BULK')
  t.same(byCode.pages.flat(), newestFirst(onBulk), "BULK's prices and the list itself")
  t.equal(onBulk.length, 81)
  const e1 = await page('/console/log/changelog?code=E-1')
  t.same(
    tableRows(e1.text).map((row) => [row[2], row[3], row[4]]),
    [
      ['Effective price', 'E-1 on RETAIL', 'Price changed'],
      ['Price', 'E-1 on RETAIL', 'Updated'],
      ['Effective price', 'E-1 on RETAIL', 'Now priced'],
      ['Price', 'E-1 on RETAIL', 'Created'],
      ["Article's VAT class", 'E-1 in SE', 'Created'],
    ],
    "E-1's own entries, not the summary (whose code is the list)",
  )
})

t.test('every type: its pages together are exactly its entries, newest first', async (t) => {
  const types = [...new Set(everything.map((entry) => entry.entity_type))]
  t.ok(types.length >= 9, `${types.length} types in the log`)
  for (const type of types) {
    const { pages } = await olderPages(t, `/console/log/changelog?entity_type=${type}`)
    t.same(pages.flat(), newestFirst(everything.filter((entry) => entry.entity_type === type)), type)
  }
})

t.test('a search that finds little stops after 5,000 entries, and its links search on', async (t) => {
  const big = await ownedTenant('big')
  await expectStatus(big.call('PUT', '/currency/EUR', { is_active: true, vat_precision: 2 }), 202, 'EUR')
  await putPricelist(big, 'HAY', { currency_code: 'EUR', vat_mode: 'NET' })
  await expectStatus(big.call('PUT', '/article/NEEDLE', { name: 'needle' }), 202, 'article')
  for (let batch = 0; batch < 3; batch++) {
    const items = Array.from({ length: 2000 }, (_, index) => ({
      sku: `H-${batch}-${index}`,
      pricelist: 'HAY',
      price: 1,
    }))
    await expectStatus(big.call('POST', '/price/batch', items), 202, 'hay')
  }
  const needle = (await readChangelog(big, 'entity_type=article'))[0]!
  const first = await page('/console/big/changelog?code=NEEDLE')
  t.equal(first.status, 200)
  t.same(tableRows(first.text), [], 'nothing among the newest 5,000')
  t.match(
    plain(first.text),
    /No changes among the entries searched\. .*A page searches at most 5,000 entries of the log/,
  )
  const older = link(first.text, 'Older')
  t.match(older, /^\/console\/big\/changelog\?code=NEEDLE&before=\d+$/)
  t.equal(Number(/before=(\d+)/.exec(older!)![1]), 6003 - 5000 + 1, 'it goes on below the 5,000 searched')
  const found = await page(older!)
  t.same(
    tableRows(found.text).map((row) => row.slice(0, 5)),
    [[`#${needle.sequence}`, shown(needle.changed_at), 'Article', 'NEEDLE', 'Created']],
    'the next search reaches it',
  )
  t.equal(link(found.text, 'Older'), null, 'nothing older')
  t.match(link(found.text, 'Newer'), /&after=3$/, 'Newer searches on above it')
})

t.test(
  'effective prices: each event with its amounts, cause and moment; a summary links to what changes',
  async (t) => {
    const answer = await page('/console/log/changelog?entity_type=effective_price')
    t.equal(answer.status, 200)
    t.same(sequences(answer.text), newestFirst(events), 'only effective-price events, newest first')
    const [summary, scheduled, rewritten, second, first] = events.slice().reverse()
    const from = (event: ChangelogEntry) => `Tax area SE, from ${shown(event.changed_at)}`
    const row = (event: ChangelogEntry, what: string, change: string, price: string, why: string, by: string) => [
      `#${event.sequence}`,
      shown(event.changed_at),
      what,
      change,
      `${price}${price === '' ? '' : ' '}${from(event)}`,
      why,
      by,
    ]
    t.same(tableRows(answer.text), [
      row(summary!, 'RETAIL', 'Prices changed', '2 SKUs on RETAIL changed', effectiveWhy.rule, 'the service'),
      row(
        scheduled!,
        'E-2 on RETAIL',
        'Price changed',
        'Gross 50.00 EUR → 60.00 EUR Net 40.00 EUR → 48.00 EUR',
        'a price scheduled earlier came into force',
        byKey,
      ),
      row(
        rewritten!,
        'E-1 on RETAIL',
        'Price changed',
        'Gross 100.00 EUR → 120.00 EUR Net 80.00 EUR → 96.00 EUR',
        effectiveWhy.written,
        byKey,
      ),
      row(
        second!,
        'E-2 on RETAIL',
        'Now priced',
        'Gross no price → 50.00 EUR Net no price → 40.00 EUR',
        effectiveWhy.written,
        byKey,
      ),
      row(
        first!,
        'E-1 on RETAIL',
        'Now priced',
        'Gross no price → 100.00 EUR Net no price → 80.00 EUR',
        effectiveWhy.written,
        byKey,
      ),
    ])
    t.equal(scheduled!.changed_at, iso(scheduledAt), 'the scheduled event is at its moment')
    const changes = link(answer.text, '2 SKUs on RETAIL changed')
    t.match(changes, /^\/console\/log\/changes\?pricelist=RETAIL&tax_area=SE&currency=EUR&moment=.+&since=/)
    // From the millisecond before the rule to the rule: E-1 120 -> 60, E-2 60 -> 30, gross.
    const diff = await page(changes!)
    t.equal(diff.status, 200)
    t.same(tableRows(diff.text), [
      ['E-1', 'RETAIL', '120.00 EUR', '60.00 EUR', '-50.00 %', "the list's price rules changed"],
      ['E-2', 'RETAIL', '60.00 EUR', '30.00 EUR', '-50.00 %', "the list's price rules changed"],
    ])
  },
)

t.test('the cause filter: only the events of that cause', async (t) => {
  const written = await page('/console/log/changelog?entity_type=effective_price&cause=written')
  t.equal(written.status, 200)
  const ofCause = events.filter((event) => (event as unknown as { cause: string }).cause === 'written')
  t.equal(ofCause.length, 3)
  t.same(sequences(written.text), newestFirst(ofCause))
  t.ok(
    tableRows(written.text).every((row) => row[5] === effectiveWhy.written),
    'every row says the cause',
  )
  t.match(
    written.text,
    /<option value="written" selected>A price written took effect at once<\/option>/,
    'the select keeps the cause',
  )
  const scheduled = await page('/console/log/changelog?entity_type=effective_price&cause=scheduled_start&code=E-2')
  t.same(
    tableRows(scheduled.text).map((row) => row.slice(2, 5)),
    [
      [
        'E-2 on RETAIL',
        'Price changed',
        `Gross 50.00 EUR → 60.00 EUR Net 40.00 EUR → 48.00 EUR Tax area SE, from ${shown(iso(scheduledAt))}`,
      ],
    ],
  )
  const none = await page('/console/log/changelog?entity_type=effective_price&cause=fx_published')
  t.equal(none.status, 200)
  t.match(plain(none.text), /No changes\. .* Another type, cause or code may find some\./)
})

t.test('bad filter values are 400 messages in the form, never a 500; markup stays text', async (t) => {
  const cases: [string, RegExp][] = [
    ['entity_type=nope', /There is no type of change &quot;nope&quot;: choose one from the list/],
    ['entity_type=effective_price&cause=nope', /There is no cause &quot;nope&quot;/],
    ['entity_type=price&cause=written', /A cause belongs to effective-price events/],
    ['cause=written', /A cause belongs to effective-price events/],
    ['before=abc', /&quot;abc&quot; is not a sequence number/],
    ['before=-1', /&quot;-1&quot; is not a sequence number/],
    ['before=10&after=2', /A page starts before a sequence or after one, not both/],
    [`code=${encodeURIComponent('a\u0001b')}`, /A code is 1 to 64 characters without control characters/],
  ]
  for (const [query, message] of cases) {
    const answer = await page(`/console/log/changelog?${query}`)
    t.equal(answer.status, 400, query)
    t.match(answer.text, /<p class="flash error" role="alert">/, `${query}: the message is in the form`)
    t.match(answer.text, message, query)
    t.match(answer.text, /<form method="get" action="\/console\/log\/changelog"/, `${query}: the form is shown again`)
    t.notMatch(answer.text, /<tbody>/, `${query}: no entries`)
  }
  const hostile = await page(`/console/log/changelog?entity_type=${encodeURIComponent('<script>x</script>')}`)
  t.equal(hostile.status, 400)
  t.notMatch(hostile.text, /<script>x<\/script>/, 'the value is never markup')
  t.match(hostile.text, /&quot;&lt;script&gt;x&lt;\/script&gt;&quot;/)
  const article = await page(`/console/log/changelog?entity_type=article&code=${encodeURIComponent('<b>Q&x')}`)
  t.equal(article.status, 200)
  t.same(
    tableRows(article.text).map((row) => row.slice(2, 4)),
    [['<b>Q&x', 'Created']],
    'the code as a person reads it',
  )
  t.notMatch(article.text, /<b>Q&/, 'never as markup')
  t.match(article.text, /&lt;b&gt;Q&amp;x/)
  t.match(article.text, /value="&lt;b&gt;Q&amp;x"/, 'and in its field as text')
  const ahead = await page('/console/log/changelog?before=999999')
  t.same(sequences(ahead.text), newestFirst(everything).slice(0, 50), 'a sequence past the end: the newest')
})

t.test("a page costs one item of the tenant's query rate; a bad filter costs nothing", async (t) => {
  await ownedTenant('slow')
  await expectStatus(
    server.admin('PATCH', '/admin/tenants/slow', { limits: { query_rate: 1, query_burst: 1 } }),
    200,
    'limits',
  )
  const bad = await page('/console/slow/changelog?entity_type=nope')
  t.equal(bad.status, 400)
  const first = await page('/console/slow/changelog')
  t.equal(first.status, 200, 'the burst of 1 pays one page')
  t.match(
    plain(first.text),
    /No changes\. The changelog holds no entries\. Every write through the API or the console shows here\./,
    'a new tenant has no entries',
  )
  const second = await page('/console/slow/changelog')
  t.equal(second.status, 429, 'the next finds the bucket empty')
  t.match(second.text, /The tenant&#39;s query rate limit is used up; try again in \d+ s/)
  t.match(second.headers.get('retry-after') ?? '', /^[1-9]\d*$/)
})

t.test('who sees the page: signed out, not a user, a viewer', async (t) => {
  const out = await server.request('GET', '/console/log/changelog', { redirect: 'manual' })
  t.equal(out.status, 303)
  t.equal(out.headers.get('location'), '/portal?error=sign-in-first')
  const stranger = `pricing_session=${await signIn(server, 'stranger@log.example')}`
  t.equal((await page('/console/log/changelog', stranger)).status, 404, 'a tenant one is not a user of')
  const headers = await consoleHeaders(server, owner, 'log')
  const viewer = 'viewer@log.example'
  await expectStatus(
    server.request('POST', '/t/log/management/users', { headers, body: { email: viewer, role: 'viewer' } }),
    201,
    'invite',
  )
  const session = `pricing_session=${await signIn(server, viewer)}`
  const overview = await page('/console/log', session)
  t.match(overview.text, /<a href="\/console\/log\/changelog">Changelog<\/a>/, 'every role: the tab')
  const answer = await page('/console/log/changelog?entity_type=effective_price', session)
  t.equal(answer.status, 200)
  t.same(sequences(answer.text), newestFirst(events))
})
