/**
 * Decimals are read from what the client wrote, never from a double: a quantity at a tie of the
 * 5th decimal selects its break as decimal.js rounds it, and a number literal of more than 15
 * significant digits (which JSON.parse would round to a double first) is rounded once, half-up to
 * 4 decimals, from its text, in every decimal field: amounts, fields, breaks, quantities, batches.
 * Expected values are worked out with decimal.js next to each request.
 */
import { Decimal } from 'decimal.js'
import t from 'tap'
import { expectStatus, mapSkus, putPrice, query } from '../helpers/price-fixtures.js'
import { adminToken, type Answer, type TenantClient } from '../helpers/server.js'
import { suiteServer } from '../helpers/suite.js'

const {
  server,
  tenants: { acme },
} = await suiteServer({
  tenants: {
    acme: {
      reference: true,
      pricelists: {
        BASE: { currency_code: 'EUR', vat_mode: 'NET' },
      },
    },
  },
})

/** A request whose JSON text is sent exactly as written (JSON.stringify would print doubles). */
function raw(client: TenantClient, method: string, path: string, text: string): Promise<Answer> {
  return client.server.request(method, `${client.base}${path}`, {
    raw: text,
    token: client.token,
    headers: { 'content-type': 'application/json' },
  })
}

/** decimal.js: the literal's exact value, half-up (away from zero) to 4 decimals, as a number. */
function halfUp4(literal: string): number {
  return new Decimal(literal).toDecimalPlaces(4, Decimal.ROUND_HALF_UP).toNumber()
}

t.test('a price query quantity at a tie of the 5th decimal selects the break decimal.js selects', async (t) => {
  // Base 100, a fixed 50 from quantity 1.5. 1.49995 is 1.5000 half-up; as a double x 10^4 it is
  // 14999.499999999998, which Math.round took down to 1.4999 (the base price).
  await putPrice(acme, 'TIE', 'BASE', { price: 100, quantity_breaks: [{ quantity_break: 1.5, fixed_price: 50 }] })
  await mapSkus(acme, 'standard', ['TIE'])
  t.equal(halfUp4('1.49995'), 1.5)
  const net = async (quantity: unknown): Promise<number> => {
    const answer = await expectStatus(
      acme.call('POST', '/price/query', query(['TIE'], ['BASE'], { quantity })),
      200,
      'query',
    )
    return answer.body.items[0].net
  }
  t.equal(await net(1.49995), 50, 'quantity 1.49995 is 1.5: the break')
  t.equal(await net(1.49994), 100, 'quantity 1.49994 is 1.4999: the base')
  t.equal(await net('1.49995'), 50, 'a quantity as decimal text is read the same way')
  // Each of these literals reaches the server as written (a raw body): 1.4999499999... is below the tie.
  const rawNet = async (literal: string): Promise<number> => {
    const text = `{"currency_code":"EUR","tax_area":"SE","skus":["TIE"],"pricelist_filter":{"pricelists":["BASE"]},"quantity":${literal}}`
    const answer = await raw(acme, 'POST', '/price/query', text)
    if (answer.status !== 200) throw new Error(`query ${literal}: ${answer.status} ${answer.text}`)
    return answer.body.items[0].net
  }
  t.equal(halfUp4('1.499949999999999999999999999'), 1.4999)
  t.equal(await rawNet('1.499949999999999999999999999'), 100, 'a 28-digit literal just below the tie: the base')
  t.equal(await rawNet('1.49995e0'), 50, 'an exponent form of the tie: the break')
  t.equal(await rawNet('14999.5e-4'), 50, 'another spelling of the tie: the break')
  // The taxed single read reads its query-string quantity the same way.
  t.equal((await acme.get('/price/TIE/BASE/SE?quantity=1.49995')).body.net, 50, 'GET ?quantity=1.49995: the break')
  t.equal((await acme.get('/price/TIE/BASE/SE?quantity=1.49994')).body.net, 100, 'GET ?quantity=1.49994: the base')
  // Quantities that are no positive decimal are still refused.
  for (const bad of ['0', '-1', '1e10', 'abc']) {
    const answer = await acme.call('POST', '/price/query', query(['TIE'], ['BASE'], { quantity: bad }))
    t.equal(answer.status, 400, `quantity ${JSON.stringify(bad)} is refused`)
    t.equal(answer.body.code, 'validation_failed')
  }
})

