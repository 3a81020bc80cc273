/**
 * docs/cluster.md's "Three nodes on one machine" runs as written: its shell block is taken from the
 * page and run by bash in an empty folder, with the ports it names changed to free ones, the
 * repository's `node bin/pricing-service.js` pointed at this build and `redis-server` at the one
 * found here. It must leave three nodes with one home, the first tenant and a key that works on
 * every node: a write through one node reads back on the others.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import net from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import t from 'tap'
import { repoRoot } from '../helpers/fixtures.js'
import { sectionCodeBlocks } from '../helpers/readme.js'
import { noRedis, redisServerPath } from '../helpers/redis.js'
import { eventually } from '../helpers/until.js'
import { entryPath } from '../helpers/server.js'

async function freePort(): Promise<number> {
  const server = net.createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as net.AddressInfo).port
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

/** The JSON documents curl printed one after another (no newline between them). */
function jsonDocuments(text: string): any[] {
  const documents: any[] = []
  let depth = 0
  let start = -1
  let inString = false
  for (let index = 0; index < text.length; index++) {
    const character = text[index]!
    if (inString) {
      if (character === '\\') index++
      else if (character === '"') inString = false
    } else if (character === '"') inString = true
    else if (character === '{') {
      if (depth++ === 0) start = index
    } else if (character === '}' && --depth === 0) documents.push(JSON.parse(text.slice(start, index + 1)))
  }
  return documents
}

const redisServer = redisServerPath()
const shellQuote = (text: string): string => `'${text.replace(/'/g, `'\\''`)}'`

t.test(
  'the three-node recipe of docs/cluster.md runs as written',
  { skip: redisServer === null ? noRedis : false },
  async (t) => {
    const page = readFileSync(path.join(repoRoot(), 'docs', 'cluster.md'), 'utf8')
    const recipe = sectionCodeBlocks(page, 'Three nodes on one machine')[0]
    if (recipe === undefined) throw new Error('docs/cluster.md has no code block under "Three nodes on one machine"')
    const ports = {
      '6379': await freePort(),
      '8081': await freePort(),
      '8082': await freePort(),
      '8083': await freePort(),
    }
    let script = recipe
    for (const [written, free] of Object.entries(ports)) {
      t.ok(script.includes(written), `the recipe names port ${written}`)
      script = script.replaceAll(written, String(free))
    }
    t.equal(script.split('node bin/pricing-service.js start').length - 1, 3, 'three nodes are started')
    script = script.replaceAll(
      'node bin/pricing-service.js',
      `${shellQuote(process.execPath)} ${shellQuote(entryPath)}`,
    )
    script = script.replace(/^redis-server /m, `${shellQuote(redisServer!)} `)

    const folder = mkdtempSync(path.join(tmpdir(), 'pricing-recipe-'))
    // Only what a fresh shell has: no PRICING_* from this process. No exchange-rate fetch from the internet.
    const env: Record<string, string> = { PRICING_FX_FEED_URL: '' }
    for (const [name, value] of Object.entries(process.env))
      if (!name.startsWith('PRICING_') && value !== undefined) env[name] = value
    // Its own process group: the nodes and Redis it leaves running are stopped with it at the end.
    const shell = spawn('bash', ['-e', '-c', script], {
      cwd: folder,
      env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    t.teardown(async () => {
      try {
        process.kill(-shell.pid!, 'SIGTERM')
      } catch {
        // Already gone.
      }
      // The nodes close (leases given back) before their folder goes.
      await new Promise((resolve) => setTimeout(resolve, 2_000))
      try {
        process.kill(-shell.pid!, 'SIGKILL')
      } catch {
        // All gone.
      }
      rmSync(folder, { recursive: true, force: true })
    })
    let stdout = ''
    let stderr = ''
    shell.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    shell.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    const deadline = setTimeout(() => shell.kill('SIGKILL'), 90_000)
    const code = await new Promise<number | null>((resolve) => shell.once('exit', resolve))
    clearTimeout(deadline)
    const logs = () =>
      ['1', '2', '3']
        .map((n) => {
          try {
            return readFileSync(path.join(folder, `node-${n}.log`), 'utf8').slice(-1500)
          } catch {
            return ''
          }
        })
        .join('\n')
    t.equal(code, 0, `the block runs to its end (stderr: ${stderr.slice(-1000)}; logs: ${code === 0 ? '' : logs()})`)

    const [tenant, key] = jsonDocuments(stdout)
    t.match(tenant, { slug: 'acme', region: 'local' }, 'the tenant is created')
    t.match(key, { client_id: /^[0-9a-f]+$/, client_secret: /^[0-9a-f]+$/ }, 'and its key')
    const homes = await eventually(
      async () => {
        const found = ['1', '2', '3'].filter((n) =>
          readFileSync(path.join(folder, `node-${n}.log`), 'utf8').includes('this node is the home of the region'),
        )
        return found.length === 1 ? found : undefined
      },
      10_000,
      'one home among the three nodes',
    )
    t.equal(homes.length, 1, `node-${homes[0]} is the home`)

    const urls = [ports['8081'], ports['8082'], ports['8083']].map((port) => `http://127.0.0.1:${port}`)
    const form = new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: key.client_id,
      client_secret: key.client_secret,
    })
    const token = await fetch(`${urls[1]}/oauth2/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form,
    })
    t.equal(token.status, 200, 'a token from node 2')
    const { access_token: accessToken } = (await token.json()) as { access_token: string }
    const headers = { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json' }
    // A new cluster has no home for a TTL (10 s) and the nodes learn of it within TTL/3: writes
    // meanwhile answer 503 with Retry-After (docs/cluster.md says so), and a client retries.
    const refused: string[] = []
    const written = await eventually(
      async () => {
        const answer = await fetch(`${urls[2]}/t/acme/currency/EUR`, {
          method: 'PUT',
          headers,
          body: JSON.stringify({ is_active: true, vat_precision: 2 }),
        })
        if (answer.status !== 503) return answer
        refused.push(`${answer.headers.get('retry-after')} ${((await answer.json()) as { code: string }).code}`)
        return undefined
      },
      30_000,
      'a write through node 3',
    )
    t.ok(
      refused.every((line) => /^[1-9][0-9]* region_unavailable$/.test(line)),
      `${refused.length} refusals before a home, each with Retry-After`,
    )
    t.equal(written.status, 202, 'a write through node 3', { body: written.status === 202 ? '' : await written.text() })
    const sequence = written.headers.get('x-sequence')
    t.ok(sequence !== null, `acknowledged at sequence ${sequence}`)
    for (const url of urls) {
      const read = await fetch(`${url}/t/acme/currency/EUR`, { headers: { ...headers, 'x-min-sequence': sequence! } })
      const body = (await read.json()) as { code?: string; is_active?: boolean }
      t.equal(read.status, 200, `read on ${url}`)
      t.match(body, { code: 'EUR', is_active: true }, 'the write is there')
    }
  },
)
