/**
 * Reference data against the real server: currencies, tax areas, VAT classes, VAT rates and
 * article-to-VAT-class mappings; their validation, versioning (scheduled rates and
 * reclassifications read with asOf), soft deletes, dedup and refused writes storing nothing.
 */
import t, { type Test } from 'tap'
import { startServer, type Answer, type TenantClient, type TestServer } from '../../helpers/server.js'

let server: TestServer
let acme: TenantClient

const dayMs = 24 * 60 * 60 * 1000
const instantPattern = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/

/** An instant `offsetMs` from now, whole seconds, as the server formats it (no `.000`). */
function instantIn(offsetMs: number): string {
  const ms = Math.floor((Date.now() + offsetMs) / 1000) * 1000
  return new Date(ms).toISOString().replace('.000Z', 'Z')
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

function expect400(t: Test, answer: Answer, code = 'validation_failed'): void {
  t.equal(answer.status, 400, `400 for ${answer.text}`)
  t.equal(answer.body?.code, code)
  t.equal(answer.body?.error, 'Bad Request')
}

async function taxArea(code: string, body: Record<string, unknown> = {}): Promise<void> {
  const answer = await acme.call('PUT', `/tax-area/${code}`, { name: `Area ${code}`, ...body })
  if (answer.status !== 202) throw new Error(`tax area ${code}: ${answer.status} ${answer.text}`)
}

async function vatClass(code: string): Promise<void> {
  const answer = await acme.call('PUT', `/vat/class/${code}`, { name: `Class ${code}` })
  if (answer.status !== 202) throw new Error(`VAT class ${code}: ${answer.status} ${answer.text}`)
}

t.before(async () => {
  server = await startServer()
  acme = await server.tenant('acme')
})
t.teardown(async () => server.dispose())

// -------------------------------------------------------------------------------------------------
// Currencies

t.test('a currency PUT with an empty body registers it active with vat_precision 2', async (t) => {
  const put = await acme.call('PUT', '/currency/SEK', {})
  t.equal(put.status, 202)
  t.equal(put.text, '')
  const read = await acme.get('/currency/SEK')
  t.equal(read.status, 200)
  t.same(read.body, {
    code: 'SEK',
    is_active: true,
    vat_precision: 2,
    updated_at: read.body.updated_at,
    updated_by: acme.clientId,
  })
  t.match(read.body.updated_at, instantPattern)
})

t.test('a currency PUT stores is_active and vat_precision as given', async (t) => {
  t.equal((await acme.call('PUT', '/currency/JPY', { is_active: true, vat_precision: 0 })).status, 202)
  const read = await acme.get('/currency/JPY')
  t.equal(read.body.vat_precision, 0)
  t.equal(read.body.is_active, true)
})

t.test('a currency code outside ISO 4217 answers 400 currency_unknown and stores nothing', async (t) => {
  for (const code of ['XYZ', 'eur', 'EURO']) {
    const answer = await acme.call('PUT', `/currency/${code}`, { is_active: true })
    expect400(t, answer, 'currency_unknown')
    t.match(answer.body.message, code)
    t.equal((await acme.get(`/currency/${code}`)).status, 404)
  }
})

t.test('vat_precision outside 0-4 or not an integer answers 400 and stores nothing', async (t) => {
  for (const vatPrecision of [5, -1, 2.5, '2']) {
    const answer = await acme.call('PUT', '/currency/NOK', { vat_precision: vatPrecision })
    expect400(t, answer)
    t.equal(answer.body.details[0].path, '/vat_precision')
  }
  t.equal((await acme.get('/currency/NOK')).status, 404)
})

t.test('a currency write with an unknown field or a contradicting code answers 400', async (t) => {
  expect400(t, await acme.call('PUT', '/currency/DKK', { is_active: true, colour: 'red' }))
  expect400(t, await acme.call('PUT', '/currency/DKK', { code: 'SEK' }))
  t.equal((await acme.get('/currency/DKK')).status, 404)
})

t.test('a currency read back and PUT unchanged (GET-edit-PUT) is accepted', async (t) => {
  const read = await acme.get('/currency/SEK')
  t.equal((await acme.call('PUT', '/currency/SEK', read.body)).status, 202)
  t.same((await acme.get('/currency/SEK')).body, read.body)
})

t.test('an ISO currency never registered reads 404', async (t) => {
  const answer = await acme.get('/currency/CHF')
  t.equal(answer.status, 404)
  t.equal(answer.body.code, 'not_found')
})

t.test('GET /currency lists only active registered currencies, sorted by code', async (t) => {
  for (const code of ['USD', 'EUR', 'GBP']) t.equal((await acme.call('PUT', `/currency/${code}`, {})).status, 202)
  t.equal((await acme.call('PUT', '/currency/GBP', { is_active: false, vat_precision: 3 })).status, 202)
  const list = await acme.get('/currency')
  t.equal(list.status, 200)
  t.ok(Array.isArray(list.body))
  const codes = list.body.map((currency: { code: string }) => currency.code)
  t.same(codes, ['EUR', 'JPY', 'SEK', 'USD'])
  t.same(list.body[0], {
    code: 'EUR',
    is_active: true,
    vat_precision: 2,
    updated_at: list.body[0].updated_at,
    updated_by: acme.clientId,
  })
})

t.test('an inactive currency keeps its record and reactivation restores it to the list', async (t) => {
  const inactive = await acme.get('/currency/GBP')
  t.equal(inactive.status, 200)
  t.equal(inactive.body.is_active, false)
  t.equal(inactive.body.vat_precision, 3)
  t.equal((await acme.call('PUT', '/currency/GBP', { is_active: true, vat_precision: 3 })).status, 202)
  const active = await acme.get('/currency/GBP')
  t.equal(active.body.is_active, true)
  const codes = (await acme.get('/currency')).body.map((currency: { code: string }) => currency.code)
  t.same(codes, ['EUR', 'GBP', 'JPY', 'SEK', 'USD'])
})

t.test('an identical currency rewrite is accepted and records nothing new', async (t) => {
  t.equal((await acme.call('PUT', '/currency/AUD', { vat_precision: 2 })).status, 202)
  const first = await acme.get('/currency/AUD')
  await sleep(20)
  t.equal((await acme.call('PUT', '/currency/AUD', {})).status, 202)
  t.equal((await acme.get('/currency/AUD')).body.updated_at, first.body.updated_at, 'same content: no new version')
  await sleep(20)
  t.equal((await acme.call('PUT', '/currency/AUD', { vat_precision: 1 })).status, 202)
  const changed = await acme.get('/currency/AUD')
  t.equal(changed.body.vat_precision, 1)
  t.not(changed.body.updated_at, first.body.updated_at, 'a change records a new version')
})

t.test('a currency read as of before its registration answers 404', async (t) => {
  const before = instantIn(-dayMs)
  t.equal((await acme.get(`/currency/SEK?asOf=${before}`)).status, 404)
  t.equal((await acme.get('/currency/SEK')).status, 200)
})

// -------------------------------------------------------------------------------------------------
// Tax areas

t.test('a tax area reads back with its fields, a UTC validity window and is_active default true', async (t) => {
  const put = await acme.call('PUT', '/tax-area/SE', {
    name: 'Sweden',
    valid_from: '2020-01-01',
    valid_to: '2030-01-01T01:00:00+01:00',
  })
  t.equal(put.status, 202)
  t.equal(put.text, '')
  const read = await acme.get('/tax-area/SE')
  t.equal(read.status, 200)
  t.same(read.body, {
    code: 'SE',
    name: 'Sweden',
    is_active: true,
    valid_from: '2020-01-01T00:00:00Z',
    valid_to: '2030-01-01T00:00:00Z',
    updated_at: read.body.updated_at,
    updated_by: acme.clientId,
  })
})

t.test('a tax area without a window reads null for valid_from and valid_to', async (t) => {
  t.equal((await acme.call('PUT', '/tax-area/NO', { name: 'Norway', is_active: false })).status, 202)
  const read = await acme.get('/tax-area/NO')
  t.equal(read.body.valid_from, null)
  t.equal(read.body.valid_to, null)
  t.equal(read.body.is_active, false)
})

t.test('GET /tax-area answers a bare array sorted by code', async (t) => {
  await taxArea('DK')
  const list = await acme.get('/tax-area')
  t.equal(list.status, 200)
  t.same(
    list.body.map((area: { code: string }) => area.code),
    ['DK', 'NO', 'SE'],
  )
})

t.test('bad tax area writes answer 400 and store nothing', async (t) => {
  expect400(t, await acme.call('PUT', '/tax-area/FI', { name: 'Finland', region: 'north' }))
  expect400(
    t,
    await acme.call('PUT', '/tax-area/FI', { name: 'Finland', valid_from: '2030-01-01', valid_to: '2020-01-01' }),
  )
  expect400(t, await acme.call('PUT', '/tax-area/FI', { valid_from: 'next tuesday' }))
  expect400(t, await acme.call('PUT', '/tax-area/FI', { is_active: 'yes' }))
  expect400(t, await acme.call('PUT', '/tax-area/FI', { code: 'SE' }))
  t.equal((await acme.get('/tax-area/FI')).status, 404)
  const longCode = 'A'.repeat(65)
  expect400(t, await acme.call('PUT', `/tax-area/${longCode}`, { name: 'too long' }))
  t.equal((await acme.get(`/tax-area/${longCode}`)).status, 404)
})

t.test('a deleted tax area is absent from reads and lists but shown with include_deleted', async (t) => {
  await taxArea('XX')
  const before = await acme.get('/tax-area/XX')
  await sleep(5)
  const deleted = await acme.call('DELETE', '/tax-area/XX')
  t.equal(deleted.status, 202)
  t.equal(deleted.text, '')
  t.equal((await acme.get('/tax-area/XX')).status, 404)
  t.notOk((await acme.get('/tax-area')).body.some((area: { code: string }) => area.code === 'XX'))
  const shown = await acme.get('/tax-area/XX?include_deleted=true')
  t.equal(shown.status, 200)
  t.match(shown.body.deleted_at, instantPattern)
  t.ok(Date.parse(shown.body.deleted_at) >= Date.parse(before.body.updated_at))
  const listed = (await acme.get('/tax-area?include_deleted=true')).body.find(
    (area: { code: string }) => area.code === 'XX',
  )
  t.equal(listed?.deleted_at, shown.body.deleted_at)
  const history = await acme.get(`/tax-area/XX?asOf=${encodeURIComponent(before.body.updated_at)}`)
  t.equal(history.status, 200, 'history before the deletion stays readable')
  t.equal(history.body.deleted_at, shown.body.deleted_at)
  t.equal((await acme.call('DELETE', '/tax-area/XX')).status, 404, 'deleting what is absent answers 404')
})

t.test('a tax area delete scheduled with when shows deleted_at until then and 404 after', async (t) => {
  await taxArea('YY')
  const when = instantIn(dayMs)
  t.equal((await acme.call('DELETE', `/tax-area/YY?when=${when}`)).status, 202)
  const now = await acme.get('/tax-area/YY')
  t.equal(now.status, 200)
  t.equal(now.body.deleted_at, when)
  t.equal((await acme.get(`/tax-area/YY?asOf=${instantIn(2 * dayMs)}`)).status, 404)
  expect400(t, await acme.call('DELETE', '/tax-area/YY?when=someday'))
  t.equal((await acme.call('DELETE', '/tax-area/NEVER')).status, 404)
})

// -------------------------------------------------------------------------------------------------
// VAT classes

t.test('a VAT class reads back with name and description, and lists sorted by code', async (t) => {
  t.equal((await acme.call('PUT', '/vat/class/STANDARD', { name: 'Standard', description: 'full rate' })).status, 202)
  t.equal((await acme.call('PUT', '/vat/class/REDUCED', { name: 'Reduced' })).status, 202)
  const read = await acme.get('/vat/class/STANDARD')
  t.same(read.body, {
    code: 'STANDARD',
    name: 'Standard',
    description: 'full rate',
    updated_at: read.body.updated_at,
    updated_by: acme.clientId,
  })
  const reduced = await acme.get('/vat/class/REDUCED')
  t.equal(reduced.body.description, null)
  const list = await acme.get('/vat/class')
  t.same(
    list.body.map((item: { code: string }) => item.code),
    ['REDUCED', 'STANDARD'],
  )
})

t.test('a VAT class write with an unknown field answers 400 and stores nothing', async (t) => {
  expect400(t, await acme.call('PUT', '/vat/class/ZERO', { name: 'Zero', rate: 0 }))
  t.equal((await acme.get('/vat/class/ZERO')).status, 404)
})

t.test('a deleted VAT class reads 404, shows deleted_at with include_deleted, and deletes once', async (t) => {
  await vatClass('GONE')
  t.equal((await acme.call('DELETE', '/vat/class/GONE')).status, 202)
  t.equal((await acme.get('/vat/class/GONE')).status, 404)
  t.notOk((await acme.get('/vat/class')).body.some((item: { code: string }) => item.code === 'GONE'))
  const shown = await acme.get('/vat/class/GONE?include_deleted=true')
  t.match(shown.body.deleted_at, instantPattern)
  t.equal((await acme.call('DELETE', '/vat/class/GONE')).status, 404)
})

// -------------------------------------------------------------------------------------------------
// VAT rates

t.test('a VAT rate reads back as a number with its start date and writer', async (t) => {
  const post = await acme.call('POST', '/vat/rate', { tax_area_code: 'SE', vat_class_code: 'STANDARD', rate: 25 })
  t.equal(post.status, 202)
  t.equal(post.text, '')
  const read = await acme.get('/vat/rate?tax_area=SE&vat_class=STANDARD')
  t.equal(read.status, 200)
  t.same(read.body, {
    tax_area_code: 'SE',
    vat_class_code: 'STANDARD',
    rate: 25,
    start_date: read.body.start_date,
    updated_at: read.body.updated_at,
    updated_by: acme.clientId,
  })
  t.equal(read.body.start_date, read.body.updated_at, 'no start date means from now')
})

t.test('a numeric-string rate is stored canonically and answered as a number', async (t) => {
  t.equal(
    (await acme.call('POST', '/vat/rate', { tax_area_code: 'SE', vat_class_code: 'REDUCED', rate: '12.5000' })).status,
    202,
  )
  const read = await acme.get('/vat/rate?tax_area=SE&vat_class=REDUCED')
  t.equal(read.body.rate, 12.5)
  t.equal(read.text.includes('"rate":12.5,'), true)
  const first = read.body.updated_at
  await sleep(20)
  t.equal(
    (await acme.call('POST', '/vat/rate', { tax_area_code: 'SE', vat_class_code: 'REDUCED', rate: 12.5 })).status,
    202,
  )
  t.equal(
    (await acme.get('/vat/rate?tax_area=SE&vat_class=REDUCED')).body.updated_at,
    first,
    '12.5 equals "12.5000": nothing new',
  )
})

t.test('bad VAT rate writes answer 400 and leave the stored rate unchanged', async (t) => {
  const before = await acme.get('/vat/rate?tax_area=SE&vat_class=STANDARD')
  const base = { tax_area_code: 'SE', vat_class_code: 'STANDARD' }
  const cases: [string, Record<string, unknown>, string][] = [
    ['a non-numeric string', { ...base, rate: 'abc' }, '/rate'],
    ['a negative rate', { ...base, rate: -1 }, '/rate'],
    ['a negative string', { ...base, rate: '-1' }, '/rate'],
    ['a rate above 100', { ...base, rate: 100.5 }, '/rate'],
    ['five decimals', { ...base, rate: 12.34567 }, '/rate'],
    ['an exponent', { ...base, rate: '2e1' }, '/rate'],
    ['a boolean rate', { ...base, rate: true }, '/rate'],
    ['a missing tax_area_code', { vat_class_code: 'STANDARD', rate: 20 }, '/tax_area_code'],
    ['a missing rate', { ...base }, '/rate'],
    ['an unknown field', { ...base, rate: 20, country: 'SE' }, ''],
    ['a bad start_date', { ...base, rate: 20, start_date: 'tomorrow' }, '/start_date'],
  ]
  for (const [name, body, path] of cases) {
    const answer = await acme.call('POST', '/vat/rate', body)
    expect400(t, answer)
    if (path !== '')
      t.ok(
        answer.body.details.some((detail: { path: string }) => detail.path === path),
        `${name}: detail at ${path}`,
      )
  }
  const after = await acme.get('/vat/rate?tax_area=SE&vat_class=STANDARD')
  t.same(after.body, before.body)
})

t.test('rates of 0, 100 and four decimals are accepted', async (t) => {
  await vatClass('EDGE')
  for (const [rate, expected] of [
    [0, 0],
    ['100', 100],
    ['7.1234', 7.1234],
    [0.0001, 0.0001],
  ] as const) {
    t.equal((await acme.call('POST', '/vat/rate', { tax_area_code: 'DK', vat_class_code: 'EDGE', rate })).status, 202)
    t.equal((await acme.get('/vat/rate?tax_area=DK&vat_class=EDGE')).body.rate, expected)
  }
})

t.test('a VAT rate naming a missing tax area or VAT class answers 400 and stores nothing', async (t) => {
  const unknownArea = await acme.call('POST', '/vat/rate', {
    tax_area_code: 'ZZ',
    vat_class_code: 'STANDARD',
    rate: 10,
  })
  expect400(t, unknownArea)
  t.equal(unknownArea.body.message, 'Tax area ZZ does not exist')
  t.equal(unknownArea.body.details[0].path, '/tax_area_code')
  t.equal((await acme.get('/vat/rate?tax_area=ZZ&vat_class=STANDARD')).status, 404)
  const unknownClass = await acme.call('POST', '/vat/rate', { tax_area_code: 'SE', vat_class_code: 'NOPE', rate: 10 })
  expect400(t, unknownClass)
  t.equal(unknownClass.body.message, 'VAT class NOPE does not exist')
  t.equal((await acme.get('/vat/rate?tax_area=SE&vat_class=NOPE')).status, 404)
  const deletedArea = await acme.call('POST', '/vat/rate', {
    tax_area_code: 'XX',
    vat_class_code: 'STANDARD',
    rate: 10,
  })
  expect400(t, deletedArea, 'validation_failed')
  t.equal((await acme.get('/vat/rate?tax_area=XX&vat_class=STANDARD')).status, 404)
})

t.test('a VAT rate starting after its tax area is scheduled for deletion answers 400', async (t) => {
  const answer = await acme.call('POST', '/vat/rate', {
    tax_area_code: 'YY',
    vat_class_code: 'STANDARD',
    rate: 10,
    start_date: instantIn(3 * dayMs),
  })
  expect400(t, answer)
  t.match(answer.body.message, /Tax area YY is deleted by/)
  t.equal(
    (await acme.call('POST', '/vat/rate', { tax_area_code: 'YY', vat_class_code: 'STANDARD', rate: 10 })).status,
    202,
  )
})

t.test('a scheduled VAT rate change takes effect at its start date', async (t) => {
  await taxArea('FR')
  t.equal(
    (await acme.call('POST', '/vat/rate', { tax_area_code: 'FR', vat_class_code: 'STANDARD', rate: 25 })).status,
    202,
  )
  const start = instantIn(2 * dayMs)
  t.equal(
    (
      await acme.call('POST', '/vat/rate', {
        tax_area_code: 'FR',
        vat_class_code: 'STANDARD',
        rate: '20',
        start_date: start,
      })
    ).status,
    202,
  )
  const now = await acme.get('/vat/rate?tax_area=FR&vat_class=STANDARD')
  t.equal(now.body.rate, 25)
  const before = await acme.get(`/vat/rate?tax_area=FR&vat_class=STANDARD&asOf=${instantIn(dayMs)}`)
  t.equal(before.body.rate, 25)
  const after = await acme.get(`/vat/rate?tax_area=FR&vat_class=STANDARD&asOf=${instantIn(3 * dayMs)}`)
  t.equal(after.body.rate, 20)
  t.equal(after.body.start_date, start)
  const atStart = await acme.get(`/vat/rate?tax_area=FR&vat_class=STANDARD&asOf=${start}`)
  t.equal(atStart.body.rate, 20, 'in force from its start instant')
  const listed = await acme.get(`/vat/rates?tax_area=FR&asOf=${instantIn(3 * dayMs)}`)
  t.same(
    listed.body.map((rate: { rate: number }) => rate.rate),
    [20],
  )
})

t.test('a past start date means now', async (t) => {
  t.equal(
    (
      await acme.call('POST', '/vat/rate', {
        tax_area_code: 'NO',
        vat_class_code: 'STANDARD',
        rate: 25,
        start_date: '2001-01-01',
      })
    ).status,
    202,
  )
  const read = await acme.get('/vat/rate?tax_area=NO&vat_class=STANDARD')
  t.ok(Date.parse(read.body.start_date) > Date.parse('2020-01-01'))
  t.equal((await acme.get('/vat/rate?tax_area=NO&vat_class=STANDARD&asOf=2010-01-01')).status, 404)
})

t.test("GET /vat/rates answers the area's rates in force, sorted by VAT class", async (t) => {
  const list = await acme.get('/vat/rates?tax_area=SE')
  t.equal(list.status, 200)
  t.same(
    list.body.map((rate: { vat_class_code: string; rate: number }) => [rate.vat_class_code, rate.rate]),
    [
      ['REDUCED', 12.5],
      ['STANDARD', 25],
    ],
  )
  t.ok(list.body.every((rate: { tax_area_code: string }) => rate.tax_area_code === 'SE'))
  t.same((await acme.get('/vat/rates?tax_area=SE&asOf=2001-01-01')).body, [])
  t.same((await acme.get('/vat/rates?tax_area=NOWHERE')).body, [])
})

t.test('VAT rate reads without their required parameters answer 400', async (t) => {
  expect400(t, await acme.get('/vat/rate?tax_area=SE'))
  expect400(t, await acme.get('/vat/rate?vat_class=STANDARD'))
  expect400(t, await acme.get('/vat/rate?tax_area=SE&vat_class=STANDARD&asOf=yesterday'))
  expect400(t, await acme.get('/vat/rates?tax_area=SE&colour=red'))
})

t.test('a VAT rate with none in force reads 404', async (t) => {
  const answer = await acme.get('/vat/rate?tax_area=DK&vat_class=STANDARD')
  t.equal(answer.status, 404)
  t.equal(answer.body.code, 'not_found')
})

t.test('a deleted VAT rate reads 404, shows deleted_at with include_deleted, and history stays', async (t) => {
  t.equal(
    (await acme.call('POST', '/vat/rate', { tax_area_code: 'DK', vat_class_code: 'REDUCED', rate: 25 })).status,
    202,
  )
  const before = await acme.get('/vat/rate?tax_area=DK&vat_class=REDUCED')
  await sleep(5)
  t.equal((await acme.call('DELETE', '/vat/rate/DK/REDUCED')).status, 202)
  t.equal((await acme.get('/vat/rate?tax_area=DK&vat_class=REDUCED')).status, 404)
  t.notOk(
    (await acme.get('/vat/rates?tax_area=DK')).body.some(
      (rate: { vat_class_code: string }) => rate.vat_class_code === 'REDUCED',
    ),
  )
  const shown = await acme.get('/vat/rate?tax_area=DK&vat_class=REDUCED&include_deleted=true')
  t.equal(shown.body.rate, 25)
  t.match(shown.body.deleted_at, instantPattern)
  const listed = await acme.get('/vat/rates?tax_area=DK&include_deleted=true')
  t.ok(
    listed.body.some(
      (rate: { vat_class_code: string; deleted_at?: string }) =>
        rate.vat_class_code === 'REDUCED' && rate.deleted_at === shown.body.deleted_at,
    ),
  )
  const history = await acme.get(
    `/vat/rate?tax_area=DK&vat_class=REDUCED&asOf=${encodeURIComponent(before.body.start_date)}`,
  )
  t.equal(history.body.rate, 25)
  t.equal((await acme.call('DELETE', '/vat/rate/DK/REDUCED')).status, 404)
  t.equal((await acme.call('DELETE', '/vat/rate/DK/NONE')).status, 404)
})

// -------------------------------------------------------------------------------------------------
// Article-to-VAT-class mappings

t.test('a mapping reads back in force, and the article need not exist', async (t) => {
  const post = await acme.call('POST', '/article-taxclass', {
    sku_code: 'SKU-B',
    tax_area_code: 'SE',
    vat_class_code: 'STANDARD',
  })
  t.equal(post.status, 202)
  t.equal(post.text, '')
  const read = await acme.get('/article-taxclass/SKU-B/SE')
  t.equal(read.status, 200)
  t.same(read.body, {
    sku_code: 'SKU-B',
    tax_area_code: 'SE',
    vat_class_code: 'STANDARD',
    start_date: read.body.start_date,
    updated_at: read.body.updated_at,
    updated_by: acme.clientId,
  })
  t.match(read.body.start_date, instantPattern)
  t.equal((await acme.get('/article/SKU-B')).status, 404, 'the article itself was never written')
})

t.test('a mapping that does not exist reads 404', async (t) => {
  t.equal((await acme.get('/article-taxclass/SKU-B/NO')).status, 404)
  t.equal((await acme.get('/article-taxclass/NONE/SE')).status, 404)
})

t.test('a scheduled reclassification takes effect at its start date', async (t) => {
  t.equal(
    (
      await acme.call('POST', '/article-taxclass', {
        sku_code: 'SKU-R',
        tax_area_code: 'SE',
        vat_class_code: 'STANDARD',
      })
    ).status,
    202,
  )
  const start = instantIn(2 * dayMs)
  t.equal(
    (
      await acme.call('POST', '/article-taxclass', {
        sku_code: 'SKU-R',
        tax_area_code: 'SE',
        vat_class_code: 'REDUCED',
        start_date: start,
      })
    ).status,
    202,
  )
  t.equal((await acme.get('/article-taxclass/SKU-R/SE')).body.vat_class_code, 'STANDARD')
  t.equal((await acme.get(`/article-taxclass/SKU-R/SE?asOf=${instantIn(dayMs)}`)).body.vat_class_code, 'STANDARD')
  const after = await acme.get(`/article-taxclass/SKU-R/SE?asOf=${instantIn(3 * dayMs)}`)
  t.equal(after.body.vat_class_code, 'REDUCED')
  t.equal(after.body.start_date, start)
})

t.test("by-area lists the area's mappings in force, sorted by SKU", async (t) => {
  t.equal(
    (
      await acme.call('POST', '/article-taxclass', {
        sku_code: 'SKU-A',
        tax_area_code: 'SE',
        vat_class_code: 'REDUCED',
      })
    ).status,
    202,
  )
  t.equal(
    (
      await acme.call('POST', '/article-taxclass', {
        sku_code: 'SKU-A',
        tax_area_code: 'DK',
        vat_class_code: 'STANDARD',
      })
    ).status,
    202,
  )
  const list = await acme.get('/article-taxclass/by-area?tax_area=SE')
  t.equal(list.status, 200)
  t.same(
    list.body.map((mapping: { sku_code: string; vat_class_code: string }) => [
      mapping.sku_code,
      mapping.vat_class_code,
    ]),
    [
      ['SKU-A', 'REDUCED'],
      ['SKU-B', 'STANDARD'],
      ['SKU-R', 'STANDARD'],
    ],
  )
  t.ok(list.body.every((mapping: { tax_area_code: string }) => mapping.tax_area_code === 'SE'))
  const later = await acme.get(`/article-taxclass/by-area?tax_area=SE&asOf=${instantIn(3 * dayMs)}`)
  t.equal(later.body.find((mapping: { sku_code: string }) => mapping.sku_code === 'SKU-R').vat_class_code, 'REDUCED')
  const dk = await acme.get('/article-taxclass/by-area?tax_area=DK')
  t.same(
    dk.body.map((mapping: { sku_code: string }) => mapping.sku_code),
    ['SKU-A'],
  )
  expect400(t, await acme.get('/article-taxclass/by-area'))
})

t.test('a mapping naming a missing VAT class or tax area answers 400 and stores nothing', async (t) => {
  const badClass = await acme.call('POST', '/article-taxclass', {
    sku_code: 'SKU-X',
    tax_area_code: 'SE',
    vat_class_code: 'NOPE',
  })
  expect400(t, badClass)
  t.equal(badClass.body.message, 'VAT class NOPE does not exist')
  const badArea = await acme.call('POST', '/article-taxclass', {
    sku_code: 'SKU-X',
    tax_area_code: 'ZZ',
    vat_class_code: 'STANDARD',
  })
  expect400(t, badArea)
  t.equal(badArea.body.message, 'Tax area ZZ does not exist')
  expect400(t, await acme.call('POST', '/article-taxclass', { sku_code: 'SKU-X', tax_area_code: 'SE' }))
  expect400(
    t,
    await acme.call('POST', '/article-taxclass', {
      sku_code: 'SKU-X',
      tax_area_code: 'SE',
      vat_class_code: 'STANDARD',
      note: 1,
    }),
  )
  t.equal((await acme.get('/article-taxclass/SKU-X/SE')).status, 404)
  t.equal((await acme.get('/article-taxclass/SKU-X/ZZ')).status, 404)
})

t.test('a mapping batch writes the valid items and lists the failing one with its keys', async (t) => {
  const answer = await acme.call('POST', '/article-taxclass/batch', [
    { sku_code: 'SKU-M1', tax_area_code: 'NO', vat_class_code: 'STANDARD' },
    { sku_code: 'SKU-M2', tax_area_code: 'NO', vat_class_code: 'NOPE' },
    { sku_code: 'SKU-M3', tax_area_code: 'NO', vat_class_code: 'REDUCED' },
  ])
  t.equal(answer.status, 202)
  t.equal(answer.body.accepted, 2)
  t.same(answer.body.failed, [{ sku_code: 'SKU-M2', tax_area_code: 'NO', message: 'VAT class NOPE does not exist' }])
  t.equal((await acme.get('/article-taxclass/SKU-M1/NO')).body.vat_class_code, 'STANDARD')
  t.equal((await acme.get('/article-taxclass/SKU-M3/NO')).body.vat_class_code, 'REDUCED')
  t.equal((await acme.get('/article-taxclass/SKU-M2/NO')).status, 404)
})

t.test('a mapping batch lists malformed items with the key fields they carry', async (t) => {
  const answer = await acme.call('POST', '/article-taxclass/batch', [
    { sku_code: 'SKU-M4', tax_area_code: 'NO' },
    'not an object',
    { sku_code: 'SKU-M5', tax_area_code: 'NO', vat_class_code: 'STANDARD', start_date: instantIn(dayMs) },
  ])
  t.equal(answer.status, 202)
  t.equal(answer.body.accepted, 1)
  t.equal(answer.body.failed.length, 2)
  t.equal(answer.body.failed[0].sku_code, 'SKU-M4')
  t.equal(answer.body.failed[0].tax_area_code, 'NO')
  t.match(answer.body.failed[0].message, /vat_class_code/)
  t.equal(answer.body.failed[1].sku_code, null)
  t.equal((await acme.get('/article-taxclass/SKU-M4/NO')).status, 404)
  t.equal((await acme.get('/article-taxclass/SKU-M5/NO')).status, 404, 'scheduled for tomorrow')
  t.equal((await acme.get(`/article-taxclass/SKU-M5/NO?asOf=${instantIn(2 * dayMs)}`)).body.vat_class_code, 'STANDARD')
})

t.test('later items of a mapping batch plan against earlier ones', async (t) => {
  const start = instantIn(dayMs)
  const answer = await acme.call('POST', '/article-taxclass/batch', [
    { sku_code: 'SKU-M6', tax_area_code: 'NO', vat_class_code: 'STANDARD' },
    { sku_code: 'SKU-M6', tax_area_code: 'NO', vat_class_code: 'REDUCED', start_date: start },
  ])
  t.same(answer.body, { accepted: 2, failed: [] })
  t.equal((await acme.get('/article-taxclass/SKU-M6/NO')).body.vat_class_code, 'STANDARD')
  t.equal((await acme.get(`/article-taxclass/SKU-M6/NO?asOf=${instantIn(2 * dayMs)}`)).body.vat_class_code, 'REDUCED')
})

t.test('an empty or non-array mapping batch answers 400', async (t) => {
  expect400(t, await acme.call('POST', '/article-taxclass/batch', []))
  expect400(t, await acme.call('POST', '/article-taxclass/batch', { sku_code: 'SKU-M7' }))
})

t.test('a deleted mapping reads 404 and shows deleted_at with include_deleted', async (t) => {
  t.equal((await acme.call('DELETE', '/article-taxclass/SKU-M1/NO')).status, 202)
  t.equal((await acme.get('/article-taxclass/SKU-M1/NO')).status, 404)
  t.notOk(
    (await acme.get('/article-taxclass/by-area?tax_area=NO')).body.some(
      (mapping: { sku_code: string }) => mapping.sku_code === 'SKU-M1',
    ),
  )
  const shown = await acme.get('/article-taxclass/SKU-M1/NO?include_deleted=true')
  t.equal(shown.body.vat_class_code, 'STANDARD')
  t.match(shown.body.deleted_at, instantPattern)
  t.equal((await acme.call('DELETE', '/article-taxclass/SKU-M1/NO')).status, 404)
})

t.test('reference data survives a restart', async (t) => {
  await server.restart()
  await acme.refreshToken()
  t.equal((await acme.get('/currency/GBP')).body.vat_precision, 3)
  t.equal((await acme.get('/tax-area/SE')).body.name, 'Sweden')
  t.equal((await acme.get(`/vat/rate?tax_area=FR&vat_class=STANDARD&asOf=${instantIn(3 * dayMs)}`)).body.rate, 20)
  t.equal((await acme.get('/article-taxclass/SKU-B/SE')).body.vat_class_code, 'STANDARD')
  t.equal((await acme.get('/tax-area/XX')).status, 404)
})
