/**
 * Micro-benchmark of the JSON body reader on the ingest path: a 2,500-item price batch (the bench's
 * ingest batch) read by the previous reader (depth scan, toString, JSON.parse) and by
 * http/json-body.ts readJsonBody (one scan that also notes long digit runs and \u escapes, a UTF-8
 * check), alternating in one process so that both see the same machine load; then the same batch
 * with one 30-digit amount, which takes the exact path (rewrite before JSON.parse).
 * Run: node dist/bench/json-body.js [rounds]. Prints medians in microseconds per batch.
 * @module
 */
import { jsonDepthMax } from '../engine/limits.js'
import { readJsonBody } from '../http/json-body.js'

const quote = 0x22
const backslash = 0x5c

/** The reader before exact literals and Unicode checks: the depth scan, then JSON.parse. */
function previousReader(bytes: Buffer, max: number): unknown {
  let depth = 0
  for (let index = 0; index < bytes.length; index++) {
    const byte = bytes[index]!
    if (byte === quote) {
      for (index++; index < bytes.length; index++) {
        const inner = bytes[index]!
        if (inner === backslash) index++
        else if (inner === quote) break
      }
    } else if (byte === 0x5b || byte === 0x7b) {
      if (++depth > max) throw new Error('deep')
    } else if (byte === 0x5d || byte === 0x7d) {
      depth--
    }
  }
  return JSON.parse(bytes.toString('utf8'))
}

function batch(longAmount: boolean): Buffer {
  const items = []
  for (let index = 0; index < 2500; index++) {
    const item: Record<string, unknown> = {
      sku: `SKU-${String(index).padStart(6, '0')}`,
      pricelist: `PL-${index % 5}`,
      price: Math.round(1000 + index * 37.7) / 100,
    }
    if (index % 10 === 0)
      item['quantity_breaks'] = [
        { quantity_break: 10, percent_of_base: 90 },
        { quantity_break: 50, fixed_price: 7.5 },
      ]
    if (index % 2 === 0) item['start_date'] = '2030-01-01T00:00:00Z'
    items.push(item)
  }
  let text = JSON.stringify(items)
  if (longAmount) text = text.replace('"price":10', '"price":10.000049999999999999999999999')
  return Buffer.from(text)
}

function timeOnce(read: (bytes: Buffer, max: number) => unknown, bytes: Buffer): number {
  const start = process.hrtime.bigint()
  read(bytes, jsonDepthMax)
  return Number(process.hrtime.bigint() - start) / 1000
}

function median(values: number[]): number {
  const sorted = [...values].sort((left, right) => left - right)
  return sorted[Math.floor(sorted.length / 2)]!
}

const rounds = Number(process.argv[2] ?? 400)
const plain = batch(false)
const long = batch(true)
const previous: number[] = []
const current: number[] = []
const exact: number[] = []
for (let round = 0; round < rounds + 50; round++) {
  const times = [timeOnce(previousReader, plain), timeOnce(readJsonBody, plain), timeOnce(readJsonBody, long)]
  if (round < 50) continue // warm-up
  previous.push(times[0]!)
  current.push(times[1]!)
  exact.push(times[2]!)
}
const before = median(previous)
const after = median(current)
console.log(
  JSON.stringify({
    batch_bytes: plain.length,
    rounds,
    previous_reader_us: Math.round(before),
    read_json_body_us: Math.round(after),
    change_percent: Math.round(((after - before) / before) * 1000) / 10,
    with_one_30_digit_amount_us: Math.round(median(exact)),
  }),
)
