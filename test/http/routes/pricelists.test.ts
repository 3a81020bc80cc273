/**
 * Pricelist routes against the real server: writes and reads, VAT-mode inheritance, currency and
 * rule validation, parent chains, listings by activity window, query, search, soft delete, plan
 * quota and batches.
 */
import t from 'tap'
import { startServer, type TenantClient, type TestServer } from '../../helpers/server.js'

let server: TestServer
let acme: TenantClient

t.before(async () => {
  server = await startServer()
  acme = await server.tenant('acme')
})
t.teardown(async () => server.dispose())

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const codesOf = (answer: { body: { items: { code: string }[] } }) => answer.body.items.map((item) => item.code)

async function put(client: TenantClient, code: string, body: Record<string, unknown>): Promise<void> {
  const answer = await client.call('PUT', `/pricelist/${code}`, body)
  if (answer.status !== 202) throw new Error(`PUT /pricelist/${code}: ${answer.status} ${answer.text}`)
}

t.test('a pricelist written with PUT reads back with every field, sku_count and update metadata', async (t) => {
  const body = {
    currency_code: 'EUR',
    vat_mode: 'NET',
    name: 'Retail',
    description: 'Shop prices',
    start_date: '2020-01-01',
    end_date: '2999-01-01T00:00:00+01:00',
    metadata: { region: ['eu', 'nordic'] },
    price_rules: [
      { code: 'food', description: 'food discount', filter: 'article.type == "food"', expression: 'sales * 0.9' },
    ],
  }
  const written = await acme.call('PUT', '/pricelist/RETAIL', body)
  t.equal(written.status, 202)
  t.equal(written.text, '')
  const read = await acme.get('/pricelist/RETAIL')
  t.equal(read.status, 200)
  t.same(read.body, {
    code: 'RETAIL',
    currency_code: 'EUR',
    vat_mode: 'NET',
    name: 'Retail',
    description: 'Shop prices',
    parent_code: null,
    start_date: '2020-01-01T00:00:00Z',
    end_date: '2998-12-31T23:00:00Z',
    metadata: { region: ['eu', 'nordic'] },
    price_rules: [
      {
        code: 'food',
        description: 'food discount',
        filter: 'article.type == "food"',
        expression: 'sales * 0.9',
        updated_by: acme.clientId,
      },
    ],
    sku_count: 0,
    updated_at: read.body.updated_at,
    updated_by: acme.clientId,
  })
  t.match(read.body.updated_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/)
})

t.test('GET-edit-PUT with the response-only fields updates the pricelist and keeps the rest', async (t) => {
  await put(acme, 'EDIT', {
    currency_code: 'EUR',
    vat_mode: 'GROSS',
    name: 'Before',
    metadata: { a: ['1'] },
    price_rules: [{ expression: 'sales * 2', updated_by: 'someone' }],
  })
  const before = (await acme.get('/pricelist/EDIT')).body
  const edited = await acme.call('PUT', '/pricelist/EDIT', { ...before, name: 'After' })
  t.equal(edited.status, 202, edited.text)
  const after = (await acme.get('/pricelist/EDIT')).body
  t.equal(after.name, 'After')
  t.same({ ...after, name: 'Before', updated_at: before.updated_at }, before)
  t.equal(after.price_rules[0].updated_by, 'someone', 'a rule keeps the updated_by it was sent with')
})

t.test('a body code different from the path is refused and stores nothing', async (t) => {
  const answer = await acme.call('PUT', '/pricelist/P-MISMATCH', {
    code: 'OTHER',
    currency_code: 'EUR',
    vat_mode: 'NET',
  })
  t.equal(answer.status, 400)
  t.equal(answer.body.code, 'validation_failed')
  t.equal(answer.body.details[0].path, '/code')
  t.equal((await acme.get('/pricelist/P-MISMATCH')).status, 404)
  t.equal((await acme.get('/pricelist/OTHER')).status, 404)
})

