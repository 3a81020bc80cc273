/**
 * The console's corrections page (issue 30, point 2) against the real server: a price's own
 * versions newest first with their marks; marking one through the page's form (the session's form
 * token, a same-origin post) answers a 303 back to the same price, the JSON API lists the mark with
 * the person's e-mail as `marked_by`, and the EU prior price leaves the version out; taking it back
 * restores both. Viewers see the versions without forms and a forged post of theirs is refused; a
 * post without the form token is refused; unknown lists, SKUs without versions and bad input are
 * messages in the page, never a 500. The history is written as scheduled prices in the year 2998
 * (a write cannot start in the past) and the prior price asked at an `as_of` after it.
 */
import t from 'tap'
import { consoleHeaders, plain, signIn, tableRows } from '../../helpers/console.js'
import {
  expectStatus,
  futureDay,
  mapSkus,
  putPrice,
  putPricelist,
  query,
  setupReference,
} from '../../helpers/price-fixtures.js'
import { TenantClient, type Answer } from '../../helpers/server.js'
import { suiteServer } from '../../helpers/suite.js'

const { server } = await suiteServer()
const owner = 'owner@fix.example'
const editor = 'editor@fix.example'
const viewer = 'viewer@fix.example'
const day = futureDay

await expectStatus(
  server.admin('POST', '/admin/tenants', { slug: 'shop', tier: 'standard', region: 'local', owner_email: owner }),
  201,
  'tenant',
)
const key = await expectStatus(server.admin('POST', '/admin/tenants/shop/keys', { name: 'test' }), 201, 'key')
const shop = new TenantClient(server, 'shop', key.body.client_id, key.body.client_secret)
await shop.refreshToken()
await setupReference(shop)
await putPricelist(shop, 'RETAIL', { currency_code: 'EUR', vat_mode: 'GROSS' })
await putPricelist(shop, 'CHILD', { currency_code: 'EUR', parent_code: 'RETAIL' })
await mapSkus(shop, 'standard', ['TYPO'])
const historyWrittenMs = Date.now()
// 100, then 1 for a day by mistake (meant 100), 100 again, then a real reduction to 80 on day 50.
for (const [at, price] of [
  [0, 100],
  [30, 1],
  [31, 100],
  [50, 80],
] as const)
  await putPrice(shop, 'TYPO', 'RETAIL', { price, start_date: day(at) })

const ownerHeaders = await consoleHeaders(server, owner, 'shop')
for (const [email, role] of [
  [editor, 'editor'],
  [viewer, 'viewer'],
] as const)
  await expectStatus(
    server.request('POST', '/t/shop/management/users', { headers: ownerHeaders, body: { email, role } }),
    201,
    `invite ${role}`,
  )
const cookies: Record<string, string> = {}
for (const email of [owner, editor, viewer]) cookies[email] = `pricing_session=${await signIn(server, email)}`

const typoPage = '/console/shop/corrections?sku=TYPO&pricelist=RETAIL'

function page(email: string, path: string): Promise<Answer> {
  return server.request('GET', path, { headers: { cookie: cookies[email]!, accept: 'text/html' }, redirect: 'manual' })
}

/** A form post as a browser sends it: the person's cookie and a same-origin Origin. */
function post(email: string, path: string, fields: Record<string, string>): Promise<Answer> {
  return server.request('POST', path, {
    raw: new URLSearchParams(fields).toString(),
    headers: { cookie: cookies[email]!, 'content-type': 'application/x-www-form-urlencoded', origin: server.url },
    redirect: 'manual',
  })
}

interface PageForm {
  readonly action: string
  readonly fields: Record<string, string>
}

