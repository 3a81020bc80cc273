/**
 * A tenant's requests and ingested items per minute over the last hour (issue 9: the console's
 * chart), counted by the request pipeline (http/app.ts) as it takes rate-limit tokens: a ring of
 * 60 minutes, a few array writes per request and nothing kept beyond the hour.
 * @module
 */
const minutes = 60
const minuteMs = 60_000

export interface ActivityMinute {
  /** Start of the minute, epoch ms. */
  readonly at: number
  readonly queries: number
  readonly ingestRequests: number
  /** Items written (a batch of 500 prices counts 500). */
  readonly ingestItems: number
}

export class TenantActivity {
  readonly #minute = new Float64Array(minutes).fill(-1)
  readonly #queries = new Float64Array(minutes)
  readonly #ingestRequests = new Float64Array(minutes)
  readonly #ingestItems = new Float64Array(minutes)

  /** Counts an accepted request of `dimension` that costs `items`. */
  record(dimension: 'query' | 'ingest', items: number, nowMs: number): void {
    const minute = Math.floor(nowMs / minuteMs)
    const slot = minute % minutes
    if (this.#minute[slot] !== minute) {
      this.#minute[slot] = minute
      this.#queries[slot] = 0
      this.#ingestRequests[slot] = 0
      this.#ingestItems[slot] = 0
    }
    if (dimension === 'query') this.#queries[slot]!++
    else {
      this.#ingestRequests[slot]!++
      this.#ingestItems[slot]! += items
    }
  }

  /** The 60 minutes up to and including the current one, oldest first (zeros where nothing came). */
  lastHour(nowMs: number): ActivityMinute[] {
    const current = Math.floor(nowMs / minuteMs)
    const series: ActivityMinute[] = []
    for (let minute = current - minutes + 1; minute <= current; minute++) {
      const slot = minute % minutes
      const seen = this.#minute[slot] === minute
      series.push({
        at: minute * minuteMs,
        queries: seen ? this.#queries[slot]! : 0,
        ingestRequests: seen ? this.#ingestRequests[slot]! : 0,
        ingestItems: seen ? this.#ingestItems[slot]! : 0,
      })
    }
    return series
  }
}
