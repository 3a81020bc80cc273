/**
 * The probe of test/security/resource-abuse.test.ts, on its own thread so that the attack's client
 * work in the test's thread does not delay it: on each message `{count}` it sends that many GET
 * requests one after the other (keep-alive) and answers their latencies in milliseconds, and the
 * statuses that were not 200.
 */
import { parentPort, workerData } from 'node:worker_threads'

interface Setup {
  readonly url: string
  readonly token: string
}

const setup = workerData as Setup

async function measure(count: number): Promise<{ latencies: number[]; failures: string[] }> {
  const latencies: number[] = []
  const failures: string[] = []
  for (let index = 0; index < count; index++) {
    const started = performance.now()
    try {
      const answer = await fetch(setup.url, { headers: { authorization: `Bearer ${setup.token}` } })
      await answer.arrayBuffer()
      if (answer.status !== 200) failures.push(String(answer.status))
    } catch (error) {
      failures.push((error as Error).message)
    }
    latencies.push(performance.now() - started)
  }
  return { latencies, failures }
}

parentPort!.on('message', (message: { count: number }) => {
  void measure(message.count).then((result) => parentPort!.postMessage(result))
})
