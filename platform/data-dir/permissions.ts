/**
 * The data directory is for the service's user alone: it holds the token-signing private key
 * (unencrypted without PRICING_SECRET_KEY, enough to mint accepted tokens), every tenant's data,
 * backups, sign-in mails in the outbox and the demo credentials. With a usual umask (022) they
 * were created 0755/0644, readable by every local user.
 *
 * So the process runs with umask 077 (directories 0700, files 0600 at most, whoever creates them:
 * LMDB's native code, backups, the mailer), and at each start the tree is checked: anything group-
 * or world-accessible is narrowed to the owner and the fix is logged with the paths, rather than
 * refusing to start, because the first start after an upgrade meets such a tree from every older
 * version. The start refuses only when it cannot narrow a path (a directory owned by someone else).
 * @module
 */
import { chmodSync, lstatSync, mkdirSync, readdirSync } from 'node:fs'
import path from 'node:path'

/** The mode bits no path under the data directory may have: any access by group or others. */
const groupOrOther = 0o077
/** Paths named in the log line at most (the count says how many more). */
const pathsNamedMax = 20

export interface PermissionFix {
  /** Paths narrowed, relative to the data directory ('.' for itself), the first `pathsNamedMax`. */
  readonly paths: readonly string[]
  readonly count: number
}

/** From here on, whatever this process creates is accessible to its user alone. */
export function restrictNewFiles(): void {
  process.umask(groupOrOther)
}

/**
 * Creates `dataDir` (0700) if needed and narrows every directory and file under it that group or
 * others may access. Symbolic links are left as they are (their mode means nothing). Throws, naming
 * the path and what to do, when a path cannot be narrowed.
 */
export function secureDataDir(dataDir: string): PermissionFix {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 })
  const paths: string[] = []
  let count = 0
  const visit = (absolute: string, relative: string): void => {
    const stat = lstatSync(absolute)
    if (stat.isSymbolicLink()) return
    if ((stat.mode & groupOrOther) !== 0) {
      try {
        chmodSync(absolute, stat.mode & 0o7700)
      } catch (error) {
        const mode = (stat.mode & 0o777).toString(8)
        const cause = (error as NodeJS.ErrnoException).code ?? (error as Error).message
        throw new Error(
          `${absolute} is accessible to other users (mode ${mode}) and could not be narrowed (${cause}): ` +
            `run the service as the owner of its data directory, or chmod -R go-rwx ${dataDir}`,
        )
      }
      count++
      if (paths.length < pathsNamedMax) paths.push(relative)
    }
    if (stat.isDirectory()) {
      for (const name of readdirSync(absolute)) {
        visit(path.join(absolute, name), relative === '.' ? name : `${relative}/${name}`)
      }
    }
  }
  visit(dataDir, '.')
  return { paths, count }
}