t.test('a top-level pricelist without vat_mode is refused with 400 and stores nothing', async (t) => {
  const answer = await acme.call('PUT', '/pricelist/NO-MODE', { currency_code: 'EUR' })
  t.equal(answer.status, 400)
  t.equal(answer.body.code, 'validation_failed')
  t.equal(answer.body.details[0].path, '/vat_mode')
  t.equal((await acme.get('/pricelist/NO-MODE')).status, 404)
  const bad = await acme.call('PUT', '/pricelist/NO-MODE', { currency_code: 'EUR', vat_mode: 'BOTH' })
  t.equal(bad.status, 400)
  t.equal(bad.body.code, 'validation_failed')
})

t.test('a missing currency_code or an unknown field is refused with validation details', async (t) => {
  const missing = await acme.call('PUT', '/pricelist/NO-CUR', { vat_mode: 'NET' })
  t.equal(missing.status, 400)
  t.equal(missing.body.code, 'validation_failed')
  const unknown = await acme.call('PUT', '/pricelist/NO-CUR', { currency_code: 'EUR', vat_mode: 'NET', colour: 'red' })
  t.equal(unknown.status, 400)
  t.equal(unknown.body.code, 'validation_failed')
  t.equal((await acme.get('/pricelist/NO-CUR')).status, 404)
})

t.test("a child inherits its parent's vat_mode, may override it, and follows a change of the parent", async (t) => {
  await put(acme, 'INH-PARENT', { currency_code: 'EUR', vat_mode: 'NET' })
  await put(acme, 'INH-CHILD', { currency_code: 'EUR', parent_code: 'INH-PARENT', vat_mode: null })
  await put(acme, 'INH-GRANDCHILD', { currency_code: 'EUR', parent_code: 'INH-CHILD' })
  await put(acme, 'INH-OWN', { currency_code: 'EUR', parent_code: 'INH-PARENT', vat_mode: 'GROSS' })
  t.equal((await acme.get('/pricelist/INH-CHILD')).body.vat_mode, 'NET')
  t.equal((await acme.get('/pricelist/INH-GRANDCHILD')).body.vat_mode, 'NET')
  t.equal((await acme.get('/pricelist/INH-OWN')).body.vat_mode, 'GROSS')
  t.equal((await acme.get('/pricelist/INH-CHILD')).body.parent_code, 'INH-PARENT')
  await pause(5)
  const beforeChange = new Date().toISOString()
  await pause(5)
  await put(acme, 'INH-PARENT', { currency_code: 'EUR', vat_mode: 'GROSS' })
  t.equal((await acme.get('/pricelist/INH-CHILD')).body.vat_mode, 'GROSS')
  t.equal((await acme.get('/pricelist/INH-GRANDCHILD')).body.vat_mode, 'GROSS')
  t.equal(
    (await acme.get(`/pricelist/INH-CHILD?asOf=${beforeChange}`)).body.vat_mode,
    'NET',
    'a read as of before the change sees the old mode',
  )
  await put(acme, 'INH-OWN', { currency_code: 'EUR', parent_code: 'INH-PARENT', vat_mode: 'NET' })
  t.equal((await acme.get('/pricelist/INH-OWN')).body.vat_mode, 'NET')
})

t.test('a parent_code that does not exist is refused with 400 and stores nothing', async (t) => {
  const answer = await acme.call('PUT', '/pricelist/ORPHAN', { currency_code: 'EUR', parent_code: 'NOPE' })
  t.equal(answer.status, 400)
  t.equal(answer.body.details[0].path, '/parent_code')
  t.equal((await acme.get('/pricelist/ORPHAN')).status, 404)
})

t.test('a parent chain that comes back to the pricelist is refused with pricelist_cycle', async (t) => {
  await put(acme, 'CYC-A', { currency_code: 'EUR', vat_mode: 'NET' })
  await put(acme, 'CYC-B', { currency_code: 'EUR', parent_code: 'CYC-A' })
  await put(acme, 'CYC-C', { currency_code: 'EUR', parent_code: 'CYC-B' })
  for (const parent of ['CYC-B', 'CYC-C', 'CYC-A']) {
    const answer = await acme.call('PUT', '/pricelist/CYC-A', {
      currency_code: 'EUR',
      vat_mode: 'NET',
      parent_code: parent,
    })
    t.equal(answer.status, 400, `CYC-A with parent ${parent}`)
    t.equal(answer.body.code, 'pricelist_cycle')
  }
  t.equal((await acme.get('/pricelist/CYC-A')).body.parent_code, null)
})

