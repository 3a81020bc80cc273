/**
 * The console's "why this price" and "what changes" pages against the real server: the waterfall of
 * a hand-computed trace (a parent two levels up and two rules) in the order the pipeline ran, with
 * the amount after each step; the candidates that lost with their reason in words; the changes
 * between now and a week ahead, exactly the SKUs that change with their amounts, percent and causes;
 * paging by the plan's items per request; the rate limit; clear messages for unknown codes and bad
 * moments; escaping; who may see the pages. Every expected amount is worked out by hand beside it.
 */
import t from 'tap'
import { consoleHeaders, plain, signIn, tableRows } from '../../helpers/console.js'
import { expectStatus, mapSkus, putPrice, putPricelist, setupReference } from '../../helpers/price-fixtures.js'
import { TenantClient, type Answer } from '../../helpers/server.js'
import { suiteServer } from '../../helpers/suite.js'

const { server } = await suiteServer()
const owner = 'owner@prices.example'

/** A tenant of `owner` with the reference data and `setup`; `limits` after them (a setup call costs more). */
async function ownedTenant(
  slug: string,
  setup: (client: TenantClient) => Promise<void>,
  limits?: Record<string, unknown>,
): Promise<TenantClient> {
  const body = { slug, tier: 'standard', region: 'local', owner_email: owner }
  await expectStatus(server.admin('POST', '/admin/tenants', body), 201, `tenant ${slug}`)
  const key = await expectStatus(server.admin('POST', `/admin/tenants/${slug}/keys`, { name: 'test' }), 201, 'key')
  const client = new TenantClient(server, slug, key.body.client_id, key.body.client_secret)
  await client.refreshToken()
  await setupReference(client)
  await putPricelist(client, 'BASE', { currency_code: 'EUR', vat_mode: 'NET' })
  await setup(client)
  if (limits !== undefined)
    await expectStatus(server.admin('PATCH', `/admin/tenants/${slug}`, { limits }), 200, 'limits')
  return client
}

const inDays = (days: number): string => new Date(Date.now() + days * 86_400_000).toISOString()

const shop = await ownedTenant('shop', async () => {})
// Five SKUs at 10 on BASE; P-2 and P-5 go to 20 tomorrow.
const pagedSkus = ['P-1', 'P-2', 'P-3', 'P-4', 'P-5']
await ownedTenant(
  'paged',
  async (client) => {
    for (const sku of pagedSkus) await putPrice(client, sku, 'BASE', { price: 10 })
    for (const sku of ['P-2', 'P-5']) await putPrice(client, sku, 'BASE', { price: 20, start_date: inDays(1) })
    await mapSkus(client, 'standard', pagedSkus)
  },
  { max_items_per_request: 2 },
)
await ownedTenant(
  'slow',
  async (client) => {
    await putPrice(client, 'S-1', 'BASE', { price: 10 })
    await mapSkus(client, 'standard', ['S-1'])
  },
  { query_rate: 1, query_burst: 8 },
)
const cookie = `pricing_session=${await signIn(server, owner)}`

function page(path: string, session = cookie): Promise<Answer> {
  return server.request('GET', path, { headers: { cookie: session, accept: 'text/html' }, redirect: 'manual' })
}

/** The waterfall's rows: [step kind, label, detail, amount], in the page's order. */
function waterfallRows(text: string): string[][] {
  const rows = [...text.matchAll(/<li class="step-([a-z_]+)">(.*?)<\/li>/g)]
  return rows.map(([, kind, row]) => {
    const cells = [...row!.matchAll(/<span class="(label|detail|amount[^"]*)"[^>]*>(.*?)<\/span>(?=<span class="|$)/g)]
    return [kind!, ...cells.map(([, , content]) => plain(content!).replace('Amount after this step: ', ''))]
  })
}

// BASE 100 EUR NET; MID and LEAF inherit it, LEAF with a rule that does not match and one that takes 1.
await putPricelist(shop, 'MID', { currency_code: 'EUR', parent_code: 'BASE' })
await putPricelist(shop, 'LEAF', {
  currency_code: 'EUR',
  parent_code: 'MID',
  price_rules: [
    { code: 'food', filter: 'article.type == "food"', expression: 'sales * 0.5' },
    { code: 'minus', expression: 'sales - 1' },
  ],
})
await putPricelist(shop, 'EUR-G', { currency_code: 'EUR', vat_mode: 'GROSS' })
await putPrice(shop, 'X-1', 'BASE', { price: 100 })
await putPrice(shop, 'X-1', 'EUR-G', { price: 120 })
// C-1 drops from 100 to 80 on BASE in three days; C-2 stays; C-3 is re-priced on LEAF's parent MID.
await putPrice(shop, 'C-1', 'BASE', { price: 100 })
await putPrice(shop, 'C-1', 'BASE', { price: 80, start_date: inDays(3) })
await putPrice(shop, 'C-2', 'BASE', { price: 50 })
await putPrice(shop, 'C-3', 'BASE', { price: 10 })
await putPrice(shop, 'C-3', 'MID', { price: 12, start_date: inDays(2) })
await mapSkus(shop, 'standard', ['X-1', 'C-1', 'C-2', 'C-3'])

