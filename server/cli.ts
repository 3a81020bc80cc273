/**
 * The `pricing-service` command line. `start` (the default) runs the server; `tenant`, `key`,
 * `backup`, `request` and `signing-key` commands manage tenants, API keys, backups, people's tenant
 * requests and the token-signing keys (server/cli/manage.ts); `help`, `--help` or `-h` prints every
 * command and every server option (server/cli/help.ts); `version` or `--version` prints the
 * version (platform/version.ts). Exit codes: 2 for a mistake in the command line or the
 * configuration, 1 for a command that failed.
 * @module
 */
import { helpText, usage } from './cli/help.js'

const helpWords = new Set(['help', '--help', '-h'])
const versionWords = new Set(['version', '--version'])

export async function run(argv: string[]): Promise<void> {
  const [command = 'start', ...args] = argv
  if (helpWords.has(command) || args.includes('--help') || args.includes('-h')) {
    process.stdout.write(helpText())
    return
  }
  if (versionWords.has(command) || args.includes('--version')) {
    const { versionLine } = await import('../platform/version.js')
    process.stdout.write(`${versionLine()}\n`)
    return
  }
  // The server and the storage are imported only when needed: `--help` answers without loading them.
  if (command === 'start' || command.startsWith('-')) {
    const { main } = await import('./main.js')
    await main(command === 'start' ? args : argv)
    return
  }
  if (
    command !== 'tenant' &&
    command !== 'key' &&
    command !== 'backup' &&
    command !== 'request' &&
    command !== 'signing-key'
  ) {
    process.stderr.write(`${command}: unknown command\n\n${usage}`)
    process.exit(2)
  }
  const { manage, parseInvocation, UsageError } = await import('./cli/manage.js')
  // What the commands create in the data directory is the owner's alone, as the server's is.
  const { restrictNewFiles } = await import('../platform/data-dir/permissions.js')
  restrictNewFiles()
  try {
    const result = await manage(parseInvocation(command, args, process.env))
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`)
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n`)
    process.exit(error instanceof UsageError ? 2 : 1)
  }
}