t.test('an inheritance chain longer than 16 pricelists is refused, counting descendants too', async (t) => {
  const chain = Array.from({ length: 16 }, (_, index) => ({
    code: `DEPTH-${index + 1}`,
    currency_code: 'EUR',
    ...(index === 0 ? { vat_mode: 'NET' } : { parent_code: `DEPTH-${index}` }),
  }))
  const written = await acme.call('POST', '/pricelist/batch', chain)
  t.same(written.body, { accepted: 16, failed: [] })
  t.equal((await acme.get('/pricelist/DEPTH-16')).body.vat_mode, 'NET')
  const deeper = await acme.call('PUT', '/pricelist/DEPTH-17', { currency_code: 'EUR', parent_code: 'DEPTH-16' })
  t.equal(deeper.status, 400)
  t.equal(deeper.body.code, 'pricelist_cycle')
  t.equal((await acme.get('/pricelist/DEPTH-17')).status, 404)
  await put(acme, 'DEPTH-ROOT', { currency_code: 'EUR', vat_mode: 'GROSS' })
  const above = await acme.call('PUT', '/pricelist/DEPTH-1', { currency_code: 'EUR', parent_code: 'DEPTH-ROOT' })
  t.equal(above.status, 400, 'giving the top of a 16-long chain a parent makes it 17 long')
  t.equal(above.body.code, 'pricelist_cycle')
  t.equal((await acme.get('/pricelist/DEPTH-1')).body.parent_code, null)
})

t.test('a currency outside ISO 4217 is refused with currency_unknown and stores nothing', async (t) => {
  for (const currency of ['XYZ', 'eur', 'EURO']) {
    const answer = await acme.call('PUT', '/pricelist/BAD-CUR', { currency_code: currency, vat_mode: 'NET' })
    t.equal(answer.status, 400, currency)
    t.equal(answer.body.code, 'currency_unknown', currency)
  }
  t.equal((await acme.get('/pricelist/BAD-CUR')).status, 404)
  await put(acme, 'NOK-LIST', { currency_code: 'NOK', vat_mode: 'NET' })
  t.equal((await acme.get('/pricelist/NOK-LIST')).body.currency_code, 'NOK', 'an unregistered ISO code is accepted')
})

t.test('a currency registered inactive is refused with currency_inactive for new pricelists', async (t) => {
  await put(acme, 'SEK-OLD', { currency_code: 'SEK', vat_mode: 'NET', name: 'old' })
  const registered = await acme.call('PUT', '/currency/SEK', { is_active: false })
  t.equal(registered.status, 202, `PUT /currency/SEK: ${registered.text}`)
  const answer = await acme.call('PUT', '/pricelist/SEK-NEW', { currency_code: 'SEK', vat_mode: 'NET' })
  t.equal(answer.status, 400)
  t.equal(answer.body.code, 'currency_inactive')
  t.equal((await acme.get('/pricelist/SEK-NEW')).status, 404)
  const switched = await acme.call('PUT', '/pricelist/RETAIL-SWITCH', { currency_code: 'SEK', vat_mode: 'NET' })
  t.equal(switched.body.code, 'currency_inactive')
  const renamed = await acme.call('PUT', '/pricelist/SEK-OLD', {
    currency_code: 'SEK',
    vat_mode: 'NET',
    name: 'renamed',
  })
  t.equal(renamed.status, 202, 'a pricelist already on the currency may still be edited')
  t.equal((await acme.get('/pricelist/SEK-OLD')).body.name, 'renamed')
})

