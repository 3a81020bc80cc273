/**
 * Price corrections against the real server (issue 30, point 2): a version of a price marked as an
 * error is left out of the EU prior price (its own list's and the lists that inherit it), changes
 * no price read, and is recorded in the changelog with who and when; the mark can be taken back;
 * bad marks are refused with the spec's error body and change nothing stored. Histories are written
 * as scheduled prices (a write cannot start in the past) and asked at an `as_of` after them.
 */
import t from 'tap'
import { readChangelog } from '../../helpers/changelog.js'
import { expectStatus, futureDay, mapSkus, putPrice, query } from '../../helpers/price-fixtures.js'
import { suiteServer } from '../../helpers/suite.js'

const {
  tenants: { acme },
} = await suiteServer({
  tenants: {
    acme: {
      reference: true,
      pricelists: {
        RETAIL: { currency_code: 'EUR', vat_mode: 'GROSS' },
        CHILD: { currency_code: 'EUR', parent_code: 'RETAIL' },
      },
    },
  },
})

const day = futureDay

async function history(sku: string, pricelist: string, prices: [number, number][]): Promise<void> {
  for (const [at, price] of prices) await putPrice(acme, sku, pricelist, { price, start_date: day(at) })
}

async function prior(sku: string, pricelist: string, at: number): Promise<unknown> {
  const answer = await acme.call(
    'POST',
    '/price/query',
    query([sku], [pricelist], { as_of: day(at), prior_price: true }),
  )
  if (answer.status !== 200) throw new Error(`query: ${answer.status} ${answer.text}`)
  return answer.body.items[0].prior_price
}

const corrections = (sku: string, pricelist = 'RETAIL') => `/price/corrections/${pricelist}/${sku}`
const mark = (sku: string, start: number, reason?: string | null) =>
  acme.call('POST', corrections(sku), { start_date: day(start), ...(reason === undefined ? {} : { reason }) })
const unmark = (sku: string, start: number) =>
  acme.call('DELETE', `${corrections(sku)}?start_date=${encodeURIComponent(day(start))}`)
async function marks(sku: string): Promise<unknown[]> {
  const answer = await acme.get(corrections(sku))
  t.equal(answer.status, 200)
  return answer.body.errors
}

await mapSkus(acme, 'standard', ['TYPO', 'ONLY', 'MANY'])
// 100, then 1 for a day by mistake (meant 100), 100 again, then a real reduction to 80 on day 50.
await history('TYPO', 'RETAIL', [
  [0, 100],
  [30, 1],
  [31, 100],
  [50, 80],
])
// 50 from day 0, then 40 from day 10: the first version marked leaves no price before day 10.
await history('ONLY', 'RETAIL', [
  [0, 50],
  [10, 40],
])

const uncorrected = { net: 0.8, gross: 1, in_force_at: day(30), reduction_started_at: day(50) }
const corrected = { net: 80, gross: 100, in_force_at: day(31), reduction_started_at: day(50) }

t.test('a version marked as an error is left out of the prior price, and back in when unmarked', async (t) => {
  t.same(await prior('TYPO', 'RETAIL', 55), uncorrected, 'the mistaken 1 is the lowest in the 30 days before day 50')
  t.same(await prior('TYPO', 'CHILD', 55), uncorrected, 'CHILD inherits it')
  const before = Date.now()
  await expectStatus(mark('TYPO', 30, 'typed 1 for 100'), 202, 'mark')
  const after = Date.now()
  t.same(await prior('TYPO', 'RETAIL', 55), corrected, 'marked: the lowest is 100 (the latest period of it)')
  t.same(await prior('TYPO', 'CHILD', 55), corrected, 'and on the list that inherits it')
  const [listed] = (await marks('TYPO')) as {
    start_date: string
    reason: string
    marked_at: string
    marked_by: string
  }[]
  t.same([listed!.start_date, listed!.reason, listed!.marked_by], [day(30), 'typed 1 for 100', acme.clientId])
  const markedAt = Date.parse(listed!.marked_at)
  t.ok(markedAt >= before - 1 && markedAt <= after + 1, `marked_at ${listed!.marked_at} is the moment of marking`)

  // A mark changes no price read: the mistaken price was in force, and reads say so.
  const read = await acme.get(`/price/TYPO/RETAIL/SE?as_of=${day(30.5)}`)
  t.same([read.status, read.body.gross], [200, 1], 'the single read at day 30.5 still answers 1')
  const history = await acme.get('/price/history/RETAIL/TYPO?days=36500')
  t.equal(history.body.length, 4, 'the history still lists the marked version')

  await expectStatus(mark('TYPO', 30, 'again'), 202, 'marked again')
  t.equal(((await marks('TYPO')) as { reason: string }[])[0]!.reason, 'typed 1 for 100', 'the first mark stays')
  await expectStatus(unmark('TYPO', 30), 202, 'unmark')
  t.same(await marks('TYPO'), [], 'no marks left')
  t.same(await prior('TYPO', 'RETAIL', 55), uncorrected, 'unmarked: the 1 counts again')
  t.same(await prior('TYPO', 'CHILD', 55), uncorrected)
})

