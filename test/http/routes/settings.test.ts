import t from 'tap'
import { Catalog } from '../../../engine/catalog.js'
import { settingDefinitions, settingEnabled, settingProblem, settingValue } from '../../../engine/settings.js'
import { suiteServer } from '../../helpers/suite.js'

const dayMs = 86_400_000
const rfc3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/

const {
  tenants: { acme, small: starter },
} = await suiteServer({
  tenants: { acme: { tier: 'standard' }, small: { tier: 'starter' } },
})

t.test(
  "definitions list the catalogue's 12 settings, omnibus.days and effective_price.events.enabled with their defaults and types",
  async (t) => {
    const answer = await acme.get('/settings/definitions')
    t.equal(answer.status, 200)
    t.ok(Array.isArray(answer.body))
    const defaults = Object.fromEntries(
      answer.body.map((item: { key: string; default: string }) => [item.key, item.default]),
    )
    t.same(defaults, {
      'require.homogeneous.currency': 'false',
      'require.homogeneous.vat_mode': 'false',
      'strict.article.validation': 'false',
      'strict.pricelist.validation': 'false',
      'ingest.skip.dedup': 'false',
      'default.tax.area': 'SE',
      'fx.rate.auto.update': 'true',
      'fx.base.currency': 'EUR',
      'change.events.enabled': 'false',
      'effective_price.events.enabled': 'false',
      'retention.enabled': 'false',
      'retention.max.versions': '0',
      'retention.history.ms': '2592000000',
      'omnibus.days': '30',
    })
    const maxVersions = answer.body.find((item: { key: string }) => item.key === 'retention.max.versions')
    t.equal(maxVersions.type, 'integer')
    t.same(Object.keys(maxVersions).sort(), ['default', 'description', 'key', 'type'])
    t.ok(maxVersions.description.length > 0)
    t.equal(answer.body.find((item: { key: string }) => item.key === 'strict.article.validation').type, 'boolean')
    t.equal(answer.body.find((item: { key: string }) => item.key === 'default.tax.area').type, 'string')
  },
)

t.test('a setting never written reads 404 and is absent from the list', async (t) => {
  const answer = await acme.get('/settings/strict.article.validation')
  t.equal(answer.status, 404)
  t.equal(answer.body.code, 'not_found')
  t.equal((await acme.get('/settings/no.such.key')).status, 404)
  const list = await acme.get('/settings')
  t.equal(list.status, 200)
  t.notOk(list.body.some((item: { key: string }) => item.key === 'strict.article.validation'))
})

t.test('a written setting reads back with its value, effective time and writer', async (t) => {
  const before = Date.now()
  const put = await acme.call('PUT', '/settings/default.tax.area', { value: 'NO' })
  t.equal(put.status, 202)
  t.equal(put.text, '')
  const read = await acme.get('/settings/default.tax.area')
  t.equal(read.status, 200)
  t.same(Object.keys(read.body).sort(), ['key', 'updated_at', 'updated_by', 'value'])
  t.equal(read.body.key, 'default.tax.area')
  t.equal(read.body.value, 'NO')
  t.equal(read.body.updated_by, acme.clientId)
  t.match(read.body.updated_at, rfc3339)
  const effective = Date.parse(read.body.updated_at)
  t.ok(effective >= before - 1000 && effective <= Date.now() + 1000, 'a write without updated_at takes effect now')
  const list = await acme.get('/settings')
  t.same(
    list.body.filter((item: { key: string }) => item.key === 'default.tax.area'),
    [read.body],
  )
})

t.test('a GET-edit-PUT round trip with the response fields is accepted', async (t) => {
  const read = await acme.get('/settings/default.tax.area')
  const put = await acme.call('PUT', '/settings/default.tax.area', { ...read.body, value: 'DK' })
  t.equal(put.status, 202)
  t.equal((await acme.get('/settings/default.tax.area')).body.value, 'DK')
  const wrongKey = await acme.call('PUT', '/settings/default.tax.area', {
    ...read.body,
    key: 'fx.base.currency',
    value: 'FI',
  })
  t.equal(wrongKey.status, 400)
  t.equal(wrongKey.body.code, 'validation_failed')
  t.equal((await acme.get('/settings/default.tax.area')).body.value, 'DK')
})