t.test('a rule that does not compile is refused with rule_invalid naming it, and nothing is stored', async (t) => {
  const rules = [
    { filter: 'article.type == "food"', expression: 'sales * 0.9' },
    { filter: 'article.type ==', expression: 'sales' },
  ]
  const answer = await acme.call('PUT', '/pricelist/RULES', {
    currency_code: 'EUR',
    vat_mode: 'NET',
    price_rules: rules,
  })
  t.equal(answer.status, 400)
  t.equal(answer.body.code, 'rule_invalid')
  t.equal(answer.body.details[0].path, '/price_rules/1/filter')
  t.equal((await acme.get('/pricelist/RULES')).status, 404)
  const wrongType = await acme.call('PUT', '/pricelist/RULES', {
    currency_code: 'EUR',
    vat_mode: 'NET',
    price_rules: [{ expression: '"cheap"' }],
  })
  t.equal(wrongType.body.code, 'rule_invalid')
  t.equal(wrongType.body.details[0].path, '/price_rules/0/expression')
  const unknownVariable = await acme.call('PUT', '/pricelist/RULES', {
    currency_code: 'EUR',
    vat_mode: 'NET',
    price_rules: [{ expression: 'cost * 2' }],
  })
  t.equal(unknownVariable.body.code, 'rule_invalid')
  t.equal((await acme.get('/pricelist/RULES')).status, 404)
})

t.test('valid CEL rules are accepted and read back in order', async (t) => {
  const rules = [
    { code: 'r1', filter: 'article.type == "food"', expression: 'sales * 0.9' },
    { code: 'r2', filter: '', expression: 'fields.cost * 1.25' },
  ]
  await put(acme, 'RULES-OK', { currency_code: 'EUR', vat_mode: 'NET', price_rules: rules })
  const read = await acme.get('/pricelist/RULES-OK')
  t.same(
    read.body.price_rules,
    rules.map((rule) => ({ description: null, ...rule, updated_by: acme.clientId })),
  )
})

t.test('an end_date not after start_date is refused', async (t) => {
  const answer = await acme.call('PUT', '/pricelist/WINDOW', {
    currency_code: 'EUR',
    vat_mode: 'NET',
    start_date: '2030-01-01',
    end_date: '2030-01-01',
  })
  t.equal(answer.status, 400)
  t.equal(answer.body.details[0].path, '/end_date')
  t.equal((await acme.get('/pricelist/WINDOW')).status, 404)
})

t.test('GET /pricelist lists every live pricelist without asOf and only the active ones with asOf', async (t) => {
  const listing = await server.tenant('listing')
  await put(listing, 'L-ALWAYS', { currency_code: 'EUR', vat_mode: 'NET' })
  await put(listing, 'L-EXPIRED', {
    currency_code: 'EUR',
    vat_mode: 'NET',
    start_date: '2000-01-01',
    end_date: '2001-01-01',
  })
  await put(listing, 'L-FUTURE', { currency_code: 'EUR', vat_mode: 'NET', start_date: '2100-01-01' })
  await put(listing, 'L-RUNNING', {
    currency_code: 'EUR',
    vat_mode: 'NET',
    start_date: '2000-01-01',
    end_date: '2100-01-01',
  })
  const all = await listing.get('/pricelist')
  t.equal(all.status, 200)
  t.same(codesOf(all), ['L-ALWAYS', 'L-EXPIRED', 'L-FUTURE', 'L-RUNNING'])
  t.same([all.body.page, all.body.size, all.body.total], [1, 100, 4])
  const now = await listing.get(`/pricelist?asOf=${new Date().toISOString()}`)
  t.same(codesOf(now), ['L-ALWAYS', 'L-RUNNING'])
  t.equal(now.body.total, 2)
  t.same(
    codesOf(await listing.get('/pricelist?asOf=2100-06-01')),
    ['L-ALWAYS', 'L-FUTURE'],
    'end_date is exclusive, start_date inclusive',
  )
  const second = await listing.get('/pricelist?page=2&size=3')
  t.same(codesOf(second), ['L-RUNNING'])
  t.same([second.body.page, second.body.size, second.body.total], [2, 3, 4])
  t.equal((await listing.get('/pricelist?size=0')).status, 400)
})

