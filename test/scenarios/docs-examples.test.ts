/**
 * The request bodies docs/api.md shows are the ones the server takes: every fenced block whose info
 * string is `json <METHOD> <path>` (optionally `-> <status>`) is sent as written to a server with
 * the demo tenant, path placeholders filled in, and must answer that status (202 for writes when
 * none is named). A body that reads well but is refused, as `{sales, fields}` sent as the whole
 * body once was, then fails here instead of at a reader's first try.
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { demoCredentialsFileName } from '../../server/demo/credentials.js'
import { repoRoot } from '../helpers/fixtures.js'
import { startServer } from '../helpers/server.js'

interface Example {
  readonly method: string
  readonly path: string
  readonly status: number
  readonly body: string
  readonly line: number
}

/** The `json METHOD path [-> status]` blocks of a markdown text (indented blocks in lists too). */
export function requestExamples(markdown: string): Example[] {
  const examples: Example[] = []
  const lines = markdown.split('\n')
  for (let index = 0; index < lines.length; index++) {
    const opening = /^(\s*)```json\s+(GET|PUT|POST|PATCH|DELETE)\s+(\/\S*)(?:\s+->\s+(\d{3}))?\s*$/.exec(lines[index]!)
    if (opening === null) continue
    const body: string[] = []
    let end = index + 1
    while (end < lines.length && lines[end]!.trim() !== '```') body.push(lines[end++]!)
    if (end === lines.length) throw new Error(`docs/api.md:${index + 1}: the block is not closed`)
    examples.push({
      method: opening[2]!,
      path: opening[3]!,
      status: Number(opening[4] ?? 202),
      body: body.join('\n'),
      line: index + 1,
    })
    index = end
  }
  return examples
}

const apiDoc = readFileSync(path.join(repoRoot(), 'docs', 'api.md'), 'utf8')
const placeholders: Readonly<Record<string, string>> = { sku: 'MUG-350', pricelist: 'wholesale-eu' }

t.test("docs/api.md's price write examples answer as the page says", async (t) => {
  const examples = requestExamples(apiDoc)
  t.ok(
    examples.filter((example) => example.path.startsWith('/price')).length >= 6,
    `the price write examples are found (${examples.length} examples)`,
  )
  t.ok(
    examples.some((example) => example.status === 400),
    'and the refused one',
  )
  const server = await startServer({ env: { PRICING_DEMO: 'true' } })
  t.teardown(() => server.dispose())
  let credentials: Record<string, string> | null = null
  for (let attempt = 0; attempt < 400 && credentials === null; attempt++) {
    try {
      credentials = JSON.parse(readFileSync(path.join(server.dataDir, demoCredentialsFileName), 'utf8')) as Record<
        string,
        string
      >
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
  }
  const form = new URLSearchParams({
    grant_type: 'client_credentials',
    client_id: credentials!['client_id']!,
    client_secret: credentials!['client_secret']!,
  })
  const token = (
    await server.request('POST', '/oauth2/token', {
      raw: form.toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    })
  ).body.access_token as string
  for (const example of examples) {
    const filled = example.path.replace(/\{([a-z_]+)\}/g, (_whole, name: string) => {
      const value = placeholders[name]
      if (value === undefined) throw new Error(`docs/api.md:${example.line}: no value for {${name}}`)
      return value
    })
    const answer = await server.request(example.method, `/t/demo${filled}`, {
      raw: example.body,
      headers: { 'content-type': 'application/json' },
      token,
    })
    t.equal(
      answer.status,
      example.status,
      `docs/api.md:${example.line}: ${example.method} ${example.path} ${example.body.replace(/\s+/g, ' ').slice(0, 80)}`,
      { body: answer.body },
    )
    if (Array.isArray(answer.body?.failed)) t.same(answer.body.failed, [], 'no batch item failed')
  }
  // What the examples wrote is what reads back: the last single write without a start date, and the batch.
  const history = await server.request('GET', '/t/demo/price?pricelist=wholesale-eu&sku=GRINDER-HAND', { token })
  t.match(history.body.items[0], { price: { sales: 44, fields: { cost: 30 } } }, "the batch's object price")
  const mug = await server.request('GET', '/t/demo/price/MUG-350/wholesale-eu/DE', { token })
  t.equal(mug.body.net, 6.9, "the batch's bare number, read as sales")
})
