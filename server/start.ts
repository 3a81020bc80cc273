/**
 * Process entry used by bin/pricing-service.js and by the tests: runs the command line.
 * @module
 */
import { run } from './cli.js'

await run(process.argv.slice(2))