t.test('POST /pricelist/query filters by currency, metadata (any value per key, all keys) and codes', async (t) => {
  const query = await server.tenant('query')
  await put(query, 'Q-EU', { currency_code: 'EUR', vat_mode: 'NET', metadata: { region: ['eu'], channel: ['web'] } })
  await put(query, 'Q-NORDIC', {
    currency_code: 'EUR',
    vat_mode: 'NET',
    metadata: { region: ['nordic'], channel: ['shop'] },
  })
  await put(query, 'Q-SE', {
    currency_code: 'SEK',
    vat_mode: 'GROSS',
    metadata: { region: ['nordic', 'eu'], channel: ['web'] },
  })
  await put(query, 'Q-OLD', {
    currency_code: 'EUR',
    vat_mode: 'NET',
    end_date: '2001-01-01',
    metadata: { region: ['eu'] },
  })
  const ask = (body: unknown, search = '') => query.call('POST', `/pricelist/query${search}`, body)
  t.same(codesOf(await ask({ currency_code: 'EUR' })), ['Q-EU', 'Q-NORDIC', 'Q-OLD'])
  t.same(codesOf(await ask({ metadata: { region: ['nordic', 'asia'] } })), ['Q-NORDIC', 'Q-SE'])
  t.same(codesOf(await ask({ metadata: { region: ['eu'], channel: ['web'] } })), ['Q-EU', 'Q-SE'])
  t.same(codesOf(await ask({ pricelists: ['Q-SE', 'Q-OLD', 'MISSING'] })), ['Q-OLD', 'Q-SE'])
  t.same(codesOf(await ask({ pricelists: ['Q-SE', 'Q-EU'], currency_code: 'EUR' })), ['Q-EU'])
  t.same(
    codesOf(await ask({ currency_code: 'EUR' }, `?asOf=${new Date().toISOString()}`)),
    ['Q-EU', 'Q-NORDIC'],
    'with asOf only active ones',
  )
  const paged = await ask({}, '?page=1&size=2')
  t.same([paged.body.items.length, paged.body.total], [2, 4])
  const wrong = await ask({ currencies: ['EUR'] })
  t.equal(wrong.status, 400)
  t.equal(wrong.body.code, 'validation_failed')
})

t.test(
  'POST /pricelist/search matches text in code or name, currency, effective vat_mode, parent and metadata',
  async (t) => {
    const search = await server.tenant('search')
    await put(search, 'S-RETAIL', {
      currency_code: 'EUR',
      vat_mode: 'GROSS',
      name: 'Retail Europe',
      metadata: { tier: ['a'] },
    })
    await put(search, 'S-OUTLET', {
      currency_code: 'EUR',
      parent_code: 'S-RETAIL',
      name: 'Outlet',
      metadata: { tier: ['b'] },
    })
    await put(search, 'S-B2B', { currency_code: 'SEK', vat_mode: 'NET', name: 'Business retail' })
    const find = (body: unknown) => search.call('POST', '/pricelist/search', body)
    t.same(codesOf(await find({ text: 'RETAIL' })), ['S-B2B', 'S-RETAIL'], 'name or code, case-insensitive')
    t.same(codesOf(await find({ text: 'outl' })), ['S-OUTLET'])
    t.same(codesOf(await find({ currency_code: 'SEK' })), ['S-B2B'])
    t.same(codesOf(await find({ vat_mode: 'GROSS' })), ['S-OUTLET', 'S-RETAIL'], 'the inherited mode counts')
    t.same(codesOf(await find({ parent_code: 'S-RETAIL' })), ['S-OUTLET'])
    t.same(codesOf(await find({ parent_code: null })), ['S-B2B', 'S-RETAIL'])
    t.same(codesOf(await find({ metadata: { tier: ['b', 'c'] } })), ['S-OUTLET'])
    t.same(codesOf(await find({ text: 'retail', currency_code: 'EUR' })), ['S-RETAIL'])
    const paged = await find({ page: 2, size: 2 })
    t.same(codesOf(paged), ['S-RETAIL'])
    t.same([paged.body.page, paged.body.size, paged.body.total], [2, 2, 3])
    t.equal((await find({ vat_mode: 'gross' })).status, 400)
  },
)