t.test('why: a rule and a parent two levels up, as a waterfall in the order the pipeline ran', async (t) => {
  const answer = await page('/console/shop/why?sku=X-1&pricelist=LEAF&tax_area=SE&currency=EUR&moment=&quantity=1')
  t.equal(answer.status, 200, answer.text.slice(0, 300))
  // 100 EUR NET on BASE, through MID to LEAF; "food" does not match; 100 - 1 = 99; VAT 25%: 24.75; 123.75.
  const rows = waterfallRows(answer.text)
  t.same(
    rows.map((row) => [row[0], row[1], row[3]]),
    [
      ['candidates', 'Candidates', ''],
      ['inheritance', 'Inheritance', ''],
      ['version', 'Price version', '100.00 EUR'],
      ['rule', 'Rule food', '100.00 EUR'],
      ['rule', 'Rule minus', '99.00 EUR'],
      ['vat', 'VAT', ''],
      ['amounts', 'Final amounts', '123.75 EUR'],
    ],
  )
  t.equal(rows[0]![2], 'pricelists selected: LEAF')
  t.equal(rows[1]![2], 'LEAF → MID → BASE; the price comes from BASE')
  t.match(rows[2]![2], /^on BASE, in force since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)? UTC, written .* UTC by /)
  t.equal(rows[3]![2], 'on LEAF: its filter does not match this SKU, so it is skipped')
  t.equal(rows[4]![2], 'on LEAF: 100.00 → 99.00')
  t.match(rows[5]![2], /^class standard \(since .* UTC\), rate 25% \(since .* UTC\); the list's prices are NET$/)
  t.equal(rows[6]![2], 'net 99.00 + VAT 24.75')
  const facts = plain(/<dl class="facts">([\s\S]*?)<\/dl>/.exec(answer.text)![1]!)
  t.match(facts, /^Pricelist LEAF Net 99\.00 EUR VAT 24\.75 EUR Gross 123\.75 EUR The list's prices are NET Moment /)
  t.match(
    answer.text,
    /Inputs hash \(the same question at the same moment always gives it\):\s+<code>sha256:[0-9a-f]{64}<\/code>/,
  )
  t.same(tableRows(answer.text).slice(0, 2), [
    ['LEAF', 'won', 'Lowest gross: it gives the price', '99.00', '24.75', '123.75'],
    ['BASE', 'lost', 'Not asked for: the form names another pricelist', '–', '–', '–'],
  ])
})

t.test('why: the best of all lists, and every loser with its reason in words and amounts', async (t) => {
  const answer = await page('/console/shop/why?sku=X-1&pricelist=&tax_area=SE&currency=EUR')
  t.equal(answer.status, 200)
  // EUR-G: 120 gross, VAT 120 x 25 / 125 = 24, net 96; BASE and MID 125; LEAF 123.75.
  t.match(plain(answer.text), /X-1: 120\.00 EUR gross/)
  t.same(tableRows(answer.text), [
    ['BASE', 'lost', 'Priced, but another pricelist is cheaper (gross)', '100.00', '25.00', '125.00'],
    ['EUR-G', 'won', 'Lowest gross: it gives the price', '96.00', '24.00', '120.00'],
    ['LEAF', 'lost', 'Priced, but another pricelist is cheaper (gross)', '99.00', '24.75', '123.75'],
    ['MID', 'lost', 'Priced, but another pricelist is cheaper (gross)', '100.00', '25.00', '125.00'],
  ])
})

t.test('why: the prior price of a reduction in force, and none without one', async (t) => {
  // C-1: 100 EUR NET on BASE from now, 80 in three days; asked four days ahead, the reduction began
  // in three days and the lowest price of the 30 days before it is 100 net, 125 gross.
  const moment = new Date(Date.now() + 4 * 86_400_000).toISOString().slice(0, 16)
  const reduced = await page(`/console/shop/why?sku=C-1&pricelist=BASE&tax_area=SE&currency=EUR&moment=${moment}`)
  t.equal(reduced.status, 200)
  const text = plain(reduced.text)
  t.match(text, /C-1: 100\.00 EUR gross/)
  t.match(
    text,
    /Prior price \(lowest in the 30 days before the reduction\) 125\.00 EUR gross, 100\.00 net, in force from \d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)? UTC/,
  )
  const started = /Reduction started (\S+ \S+) UTC/.exec(text)
  t.ok(started, 'the reduction start is shown')
  t.ok(
    Math.abs(Date.parse(`${started![1]!.replace(' ', 'T')}Z`) - (Date.now() + 3 * 86_400_000)) < 60_000,
    'three days ahead',
  )
  const flat = await page('/console/shop/why?sku=C-2&pricelist=BASE&tax_area=SE&currency=EUR')
  t.match(plain(flat.text), /Prior price No price reduction in force/)
})

