/**
 * The monitoring shipped in deploy/monitoring/: Prometheus's own checker accepts the alert rules
 * (`promtool check rules`), their unit tests pass (`promtool test rules alerts.test.yml`: each
 * alert fires on what it is about), and every metric the rules and the Grafana dashboard query is
 * one a running service really exports, read from a live /metrics: a node in cluster mode on a real
 * Redis, so that the cluster's metrics are there too. promtool is Debian's prometheus package; a
 * machine without it skips those two checks with a message, but CI (CI=true) fails instead.
 */
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { homeLine, startCluster } from '../helpers/cluster.js'
import { repoRoot } from '../helpers/fixtures.js'
import { redisServerPath, RedisServer } from '../helpers/redis.js'
import { startServer, type TestServer } from '../helpers/server.js'
import { until } from '../helpers/until.js'

const folder = path.join(repoRoot(), 'deploy', 'monitoring')
const rulesFile = path.join(folder, 'alerts.yml')
const dashboardFile = path.join(folder, 'grafana-dashboard.json')

const promtool = spawnSync('promtool', ['--version'], { encoding: 'utf8' })
const inCi = process.env['CI'] === 'true'
if (promtool.error !== undefined && !inCi) {
  t.skip(
    'promtool is not on this machine (Debian package prometheus; .ci/run installs it): the rules are not checked by Prometheus here',
    () => {},
  )
} else {
  t.test('promtool checks the alert rules and runs their unit tests', async (t) => {
    t.equal(promtool.error, undefined, 'promtool runs (in CI it must be installed: .ci/run does)')
    const check = spawnSync('promtool', ['check', 'rules', rulesFile], { encoding: 'utf8' })
    t.equal(check.status, 0, `promtool check rules: ${check.stdout}${check.stderr}`)
    t.match(check.stdout, /SUCCESS: \d+ rules found/)
    const unit = spawnSync('promtool', ['test', 'rules', path.join(folder, 'alerts.test.yml')], { encoding: 'utf8' })
    t.equal(unit.status, 0, `promtool test rules: ${unit.stdout}${unit.stderr}`)
  })
}

/** PromQL words that are not metric names: operators and modifiers. */
const keywords = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'and',
  'or',
  'unless',
  'offset',
  'inf',
  'nan',
])
/** Series Prometheus makes itself for every scrape target; the service does not export them. */
const prometheusOwn = new Set(['up'])

/**
 * The metric names a PromQL expression selects: strings, label matchers, grouping clauses and
 * ranges taken out, then every identifier that is neither a function (followed by `(`) nor a
 * keyword, nor part of a number (`1e3`).
 */
function metricNames(expression: string): string[] {
  const bare = expression
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
  const names: string[] = []
  for (const match of bare.matchAll(/(?<![\w.$])[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const rest = bare.slice(match.index! + match[0].length).trimStart()
    if (rest.startsWith('(') || keywords.has(match[0].toLowerCase())) continue
    names.push(match[0])
  }
  return names
}

/** The rules' expressions: each `expr:` is on one line (alerts.yml says so). */
function ruleExpressions(): string[] {
  const text = readFileSync(rulesFile, 'utf8')
  return [...text.matchAll(/^\s+expr: (.+)$/gm)].map((match) => match[1]!.trim())
}

interface Dashboard {
  readonly panels: { readonly title: string; readonly targets: { readonly expr: string }[] }[]
  readonly templating: { readonly list: { readonly name: string; readonly query?: unknown }[] }
}

function dashboardExpressions(): { where: string; expression: string }[] {
  const dashboard = JSON.parse(readFileSync(dashboardFile, 'utf8')) as Dashboard
  const found = dashboard.panels.flatMap((panel) =>
    panel.targets.map((target) => ({ where: `panel "${panel.title}"`, expression: target.expr })),
  )
  for (const variable of dashboard.templating.list) {
    const query = (variable.query as { query?: string } | undefined)?.query
    const metric = query === undefined ? undefined : /^label_values\(([a-zA-Z_:][\w:]*),/.exec(query)?.[1]
    if (metric !== undefined) found.push({ where: `variable $${variable.name}`, expression: metric })
  }
  return found
}

/** Every series name a /metrics text can have: each `# TYPE` name, with a histogram's and a summary's suffixes. */
function exportedNames(text: string): Set<string> {
  const names = new Set<string>()
  for (const match of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const [, name, type] = match as unknown as [string, string, string]
    names.add(name)
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${name}${suffix}`)
    if (type === 'summary') for (const suffix of ['_sum', '_count']) names.add(`${name}${suffix}`)
  }
  return names
}

t.test('metricNames reads the names out of PromQL', async (t) => {
  t.same(
    metricNames('sum by (instance) (rate(a_total{status=~"5.."}[5m])) / sum by (instance) (rate(b_total[5m])) > 0.05'),
    ['a_total', 'b_total'],
  )
  t.same(
    metricNames(
      'histogram_quantile(0.99, sum by (le, route) (rate(c_bucket{instance=~"$instance"}[$__rate_interval])))',
    ),
    ['c_bucket'],
  )
  t.same(metricNames('d < 2 * e and e > 0 or f offset 5m unless 1e3'), ['d', 'e', 'e', 'f'])
  t.same(metricNames('count by (job) (count by (job, version) (g))'), ['g'])
})

t.test('every metric the alert rules and the dashboard query is exported by a running service', async (t) => {
  const expressions = [
    ...ruleExpressions().map((expression) => ({ where: 'alerts.yml', expression })),
    ...dashboardExpressions(),
  ]
  t.ok(expressions.length >= 25, `${expressions.length} expressions`)
  // A cluster node exports the single node's metrics and the cluster's; without Redis, the single node's only.
  const executable = redisServerPath()
  let server: TestServer
  let clusterMetrics = true
  if (executable === null && !inCi) {
    clusterMetrics = false
    t.comment('no redis-server here: the cluster metrics (pricing_cluster_*, pricing_replica_*) are not checked')
    server = await startServer()
  } else {
    const redis = await RedisServer.start(executable!)
    t.teardown(() => redis.stop())
    server = (await startCluster(t, redis, [{ name: 'one', region: 'local' }], 2_000)).get('one')!
    // A new cluster has no home for a region until the lease is taken (503 region_unavailable).
    await until(() => homeLine('local').test(server.stdout), 10_000, 'a home for the region')
  }
  t.teardown(() => server.dispose())
  // A tenant and a request to it, so that the per-tenant series exist as they do in service.
  const acme = await server.tenant('acme')
  t.equal((await acme.get('/article')).status, 200)
  const exported = exportedNames((await server.request('GET', '/metrics')).text)
  t.ok(
    exported.has('pricing_http_requests_total') && exported.has('process_resident_memory_bytes'),
    `${exported.size} names exported`,
  )
  const checked = new Set<string>()
  for (const { where, expression } of expressions) {
    const names = metricNames(expression)
    t.ok(names.length > 0, `${where}: ${expression} selects a metric`)
    for (const name of names) {
      if (prometheusOwn.has(name) || (!clusterMetrics && /^pricing_(cluster|replica)_/.test(name))) continue
      checked.add(name)
      t.ok(exported.has(name), `${where}: ${name} is exported`)
    }
  }
  for (const name of ['pricing_tenant_requests_total', 'pricing_build_info', 'pricing_storage_nearly_full'])
    t.ok(checked.has(name), `${name} is used`)
  if (clusterMetrics)
    t.ok(
      checked.has('pricing_cluster_redis_up') && checked.has('pricing_replica_lag_seconds'),
      'the cluster metrics are used and checked',
    )
})
