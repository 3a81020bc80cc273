/**
 * glibc's malloc tuned for this process, by re-executing it once at start with `GLIBC_TUNABLES`
 * (glibc reads it only when a process starts).
 *
 * glibc serves allocations above its mmap threshold with mmap, and gives them back at free. The
 * threshold is dynamic by default: each freed mmapped block raises it (up to 32 MiB), and blocks
 * under it then come from the heap arenas, which keep freed memory. A live ingest allocates request
 * bodies, encoding buffers and price-column generations of 0.1-30 MiB and frees them again; with the
 * dynamic threshold about 170 bytes per stored price version stayed resident after a
 * 3-million-version ingest and a full GC, with a fixed 128 KiB threshold none did (issue 12;
 * bench/README.md). Small allocations are unaffected.
 *
 * Skipped where it cannot apply or was decided otherwise: not Linux, a Node.js without
 * `process.execve` (before 22.15), the setting `mallocTuning` false (`PRICING_MALLOC_TUNING=false`
 * or `--malloc-tuning false`; read here, before the configuration, which validates it later), or
 * `GLIBC_TUNABLES` already naming the threshold (which is also how the re-executed process knows
 * it is done).
 * @module
 */

import { packaged } from './packaged.js'

const threshold = 'glibc.malloc.mmap_threshold'
const thresholdBytes = 128 * 1024

const offValues = new Set(['false', '0'])

/** The setting turned off, by the variable or a flag (`--malloc-tuning false`, `--malloc-tuning=false`). */
function turnedOff(argv: readonly string[]): boolean {
  let off = offValues.has(process.env['PRICING_MALLOC_TUNING'] ?? '')
  argv.forEach((argument, index) => {
    if (argument === '--malloc-tuning') off = offValues.has(argv[index + 1] ?? '')
    else if (argument.startsWith('--malloc-tuning=')) off = offValues.has(argument.slice('--malloc-tuning='.length))
  })
  return off
}

export function tuneMalloc(argv: readonly string[]): void {
  const tunables = process.env['GLIBC_TUNABLES'] ?? ''
  if (process.platform !== 'linux' || turnedOff(argv) || tunables.includes(threshold)) return
  const execve = (process as { execve?: (file: string, args: string[], env: NodeJS.ProcessEnv) => never }).execve
  if (typeof execve !== 'function') return
  const env = {
    ...process.env,
    GLIBC_TUNABLES: [`${threshold}=${thresholdBytes}`, tunables].filter((part) => part !== '').join(':'),
  }
  // Same executable, flags and arguments, same process id: only the environment differs. The single
  // executable gets its own arguments only (its argv[1] is the executable again, added by Node).
  const args = packaged() !== null ? process.argv.slice(2) : [...process.execArgv, ...process.argv.slice(1)]
  execve.call(process, process.execPath, [process.execPath, ...args], env)
}
