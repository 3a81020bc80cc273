/**
 * The price workers' queue full, on a real server: explained queries, diff pages and simulations
 * run on the workers, and when the bounded queue (workers/pool.ts, 64 tasks per worker) is full the
 * main thread answers them instead. The property tests of each task check, in process, that both
 * threads run the same functions; this suite checks it end to end: a server with one worker takes a
 * burst far deeper than its queue, some answers come from each thread (`x-price-engine`), and every
 * answer to the same request has the same bytes.
 */
import t, { type Test } from 'tap'
import { expectStatus, mapSkus, query } from '../helpers/price-fixtures.js'
import type { Answer } from '../helpers/server.js'
import { suiteServer } from '../helpers/suite.js'

/** Far deeper than one worker's queue of 64, so some requests must find it full. */
const burst = 400

const {
  tenants: { acme },
} = await suiteServer({
  env: { PRICING_WORKERS: '1' },
  tenants: {
    acme: {
      reference: true,
      limits: { query_rate: 1_000_000, query_burst: 100_000_000 },
      pricelists: {
        BASE: { currency_code: 'EUR', vat_mode: 'NET' },
        CHILD: { currency_code: 'EUR', parent_code: 'BASE' },
        'EUR-G': { currency_code: 'EUR', vat_mode: 'GROSS' },
      },
    },
  },
})

const skus = Array.from({ length: 100 }, (_, index) => `Q-${String(index).padStart(3, '0')}`)
const lists = ['BASE', 'CHILD', 'EUR-G']
const prices = skus.flatMap((sku, index) => [
  { sku, pricelist: 'BASE', price: String(10 + index) },
  { sku, pricelist: 'EUR-G', price: String(13 + index) },
  { sku, pricelist: 'BASE', price: String(20 + index), start_date: '2998-01-01' },
])
const written = await expectStatus(acme.call('POST', '/price/batch', prices), 202, 'prices')
if (written.body.failed.length > 0) throw new Error(`prices failed: ${written.text}`)
await mapSkus(acme, 'standard', skus)

/** The answers of `burst` copies of one request sent at once, grouped by the thread that answered. */
async function flood(send: () => Promise<Answer>): Promise<Map<string, Answer[]>> {
  const answers = await Promise.all(Array.from({ length: burst }, send))
  const byEngine = new Map<string, Answer[]>()
  for (const answer of answers) {
    const engine = answer.headers.get('x-price-engine') ?? `none (${answer.status}: ${answer.text.slice(0, 200)})`
    byEngine.set(engine, [...(byEngine.get(engine) ?? []), answer])
  }
  return byEngine
}

/** Both threads answered, every answer is 200, and all have the bytes of the first. */
function checkBothThreads(t: Test, byEngine: Map<string, Answer[]>): void {
  const counts = [...byEngine].map(([engine, answers]) => `${engine} ${answers.length}`).join(', ')
  t.same([...byEngine.keys()].sort(), ['main', 'worker'], `the queue filled: both threads answered (${counts})`)
  const all = [...byEngine.values()].flat()
  t.same(
    all.filter((answer) => answer.status !== 200).map((answer) => answer.text),
    [],
    'every answer is 200',
  )
  const first = byEngine.get('worker')![0]!.text
  t.equal(all.filter((answer) => answer.text !== first).length, 0, `all ${all.length} answers have the same bytes`)
}

t.test('explained queries: the main thread answers when the queue is full, with the same bytes', async (t) => {
  const body = { ...query(skus, lists), explain: true }
  const byEngine = await flood(() => acme.call('POST', '/price/query', body))
  checkBothThreads(t, byEngine)
  const items = JSON.parse(byEngine.get('main')![0]!.text).items
  // The cheapest of BASE (NET 10 + 25% = 12.5 gross), CHILD (inherits it) and EUR-G (13 gross).
  t.same([items.length, items[0].pricelist, items[0].gross], [100, 'BASE', 12.5])
  t.equal(items[0].trace.candidates.length, 3, 'each item names its three candidates')
})

t.test('diff pages: the main thread answers when the queue is full, with the same bytes', async (t) => {
  const body = {
    currency_code: 'EUR',
    tax_area: 'SE',
    pricelist_filter: { pricelists: lists },
    from: '2997-01-01T00:00:00Z',
    to: '2999-01-01T00:00:00Z',
  }
  const byEngine = await flood(() => acme.call('POST', '/price/diff', body))
  checkBothThreads(t, byEngine)
  const { items } = JSON.parse(byEngine.get('main')![0]!.text)
  // Before: BASE (12.5 + 1.25 i gross) against EUR-G (13 + i): BASE for i = 0, 1 and the tie at
  // i = 2 (15, the code that sorts first), EUR-G beyond. After: BASE's 2998 version (25 + 1.25 i
  // gross) loses to EUR-G everywhere. So change, the winner's list with them.
  t.same(
    [items.length, items[0].sku, items[0].from.gross, items[0].to.pricelist, items[0].to.gross],
    [3, 'Q-000', 12.5, 'EUR-G', 13],
  )
})

t.test('simulations: the main thread answers when the queue is full, with the same bytes', async (t) => {
  const writes = { prices: [{ sku: 'Q-000', pricelist: 'BASE', price: '1' }] }
  const diff = {
    currency_code: 'EUR',
    tax_area: 'SE',
    pricelist_filter: { pricelists: lists },
    from: '2997-01-01T00:00:00Z',
    to: '2999-01-01T00:00:00Z',
  }
  const byEngine = await flood(() => acme.call('POST', '/price/simulate', { writes, diff }))
  checkBothThreads(t, byEngine)
  const answer = JSON.parse(byEngine.get('main')![0]!.text)
  // The proposed 1 EUR NET on BASE from now (1.25 gross) is in force in 2997; in 2999 BASE's 2998
  // version (20 NET, 25 gross) is, and EUR-G's 13 gross is the cheaper.
  const first = answer.diff.items.find((item: { sku: string }) => item.sku === 'Q-000')
  t.same([first.from.pricelist, first.from.gross, first.to.pricelist, first.to.gross], ['BASE', 1.25, 'EUR-G', 13])
  const real = await expectStatus(acme.call('POST', '/price/query', query(['Q-000'], lists)), 200, 'query')
  t.equal(real.body.items[0].gross, 12.5, 'nothing was stored')
})
