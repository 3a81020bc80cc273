/**
 * The single executable (issue 10): `npm run build:binary`'s build timed, the executable's size,
 * and its start-up beside the checkout's (`node dist/server/start.js`), each from spawn to
 * `/readyz` 200: a first start on an empty data directory (the demo tenant seeded) and a restart on
 * it, each the median of three, on a free loopback port.
 * @module
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { buildBinary } from '../binary/build.js'

export interface StartTimes {
  /** Spawn to ready on an empty data directory, ms (median). */
  readonly firstStartMs: number
  /** Spawn to ready on the data the first start left, ms (median). */
  readonly restartMs: number
}

export interface BinaryResult {
  readonly nodeVersion: string
  readonly buildMs: number
  readonly bytes: number
  readonly binary: StartTimes
  readonly checkout: StartTimes
}

const median = (values: number[]): number =>
  [...values].sort((left, right) => left - right)[Math.floor(values.length / 2)]!

/** Spawns `command`, waits for /readyz 200, stops it with SIGTERM; answers spawn-to-ready ms. */
async function startToReady(command: string, args: readonly string[], dataDir: string): Promise<number> {
  const started = performance.now()
  const child = spawn(command, [...args, 'start'], {
    env: {
      PATH: process.env['PATH'] ?? '',
      HOME: process.env['HOME'] ?? '',
      PRICING_PORT: '0',
      PRICING_HOST: '127.0.0.1',
      PRICING_DATA_DIR: dataDir,
      PRICING_FX_FEED_URL: '',
      PRICING_BACKUP_INTERVAL_S: '0',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const exited = new Promise((resolve) => child.once('exit', resolve))
  let output = ''
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()))
  try {
    for (;;) {
      const port = /"port":(\d+),"url"/.exec(output)?.[1]
      if (port !== undefined && (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => null))?.status === 200)
        return performance.now() - started
      if (child.exitCode !== null) throw new Error(`${command} exited before ready: ${output.slice(-500)}`)
      if (performance.now() - started > 60_000) throw new Error(`${command} not ready within 60 s`)
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
  } finally {
    child.kill('SIGTERM')
    await exited
  }
}

async function startTimes(command: string, args: readonly string[]): Promise<StartTimes> {
  const first: number[] = []
  const again: number[] = []
  for (let round = 0; round < 3; round++) {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'pricing-bench-start-'))
    try {
      first.push(await startToReady(command, args, dataDir))
      again.push(await startToReady(command, args, dataDir))
    } finally {
      rmSync(dataDir, { recursive: true, force: true })
    }
  }
  return { firstStartMs: median(first), restartMs: median(again) }
}

export async function measureBinary(buildRoot: string): Promise<BinaryResult> {
  const folder = mkdtempSync(path.join(tmpdir(), 'pricing-bench-binary-'))
  try {
    const started = performance.now()
    const built = await buildBinary(path.join(folder, 'pricing-service'), path.join(folder, 'work'))
    const buildMs = performance.now() - started
    return {
      nodeVersion: process.version,
      buildMs,
      bytes: built.bytes,
      binary: await startTimes(built.file, []),
      checkout: await startTimes(process.execPath, [path.join(buildRoot, 'server', 'start.js')]),
    }
  } finally {
    rmSync(folder, { recursive: true, force: true })
  }
}
