/**
 * Prometheus metrics (prom-client): requests and latency by route and status. Label children are
 * cached per (route, status) so the hot path does one map lookup and two increments.
 * @module
 */
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client'

export class Metrics {
  readonly registry = new Registry()
  readonly #requests: Counter<'route' | 'method' | 'status'>
  readonly #latency: Histogram<'route' | 'method' | 'status'>
  readonly #children = new Map<string, { count: Counter.Internal; latency: Histogram.Internal<'route' | 'method' | 'status'> }>()

  constructor() {
    this.#requests = new Counter({
      name: 'pricing_http_requests_total',
      help: 'HTTP requests by route pattern, method and status',
      labelNames: ['route', 'method', 'status'],
      registers: [this.registry],
    })
    this.#latency = new Histogram({
      name: 'pricing_http_request_duration_seconds',
      help: 'HTTP request latency by route pattern, method and status',
      labelNames: ['route', 'method', 'status'],
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [this.registry],
    })
    collectDefaultMetrics({ register: this.registry })
  }

  observe(route: string, method: string, status: number, seconds: number): void {
    const key = `${method} ${route} ${status}`
    let child = this.#children.get(key)
    if (child === undefined) {
      const labels = { route, method, status: String(status) }
      child = { count: this.#requests.labels(labels), latency: this.#latency.labels(labels) }
      this.#children.set(key, child)
    }
    child.count.inc()
    child.latency.observe(seconds)
  }

  async text(): Promise<string> {
    return this.registry.metrics()
  }
}
