/**
 * One process at a time on a data directory. Two servers on one directory both opened the same
 * LMDB environments, answered from two memories and lost acknowledged writes; a command-line write
 * beside a running server was never seen by it. The holder keeps `<data>/server.lock` with its pid
 * and what it is, as PostgreSQL's postmaster.pid does; a second server or a writing CLI command
 * finds it and refuses, naming the holder and what to do instead.
 *
 * The lock is a symbolic link whose target is the holder's JSON record (as Emacs's lock files are),
 * created exclusively by symlink(2). A link needs no data block when its target is short, so a
 * server still starts on a full disk (the storage guard's promise: reads go on): where the whole
 * record does not fit, the link holds just the pid and start time.
 *
 * Node has no maintained way to take an OS lock that dies with the process (flock needs a native
 * addon), so a lock left by a SIGKILL is recognised as stale instead: its pid is not alive, or it is
 * alive but is another process (a pid reused after the holder died: its start time in
 * /proc/<pid>/stat differs from the one recorded, or the machine booted since, by
 * /proc/sys/kernel/random/boot_id). A stale lock is taken over with a warning. Without /proc
 * (macOS) only the pid is checked, so a reused pid makes the start refuse until the file is
 * removed by hand, which the message says.
 * @module
 */
import { linkSync, readFileSync, readlinkSync, renameSync, rmSync, symlinkSync } from 'node:fs'
import path from 'node:path'

export const lockFileName = 'server.lock'

/** What the lock file holds. */
export interface LockHolder {
  readonly pid: number
  /** `pricing-service start`, or the CLI command that holds the directory while it writes. */
  readonly command: string
  readonly started_at: string
  /** The holder's start time in clock ticks since boot (/proc/<pid>/stat field 22), null without /proc. */
  readonly start_ticks: string | null
  readonly boot_id: string | null
  /** The server's address once it listens (the CLI's `--url`), else null. */
  readonly url: string | null
}

/** The directory is held by a live process. */
export class DataDirLockedError extends Error {
  constructor(
    readonly dataDir: string,
    readonly holder: LockHolder,
  ) {
    super(`${dataDir} is in use by ${describeHolder(holder)}`)
    this.name = 'DataDirLockedError'
  }
}

export function describeHolder(holder: LockHolder): string {
  const at = holder.url === null ? '' : `, listening at ${holder.url}`
  return `process ${holder.pid} (${holder.command}${at}, since ${holder.started_at})`
}

export interface StaleLock {
  readonly holder: LockHolder | null
  readonly reason: string
}

export class DataDirLock {
  #released = false

  private constructor(
    readonly file: string,
    private holder: LockHolder,
  ) {}

  /**
   * Takes the lock on `dataDir` (which must exist) for `command`; throws DataDirLockedError while a
   * live process holds it. `onStale` is told of a stale lock taken over.
   */
  static acquire(dataDir: string, command: string, onStale: (stale: StaleLock) => void = () => {}): DataDirLock {
    const file = path.join(dataDir, lockFileName)
    const holder: LockHolder = {
      pid: process.pid,
      command,
      started_at: new Date().toISOString(),
      start_ticks: startTicks(process.pid),
      boot_id: bootId(),
      url: null,
    }
    // Bounded: each round either takes the lock, refuses, or moves one stale file away.
    for (let attempt = 0; attempt < 5; attempt++) {
      if (createExclusive(file, holder)) return new DataDirLock(file, holder)
      const found = readHolder(file)
      if (found === 'missing') continue
      if (found === 'unreadable') {
        // Being written by a racing holder (create, then write): give it a moment.
        if (attempt < 2) {
          sleep(50)
          continue
        }
        takeOver(file, null, 'the lock file is empty or not JSON', onStale)
        continue
      }
      const dead = staleReason(found)
      if (dead === null) throw new DataDirLockedError(dataDir, found)
      takeOver(file, found, dead, onStale)
    }
    throw new Error(`${file}: could not take the data directory's lock (other processes keep racing for it)`)
  }

