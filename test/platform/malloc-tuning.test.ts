/**
 * The server re-executes itself once with glibc's mmap threshold fixed (platform/malloc-tuning.ts):
 * the process the test started (same pid) runs with the tunable, keeps an operator's own tunables,
 * and `PRICING_MALLOC_TUNING=false` leaves the environment as it was. Linux with Node.js >= 22.15
 * (process.execve); skipped elsewhere with the reason.
 */
import { readFileSync } from 'node:fs'
import t from 'tap'
import { startServer, type TestServer } from '../helpers/server.js'

const hasExecve = typeof (process as { execve?: unknown }).execve === 'function'
const skip =
  process.platform !== 'linux'
    ? 'not Linux'
    : hasExecve
      ? false
      : `Node.js ${process.version} has no process.execve (22.15 and later have it)`

/** The tuning the server logged at start ('malloc tuning'; the line may follow readiness). */
async function logged(server: TestServer): Promise<string | null | undefined> {
  for (let attempt = 0; attempt < 200; attempt++) {
    for (const line of server.stdout.split('\n')) {
      if (line.includes('"msg":"malloc tuning"'))
        return (JSON.parse(line) as { glibcTunables: string | null }).glibcTunables
    }
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  return undefined
}

/** The environment the kernel holds for the process (glibc cuts GLIBC_TUNABLES there at its first ':'). */
function environ(pid: number): Map<string, string> {
  const variables = new Map<string, string>()
  for (const pair of readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')) {
    const equals = pair.indexOf('=')
    if (equals > 0) variables.set(pair.slice(0, equals), pair.slice(equals + 1))
  }
  return variables
}

t.test('the server runs with a fixed mmap threshold, added to the tunables it was given', { skip }, async (t) => {
  const server = await startServer({ env: { GLIBC_TUNABLES: 'glibc.malloc.arena_max=4' } })
  t.teardown(() => server.stop())
  t.equal(await logged(server), 'glibc.malloc.mmap_threshold=131072:glibc.malloc.arena_max=4')
  t.equal(
    environ(server.pid).get('GLIBC_TUNABLES'),
    'glibc.malloc.mmap_threshold=131072',
    'in the process the test started (same pid)',
  )
  const health = await fetch(`${server.url}/healthz`)
  t.equal(health.status, 200, 'and serves from the re-executed process')
})

t.test('PRICING_MALLOC_TUNING=false leaves the environment alone', { skip }, async (t) => {
  const server = await startServer({ env: { PRICING_MALLOC_TUNING: 'false' } })
  t.teardown(() => server.stop())
  t.equal(await logged(server), process.env['GLIBC_TUNABLES'] ?? null)
})

t.test('a threshold the operator set is kept as it is', { skip }, async (t) => {
  const server = await startServer({ env: { GLIBC_TUNABLES: 'glibc.malloc.mmap_threshold=65536' } })
  t.teardown(() => server.stop())
  t.equal(await logged(server), 'glibc.malloc.mmap_threshold=65536')
})
