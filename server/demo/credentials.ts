/**
 * The demo key's credentials on first start: a JSON file in the data directory that only its owner
 * may read, and, when stderr is a terminal, a note saying where it is. The secret never goes to
 * stdout (JSON log records only) nor to the terminal, which is often recorded (scrollback, tmux
 * logs, shared screens); the file is the one place it is written.
 * @module
 */
import { open, rename, rm } from 'node:fs/promises'
import path from 'node:path'
import { assert } from '../../engine/assert.js'

export const demoCredentialsFileName = 'demo-credentials.json'

/** Owner read and write only. */
const credentialsFileMode = 0o600

export interface DemoCredentials {
  readonly tenant: string
  readonly base_url: string
  readonly token_url: string
  readonly client_id: string
  readonly client_secret: string
  readonly created_at: string
  /** The account portal, and the demo tenant's owner, who signs in there by magic link. */
  readonly portal_url: string
  /** The demo tenant's console, where the owner's sign-in link lands. */
  readonly console_url: string
  readonly owner_email: string
}

/**
 * Writes the credentials to `<dataDir>/demo-credentials.json` and answers its path. The file is
 * created with mode 0600 under a temporary name (exclusive create, so never an existing file with
 * wider permissions) and renamed over any old one: there is no moment at which others may read it,
 * and no moment at which it is half-written.
 */
export async function writeDemoCredentials(dataDir: string, credentials: DemoCredentials): Promise<string> {
  const file = path.join(dataDir, demoCredentialsFileName)
  const temporary = `${file}.${process.pid}.tmp`
  await rm(temporary, { force: true })
  const handle = await open(temporary, 'wx', credentialsFileMode)
  try {
    // The umask can only take permissions away: the file is at most owner read and write.
    assert(((await handle.stat()).mode & 0o077) === 0, 'the credentials file is readable by others')
    await handle.writeFile(`${JSON.stringify(credentials, null, 2)}\n`)
    await handle.sync()
  } finally {
    await handle.close()
  }
  await rename(temporary, file)
  return file
}

/** The note for a terminal: where the credentials are, without the secret. */
export function demoCredentialsNote(file: string, credentials: DemoCredentials): string {
  return (
    `\nDemo tenant "${credentials.tenant}" provisioned. Its API key is in\n` +
    `  ${file}\n` +
    `  (readable only by you; the client_secret is shown only there)\n` +
    `  client_id:  ${credentials.client_id}\n` +
    `  base URL:   ${credentials.base_url}\n` +
    `  token URL:  ${credentials.token_url}\n` +
    `Console: ${credentials.console_url}, signed in as ${credentials.owner_email} (the owner) with the\n` +
    `  link mailed to ./data/outbox/ at this start (also in the log; it works once, within 15 minutes;\n` +
    `  ask the portal for a new one at any time).\n` +
    `The README's quick start shows a token request, a price read and a price query.\n\n`
  )
}
