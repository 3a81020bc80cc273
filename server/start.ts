/**
 * Process entry used by bin/pricing-service.js and by the tests: runs the command line. The server
 * (`start`) first re-executes itself once with glibc's malloc tuned (platform/malloc-tuning.ts), before
 * any other module has loaded.
 * @module
 */
import { tuneMalloc } from '../platform/malloc-tuning.js'

const command = process.argv[2]
// Not for `--help` or `--version`: they answer at once, without a server.
const answersAtOnce = command === '--help' || command === '-h' || command === '--version'
if (command === undefined || command === 'start' || (command.startsWith('-') && !answersAtOnce))
  tuneMalloc(process.argv.slice(2))
const { run } = await import('./cli.js')
await run(process.argv.slice(2))
