/**
 * Which build runs, and what each tenant gets, as an operator sees it from outside: `--version`
 * and `version` print package.json's version with the checkout's git commit (when this is a git
 * checkout) and the Node.js version; /healthz, the start's `listening` record and
 * `pricing_build_info` say the same. `pricing_tenant_requests_total{tenant,class}` counts each
 * tenant's answers by status class, with at most PRICING_METRICS_TENANTS_MAX tenants labelled and
 * the rest as tenant="_other", so a deployment of many tenants keeps a bounded number of series.
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { repoRoot } from '../helpers/fixtures.js'
import { entryPath, startServer } from '../helpers/server.js'

const root = repoRoot()
const packageVersion = (JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string })
  .version

/** The checkout's commit as git says it (12 digits), or null outside a git work tree. */
function gitCommit(): string | null {
  try {
    const [top, commit] = execFileSync('git', ['rev-parse', '--show-toplevel', 'HEAD'], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    })
      .trim()
      .split('\n')
    return path.resolve(top!) === path.resolve(root) ? commit!.slice(0, 12) : null
  } catch {
    return null
  }
}
const commit = gitCommit()

/** Sample lines of one metric, as `{labels} value` texts. */
function samples(text: string, name: string): string[] {
  return text
    .split('\n')
    .filter((line) => line.startsWith(`${name}{`))
    .map((line) => line.slice(name.length))
}

t.test('--version and version print the version, the commit and the Node.js version', async (t) => {
  t.comment(commit === null ? 'not a git checkout: no commit expected' : `checkout at ${commit}`)
  const expected = `pricing-service ${packageVersion} (${commit === null ? '' : `commit ${commit}, `}Node.js ${process.version})\n`
  for (const args of [['--version'], ['version'], ['start', '--version']]) {
    const run = spawnSync(process.execPath, [entryPath, ...args], {
      encoding: 'utf8',
      env: { ...process.env, PRICING_PORT: 'not-even-read' },
    })
    t.equal(run.status, 0, `${args.join(' ')}: ${run.stderr}`)
    t.equal(run.stdout, expected, args.join(' '))
  }
})

t.test(
  '/healthz, the listening record and pricing_build_info name the build; tenants are counted with bounded labels',
  async (t) => {
    const server = await startServer({ env: { PRICING_METRICS_TENANTS_MAX: '2' } })
    t.teardown(() => server.dispose())
    const health = await server.request('GET', '/healthz')
    t.same(health.body, { status: 'ok', version: packageVersion, commit })
    const listening = server.stdout
      .split('\n')
      .map((line) => JSON.parse(line || '{}') as Record<string, unknown>)
      .find((record) => record['msg'] === 'listening')
    t.match(
      listening,
      { version: packageVersion, commit, node: process.version, port: server.port },
      'the start record names the build',
    )

    const [first, second, third] = [
      await server.tenant('first'),
      await server.tenant('second'),
      await server.tenant('third'),
    ]
    for (let index = 0; index < 3; index++) t.equal((await first.get('/article')).status, 200)
    t.equal((await first.get('/article/NOPE')).status, 404)
    t.equal((await second.get('/article')).status, 200)
    t.equal((await third.get('/article')).status, 200)
    t.equal((await third.get('/article/NOPE')).status, 404)
    t.equal((await server.request('GET', '/t/third/article', { token: 'not-a-token' })).status, 401)
    const text = (await server.request('GET', '/metrics')).text
    t.same(samples(text, 'pricing_build_info'), [
      `{version="${packageVersion}",commit="${commit ?? 'unknown'}",node="${process.version}"} 1`,
    ])
    // Token requests at /oauth2/token are root routes: only the calls under /t/{slug}/ count. The
    // third tenant called is past PRICING_METRICS_TENANTS_MAX=2: it counts as _other.
    t.same(samples(text, 'pricing_tenant_requests_total'), [
      '{tenant="first",class="2xx"} 3',
      '{tenant="first",class="3xx"} 0',
      '{tenant="first",class="4xx"} 1',
      '{tenant="first",class="5xx"} 0',
      '{tenant="second",class="2xx"} 1',
      '{tenant="second",class="3xx"} 0',
      '{tenant="second",class="4xx"} 0',
      '{tenant="second",class="5xx"} 0',
      '{tenant="_other",class="2xx"} 1',
      '{tenant="_other",class="3xx"} 0',
      '{tenant="_other",class="4xx"} 2',
      '{tenant="_other",class="5xx"} 0',
    ])
    t.equal((await server.request('GET', '/t/nobody/article', { token: 'x' })).status, 404)
    const after = (await server.request('GET', '/metrics')).text
    t.notMatch(after, /tenant="nobody"/, 'an unknown slug gets no series')
  },
)