/** The page's post forms of versions (the sign-out form left out), with their hidden fields. */
function versionForms(text: string): PageForm[] {
  const forms = [...text.matchAll(/<form class="inline[^"]*" method="post" action="([^"]+)">([\s\S]*?)<\/form>/g)]
  const ofVersions = forms.filter(([, action]) => action!.includes('/corrections/'))
  return ofVersions.map(([, action, inner]) => ({
    action: action!,
    fields: Object.fromEntries(
      [...inner!.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map(([, name, value]) => [
        name!,
        value!.replaceAll('&amp;', '&'),
      ]),
    ),
  }))
}

/** The form of the version starting at `start` (RFC 3339). */
async function formOf(email: string, start: string): Promise<PageForm> {
  const answer = await page(email, typoPage)
  const form = versionForms(answer.text).find((candidate) => candidate.fields['start_date'] === start)
  if (form === undefined) throw new Error(`no form for ${start}: ${answer.status}`)
  return form
}

/** Where a 303 goes and the message it carries. */
function redirect(answer: Answer): {
  path: string
  sku: string | null
  pricelist: string | null
  notice: string | null
  error: string | null
} {
  const location = new URL(answer.headers.get('location') ?? '', server.url)
  const query = location.searchParams
  return {
    path: location.pathname,
    sku: query.get('sku'),
    pricelist: query.get('pricelist'),
    notice: query.get('notice'),
    error: query.get('error'),
  }
}

/** The marks of TYPO on RETAIL as the JSON API lists them. */
async function marks(): Promise<{ start_date: string; reason: string | null; marked_at: string; marked_by: string }[]> {
  const answer = await shop.get('/price/corrections/RETAIL/TYPO')
  if (answer.status !== 200) throw new Error(`corrections: ${answer.status} ${answer.text}`)
  return answer.body.errors
}

async function prior(pricelist: string): Promise<unknown> {
  const answer = await shop.call(
    'POST',
    '/price/query',
    query(['TYPO'], [pricelist], { as_of: day(55), prior_price: true }),
  )
  if (answer.status !== 200) throw new Error(`query: ${answer.status} ${answer.text}`)
  return answer.body.items[0].prior_price
}

/** An instant of the API as the page writes it. */
const shown = (instant: string): string => instant.replace('T', ' ').replace('Z', ' UTC')
/** When something was written, as the page writes it: to the second. */
const toSecond = (instant: string): string => `${instant.slice(0, 19).replace('T', ' ')} UTC`

const uncorrected = { net: 0.8, gross: 1, in_force_at: day(30), reduction_started_at: day(50) }
const corrected = { net: 80, gross: 100, in_force_at: day(31), reduction_started_at: day(50) }

t.test("the page lists the list's own versions, newest first, each with a form to mark it", async (t) => {
  const answer = await page(owner, typoPage)
  t.equal(answer.status, 200, answer.text.slice(0, 300))
  t.match(plain(answer.text), /TYPO on RETAIL: 4 versions, 0 marked as errors/)
  const rows = tableRows(answer.text)
  t.same(
    rows.map((row) => [row[0], row[1], row[3]]),
    [
      [shown(day(50)), '80.00 EUR', ''],
      [shown(day(31)), '100.00 EUR', ''],
      [shown(day(30)), '1.00 EUR', ''],
      [shown(day(0)), '100.00 EUR', ''],
    ],
    'start, amount and no mark',
  )
  for (const row of rows) {
    const written = /^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d) UTC by (.+)$/.exec(row[2]!)
    t.equal(written?.[3], shop.clientId, 'written by the API key')
    const at = Date.parse(`${written?.[1]}T${written?.[2]}Z`)
    t.ok(at >= historyWrittenMs - 1000 && at <= Date.now(), `written at ${row[2]}: when the test wrote it`)
  }
  const forms = versionForms(answer.text)
  t.same(
    forms.map((form) => [form.action, form.fields['sku'], form.fields['pricelist'], form.fields['start_date']]),
    [50, 31, 30, 0].map((at) => ['/console/shop/corrections/mark', 'TYPO', 'RETAIL', day(at)]),
  )
  t.ok(
    forms.every((form) => (form.fields['_csrf'] ?? '').length > 20),
    'each form carries the form token',
  )
  t.match(answer.text, /<input id="reason-0" name="reason" maxlength="500"/, 'a reason of at most 500 characters')
  t.match(answer.text, /<a href="\/console\/shop\/corrections" aria-current="page">Corrections<\/a>/, 'the tab')
  const overview = await page(owner, '/console/shop')
  t.match(overview.text, /<a href="\/console\/shop\/corrections">Corrections<\/a>/, 'linked from every console page')
})

t.test('a deletion is a version too: "deleted" for its amount', async (t) => {
  await putPrice(shop, 'GONE', 'RETAIL', { price: 12.5, start_date: day(0) })
  await expectStatus(shop.call('DELETE', `/price/GONE/RETAIL?when=${encodeURIComponent(day(5))}`), 202, 'delete')
  const answer = await page(owner, '/console/shop/corrections?sku=GONE&pricelist=RETAIL')
  t.equal(answer.status, 200)
  t.same(
    tableRows(answer.text).map((row) => row.slice(0, 2)),
    [
      [shown(day(5)), 'deleted'],
      [shown(day(0)), '12.50 EUR'],
    ],
  )
})

t.test('a long history: the 200 newest versions and every marked one', async (t) => {
  const items = Array.from({ length: 202 }, (_, index) => ({
    sku: 'LONG',
    pricelist: 'RETAIL',
    price: 100 + index,
    start_date: day(index),
  }))
  const written = await shop.call('POST', '/price/batch', items)
  t.same([written.status, written.body.failed], [202, []], 'the history written')
  await expectStatus(
    shop.call('POST', '/price/corrections/RETAIL/LONG', { start_date: day(0) }),
    202,
    'the oldest marked',
  )
  const answer = await page(owner, '/console/shop/corrections?sku=LONG&pricelist=RETAIL')
  t.equal(answer.status, 200)
  const rows = tableRows(answer.text)
  const newest = Array.from({ length: 200 }, (_, index) => shown(day(201 - index)))
  t.same(
    rows.map((row) => row[0]),
    [...newest, shown(day(0))],
    'days 201 down to 2, then the marked day 0; day 1 left out',
  )
  t.same([rows[0]![1], rows[200]![1]], ['301.00 EUR', '100.00 EUR'])
  t.match(plain(answer.text), /LONG on RETAIL: 202 versions, 1 marked as an error/)
  t.match(plain(answer.text), /1 older version, not marked, is not shown: the API's price history lists them\./)
})

t.test('marking through the form: 303 back, the mark in the JSON API, the prior price without it', async (t) => {
  t.same(await prior('RETAIL'), uncorrected, 'before: the mistaken 1 is the lowest in the 30 days before day 50')
  const form = await formOf(owner, day(30))
  const before = Date.now()
  const answer = await post(owner, form.action, { ...form.fields, reason: 'typed 1 for 100 <b>' })
  const after = Date.now()
  t.equal(answer.status, 303, answer.text)
  t.same(redirect(answer), {
    path: '/console/shop/corrections',
    sku: 'TYPO',
    pricelist: 'RETAIL',
    notice: `Marked the version of TYPO on RETAIL from ${shown(day(30))} as an error: the prior price leaves it out.`,
    error: null,
  })
  const [mark, ...others] = await marks()
  t.same(others, [], 'one mark')
  t.same([mark!.start_date, mark!.reason, mark!.marked_by], [day(30), 'typed 1 for 100 <b>', owner])
  const markedAt = Date.parse(mark!.marked_at)
  t.ok(markedAt >= before - 1 && markedAt <= after + 1, `marked_at ${mark!.marked_at} is the moment of marking`)
  t.same(await prior('RETAIL'), corrected, 'after: the lowest is 100')
  t.same(await prior('CHILD'), corrected, 'and on the list that inherits it')

  const back = await page(owner, answer.headers.get('location')!)
  t.equal(back.status, 200)
  t.match(back.text, /<p class="flash" role="status">Marked the version of TYPO on RETAIL from /, 'the notice shown')
  t.match(plain(back.text), /TYPO on RETAIL: 4 versions, 1 marked as an error/)
  t.same(
    tableRows(back.text).map((row) => row[3]),
    ['', '', `Marked as an error by ${owner} at ${toSecond(mark!.marked_at)}: typed 1 for 100 <b>`, ''],
  )
  t.match(back.text, /: typed 1 for 100 &lt;b&gt;<\/td>/, 'the reason is text, not markup')
  t.same(
    versionForms(back.text).map((candidate) => [candidate.fields['start_date'], candidate.action]),
    [
      [day(50), '/console/shop/corrections/mark'],
      [day(31), '/console/shop/corrections/mark'],
      [day(30), '/console/shop/corrections/unmark'],
      [day(0), '/console/shop/corrections/mark'],
    ],
    'the marked version offers to take the mark back',
  )
  t.match(plain(back.text), /Take the mark back \(the version of 2998-01-31 00:00:00 UTC\)/)

  const again = await post(owner, form.action, { ...form.fields, reason: 'again' })
  t.equal(
    redirect(again).notice,
    `Already marked: the version of TYPO on RETAIL from ${shown(day(30))} keeps its first mark.`,
  )
  t.equal((await marks())[0]!.reason, 'typed 1 for 100 <b>', 'the first mark stays')
})

t.test('taking the mark back through the form restores the prior price', async (t) => {
  const form = await formOf(owner, day(30))
  t.equal(form.action, '/console/shop/corrections/unmark')
  const answer = await post(owner, form.action, form.fields)
  t.equal(answer.status, 303, answer.text)
  t.same(redirect(answer), {
    path: '/console/shop/corrections',
    sku: 'TYPO',
    pricelist: 'RETAIL',
    notice: `Took back the mark on the version of TYPO on RETAIL from ${shown(day(30))}: the prior price counts it again.`,
    error: null,
  })
  t.same(await marks(), [], 'no mark left')
  t.same(await prior('RETAIL'), uncorrected, 'the 1 counts again')
  t.same(await prior('CHILD'), uncorrected)
  const back = await page(owner, answer.headers.get('location')!)
  t.same(
    tableRows(back.text).map((row) => row[3]),
    ['', '', '', ''],
  )
  const again = await post(owner, form.action, form.fields)
  t.match(
    redirect(again).error,
    /^Price of TYPO on RETAIL has no version starting at 2998-01-31T00:00:00Z marked as an error/,
  )
})

t.test('an editor marks too, as the roles table says; the mark names them', async (t) => {
  const form = await formOf(editor, day(31))
  t.equal(form.action, '/console/shop/corrections/mark')
  t.equal((await post(editor, form.action, form.fields)).status, 303)
  t.same(
    (await marks()).map((mark) => [mark.start_date, mark.reason, mark.marked_by]),
    [[day(31), null, editor]],
    'no reason typed: null',
  )
  const unmark = await formOf(editor, day(31))
  t.equal((await post(editor, unmark.action, unmark.fields)).status, 303)
  t.same(await marks(), [])
})

t.test('a viewer sees the versions and their marks, no forms; a forged post of theirs is refused', async (t) => {
  const form = await formOf(owner, day(30))
  await expectStatus(post(owner, form.action, { ...form.fields, reason: 'typo' }), 303, 'the owner marks')
  t.teardown(async () => {
    const unmark = await formOf(owner, day(30))
    await expectStatus(post(owner, unmark.action, unmark.fields), 303, 'unmark')
  })
  const answer = await page(viewer, typoPage)
  t.equal(answer.status, 200)
  t.same(
    tableRows(answer.text).map((row) => [row[0], row[3], row[4]]),
    [
      [shown(day(50)), '', ''],
      [shown(day(31)), '', ''],
      [shown(day(30)), `Marked as an error by ${owner} at ${toSecond((await marks())[0]!.marked_at)}: typo`, ''],
      [shown(day(0)), '', ''],
    ],
    'the marks, and no action in any row',
  )
  t.same(versionForms(answer.text), [], 'no version form')
  t.notMatch(answer.text, /corrections\/(un)?mark/, 'no form posts to the actions')
  t.match(plain(answer.text), /Your role \(viewer\) cannot mark price versions as errors or take marks back\./)
  // The viewer's own form token (the sign-out form has it) and a form as the owner's page has it.
  const token = /name="_csrf" value="([^"]+)"/.exec(answer.text)![1]!
  for (const action of ['mark', 'unmark']) {
    const forged = await post(viewer, `/console/shop/corrections/${action}`, { ...form.fields, _csrf: token })
    t.equal(forged.status, 403, `${action}: refused`)
    t.match(forged.text, /The role viewer of viewer@fix\.example does not allow prices\.correct/)
  }
  t.same(
    (await marks()).map((mark) => [mark.start_date, mark.marked_by]),
    [[day(30), owner]],
    'the mark is as the owner left it',
  )
  const why = await page(
    viewer,
    `/console/shop/why?sku=TYPO&pricelist=RETAIL&tax_area=SE&currency=EUR&moment=${day(55)}`,
  )
  t.match(
    why.text,
    /<a href="\/console\/shop\/corrections\?sku=TYPO&amp;pricelist=RETAIL">The versions of this price<\/a>/,
  )
})