t.test('a long amount literal is rounded once, from its text, in every amount field', async (t) => {
  // 0.100049999999999999999999999 is 0.1000 half-up; its double is 0.10005, which rounds to 0.1001.
  const literal = '0.100049999999999999999999999'
  t.equal(halfUp4(literal), 0.1)
  t.equal(halfUp4(String(Number(literal))), 0.1001, 'the double route rounds it twice (the bug)')
  const body =
    `{"price":{"sales":${literal},"fields":{"cost":-${literal}}},` +
    `"quantity_breaks":[{"quantity_break":2.000049999999999999999,"fixed_price":1.00005000000000000001}]}`
  await expectStatus(raw(acme, 'PUT', '/price/LONG/BASE', body), 202, 'long literals')
  const read = await expectStatus(acme.get('/price/LONG/BASE'), 200, 'read')
  t.equal(read.body.price.sales, 0.1, 'sales 0.100049999... is 0.1, not 0.1001')
  t.equal(read.body.price.fields.cost, -0.1, 'a negative field the same, away from zero only at a tie')
  t.same(read.body.quantity_breaks, [
    { quantity_break: halfUp4('2.000049999999999999999'), fixed_price: halfUp4('1.00005000000000000001') },
  ])
  t.same(read.body.quantity_breaks, [{ quantity_break: 2, fixed_price: 1.0001 }], 'worked out: 2.0000 and 1.0001')

  // A 30-digit literal and large magnitudes in a batch: each item against decimal.js.
  const literals = [
    '123456789.123449999999999999999',
    '99999999999.99994999999999999',
    '0.000049999999999999999999999',
    '7.123450000000000000000000001',
  ]
  const batch = `[${literals.map((text, index) => `{"sku":"LB-${index}","pricelist":"BASE","price":${text}}`).join(',')}]`
  const written = await expectStatus(raw(acme, 'POST', '/price/batch', batch), 202, 'batch')
  t.same(written.body.failed, [])
  for (const [index, text] of literals.entries()) {
    const answer = await acme.get(`/price/LB-${index}/BASE`)
    t.equal(answer.body.price.sales, halfUp4(text), `${text} -> ${halfUp4(text)}`)
  }
  t.equal((await acme.get('/price/LB-0/BASE')).body.price.sales, 123456789.1234, 'worked out: ...1234|49999 stays down')
})

t.test(
  'a long literal that is the shortest text of its double (what JavaScript prints) still reads as before',
  async (t) => {
    // 8.991000000000001 is how JavaScript prints 9.99 * 0.9: 16 digits, read exactly as 8.9910.
    await expectStatus(raw(acme, 'PUT', '/price/JS/BASE', '{"price":8.991000000000001}'), 202, 'float price')
    t.equal((await acme.get('/price/JS/BASE')).body.price.sales, 8.991)
    // A number-only field takes it as a number: the access-log sample (an operator setting).
    const sample = await server.request('PUT', '/admin/access-log', {
      raw: '{"enabled":false,"sample":0.30000000000000004}',
      token: adminToken,
      headers: { 'content-type': 'application/json' },
    })
    t.equal(sample.status, 200, `0.1 + 0.2 as JavaScript prints it stays a number (${sample.text})`)
    t.equal(sample.body.sample, 0.30000000000000004)
  },
)

t.test('a long literal in a field that takes no decimal text is refused with a message that says why', async (t) => {
  const answer = await raw(acme, 'PUT', '/currency/EUR', '{"is_active":true,"vat_precision":2.0000000000000000001}')
  t.equal(answer.status, 400)
  t.equal(answer.body.code, 'validation_failed')
  t.match(answer.body.details[0].message, /more than 15 significant digits/)
  t.equal(answer.body.details[0].path, '/vat_precision')
})

t.test('a decimal literal longer than the field takes is refused with its length in the message', async (t) => {
  const literal = `0.1${'0'.repeat(45)}1`
  const answer = await raw(acme, 'PUT', '/price/TOO-LONG/BASE', `{"price":${literal}}`)
  t.equal(answer.status, 400)
  t.equal(answer.body.details[0].path, '/price')
  t.match(answer.body.details[0].message, /at most 40 characters/)
  t.equal((await acme.get('/price/TOO-LONG/BASE')).status, 404)
})
