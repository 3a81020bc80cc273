/**
 * A real Redis for the cluster tests (issue 10): Debian's `redis-server` (installed by .ci/run),
 * started on a free loopback port with no persistence, stopped at the end. `stop()` and `start()`
 * again on the same port make an outage and its recovery. Where no redis-server can be had the
 * tests skip with `noRedis`.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import net from 'node:net'

export const noRedis =
  "no redis-server on this machine: the cluster tests need Debian's redis-server (`apt-get install -y redis-server`, which .ci/run does) or PRICING_REDIS_SERVER"

/** The redis-server to run: PRICING_REDIS_SERVER, else Debian's; null when there is none. */
export function redisServerPath(): string | null {
  const candidates = [
    process.env['PRICING_REDIS_SERVER'],
    '/usr/bin/redis-server',
    '/usr/local/bin/redis-server',
  ].filter((candidate): candidate is string => candidate !== undefined && candidate !== '')
  const found = candidates.find((candidate) => existsSync(candidate))
  if (found !== undefined) return found
  const which = spawnSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' })
  return which.status === 0 ? which.stdout.trim() : null
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as net.AddressInfo).port
      server.close(() => resolve(port))
    })
  })
}

export class RedisServer {
  #child: ChildProcess | null = null
  #exited: Promise<void> = Promise.resolve()

  private constructor(
    readonly executable: string,
    readonly port: number,
  ) {}

  static async start(executable: string): Promise<RedisServer> {
    const server = new RedisServer(executable, await freePort())
    await server.start()
    return server
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`
  }

  /** Starts (again) on the same port; resolves once it answers PING. */
  async start(): Promise<void> {
    const child = spawn(
      this.executable,
      [
        '--port',
        String(this.port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--protected-mode',
        'yes',
      ],
      { stdio: 'ignore' },
    )
    this.#child = child
    this.#exited = new Promise((resolve) => child.once('exit', () => resolve()))
    const deadline = Date.now() + 10_000
    while (!(await this.#pong())) {
      if (Date.now() > deadline) throw new Error(`redis-server did not answer on ${this.port}`)
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }

  #pong(): Promise<boolean> {
    return new Promise((resolve) => {
      const socket = net.connect(this.port, '127.0.0.1', () => socket.write('PING\r\n'))
      socket.once('data', (chunk) => {
        socket.destroy()
        resolve(chunk.toString().startsWith('+PONG'))
      })
      socket.once('error', () => resolve(false))
    })
  }

  /** Kills the server (SIGKILL: an outage, not a clean stop). */
  async stop(): Promise<void> {
    this.#child?.kill('SIGKILL')
    await this.#exited
    this.#child = null
  }
}

/**
 * A Redis of this test file's own, stopped at its end; null where no redis-server can be had, and
 * then the file is skipped with `noRedis`.
 */
export async function redisForTest(t: {
  skip(name: string, fn: () => void): unknown
  teardown(fn: () => unknown): void
}): Promise<RedisServer | null> {
  const executable = redisServerPath()
  if (executable === null) {
    t.skip(noRedis, () => {})
    return null
  }
  const redis = await RedisServer.start(executable)
  t.teardown(() => redis.stop())
  return redis
}
