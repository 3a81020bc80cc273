/**
 * An explained query answers the same bytes on a price worker as on the main thread: the worker
 * explains from a replica (shared columns, no writers), the main thread from the book, and both
 * leave a hole per price version that the main thread fills from its book. For random worlds and
 * queries the two texts, their version lists and the filled answers are equal, the filled answer
 * is JSON whose version steps carry the book's writer and instant, and no hole is left.
 */
import fc from 'fast-check'
import t from 'tap'
import type { Catalog } from '../../engine/catalog.js'
import { explainPrice } from '../../engine/explain/explain.js'
import { PriceContext } from '../../engine/pipeline.js'
import { PriceReplica, type PriceReader } from '../../engine/price-replica.js'
import type { PriceBook } from '../../engine/prices.js'
import { queryPrices } from '../../engine/query.js'
import type { QueryInput } from '../../workers/execute.js'
import {
  explainQueryBytes,
  explainQueryText,
  fillVersionBytes,
  fillVersionBytesLent,
  fillVersions,
  type ExplainQueryInput,
  type VersionMeta,
  withTrace,
} from '../../workers/explain-query.js'
import { explainPaths } from '../../workers/explain-bytes.js'
import { traceText, type VersionRef } from '../../workers/explain-render.js'
import { itemJson, jsonString } from '../../workers/render.js'
import { build, profile, profileDefinition, put, queryArbitrary, worldArbitrary } from '../helpers/price-world.js'

const seed =
  process.env['PROPERTY_SEED'] === undefined ? Date.now() % 2_147_483_647 : Number(process.env['PROPERTY_SEED'])

function bookMeta(book: PriceBook): VersionMeta {
  return (pricelist, sku, start) => {
    const version = book.versions(pricelist, sku).find((candidate) => candidate.from === start)
    return version === undefined ? null : { at: version.writtenAt, by: version.writtenBy }
  }
}

type Json = Record<string, any>

/**
 * The answer as text built whole, item by item from `traceText` over the full pipeline's
 * explanation on every candidate (engine/explain/explain.ts `explainPrice`, the reference): the
 * bytes, written from the fast path's cells (engine/explain/fast.ts, from-cells.ts), must decode to
 * it. Half the queries name the rounding profile `R`.
 */
function referenceText(catalog: Catalog, prices: PriceReader, request: ExplainQueryInput): string {
  const input = request.query
  const context = new PriceContext(catalog, prices, input.at, input.taxArea)
  const options = {
    currency: input.currency,
    rounding: input.rounding === null ? null : profile,
    quantity: input.quantity,
  }
  const result = queryPrices(context, { skus: input.skus, pricelists: input.pricelists, options, sortOrder: null })
  const roundingCode = input.rounding
  const render = { roundingCode, versions: [] as VersionRef[] }
  const trace = (sku: string) =>
    traceText(
      explainPrice(context, { sku, pricelists: input.pricelists, excluded: request.excluded, options, roundingCode }),
      render,
    )
  const items = result.items.map((item) => withTrace(itemJson(item, item.pricelist), trace(item.sku)))
  const unavailable = result.unavailable.map(
    (entry) => `{"sku":${jsonString(entry.sku)},"reason":${jsonString(entry.reason)},"trace":${trace(entry.sku)}}`,
  )
  return `{"items":[${items.join(',')}],"unavailable":[${unavailable.join(',')}]}`
}

t.test('a replica (a worker) and the book (the main thread) explain a query in the same bytes', async (t) => {
  let versionSteps = 0
  fc.assert(
    fc.property(worldArbitrary, queryArbitrary, (world, drawn) => {
      const { catalog, book } = build(world)
      if (drawn.rounding) put(catalog, 'rounding_profile', 'R', profileDefinition)
      const replica = new PriceReplica(book.sharedColumns(), book.dictionaryDelta(0, 0))
      const query: QueryInput = {
        at: drawn.at,
        cacheable: false,
        taxArea: 'SE',
        skus: drawn.skus,
        pricelists: [...drawn.lists].sort(),
        currency: drawn.currency,
        rounding: drawn.rounding ? 'R' : null,
        sortOrder: null,
        quantity: drawn.quantity,
      }
      const request = { query, excluded: [{ pricelist: 'ZZ', reason: 'filter_mismatch' as const }] }
      const onMain = explainQueryText(catalog, book, request)
      const onWorker = explainQueryText(catalog, replica, request)
      t.equal(onWorker.text, onMain.text)
      t.equal(onMain.text, referenceText(catalog, book, request), 'the bytes decode to the text built whole')
      t.same(onWorker.versions, onMain.versions)
      // The route's look-up of a version's writer (PriceBook.written) answers what its versions list.
      for (const [pricelist, sku, start] of onMain.versions)
        t.same(book.written(pricelist, sku, start), bookMeta(book)(pricelist, sku, start))
      const [known] = onMain.versions
      if (known !== undefined)
        t.equal(book.written(known[0], known[1], -8_640_000_000_000_000), null, 'no version starts then')
      const filled = fillVersions(onWorker, bookMeta(book))
      t.equal(filled, fillVersions(onMain, bookMeta(book)))
      t.notOk(filled.includes('\u0000'), 'every hole is filled')
      // The bytes a worker moves to the main thread, filled there around their slices, are the text's.
      const bytes = explainQueryBytes(catalog, replica, request)
      t.same(bytes.versions, onMain.versions)
      t.equal(fillVersionBytes(bytes, bookMeta(book)).toString('utf8'), filled)
      t.ok(Buffer.from(filled).equals(fillVersionBytes(bytes, bookMeta(book))), 'the same bytes as the text')
      const answer = JSON.parse(filled) as { items: Json[]; unavailable: Json[] }
      const steps = [...answer.items, ...answer.unavailable].flatMap((item) => item['trace'].steps as Json[])
      const versions = steps.filter((step) => step['step'] === 'version')
      t.equal(versions.length, onMain.versions.length, 'one hole per version step')
      for (const step of versions) {
        // The worlds write every price at instant 0 as `test` (test/helpers/price-world.ts).
        t.equal(step['written_at'], '1970-01-01T00:00:00Z')
        t.equal(step['written_by'], 'test')
      }
      versionSteps += versions.length
    }),
    { seed, numRuns: 150 },
  )
  t.ok(versionSteps > 50, `the worlds gave version steps to fill (${versionSteps})`)
  // Both paths ran: SKUs whose every candidate takes the fast path, and the others.
  t.ok(explainPaths.fast > 100, `SKUs explained without an object per candidate (${explainPaths.fast})`)
  t.ok(explainPaths.cells > 100, `SKUs explained through from-cells (${explainPaths.cells})`)
})