t.test('why: unknown SKU, list, bad moment and quantity are messages in the form, escaped', async (t) => {
  const cases: [string, number, RegExp][] = [
    ['sku=NOPE&tax_area=SE&currency=EUR', 404, /There is no SKU NOPE: no article and no price has that code<\/p>/],
    ['sku=X-1&pricelist=GONE&tax_area=SE&currency=EUR', 404, /There is no pricelist GONE at that moment<\/p>/],
    ['sku=X-1&tax_area=SE&currency=EUR&moment=yesterday', 400, /The moment &quot;yesterday&quot; is not a date/],
    ['sku=X-1&tax_area=SE&currency=EUR&quantity=-2', 400, /quantity|above 0/],
    ['sku=X-1&tax_area=XX&currency=EUR', 400, /Tax area XX does not exist/],
    ['sku=&tax_area=SE&currency=EUR', 400, /Enter a SKU/],
  ]
  for (const [query, status, message] of cases) {
    const answer = await page(`/console/shop/why?${query}`)
    t.equal(answer.status, status, query)
    t.match(answer.text, /<p class="flash error" role="alert">/, `${query}: the message is in the form`)
    t.match(answer.text, message, query)
    t.match(answer.text, /<form method="get" action="\/console\/shop\/why"/, `${query}: the form is shown again`)
  }
  const hostile = await page(
    `/console/shop/why?sku=${encodeURIComponent('<script>x</script>')}&tax_area=SE&currency=EUR`,
  )
  t.equal(hostile.status, 404)
  t.notMatch(hostile.text, /<script>x<\/script>/, 'the SKU is never markup')
  t.match(hostile.text, /There is no SKU &lt;script&gt;x&lt;\/script&gt;/, 'it is shown as text')
  t.match(hostile.text, /value="&lt;script&gt;x&lt;\/script&gt;"/, 'and stays in its field as text')
})

t.test('why: a SKU priced nowhere at the moment says why, list by list', async (t) => {
  const answer = await page('/console/shop/why?sku=C-1&pricelist=EUR-G&tax_area=SE&currency=EUR')
  t.equal(answer.status, 200)
  t.match(answer.text, /No price at that moment: no selected pricelist has a price for it\./)
  t.same(tableRows(answer.text)[0], [
    'EUR-G',
    'lost',
    'No price for this SKU at that moment, neither its own nor inherited',
    '–',
    '–',
    '–',
  ])
})

t.test('what changes: exactly the SKUs that change by the moment, with amounts, percent, causes', async (t) => {
  const form = await page('/console/shop/changes')
  t.equal(form.status, 200)
  t.match(
    form.text,
    /<input id="moment" name="moment" type="datetime-local" step="1" value="\d{4}-\d\d-\d\dT\d\d:\d\d"/,
  )
  t.notMatch(form.text, /<tbody>/, 'nothing is compared before the form is sent')
  const base = await page('/console/shop/changes?pricelist=BASE&tax_area=SE&currency=EUR')
  t.equal(base.status, 200)
  // C-1 on BASE: 125 gross now, 80 + 20 = 100 in three days: -20%, its own version.
  t.same(tableRows(base.text), [
    ['C-1', 'BASE', '125.00 EUR', '100.00 EUR', '-20.00 %', "the list's own price changed"],
  ])
  t.match(plain(base.text), /SKUs 1 to 4 of 4 compared, in code order: 1 price changes\./)
  const why = /<a href="(\/console\/shop\/why\?sku=C-1&amp;pricelist=BASE&amp;[^"]+)">C-1<\/a>/.exec(base.text)
  t.ok(why, 'the SKU links to why this price at the later moment')
  const later = await page(why![1]!.replaceAll('&amp;', '&'))
  t.match(plain(later.text), /C-1: 100\.00 EUR gross/, 'which explains the price after the change')
  const leaf = await page('/console/shop/changes?pricelist=LEAF&tax_area=SE&currency=EUR')
  // On LEAF (rule "minus"): C-1 99 -> 123.75 now, 79 -> 98.75 later: -25 / 123.75 = -20.2020%;
  // C-3 from BASE 10 - 1 = 9 -> 11.25, then MID's 12 - 1 = 11 -> 13.75: +2.5 / 11.25 = +22.2222%.
  t.same(tableRows(leaf.text), [
    ['C-1', 'LEAF', '123.75 EUR', '98.75 EUR', '-20.202 %', "a parent list's price changed"],
    ['C-3', 'LEAF', '11.25 EUR', '13.75 EUR', '22.2222 %', "a parent list's price changed"],
  ])
  const soon = await page(
    `/console/shop/changes?pricelist=BASE&tax_area=SE&currency=EUR&moment=${inDays(1).slice(0, 16)}`,
  )
  t.match(soon.text, /No price changes among these SKUs\./, 'nothing changes by tomorrow')
  t.match(plain(soon.text), /: 0 prices change\./)
  const bad = await page('/console/shop/changes?pricelist=GONE&tax_area=SE&currency=EUR')
  t.equal(bad.status, 400)
  t.match(bad.text, /<p class="flash error" role="alert">The pricelist filter selects no active pricelist<\/p>/)
})