t.test('a deleted pricelist reads 404 and is not listed, except with include_deleted or asOf before', async (t) => {
  const deletes = await server.tenant('deletes')
  await put(deletes, 'D-1', { currency_code: 'EUR', vat_mode: 'NET', name: 'doomed' })
  await put(deletes, 'D-2', { currency_code: 'EUR', vat_mode: 'NET' })
  await pause(5)
  const beforeDelete = new Date().toISOString()
  await pause(5)
  const deleted = await deletes.call('DELETE', '/pricelist/D-1')
  t.equal(deleted.status, 202)
  t.equal((await deletes.get('/pricelist/D-1')).status, 404)
  const shown = await deletes.get('/pricelist/D-1?include_deleted=true')
  t.equal(shown.status, 200)
  t.equal(shown.body.name, 'doomed')
  t.match(shown.body.deleted_at, /^\d{4}-\d{2}-\d{2}T/)
  const past = await deletes.get(`/pricelist/D-1?asOf=${beforeDelete}`)
  t.equal(past.status, 200)
  t.equal(past.body.name, 'doomed')
  t.same(codesOf(await deletes.get('/pricelist')), ['D-2'])
  t.same(codesOf(await deletes.get('/pricelist?include_deleted=true')), ['D-1', 'D-2'])
  t.equal((await deletes.call('DELETE', '/pricelist/D-1')).status, 404, 'deleting again answers 404')
  t.equal((await deletes.call('DELETE', '/pricelist/NEVER')).status, 404)
  const scheduled = await deletes.call('DELETE', '/pricelist/D-2?when=2100-01-01')
  t.equal(scheduled.status, 202)
  const later = await deletes.get('/pricelist/D-2')
  t.equal(later.status, 200, 'a scheduled delete leaves it readable now')
  t.equal(later.body.deleted_at, '2100-01-01T00:00:00Z')
  t.equal((await deletes.get('/pricelist/D-2?asOf=2100-01-02')).status, 404)
})

t.test(
  'DELETE /pricelist/batch takes codes and {code, when}, lists failing items; a deleted pricelist cannot be a parent',
  async (t) => {
    const batch = await server.tenant('delete-batch')
    await put(batch, 'B-1', { currency_code: 'EUR', vat_mode: 'NET' })
    await put(batch, 'B-2', { currency_code: 'EUR', vat_mode: 'NET' })
    await put(batch, 'B-3', { currency_code: 'EUR', vat_mode: 'NET' })
    const answer = await batch.call('DELETE', '/pricelist/batch', [
      'B-1',
      { code: 'B-2', when: '2100-01-01' },
      'MISSING',
      { sku: 'B-3' },
    ])
    t.equal(answer.status, 202)
    t.equal(answer.body.accepted, 2)
    t.same(
      answer.body.failed.map((entry: { code: string | null }) => entry.code),
      ['MISSING', null],
    )
    t.match(answer.body.failed[0].message, /not found/)
    t.equal((await batch.get('/pricelist/B-1')).status, 404)
    t.equal((await batch.get('/pricelist/B-2')).body.deleted_at, '2100-01-01T00:00:00Z')
    t.equal((await batch.get('/pricelist/B-3')).status, 200)
    const orphan = await batch.call('PUT', '/pricelist/B-CHILD', { currency_code: 'EUR', parent_code: 'B-1' })
    t.equal(orphan.status, 400, 'a deleted pricelist cannot become a parent')
  },
)

