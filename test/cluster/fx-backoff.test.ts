/**
 * A cluster's FX fetcher with its feed unreachable backs off: it looks every TTL/2, and used to try
 * (and log a warning) at every look. Now each failure doubles the wait before the next try, up to
 * the fetch interval, and is logged once with that wait. When the feed answers again the fetcher
 * fetches at its next try and the backoff starts over.
 */
import http from 'node:http'
import net from 'node:net'
import t from 'tap'
import { logRecords } from '../helpers/logs.js'
import { redisForTest } from '../helpers/redis.js'
import { until } from '../helpers/until.js'
import { startCluster } from '../helpers/cluster.js'

// The fetcher looks every TTL/2 = 200 ms.
const leaseMs = 400
const lookMs = leaseMs / 2
const watchMs = 5_000
/** A feed of the ECB's form with one day and two rates. */
const feedXml = `<?xml version="1.0" encoding="UTF-8"?>
<gesmes:Envelope xmlns:gesmes="http://www.gesmes.org/xml/2002-08-01" xmlns="http://www.ecb.int/vocabulary/2002-08-01/eurofxref">
<gesmes:subject>Reference rates</gesmes:subject>
<gesmes:Sender><gesmes:name>European Central Bank</gesmes:name></gesmes:Sender>
<Cube><Cube time='2025-05-09'><Cube currency='USD' rate='1.1252'/><Cube currency='GBP' rate='0.84770'/></Cube></Cube>
</gesmes:Envelope>
`

/** A loopback port nobody listens on (yet): connections to it are refused. */
async function closedPort(): Promise<number> {
  const server = net.createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as net.AddressInfo).port
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

const redis = await redisForTest(t)
if (redis !== null) {
  const port = await closedPort()
  const env = {
    PRICING_FX_FEED_URL: `http://127.0.0.1:${port}/daily`,
    PRICING_FX_FETCH_DELAY_MS: '0',
    PRICING_FX_FETCH_INTERVAL_MS: '60000',
  }
  const nodes = await startCluster(t, redis, [{ name: 'a', region: 'local', env }], leaseMs)
  const node = nodes.get('a')!
  const failures = () =>
    logRecords(node.stdout).filter(
      (record) => typeof record['msg'] === 'string' && record['msg'].startsWith('FX feed fetch failed'),
    )

  await t.test('an unreachable feed: a warning per doubling wait, not one per look', async (t) => {
    await until(() => failures().length > 0, 10_000, 'the first failed fetch')
    await new Promise((resolve) => setTimeout(resolve, watchMs))
    const lines = failures()
    // Trying at every look gives watchMs / lookMs = 25 lines; doubling from 200 ms gives 5.
    t.ok(
      lines.length >= 3 && lines.length <= 7,
      `${lines.length} warnings in ${watchMs} ms (one try per look would be about ${watchMs / lookMs})`,
    )
    const waits = lines.map((line) => line['retryInMs'])
    t.same(
      waits,
      waits.map((_wait, index) => lookMs * 2 ** index),
      `each names its wait, doubling from the look period: ${waits.join(', ')} ms`,
    )
    t.same(
      lines.map((line) => line['failures']),
      lines.map((_line, index) => index + 1),
      'and counts the failures in a row',
    )
    t.ok(
      lines.every((line) => line['code'] === 'ECONNREFUSED'),
      'with the cause',
    )
  })

  await t.test('the feed back: fetched at the next try', async (t) => {
    const feed = http.createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/xml' }).end(feedXml)
    })
    await new Promise<void>((resolve) => feed.listen(port, '127.0.0.1', resolve))
    t.teardown(() => new Promise<void>((resolve) => feed.close(() => resolve())))
    const lastWait = Number(failures().at(-1)?.['retryInMs'])
    const took = await until(
      () => node.stdout.includes('"msg":"FX feed fetched"'),
      lastWait * 2 + 2_000,
      'a fetch once the feed answers',
    )
    t.ok(took <= lastWait + 1_000, `fetched ${took} ms after the feed came back (the last wait was ${lastWait} ms)`)
  })
}
