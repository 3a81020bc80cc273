/**
 * Prometheus metrics: requests and latency by route pattern, method and status, plus prom-client's
 * default process metrics. The two request metrics are counted here in plain numbers, one series
 * object per (route, method, status), and turned into prom-client's export shape only when
 * scraped: prom-client's own `labels(...).observe()` hashes the label object on every call, which
 * cost about a microsecond per request. The text output is the same as prom-client's.
 *
 * Per tenant, requests are counted by status class (`pricing_tenant_requests_total{tenant,class}`)
 * with a bounded number of series: the first `tenantsMax` tenants to be called since the start get
 * their own label, every later one counts as `tenant="_other"` (no slug has an underscore), so a
 * deployment of many tenants cannot blow up the scrape. `pricing_build_info` says which build runs.
 * @module
 */
import { degradedReasons, type ClusterStatus } from './cluster-status.js'
import { Counter, Registry, collectDefaultMetrics, type Metric } from 'prom-client'
import { answerCacheCounts } from '../workers/execute.js'
import { priorPriceCacheCounts } from '../workers/prior-price-cache.js'
import { workerSnapshotCounts } from '../workers/pool.js'
import { buildInfo } from './version.js'

/** Latency bucket upper bounds in seconds (the `le` labels), ascending. */
const latencyBoundsS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]

/** One (route, method, status) series: its count, latency sum and per-bucket (not cumulative) counts. */
class Series {
  count = 0
  sumS = 0
  readonly buckets = new Float64Array(latencyBoundsS.length)

  constructor(readonly labels: Readonly<Record<'route' | 'method' | 'status', string>>) {}

  observe(seconds: number): void {
    this.count += 1
    this.sumS += seconds
    for (let index = 0; index < latencyBoundsS.length; index++) {
      if (seconds <= latencyBoundsS[index]!) {
        this.buckets[index]! += 1
        return
      }
    }
  }
}

/** The series of one route pattern and method, by status; the dispatcher keeps one per route. */
export class RouteSeries {
  readonly #byStatus = new Map<number, Series>()
  /** Every series of the registry, in creation order (the export order). */
  readonly #all: Series[]

  constructor(
    readonly route: string,
    readonly method: string,
    all: Series[],
  ) {
    this.#all = all
  }

  observe(status: number, seconds: number): void {
    let series = this.#byStatus.get(status)
    if (series === undefined) {
      series = new Series({ route: this.route, method: this.method, status: String(status) })
      this.#byStatus.set(status, series)
      this.#all.push(series)
    }
    series.observe(seconds)
  }
}

export interface ExportedValue {
  readonly labels: Record<string, string | number>
  readonly sharedLabels?: Record<string, string>
  readonly value: number
  readonly metricName?: string
}

interface ExportedValues {
  readonly name: string
  readonly help: string
  readonly type: string
  readonly values: ExportedValue[]
  readonly aggregator: string
}

/**
 * A read-only metric as prom-client's Registry reads one: name, help, type, and `get` (JSON) or
 * `getForPromString` (text, preferred; labels and shared labels kept apart as prom-client's
 * histogram keeps them, so the `le` label comes first). It is not one of prom-client's classes,
 * hence the cast when registering it.
 */
function exportedMetric(
  name: string,
  help: string,
  type: 'counter' | 'gauge' | 'histogram',
  values: (splay: boolean) => ExportedValue[],
): Metric {
  const result = (splay: boolean): ExportedValues => ({ name, help, type, values: values(splay), aggregator: 'sum' })
  const metric = {
    name,
    help,
    type,
    aggregator: 'sum',
    get: async () => result(true),
    getForPromString: async () => result(false),
    reset: () => undefined,
  }
  return metric as unknown as Metric
}

/** The `class` label of a status: 1xx to 5xx. */
const statusClasses = ['1xx', '2xx', '3xx', '4xx', '5xx'] as const
/** The `tenant` label of the tenants past the labelled ones. */
export const otherTenantsLabel = '_other'

function statusClassIndex(status: number): number {
  return Math.min(Math.max(Math.floor(status / 100), 1), 5) - 1
}

export class Metrics {
  readonly registry = new Registry()
  /** Requests per tenant by status class (index 0 = 1xx); tenants past the labelled ones share one array. */
  readonly #tenantCounts = new Map<string, Float64Array>()
  readonly #otherTenants = new Float64Array(statusClasses.length)
  #tenantsLabelled = 0
  readonly #series: Series[] = []
  readonly #routes = new Map<string, RouteSeries>()
  /** Webhook delivery attempts by outcome: delivered, retry (failed, retried later), dropped. */
  readonly webhookDeliveries: Counter<'outcome'>
  readonly webhookEvents: Counter
  /** Main-thread time the webhook dispatcher takes from requests (noting commits, reading, rendering, signing). */
  readonly webhookDispatchSeconds: Counter