t.test('a post without the form token, or with another session’s, is refused and changes nothing', async (t) => {
  const form = await formOf(owner, day(30))
  const fields = Object.fromEntries(Object.entries(form.fields).filter(([name]) => name !== '_csrf'))
  const bare = await post(owner, form.action, fields)
  t.equal(bare.status, 403)
  t.match(bare.text, /This form has expired or did not come from this service/)
  const viewerToken = /name="_csrf" value="([^"]+)"/.exec((await page(viewer, typoPage)).text)![1]!
  t.not(viewerToken, form.fields['_csrf'], 'two sessions, two tokens')
  const foreign = await post(owner, form.action, { ...fields, _csrf: viewerToken })
  t.equal(foreign.status, 403, "another session's token")
  t.same(await marks(), [], 'nothing marked')
})

t.test('unknown lists, SKUs without versions and bad input are messages, never a 500', async (t) => {
  const cases: [string, number, string][] = [
    ['sku=TYPO&pricelist=NOPE', 404, 'There is no pricelist NOPE'],
    ['sku=GHOST&pricelist=RETAIL', 404, 'RETAIL has no price for GHOST: there is no version to mark'],
    [
      'sku=TYPO&pricelist=CHILD',
      404,
      'CHILD has no price of its own for TYPO: it inherits the price of RETAIL, where its versions are marked',
    ],
    ['sku=&pricelist=RETAIL', 400, 'Enter a SKU'],
    [`sku=${'S'.repeat(65)}&pricelist=RETAIL`, 400, 'A SKU is 1 to 64 characters without control characters'],
  ]
  for (const [search, status, message] of cases) {
    const answer = await page(owner, `/console/shop/corrections?${search}`)
    t.equal(answer.status, status, search)
    const alert = /<p class="flash error" role="alert">([\s\S]*?)<\/p>/.exec(answer.text)
    t.equal(alert === null ? null : plain(alert[1]!), message, `${search}: the message in the form`)
    t.same(tableRows(answer.text), [], `${search}: no versions`)
  }
  const child = await page(owner, '/console/shop/corrections?sku=TYPO&pricelist=CHILD')
  t.match(
    child.text,
    /<a href="\/console\/shop\/corrections\?sku=TYPO&amp;pricelist=RETAIL">The versions of TYPO on RETAIL<\/a>/,
  )

  const form = await formOf(owner, day(30))
  const refusals: [string, Record<string, string>, string][] = [
    [
      'a reason of 501 characters',
      { reason: 'x'.repeat(501) },
      'A reason has at most 500 characters (this one has 501)',
    ],
    [
      'no version starts then',
      { start_date: day(29) },
      'Price of TYPO on RETAIL has no version starting at 2998-01-30T00:00:00Z',
    ],
    ['not an instant', { start_date: 'yesterday' }, 'The form names no version: reload the page'],
    ['an unknown pricelist', { pricelist: 'NOPE' }, 'Pricelist NOPE not found'],
  ]
  for (const [what, change, message] of refusals) {
    const answer = await post(owner, form.action, { ...form.fields, ...change })
    t.equal(answer.status, 303, what)
    t.same([redirect(answer).error, redirect(answer).notice], [message, null], what)
  }
  const reason500 = await post(owner, form.action, { ...form.fields, reason: 'x'.repeat(500) })
  t.equal(redirect(reason500).error, null, 'a reason of 500 characters is taken')
  t.equal((await marks())[0]!.reason, 'x'.repeat(500))
  const unmark = await formOf(owner, day(30))
  await expectStatus(post(owner, unmark.action, unmark.fields), 303, 'unmark')
  t.same(await marks(), [], 'nothing else was marked')
})

t.test("the why page links a single list's price to its corrections", async (t) => {
  const asked = `/console/shop/why?sku=TYPO&tax_area=SE&currency=EUR&moment=${day(55)}`
  const one = await page(owner, `${asked}&pricelist=RETAIL`)
  t.equal(one.status, 200, one.text.slice(0, 300))
  t.match(
    one.text,
    /A mistaken price in the history\? <a href="\/console\/shop\/corrections\?sku=TYPO&amp;pricelist=RETAIL">Mark it as an error<\/a>/,
  )
  const best = await page(owner, `${asked}&pricelist=`)
  t.equal(best.status, 200)
  t.notMatch(best.text, /corrections\?/, 'the best of all lists: no single list to correct')
})