  /** Records the server's address in the lock, for the messages that name it. */
  noteUrl(url: string): void {
    if (this.#released) return
    const holder = { ...this.holder, url }
    const temporary = `${this.file}.${process.pid}.tmp`
    try {
      rmSync(temporary, { force: true })
      symlinkSync(JSON.stringify(holder), temporary)
      renameSync(temporary, this.file)
      this.holder = holder
    } catch (error) {
      // On a full disk the address stays out of the lock: the messages then say <host>:<port>.
      if (!outOfSpace(error)) throw error
      rmSync(temporary, { force: true })
    }
  }

  /** Removes the lock file, if it is still this process's. */
  release(): void {
    if (this.#released) return
    this.#released = true
    const found = readHolder(this.file)
    if (typeof found === 'object' && sameHolder(found, this.holder)) rmSync(this.file, { force: true })
  }
}

function createExclusive(file: string, holder: LockHolder): boolean {
  try {
    symlinkSync(JSON.stringify(holder), file)
    return true
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false
    if (!outOfSpace(error)) throw error
  }
  // A full disk: a target this short is kept in the link's inode (ext4, XFS, tmpfs).
  try {
    symlinkSync(JSON.stringify({ pid: holder.pid, start_ticks: holder.start_ticks }), file)
    return true
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false
    throw error
  }
}

function outOfSpace(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException).code
  return code === 'ENOSPC' || code === 'EDQUOT'
}

function readHolder(file: string): LockHolder | 'missing' | 'unreadable' {
  let text: string
  try {
    text = readlinkSync(file, 'utf8')
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT') return 'missing'
    // A regular file in its place (written by hand, or by an older build) is read as one.
    if (code !== 'EINVAL') throw error
    text = readFileSync(file, 'utf8')
  }
  try {
    const value = JSON.parse(text) as Partial<LockHolder>
    if (!Number.isSafeInteger(value.pid) || value.pid! <= 0) return 'unreadable'
    // The short record of a full disk names the pid and start time only.
    return {
      pid: value.pid!,
      command: value.command ?? 'pricing-service',
      started_at: value.started_at ?? 'an unknown time',
      start_ticks: value.start_ticks ?? null,
      boot_id: value.boot_id ?? null,
      url: value.url ?? null,
    }
  } catch {
    return 'unreadable'
  }
}

/** Why the recorded holder no longer runs, or null when it does. */
export function staleReason(holder: LockHolder): string | null {
  const boot = bootId()
  if (holder.boot_id !== null && boot !== null && holder.boot_id !== boot) return 'the machine has restarted since'
  try {
    process.kill(holder.pid, 0)
  } catch (error) {
    // EPERM: the pid runs as another user, so it is alive.
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return `process ${holder.pid} no longer runs`
  }
  const ticks = startTicks(holder.pid)
  if (holder.start_ticks !== null && ticks !== null && ticks !== holder.start_ticks) {
    return `process ${holder.pid} is another process now`
  }
  return null
}

/**
 * Moves a stale lock file away. The move is checked: should another process have taken the lock
 * meanwhile (its fresh file was moved instead), that file is put back and the caller tries again.
 */
function takeOver(file: string, holder: LockHolder | null, reason: string, onStale: (stale: StaleLock) => void): void {
  const aside = `${file}.stale.${process.pid}`
  try {
    renameSync(file, aside)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return
    throw error
  }
  const moved = readHolder(aside)
  const same = holder === null ? moved === 'unreadable' : typeof moved === 'object' && sameHolder(moved, holder)
  if (!same) {
    try {
      linkSync(aside, file)
    } catch {
      // A third process took the lock meanwhile: its file stays; the next round reads it.
    }
  } else {
    onStale({ holder, reason })
  }
  rmSync(aside, { force: true })
}

function sameHolder(left: LockHolder, right: LockHolder): boolean {
  return left.pid === right.pid && left.start_ticks === right.start_ticks
}

/** A process's start time in clock ticks since boot, from /proc (null where there is none). */
function startTicks(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // Field 2 (the command) may hold spaces and parentheses: count from the last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null
  } catch {
    return null
  }
}

function bootId(): string | null {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()
  } catch {
    return null
  }
}

function sleep(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)
}