t.test('every version before a fall marked: no price then, so no reduction', async (t) => {
  t.same(await prior('ONLY', 'RETAIL', 15), { net: 40, gross: 50, in_force_at: day(0), reduction_started_at: day(10) })
  await expectStatus(mark('ONLY', 0), 202, 'mark the first version')
  t.equal(await prior('ONLY', 'RETAIL', 15), null, 'no price before day 10: nothing was reduced')
  t.equal(((await marks('ONLY')) as { reason: unknown }[])[0]!.reason, null, 'no reason given: null')
  await expectStatus(unmark('ONLY', 0), 202, 'unmark')
})

t.test('the changelog records each mark and unmark with who and when', async (t) => {
  const before = (await readChangelog(acme, '?entity_type=price_correction')).length
  await expectStatus(mark('TYPO', 31, 'checked'), 202, 'mark')
  await expectStatus(mark('TYPO', 0), 202, 'a second mark')
  await expectStatus(unmark('TYPO', 31), 202, 'unmark one')
  await expectStatus(unmark('TYPO', 0), 202, 'unmark the last')
  const entries = (await readChangelog(acme, '?entity_type=price_correction')).slice(before)
  t.same(
    entries.map((entry) => [entry.change_type, entry.entity_code, entry.composite_key, entry.changed_by]),
    [
      ['created', 'TYPO', 'RETAIL', acme.clientId],
      ['updated', 'TYPO', 'RETAIL', acme.clientId],
      ['updated', 'TYPO', 'RETAIL', acme.clientId],
      ['deleted', 'TYPO', 'RETAIL', acme.clientId],
    ],
  )
  const hashes = new Set(entries.map((entry) => entry.content_hash))
  t.equal(hashes.size, 4, 'each state has its own content hash')
})

t.test('bad marks are refused with the error body and change nothing stored', async (t) => {
  await expectStatus(mark('TYPO', 30, 'kept'), 202, 'a mark to keep')
  t.teardown(() => unmark('TYPO', 30))
  const stored = await marks('TYPO')
  const refusals: [string, Promise<{ status: number; body: any }>, number, string][] = [
    ['no version starts then', mark('TYPO', 29), 404, 'not_found'],
    ['an unknown pricelist', acme.call('POST', corrections('TYPO', 'NOPE'), { start_date: day(30) }), 404, 'not_found'],
    ['a SKU without that price', mark('NOPRICE', 30), 404, 'not_found'],
    ['not an instant', acme.call('POST', corrections('TYPO'), { start_date: 'yesterday' }), 400, 'validation_failed'],
    ['no start', acme.call('POST', corrections('TYPO'), {}), 400, 'validation_failed'],
    [
      'a reason of 501 characters',
      acme.call('POST', corrections('TYPO'), { start_date: day(31), reason: 'x'.repeat(501) }),
      400,
      'validation_failed',
    ],
    [
      'an unknown field',
      acme.call('POST', corrections('TYPO'), { start_date: day(31), when: day(1) }),
      400,
      'validation_failed',
    ],
    ['unmark a version not marked', unmark('TYPO', 31), 404, 'not_found'],
    ['unmark without start_date', acme.call('DELETE', corrections('TYPO')), 400, 'validation_failed'],
    [
      'a SKU code too long',
      acme.call('POST', `/price/corrections/RETAIL/${'S'.repeat(65)}`, { start_date: day(30) }),
      400,
      'validation_failed',
    ],
  ]
  for (const [what, call, status, code] of refusals) {
    const answer = await call
    t.same([answer.status, answer.body.code, answer.body.status], [status, code, status], what)
    t.type(answer.body.message, 'string', `${what}: a message`)
  }
  t.same(await marks('TYPO'), stored, 'the marks stored are as they were')
  const reason500 = await acme.call('POST', corrections('TYPO'), { start_date: day(31), reason: 'x'.repeat(500) })
  t.equal(reason500.status, 202, 'a reason of 500 characters is accepted')
  await expectStatus(unmark('TYPO', 31), 202, 'unmark it')
})

t.test('at most 100 versions of a price are marked', async (t) => {
  const days = Array.from({ length: 101 }, (_, index) => index)
  await history(
    'MANY',
    'RETAIL',
    days.map((at) => [at, 100 + (at % 2)]),
  )
  for (const at of days.slice(0, 100)) {
    const answer = await mark('MANY', at)
    if (answer.status !== 202) t.fail(`mark ${at}: ${answer.status} ${answer.text}`)
  }
  const refused = await mark('MANY', 100)
  t.same([refused.status, refused.body.code], [400, 'validation_failed'], 'the 101st is refused')
  t.match(refused.body.message, /at most 100 versions/)
  t.equal((await marks('MANY')).length, 100, 'the 100 stay')
})