t.test('invalid values are refused with 400 validation_failed and store nothing', async (t) => {
  const cases: [string, unknown, string][] = [
    ['strict.article.validation', { value: 'yes' }, '/value'],
    ['strict.article.validation', { value: 'TRUE' }, '/value'],
    ['retention.max.versions', { value: '-1' }, '/value'],
    ['retention.max.versions', { value: '1.5' }, '/value'],
    ['retention.history.ms', { value: '0' }, '/value'],
    ['fx.base.currency', { value: 'USD' }, '/value'],
    ['default.tax.area', { value: '' }, '/value'],
    ['default.tax.area', { value: 'x'.repeat(65) }, '/value'],
    ['strict.article.validation', {}, '/value'],
    ['strict.article.validation', { value: true }, '/value'],
    ['strict.article.validation', { value: 'x'.repeat(257) }, '/value'],
    ['strict.article.validation', { value: 'true', updated_at: 'tomorrow' }, '/updated_at'],
    ['strict.article.validation', { value: 'true', colour: 'red' }, '/colour'],
  ]
  t.equal((await acme.get('/settings/default.tax.area')).body.value, 'DK', 'written by an earlier test')
  for (const [key, body, path] of cases) {
    const before = await acme.get(`/settings/${key}`)
    const answer = await acme.call('PUT', `/settings/${key}`, body)
    t.equal(answer.status, 400, `${key} ${JSON.stringify(body)}`)
    t.equal(answer.body.code, 'validation_failed')
    t.ok(
      answer.body.details.some((detail: { path: string }) => detail.path === path),
      `detail at ${path}`,
    )
    const after = await acme.get(`/settings/${key}`)
    t.same([after.status, after.body.value], [before.status, before.body.value], 'nothing stored')
  }
  t.equal((await acme.get('/settings/strict.article.validation')).status, 404)
  const currency = await acme.call('PUT', '/settings/fx.base.currency', { value: 'USD' })
  t.match(currency.body.message, /EUR/)
})

t.test('valid values of every kind are accepted', async (t) => {
  for (const [key, value] of [
    ['retention.max.versions', '0'],
    ['retention.history.ms', '1'],
    ['fx.base.currency', 'EUR'],
    ['ingest.skip.dedup', 'true'],
  ] as const) {
    t.equal((await acme.call('PUT', `/settings/${key}`, { value })).status, 202, key)
    t.equal((await acme.get(`/settings/${key}`)).body.value, value)
  }
})

t.test('an unknown key is refused with 400 setting_unknown and stores nothing', async (t) => {
  const answer = await acme.call('PUT', '/settings/no.such.key', { value: 'true' })
  t.equal(answer.status, 400)
  t.equal(answer.body.code, 'setting_unknown')
  t.match(answer.body.message, /no\.such\.key/)
  t.equal((await acme.get('/settings/no.such.key')).status, 404)
})

t.test('a value written for a later time reads 404 now and its value from that time on', async (t) => {
  const startMs = Date.now() + 2 * dayMs
  const start = new Date(startMs).toISOString()
  const put = await acme.call('PUT', '/settings/strict.pricelist.validation', { value: 'true', updated_at: start })
  t.equal(put.status, 202)
  const now = await acme.get('/settings/strict.pricelist.validation')
  t.equal(now.status, 404)
  t.notOk(
    (await acme.get('/settings')).body.some((item: { key: string }) => item.key === 'strict.pricelist.validation'),
  )
  const before = await acme.get(
    `/settings/strict.pricelist.validation?asOf=${encodeURIComponent(new Date(startMs - 1).toISOString())}`,
  )
  t.equal(before.status, 404)
  const later = await acme.get(
    `/settings/strict.pricelist.validation?asOf=${encodeURIComponent(new Date(startMs + dayMs).toISOString())}`,
  )
  t.equal(later.status, 200)
  t.equal(later.body.value, 'true')
  t.equal(Date.parse(later.body.updated_at), startMs, 'updated_at is the effective time')
  const listLater = await acme.get(`/settings?asOf=${encodeURIComponent(start)}`)
  t.equal(listLater.body.find((item: { key: string }) => item.key === 'strict.pricelist.validation')?.value, 'true')
})

t.test('a past updated_at takes effect now, not in the past', async (t) => {
  const put = await acme.call('PUT', '/settings/strict.article.validation', {
    value: 'true',
    updated_at: '2001-01-01T00:00:00Z',
  })
  t.equal(put.status, 202)
  const read = await acme.get('/settings/strict.article.validation')
  t.ok(Date.parse(read.body.updated_at) > Date.parse('2020-01-01T00:00:00Z'))
  t.equal((await acme.get('/settings/strict.article.validation?asOf=2010-01-01T00:00:00Z')).status, 404)
})

t.test('a deleted setting reads 404 and leaves the list; history stays readable', async (t) => {
  t.equal((await acme.call('PUT', '/settings/require.homogeneous.currency', { value: 'true' })).status, 202)
  const written = await acme.get('/settings/require.homogeneous.currency')
  t.equal(written.status, 200)
  await new Promise((resolve) => setTimeout(resolve, 5))
  const deleted = await acme.call('DELETE', '/settings/require.homogeneous.currency')
  t.equal(deleted.status, 202)
  t.equal(deleted.text, '')
  t.equal((await acme.get('/settings/require.homogeneous.currency')).status, 404)
  t.notOk(
    (await acme.get('/settings')).body.some((item: { key: string }) => item.key === 'require.homogeneous.currency'),
  )
  const past = await acme.get(
    `/settings/require.homogeneous.currency?asOf=${encodeURIComponent(written.body.updated_at)}`,
  )
  t.equal(past.status, 200)
  t.equal(past.body.value, 'true')
  t.ok(past.body.deleted_at !== undefined, 'a read before the delete shows deleted_at')
  const again = await acme.call('DELETE', '/settings/require.homogeneous.currency')
  t.equal(again.status, 404)
  t.equal(again.body.code, 'not_found')
})

