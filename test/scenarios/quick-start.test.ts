/**
 * The README's quick start, followed as a newcomer does (issue 15 points 4 and 5): a first start
 * with the demo on, the demo key read from the credentials file (mode 0600), then every curl command
 * of the quick start, parsed from README.md and sent with fetch, placeholders filled in. Each must
 * answer 200 with the values the README quotes. Then the demo catalogue itself: two tax areas, two
 * pricelists and a campaign, a price for every article on both pricelists, all in the changelog.
 * Last, a first start on a terminal (util-linux `script` gives it one): the note on stderr.
 */
import { spawn, spawnSync } from 'node:child_process'
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import t from 'tap'
import { demoArticles, demoPricelists } from '../../server/demo/catalogue.js'
import { demoCredentialsFileName } from '../../server/demo/credentials.js'
import { repoRoot } from '../helpers/fixtures.js'
import { waitForRecord } from '../helpers/logs.js'
import {
  curlRequest,
  fillPlaceholders,
  quotedFields,
  sectionCodeBlocks,
  shellCommands,
  shellWords,
} from '../helpers/readme.js'
import { entryPath, startServer, type TestServer } from '../helpers/server.js'

/** The root URL the README's examples use; the test server's replaces it. */
const readmeRoot = 'http://127.0.0.1:8080'

