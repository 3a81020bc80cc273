/**
 * The part of autocannon's programmatic API the bench uses (the package ships no types).
 * @module
 */
declare module 'autocannon' {
  export interface Request {
    method?: string
    path?: string
    headers?: Record<string, string>
    body?: string | Buffer
  }

  export interface Options {
    url: string
    connections?: number
    pipelining?: number
    duration?: number
    timeout?: number
    method?: string
    headers?: Record<string, string>
    requests?: Request[]
  }

  /** Histogram summary: milliseconds for latency, per second sample for requests. */
  export interface Histogram {
    average: number
    mean: number
    stddev: number
    min: number
    max: number
    total: number
    p50: number
    p90: number
    p97_5: number
    p99: number
    p99_9: number
    sent?: number
  }

  export interface Result {
    duration: number
    start: Date
    finish: Date
    errors: number
    timeouts: number
    non2xx: number
    resets: number
    '2xx': number
    statusCodeStats: Record<string, { count: number }>
    latency: Histogram
    requests: Histogram
    throughput: Histogram
  }

  export default function autocannon(options: Options): Promise<Result>
}