t.test("what changes: pages follow the plan's items per request, and together are the whole diff", async (t) => {
  const seen: string[][] = []
  const counts: string[] = []
  let path: string | null = '/console/paged/changes?tax_area=SE&currency=EUR'
  while (path !== null) {
    const answer: Answer = await page(path)
    t.equal(answer.status, 200)
    seen.push(...tableRows(answer.text))
    counts.push(/SKUs (\d+ to \d+) of 5/.exec(plain(answer.text))![1]!)
    const next: RegExpExecArray | null = /<a href="(\/console\/paged\/changes\?[^"]+)">Next page of SKUs/.exec(
      answer.text,
    )
    path = next === null ? null : next[1]!.replaceAll('&amp;', '&')
  }
  t.same(counts, ['1 to 2', '3 to 4', '5 to 5'], 'two SKUs a page: the plan allows two items a request')
  // 10 + 2.5 = 12.50 gross, then 20 + 5 = 25.00: +100%.
  t.same(seen, [
    ['P-2', 'BASE', '12.50 EUR', '25.00 EUR', '100.00 %', "the list's own price changed"],
    ['P-5', 'BASE', '12.50 EUR', '25.00 EUR', '100.00 %', "the list's own price changed"],
  ])
  const why = await page('/console/paged/why?sku=P-1&tax_area=SE&currency=EUR')
  t.equal(why.status, 413, 'an explained SKU (3 items) and its prior price (5), over the plan')
  t.match(why.text, /This costs 8 items; the maximum per request is 2/)
})

t.test("the pages cost the tenant's query rate as the JSON calls do", async (t) => {
  const first = await page('/console/slow/why?sku=S-1&tax_area=SE&currency=EUR')
  t.equal(first.status, 200, 'the burst of 8 pays one explained SKU (3) and its prior price (5)')
  const second = await page('/console/slow/why?sku=S-1&tax_area=SE&currency=EUR')
  t.equal(second.status, 429, 'the next one finds the bucket empty')
  t.match(second.text, /The tenant&#39;s query rate limit is used up; try again in \d+ s/)
  t.match(second.headers.get('retry-after') ?? '', /^\d+$/)
})

t.test('who sees the pages: signed out, not a user, a viewer', async (t) => {
  const out = await server.request('GET', '/console/shop/why', { redirect: 'manual' })
  t.equal(out.status, 303)
  t.equal(out.headers.get('location'), '/portal?error=sign-in-first')
  const stranger = `pricing_session=${await signIn(server, 'stranger@prices.example')}`
  for (const path of ['/console/shop/why', '/console/shop/changes'])
    t.equal((await page(path, stranger)).status, 404, `${path}: a tenant one is not a user of does not exist`)
  const headers = await consoleHeaders(server, owner, 'shop')
  const viewer = 'viewer@prices.example'
  const invited = await server.request('POST', '/t/shop/management/users', {
    headers,
    body: { email: viewer, role: 'viewer' },
  })
  t.equal(invited.status, 201)
  const session = `pricing_session=${await signIn(server, viewer)}`
  const overview = await page('/console/shop', session)
  t.match(overview.text, /<a href="\/console\/shop\/why">Why this price<\/a>/, 'every role reads prices: the tab')
  t.match(overview.text, /<a href="\/console\/shop\/changes">What changes<\/a>/)
  const why = await page('/console/shop/why?sku=X-1&pricelist=BASE&tax_area=SE&currency=EUR', session)
  t.equal(why.status, 200)
  t.match(plain(why.text), /X-1: 125\.00 EUR gross/)
  t.match(why.text, /<a href="\/console\/shop\/why" aria-current="page">Why this price<\/a>/)
})
