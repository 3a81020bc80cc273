/**
 * The text of `pricing-service --help` and the rows of the README's configuration table, both
 * rendered from the settings table in platform/config.ts so that neither can drift from it.
 * @module
 */
import {
  allowedValues,
  DEFAULTS,
  envName,
  flagName,
  SETTINGS,
  settingKeys as keys,
  type SettingKey as Key,
} from '../../platform/config.js'

export const usage = `Usage: pricing-service [command] [options]

Commands:
  start [server options]                  run the server (default)
  tenant create <slug> [--tier T] [--region R] [--owner-email E]
  tenant list
  tenant show <slug>
  tenant update <slug> [--tier T] [--status active|suspended] [--limits JSON]
  key create <slug> [--name N]            prints the secret once
  key list <slug>
  key revoke <slug> <client_id>
  backup create <slug> [--retain true]    a manual backup now (retained: never thinned)
  backup list <slug>                      newest first
  backup restore <slug> <backup_id> --url URL
                                          restore in the running server; waits for the end
  request list                            people's tenant requests, newest first
  request approve <id> --url URL          provision the tenant; the requester becomes owner
  request reject <id> [--reason R] --url URL
  signing-key list                        token-signing keys, newest first, with when each is dropped
  signing-key rotate [--drop-previous true] --url URL
                                          a new key signs from now on (drop-previous: older
                                          keys and their tokens are refused at once)
  help                                    this text (also --help, -h)
  version                                 the version, its git commit if known, and the
                                          Node.js version (also --version)

Options for tenant, key, backup, request and signing-key commands:
  --data-dir DIR        work on this data directory (default ./data or PRICING_DATA_DIR)
  --url URL             work through a running server's admin API instead
  --admin-token-file F  the file holding the admin token for --url (default PRICING_ADMIN_TOKEN,
                        or PRICING_ADMIN_TOKEN_FILE); never the token itself: ps shows arguments
  --tier T              starter, standard or enterprise (default starter on create)
  --region R            the tenant's region (default local)
`

function shownDefault(key: Key): string {
  const value = DEFAULTS[key]
  return value === '' ? 'empty' : String(value)
}

/** Every server setting: flag, variable, default, allowed values and meaning. */
export function serverOptionsHelp(): string {
  const lines = [
    'Server options (start): each is a flag, --port 9000 or --port=9000, and an environment variable,',
    'PRICING_PORT=9000; a flag wins over the variable. Boolean flags also stand alone (--demo) or',
    'negated (--no-demo). Unknown flags and unknown PRICING_* variables are errors. Secrets (the admin',
    'token, the keys, a URL with a password) are refused as flags: give the variable or its file.',
    '',
  ]
  for (const key of keys) {
    lines.push(`  --${flagName(key)}, ${envName(key)}  (default: ${shownDefault(key)})`)
    lines.push(`      ${SETTINGS[key].meaning}; ${allowedValues(key)}`)
  }
  return `${lines.join('\n')}\n`
}

export function helpText(): string {
  return `${usage}\n${serverOptionsHelp()}`
}

/** The README's configuration table rows, one per setting, in the table's order. */
export function readmeRows(): string[] {
  return keys.map((key) => {
    const shown = DEFAULTS[key] === '' ? '(empty)' : `\`${String(DEFAULTS[key])}\``
    return `| \`${envName(key)}\` | \`--${flagName(key)}\` | ${shown} | ${SETTINGS[key].meaning} |`
  })
}