t.test('a delete of a never-written setting answers 404', async (t) => {
  const answer = await acme.call('DELETE', '/settings/fx.rate.auto.update')
  t.equal(answer.status, 404)
  t.equal(answer.body.code, 'not_found')
})

t.test('a delete scheduled with when keeps the value until then', async (t) => {
  t.equal((await acme.call('PUT', '/settings/retention.max.versions', { value: '7' })).status, 202)
  const whenMs = Date.now() + dayMs
  const when = new Date(whenMs).toISOString()
  t.equal((await acme.call('DELETE', `/settings/retention.max.versions?when=${encodeURIComponent(when)}`)).status, 202)
  const now = await acme.get('/settings/retention.max.versions')
  t.equal(now.body.value, '7')
  t.equal(Date.parse(now.body.deleted_at), whenMs)
  t.equal((await acme.get(`/settings/retention.max.versions?asOf=${encodeURIComponent(when)}`)).status, 404)
  const bad = await acme.call('DELETE', '/settings/retention.max.versions?when=soon')
  t.equal(bad.status, 400)
  t.equal(bad.body.code, 'validation_failed')
})

t.test('a starter plan may not turn on webhook events or retention, but may turn them off', async (t) => {
  for (const key of ['change.events.enabled', 'retention.enabled']) {
    const on = await starter.call('PUT', `/settings/${key}`, { value: 'true' })
    t.equal(on.status, 403, key)
    t.equal(on.body.code, 'plan_forbidden')
    t.equal(on.body.error, 'Forbidden')
    t.equal((await starter.get(`/settings/${key}`)).status, 404, 'a refused write stores nothing')
    const off = await starter.call('PUT', `/settings/${key}`, { value: 'false' })
    t.equal(off.status, 202)
    t.equal((await starter.get(`/settings/${key}`)).body.value, 'false')
  }
  const scheduled = await starter.call('PUT', '/settings/change.events.enabled', {
    value: 'true',
    updated_at: new Date(Date.now() + dayMs).toISOString(),
  })
  t.equal(scheduled.status, 403, 'a scheduled enable is refused as well')
})

t.test('a standard plan may turn on webhook events and retention', async (t) => {
  for (const key of ['change.events.enabled', 'retention.enabled']) {
    t.equal((await acme.call('PUT', `/settings/${key}`, { value: 'true' })).status, 202, key)
    t.equal((await acme.get(`/settings/${key}`)).body.value, 'true')
  }
})

t.test('settingValue answers the value in force, else the default', async (t) => {
  const catalog = new Catalog()
  const t0 = Date.UTC(2030, 0, 1)
  t.equal(settingValue(catalog, 'default.tax.area', t0), 'SE', 'never written: default')
  t.equal(settingValue(catalog, 'fx.rate.auto.update', t0), 'true')
  t.equal(settingEnabled(catalog, 'fx.rate.auto.update', t0), true)
  const write = catalog.plan('settings', 'default.tax.area', { value: 'NO' }, t0 + 1000, t0, 'tester')
  t.ok(write !== null)
  catalog.apply('settings', write!.key, write!.versions)
  t.equal(settingValue(catalog, 'default.tax.area', t0), 'SE', 'written for later: default before then')
  t.equal(settingValue(catalog, 'default.tax.area', t0 + 1000), 'NO')
  const remove = catalog.plan('settings', 'default.tax.area', null, t0 + 2000, t0, 'tester')
  catalog.apply('settings', remove!.key, remove!.versions)
  t.equal(settingValue(catalog, 'default.tax.area', t0 + 1500), 'NO')
  t.equal(settingValue(catalog, 'default.tax.area', t0 + 2000), 'SE', 'deleted: default again')
  t.throws(() => settingValue(catalog, 'no.such.key', t0), 'an unknown key is a programmer error')
})

t.test('every default passes its own check and the checks refuse what they should', async (t) => {
  t.equal(settingDefinitions.length, 14)
  t.equal(settingProblem('omnibus.days', '0'), 'must be a positive integer (digits only)')
  t.equal(settingProblem('omnibus.days', '45'), null)
  for (const definition of settingDefinitions)
    t.equal(settingProblem(definition.key, definition.default), null, definition.key)
  t.equal(settingProblem('retention.max.versions', '007'), 'must be a non-negative integer (digits only)')
  t.equal(
    settingProblem('retention.max.versions', '99999999999999999999'),
    'must be a non-negative integer (digits only)',
  )
  t.equal(settingProblem('retention.history.ms', '0'), 'must be a positive integer (digits only)')
  t.equal(settingProblem('default.tax.area', 'a\nb'), 'must be a code of 1-64 characters without control characters')
  t.equal(settingProblem('require.homogeneous.vat_mode', 'true'), null)
})