  /** `tenantsMax`: how many tenants get their own label (PRICING_METRICS_TENANTS_MAX). */
  constructor(readonly tenantsMax = 100) {
    this.webhookDeliveries = new Counter({
      name: 'pricing_webhook_deliveries_total',
      help: 'Webhook delivery attempts by outcome (delivered, retry, dropped)',
      labelNames: ['outcome'],
      registers: [this.registry],
    })
    this.webhookEvents = new Counter({
      name: 'pricing_webhook_events_total',
      help: 'Events delivered to webhooks',
      registers: [this.registry],
    })
    this.webhookDispatchSeconds = new Counter({
      name: 'pricing_webhook_dispatch_seconds_total',
      help: 'Main-thread time spent by the webhook dispatcher (noting commits, reading the log, rendering, signing, sending)',
      registers: [this.registry],
    })
    this.registry.registerMetric(
      exportedMetric(
        'pricing_http_requests_total',
        'HTTP requests by route pattern, method and status',
        'counter',
        () => this.#series.map((series) => ({ labels: { ...series.labels }, value: series.count })),
      ),
    )
    this.registry.registerMetric(
      exportedMetric(
        'pricing_http_request_duration_seconds',
        'HTTP request latency by route pattern, method and status',
        'histogram',
        (splay) =>
          this.#series.flatMap((series) => histogramValues('pricing_http_request_duration_seconds', series, splay)),
      ),
    )
    registerCacheMetrics(this.registry)
    this.registry.registerMetric(
      exportedMetric(
        'pricing_query_worker_snapshots_total',
        'Tenant replica snapshots sent to the query workers: at the warm-up before /readyz answers 200, or for a task that found none',
        'counter',
        () => [
          { labels: { reason: 'warm' }, value: workerSnapshotCounts.warm },
          { labels: { reason: 'query' }, value: workerSnapshotCounts.query },
        ],
      ),
    )
    this.registry.registerMetric(
      exportedMetric(
        'pricing_tenant_requests_total',
        `Requests to a tenant's routes by status class; the first ${tenantsMax} tenants called have their own label, the rest tenant="${otherTenantsLabel}"`,
        'counter',
        () => {
          const values: ExportedValue[] = []
          const add = (tenant: string, counts: Float64Array): void => {
            // 1xx is never answered: classes 2xx to 5xx, each from the first request, so that rates start at 0.
            for (let index = 1; index < statusClasses.length; index++)
              values.push({ labels: { tenant, class: statusClasses[index]! }, value: counts[index]! })
          }
          for (const [tenant, counts] of this.#tenantCounts) if (counts !== this.#otherTenants) add(tenant, counts)
          if (this.#tenantsLabelled < this.#tenantCounts.size) add(otherTenantsLabel, this.#otherTenants)
          return values
        },
      ),
    )
    const build = buildInfo()
    this.registry.registerMetric(
      exportedMetric(
        'pricing_build_info',
        'The build running: package.json version, git commit (unknown when not known) and Node.js version; always 1',
        'gauge',
        () => [{ labels: { version: build.version, commit: build.commit ?? 'unknown', node: build.node }, value: 1 }],
      ),
    )
    collectDefaultMetrics({ register: this.registry })
  }

  /** One answer of a known tenant's route. */
  tenantRequest(slug: string, status: number): void {
    let counts = this.#tenantCounts.get(slug)
    if (counts === undefined) {
      const labelled = this.#tenantsLabelled < this.tenantsMax
      counts = labelled ? new Float64Array(statusClasses.length) : this.#otherTenants
      if (labelled) this.#tenantsLabelled += 1
      this.#tenantCounts.set(slug, counts)
    }
    counts[statusClassIndex(status)]! += 1
  }

  /**
   * A counter whose values a service above this module keeps (backups, restores, retention: see
   * tenant/service-metrics.ts), read at each scrape: this module imports no service.
   */
  registerCounter(name: string, help: string, values: () => ExportedValue[]): void {
    this.registry.registerMetric(exportedMetric(name, help, 'counter', values))
  }

  /** Cluster mode: Redis, sharing and replica lag as gauges (docs/cluster.md). */
  registerCluster(status: () => ClusterStatus): void {
    const gauge = (
      name: string,
      help: string,
      values: () => { labels: Record<string, string>; value: number }[],
    ): void => {
      this.registry.registerMetric(exportedMetric(name, help, 'gauge', values))
    }
    gauge(
      'pricing_cluster_redis_up',
      "1 while this node reaches the cluster's Redis, 0 while it does not (degraded: local limits)",
      () => [{ labels: {}, value: status().redisUp ? 1 : 0 }],
    )
    gauge('pricing_cluster_degraded', '1 while this node is degraded (see /readyz cluster.reasons)', () => [
      { labels: {}, value: degradedReasons(status()).length > 0 ? 1 : 0 },
    ])
    gauge(
      'pricing_cluster_directory_unpublished',
      "This node's directory changes (tenants, keys, people) not yet in Redis",
      () => [{ labels: {}, value: status().directoryUnpublished }],
    )
    gauge('pricing_cluster_queued_commits', "This node's commits as a home not yet published to the replicas", () => [
      { labels: {}, value: status().queuedCommits },
    ])
    gauge('pricing_cluster_home_regions', 'Regions this node is the home (writer) of: 1 per region', () =>
      status().homeRegions.map((region) => ({ labels: { region }, value: 1 })),
    )
    gauge(
      'pricing_replica_lag_sequences',
      'Per replica here: changelog sequences the home has published that it has not applied',
      () => status().replicas.map((replica) => ({ labels: { tenant: replica.tenant }, value: replica.sequences })),
    )
    gauge(
      'pricing_replica_apply_lag_seconds',
      'Commits the replicas here applied in the last minute: time from the home publishing to applied here, by quantile (0.5, 0.99, 1 = the maximum)',
      () => {
        const lag = status().applyLag
        const quantiles: [string, number | null][] = [
          ['0.5', lag.p50Ms],
          ['0.99', lag.p99Ms],
          ['1', lag.maxMs],
        ]
        return quantiles
          .filter(([, ms]) => ms !== null)
          .map(([quantile, ms]) => ({ labels: { quantile }, value: ms! / 1000 }))
      },
    )
    gauge('pricing_replica_applied_last_minute', 'Commits the replicas here applied in the last minute', () => [
      { labels: {}, value: status().applyLag.count },
    ])
    gauge(
      'pricing_replica_lag_seconds',
      "Per replica here: the last applied commit's time from the home's publishing to applied here",
      () => status().replicas.map((replica) => ({ labels: { tenant: replica.tenant }, value: replica.ms / 1000 })),
    )
  }

  /** The data directory's free space and whether writes are refused (tenant/storage-guard.ts). */
  registerStorage(
    state: () => { readonly freeBytes: number; readonly reserveBytes: number; readonly nearlyFull: boolean },
  ): void {
    const gauge = (name: string, help: string, value: () => number): void => {
      this.registry.registerMetric(exportedMetric(name, help, 'gauge', () => [{ labels: {}, value: value() }]))
    }
    gauge(
      'pricing_storage_free_bytes',
      "Free bytes of the data directory's file system at the last sample (once a second)",
      () => state().freeBytes,
    )
    gauge(
      'pricing_storage_reserve_bytes',
      'PRICING_STORAGE_RESERVE_MB in bytes: below it writes answer 503 storage_full',
      () => state().reserveBytes,
    )
    gauge(
      'pricing_storage_nearly_full',
      '1 while storage is nearly full and writes answer 503 storage_full (reads go on), else 0',
      () => (state().nearlyFull ? 1 : 0),
    )
  }

  /** The series of a route pattern and method: resolve once, then `observe` per request. */
  route(route: string, method: string): RouteSeries {
    const key = `${method} ${route}`
    let series = this.#routes.get(key)
    if (series === undefined) {
      series = new RouteSeries(route, method, this.#series)
      this.#routes.set(key, series)
    }
    return series
  }

  observe(route: string, method: string, status: number, seconds: number): void {
    this.route(route, method).observe(status, seconds)
  }

  async text(): Promise<string> {
    return this.registry.metrics()
  }
}

/** Cumulative buckets, +Inf, sum and count, in prom-client's order and label layout. */
function histogramValues(name: string, series: Series, splay: boolean): ExportedValue[] {
  const values: ExportedValue[] = []
  const labelled = (le: Record<string, string | number>, value: number, metricName: string): ExportedValue =>
    splay
      ? { labels: { ...le, ...series.labels }, value, metricName }
      : { labels: le, sharedLabels: { ...series.labels }, value, metricName }
  let cumulative = 0
  for (let index = 0; index < latencyBoundsS.length; index++) {
    cumulative += series.buckets[index]!
    values.push(labelled({ le: latencyBoundsS[index]! }, cumulative, `${name}_bucket`))
  }
  values.push(labelled({ le: '+Inf' }, series.count, `${name}_bucket`))
  values.push(labelled({}, series.sumS, `${name}_sum`))
  values.push(labelled({}, series.count, `${name}_count`))
  return values
}

/** The answer cache's and the prior prices' counts (workers/execute.ts, workers/prior-price-cache.ts). */
function registerCacheMetrics(registry: Registry): void {
  registry.registerMetric(
    exportedMetric(
      'pricing_query_answer_cache_items_total',
      'Price query SKUs answered from the answer cache (hit) or computed (miss), main thread and workers',
      'counter',
      () => [
        { labels: { result: 'hit' }, value: answerCacheCounts.hits },
        { labels: { result: 'miss' }, value: answerCacheCounts.misses },
      ],
    ),
  )
  registry.registerMetric(
    exportedMetric(
      'pricing_prior_price_cache_total',
      'EU prior prices (prior_price=true) served from the ones kept (hit) or computed from the history (miss), main thread',
      'counter',
      () => [
        { labels: { result: 'hit' }, value: priorPriceCacheCounts.hits },
        { labels: { result: 'miss' }, value: priorPriceCacheCounts.misses },
      ],
    ),
  )
}