/** Waits for the credentials file: it is written once the demo is seeded, just after readiness. */
async function readCredentials(server: TestServer): Promise<Record<string, string>> {
  const file = path.join(server.dataDir, demoCredentialsFileName)
  for (let attempt = 0; attempt < 400; attempt++) {
    try {
      return JSON.parse(readFileSync(file, 'utf8')) as Record<string, string>
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
  }
  throw new Error(`no ${file} within 10 s; stdout: ${server.stdout.slice(-1000)}`)
}

const readme = readFileSync(path.join(repoRoot(), 'README.md'), 'utf8')
const blocks = sectionCodeBlocks(readme, 'Quick start')

t.test('the quick start installs, runs and tests with two commands', async (t) => {
  const commands = shellCommands(blocks[0] ?? '').map((command) => command.text.replace(/\s+#.*$/, ''))
  t.same(commands, ['npm ci && npm start', 'npm test'])
})

t.test('without a build, the command says how to make one', async (t) => {
  const folder = mkdtempSync(path.join(tmpdir(), 'pricing-test-'))
  t.teardown(() => rmSync(folder, { recursive: true, force: true }))
  mkdirSync(path.join(folder, 'bin'))
  copyFileSync(path.join(repoRoot(), 'bin/pricing-service.js'), path.join(folder, 'bin/pricing-service.js'))
  const run = spawnSync(process.execPath, [path.join(folder, 'bin/pricing-service.js'), 'start'], { encoding: 'utf8' })
  t.equal(run.status, 1)
  t.match(run.stderr, /dist\/ is not built yet; run `npm run build`/)
})

t.test('every request of the quick start answers as the README says on a first start', async (t) => {
  const server = await startServer({ env: { PRICING_DEMO: 'true' } })
  t.teardown(() => server.dispose())
  const credentials = await readCredentials(server)
  const file = path.join(server.dataDir, demoCredentialsFileName)
  t.equal(statSync(file).mode & 0o777, 0o600, 'the credentials file is readable by its owner only')
  t.match(credentials['client_id'], /^[0-9a-f]{24}$/)
  t.match(credentials['client_secret'], /^[0-9a-f]{64}$/)
  t.equal(credentials['base_url'], `${server.url}/t/demo`)
  t.equal(credentials['token_url'], `${server.url}/oauth2/token`)
  // Logged just after the file is renamed into place: it may still be on its way through the pipe.
  const provisioned = await waitForRecord(
    server,
    (record) => record['msg'] === 'demo tenant provisioned',
    'of the demo',
  )
  t.equal(provisioned['credentialsFile'], file, 'a log record says where the credentials are')
  t.equal(provisioned['clientId'], credentials['client_id'])
  t.notOk(server.stdout.includes(credentials['client_secret']!), 'the secret is not on stdout')

  const block = blocks[1] ?? ''
  t.ok(block.includes(`cat data/${demoCredentialsFileName}`), 'the README names the credentials file')
  const curls = shellCommands(block).filter((command) => command.text.startsWith('curl '))
  t.equal(curls.length, 5, 'a token, a price read, a price query, a price write and a changelog read')
  const values: Record<string, string> = {
    CLIENT_ID: credentials['client_id']!,
    CLIENT_SECRET: credentials['client_secret']!,
  }
  const answers: any[] = []
  for (const command of curls) {
    const request = curlRequest(shellWords(fillPlaceholders(command.text, values)))
    t.ok(request.url.startsWith(`${readmeRoot}/`), `${request.url} is under the default root`)
    const response = await fetch(server.url + request.url.slice(readmeRoot.length), request)
    const text = await response.text()
    const body = (text === '' ? null : JSON.parse(text)) as any
    // A write says in its comment that it answers 202; everything else answers 200.
    const status = command.comments.join(' ').includes('answers 202') ? 202 : 200
    t.equal(response.status, status, `${request.method} ${request.url} answers ${status}`, { body })
    // What the comment above the command quotes is what the answer says.
    for (const [name, value] of Object.entries(quotedFields(command.comments.join(' ')))) {
      t.same(body[name], value, `${name} is ${JSON.stringify(value)} as the README says`)
    }
    if (typeof body?.access_token === 'string') values['TOKEN'] = body.access_token
    answers.push(body)
  }
  const [token, price, query, written, changes] = answers
  t.equal(token?.token_type, 'Bearer')
  t.equal(token?.expires_in, 900, 'valid 15 minutes, as the README says')
  t.match(price, {
    sku: 'ESP-HOUSE-500',
    pricelist: 'retail-se',
    tax_area: 'SE',
    currency_code: 'SEK',
    vat_mode: 'GROSS',
    gross: 169,
    net: 150.89,
    vat: 18.11,
    vat_rate: 12,
    vat_class: 'reduced',
  })
  t.same(query?.unavailable, [])
  t.same(
    query?.items.map((item: any) => [item.sku, item.pricelist, item.net, item.vat, item.gross, item.vat_rate]),
    [
      // 18.50 excl. VAT, 90% from 10 bags; German VAT on food 7%.
      ['ESP-HOUSE-1000', 'wholesale-eu', 16.65, 1.17, 17.82, 7],
      ['GRINDER-HAND', 'wholesale-eu', 42, 7.98, 49.98, 19],
      ['MUG-350', 'wholesale-eu', 6.5, 1.24, 7.74, 19],
    ],
  )
  t.equal(written, null, 'the write answers 202 without a body, as the README says')
  t.equal(changes?.items.length, 33, "the demo's 32 prices and the write")
  t.ok(
    changes?.items.every((entry: any) => entry.entity_type === 'price'),
    'only prices',
  )
  t.match(
    changes?.items.at(-1),
    { entity_type: 'price', change_type: 'updated', entity_code: 'MUG-350', composite_key: 'wholesale-eu' },
    'the write comes last',
  )
  const after = await server.request('GET', '/t/demo/price/MUG-350/wholesale-eu/DE', { token: values['TOKEN'] })
  t.equal(after.body.net, 6.9, 'and the price reads back as written')
})

t.test('the demo catalogue: two tax areas, two pricelists and a campaign, every article priced on both', async (t) => {
  const server = await startServer({ env: { PRICING_DEMO: 'true' } })
  t.teardown(() => server.dispose())
  const credentials = await readCredentials(server)
  const form = new URLSearchParams({
    grant_type: 'client_credentials',
    client_id: credentials['client_id']!,
    client_secret: credentials['client_secret']!,
  })
  const token = await server.request('POST', '/oauth2/token', {
    raw: form.toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  })
  t.equal(token.status, 200)
  const call = (method: string, urlPath: string, body?: unknown) =>
    server.request(method, `/t/demo${urlPath}`, { body, token: token.body.access_token })

  const skus = demoArticles.map((article) => article.sku)
  t.ok(skus.length >= 12 && skus.length <= 20, `${skus.length} articles`)
  const search = await call('POST', '/article/search', { size: 100 })
  t.equal(search.status, 200)
  t.same(
    search.body.items.map((article: { sku: string }) => article.sku).sort(),
    [...skus].sort(),
    'every article is stored',
  )
  t.same((await call('GET', '/tax-area')).body.map((area: { code: string }) => area.code).sort(), ['DE', 'SE'])
  const rates = await call('GET', '/vat/rates')
  t.same(rates.body.map((rate: any) => `${rate.tax_area_code}/${rate.vat_class_code}=${rate.rate}`).sort(), [
    'DE/reduced=7',
    'DE/standard=19',
    'SE/reduced=12',
    'SE/standard=25',
  ])

  for (const [pricelist, currency, area] of [
    ['retail-se', 'SEK', 'SE'],
    ['wholesale-eu', 'EUR', 'DE'],
    ['wholesale-eu', 'EUR', 'SE'],
  ] as const) {
    const answer = await call('POST', '/price/query', {
      currency_code: currency,
      tax_area: area,
      skus,
      pricelist_filter: { pricelists: [pricelist] },
    })
    t.equal(answer.status, 200)
    t.same(answer.body.unavailable, [], `every article has a price on ${pricelist} in ${area}`)
    t.equal(answer.body.items.length, skus.length)
  }
  const withBreaks = await call('GET', '/price?pricelist=wholesale-eu&sku=ESP-HOUSE-1000')
  t.same(
    withBreaks.body.items[0]?.quantity_breaks,
    [
      { quantity_break: 10, percent_of_base: 90 },
      { quantity_break: 50, percent_of_base: 80 },
    ],
    'volume prices on beans',
  )

  const campaign = await call('POST', '/price/query', {
    currency_code: 'SEK',
    tax_area: 'SE',
    skus: ['GRINDER-HAND', 'ESP-HOUSE-500'],
    pricelist_filter: { pricelists: ['brew-weeks-se'] },
  })
  t.equal(campaign.status, 200)
  t.same(
    campaign.body.items.map((item: any) => [item.sku, item.gross, item.inherited]),
    [
      ['GRINDER-HAND', 764.15, true],
      ['ESP-HOUSE-500', 169, true],
    ],
    '15% off equipment (899 -> 764.15), other articles at the webshop price',
  )
  const pricelists = await call('GET', '/pricelist?size=100')
  t.same(
    pricelists.body.items.map((pricelist: { code: string }) => pricelist.code).sort(),
    [...demoPricelists.map((pricelist) => pricelist.code), 'brew-weeks-se'].sort(),
  )

  // The seed goes through the changelog like any write: one created entry per entity, by `system`.
  const changelog = await call('GET', '/changelog?limit=1000')
  const counts: Record<string, number> = {}
  for (const entry of changelog.body.items) counts[entry.entity_type] = (counts[entry.entity_type] ?? 0) + 1
  t.same(counts, {
    currency: 2,
    vat_class: 2,
    tax_area: 2,
    vat_rate: 4,
    article: skus.length,
    article_taxclass: 2 * skus.length,
    pricelist: 3,
    price: 2 * skus.length,
  })
  t.ok(
    changelog.body.items.every((entry: any) => entry.change_type === 'created' && entry.changed_by === 'system'),
    'all created by system',
  )
})

/** util-linux `script`, which runs a command on a new pseudo-terminal (and passes SIGTERM on to it). */
const scriptAvailable =
  process.platform === 'linux' &&
  /util-linux/.test(spawnSync('script', ['--version'], { encoding: 'utf8' }).stdout ?? '')

t.test(
  'on a terminal, a first start notes where the credentials are, without the secret',
  { skip: scriptAvailable ? false : 'needs util-linux script' },
  async (t) => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'pricing-test-'))
    t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
    const command = `'${process.execPath}' '${entryPath}' start`
    const child = spawn('script', ['-qfec', command, '/dev/null'], {
      env: {
        ...process.env,
        PRICING_PORT: '0',
        PRICING_HOST: '127.0.0.1',
        PRICING_DATA_DIR: dataDir,
        PRICING_DEMO: 'true',
        PRICING_FX_FEED_URL: '',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    const exited = new Promise((resolve) => child.once('exit', resolve))
    let output = ''
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()))
    for (let attempt = 0; attempt < 800 && !output.includes('quick start shows'); attempt++)
      await new Promise((resolve) => setTimeout(resolve, 25))
    child.kill('SIGTERM')
    await exited
    const file = path.join(dataDir, demoCredentialsFileName)
    const credentials = JSON.parse(readFileSync(file, 'utf8')) as Record<string, string>
    const note = output.slice(output.indexOf('Demo tenant'))
    t.match(note, /^Demo tenant "demo" provisioned/, 'the note is there')
    t.ok(note.includes(file), 'naming the file')
    t.ok(note.includes(`client_id:  ${credentials['client_id']}`), 'and the client_id')
    t.ok(
      note.includes(`Console: ${credentials['console_url']}, signed in as owner@demo.example`),
      "and the console's address with its owner",
    )
    t.notOk(output.includes(credentials['client_secret']!), 'not the secret')
  },
)
