/**
 * The single executable's entry (issue 10): installs the embedded-files runtime (binary/runtime.ts)
 * before the service's modules load, then does what server/start.ts does for a checkout: tunes
 * glibc's malloc for `start` and runs the command line. Bundled by binary/build.ts into one
 * CommonJS script, the form Node's SEA runs.
 * @module
 */
import { installPackaged } from '../platform/packaged.js'
import { seaRuntime } from './runtime.js'

/** Set by binary/build.ts: the build's id (a hash of what it embeds). */
declare const PRICING_BUILD_ID: string

installPackaged(seaRuntime(PRICING_BUILD_ID))

async function main(): Promise<void> {
  const args = process.argv.slice(2)
  const command = args[0]
  const { tuneMalloc } = await import('../platform/malloc-tuning.js')
  if (command === undefined || command === 'start' || command.startsWith('-')) tuneMalloc(args)
  const { run } = await import('../server/cli.js')
  await run(args)
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error).stack ?? String(error)}\n`)
  process.exit(1)
})