t.test('filling names a version the book does not know as null, and keeps the rest of the text', async (t) => {
  const explained = { text: '[{"a":1,\u0000,"b":2},{\u0000}]', versions: [['P', 'S', 1] as [string, string, number]] }
  explained.versions.push(['Q', 'T', 2])
  const filled = fillVersions(explained, (pricelist) => (pricelist === 'P' ? { at: 0, by: 'me "x"' } : null))
  t.equal(
    filled,
    '[{"a":1,"written_at":"1970-01-01T00:00:00Z","written_by":"me \\"x\\"","b":2},' +
      '{"written_at":null,"written_by":null}]',
  )
  t.equal(
    fillVersions({ text: '{"items":[]}', versions: [] }, () => null),
    '{"items":[]}',
  )
})

t.test('filling bytes puts each writer in its hole, a non-ASCII writer as UTF-8, and keeps the slices', async (t) => {
  const text = '[{"sku":"å","a":1,\u0000,"b":2},{\u0000}]'
  const bytes = new TextEncoder().encode(text)
  const holes = [bytes.indexOf(0), bytes.lastIndexOf(0)]
  t.not(holes[0], holes[1], 'two holes')
  const versions: [string, string, number][] = [
    ['P', 'S', 1],
    ['Q', 'T', 2],
  ]
  const filled = fillVersionBytes({ bytes, holes, versions }, (pricelist) =>
    pricelist === 'P' ? { at: 0, by: 'mö "x"' } : null,
  )
  t.equal(
    filled.toString('utf8'),
    '[{"sku":"å","a":1,"written_at":"1970-01-01T00:00:00Z","written_by":"mö \\"x\\"","b":2},' +
      '{"written_at":null,"written_by":null}]',
  )
  const none = new TextEncoder().encode('{"items":[]}')
  t.equal(fillVersionBytes({ bytes: none, holes: [], versions: [] }, () => null).toString('utf8'), '{"items":[]}')
})

t.test('the lent buffer serves one filled answer at a time and comes back on release', async (t) => {
  const text = '[{"a":1,\u0000}]'
  const bytes = new TextEncoder().encode(text)
  const explained = { bytes, holes: [bytes.indexOf(0)], versions: [['P', 'S', 1] as [string, string, number]] }
  const meta: VersionMeta = () => ({ at: 0, by: 'me' })
  const expected = '[{"a":1,"written_at":"1970-01-01T00:00:00Z","written_by":"me"}]'
  const first = fillVersionBytesLent(explained, meta)
  t.equal(first.body.toString('utf8'), expected)
  t.ok(first.release !== null, 'the first answer is lent the buffer')
  // While lent, the next answer gets a buffer of its own, and the first answer's bytes stay.
  const second = fillVersionBytesLent({ ...explained, versions: [['Q', 'T', 2]] }, () => null)
  t.equal(second.release, null, 'no second lease while the buffer is out')
  t.equal(second.body.toString('utf8'), '[{"a":1,"written_at":null,"written_by":null}]')
  t.not(second.body.buffer, first.body.buffer, 'not the lent buffer')
  t.equal(first.body.toString('utf8'), expected, 'the lent answer is untouched')
  first.release!()
  const third = fillVersionBytesLent(explained, meta)
  t.equal(third.body.buffer, first.body.buffer, 'released, the buffer serves the next answer')
  t.equal(third.body.toString('utf8'), expected)
  // An answer larger than the buffer grows it; the grown buffer is the one lent after.
  const large = new TextEncoder().encode(`[${'"x",'.repeat(100_000)}{\u0000}]`)
  third.release!()
  const grown = fillVersionBytesLent({ bytes: large, holes: [large.indexOf(0)], versions: explained.versions }, meta)
  t.ok(grown.body.length > 400_000, 'the large answer is whole')
  t.ok(grown.body.toString('utf8').endsWith('{"written_at":"1970-01-01T00:00:00Z","written_by":"me"}]'))
  grown.release!()
  const after = fillVersionBytesLent(explained, meta)
  t.equal(after.body.buffer, grown.body.buffer, 'the grown buffer came back')
  after.release!()
})