t.test('creating pricelists beyond the plan quota answers 422 quota_exceeded; updates still work', async (t) => {
  const small = await server.tenant('small', { limits: { pricelists: 2 } })
  await put(small, 'QA-1', { currency_code: 'EUR', vat_mode: 'NET' })
  await put(small, 'QA-2', { currency_code: 'EUR', vat_mode: 'NET' })
  const third = await small.call('PUT', '/pricelist/QA-3', { currency_code: 'EUR', vat_mode: 'NET' })
  t.equal(third.status, 422)
  t.equal(third.body.code, 'quota_exceeded')
  t.equal(third.body.error, 'Unprocessable Content')
  t.equal((await small.get('/pricelist/QA-3')).status, 404)
  await put(small, 'QA-2', { currency_code: 'EUR', vat_mode: 'GROSS' })
  t.equal((await small.get('/pricelist/QA-2')).body.vat_mode, 'GROSS', 'an update is not a creation')
  const batch = await small.call('POST', '/pricelist/batch', [
    { code: 'QA-1', currency_code: 'EUR', vat_mode: 'GROSS' },
    { code: 'QA-4', currency_code: 'EUR', vat_mode: 'NET' },
  ])
  t.equal(batch.status, 202)
  t.equal(batch.body.accepted, 1)
  t.equal(batch.body.failed[0].code, 'QA-4')
  t.match(batch.body.failed[0].message, /allows 2 pricelists/)
  t.equal((await small.get('/pricelist/QA-4')).status, 404)
  t.equal((await small.call('DELETE', '/pricelist/QA-1')).status, 202)
  await put(small, 'QA-3', { currency_code: 'EUR', vat_mode: 'NET' })
  t.equal((await small.get('/pricelist/QA-3')).status, 200, 'a delete frees a place')
})

t.test(
  'a batch writes valid items, lists failing ones with code and message, and later items see earlier ones',
  async (t) => {
    const batch = await server.tenant('write-batch')
    const answer = await batch.call('POST', '/pricelist/batch', [
      { code: 'W-PARENT', currency_code: 'EUR', vat_mode: 'GROSS' },
      { code: 'W-CHILD', currency_code: 'EUR', parent_code: 'W-PARENT' },
      { code: 'W-BADCUR', currency_code: 'QQQ', vat_mode: 'NET' },
      { currency_code: 'EUR', vat_mode: 'NET' },
      { code: 'W-RULE', currency_code: 'EUR', vat_mode: 'NET', price_rules: [{ expression: 'sales *' }] },
      { code: 'W-NOMODE', currency_code: 'EUR' },
      { code: 'W-LOOP', currency_code: 'EUR', vat_mode: 'NET', parent_code: 'W-LOOP' },
    ])
    t.equal(answer.status, 202)
    t.equal(answer.body.accepted, 2)
    t.same(
      answer.body.failed.map((entry: { code: string | null }) => entry.code),
      ['W-BADCUR', null, 'W-RULE', 'W-NOMODE', 'W-LOOP'],
    )
    for (const entry of answer.body.failed) t.type(entry.message, 'string')
    t.match(answer.body.failed[0].message, /QQQ/)
    t.match(answer.body.failed[2].message, /price_rules\/0\/expression/)
    t.equal((await batch.get('/pricelist/W-CHILD')).body.vat_mode, 'GROSS')
    for (const code of ['W-BADCUR', 'W-RULE', 'W-NOMODE', 'W-LOOP'])
      t.equal((await batch.get(`/pricelist/${code}`)).status, 404, code)
    const notArray = await batch.call('POST', '/pricelist/batch', { code: 'X' })
    t.equal(notArray.status, 400)
  },
)

t.test('updated_by is the client_id of the key that wrote the pricelist', async (t) => {
  await put(acme, 'WHO', { currency_code: 'EUR', vat_mode: 'NET' })
  t.equal((await acme.get('/pricelist/WHO')).body.updated_by, acme.clientId)
  const other = await server.tenant('other')
  await put(other, 'WHO', { currency_code: 'EUR', vat_mode: 'NET' })
  t.equal((await other.get('/pricelist/WHO')).body.updated_by, other.clientId)
  t.not(other.clientId, acme.clientId)
})

t.test('pricelists written singly and in batches survive a hard kill and restart', async (t) => {
  const durable = await server.tenant('durable')
  await put(durable, 'K-TOP', { currency_code: 'EUR', vat_mode: 'GROSS', name: 'top' })
  const batch = await durable.call('POST', '/pricelist/batch', [
    { code: 'K-CHILD', currency_code: 'EUR', parent_code: 'K-TOP' },
  ])
  t.equal(batch.body.accepted, 1)
  await server.kill()
  await server.start()
  await durable.refreshToken()
  t.equal((await durable.get('/pricelist/K-TOP')).body.name, 'top')
  t.equal((await durable.get('/pricelist/K-CHILD')).body.vat_mode, 'GROSS')
})
