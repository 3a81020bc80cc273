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
    /** Called before each send of this request: answers the request to send (autocannon rebuilds its bytes). */
    setupRequest?: (request: Request, context: Record<string, unknown>) => Request
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
    /** Requests per second over all connections (a fixed rate instead of as fast as answered). */
    overallRate?: number
    /** Requests to send in all, instead of a duration. */
    amount?: number
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

  /**
   * A run in progress: awaiting it gives the result; 'response' fires per answer with its status,
   * size and latency (ms); `stop` ends the run early (it then resolves as usual).
   */
  export interface Instance extends PromiseLike<Result> {
    on(
      event: 'response',
      listener: (client: unknown, statusCode: number, bytes: number, latencyMs: number) => void,
    ): this
    stop(): void
  }

  export default function autocannon(options: Options): Instance
}
