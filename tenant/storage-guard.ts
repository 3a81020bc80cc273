/**
 * Whether the data directory's file system has room for writes (SPEC errors table, 503: "(for a
 * write) storage nearly full"). The guard samples `statfs` of the data directory once a second
 * (asynchronously, off the request path) and, between samples, once per `sampleEveryBytes` that
 * commits made durable; requests read one boolean, `nearlyFull`.
 *
 * Below the reserve (`PRICING_STORAGE_RESERVE_MB`) writes answer 503 `storage_full` with
 * `Retry-After` (http/app.ts), while reads go on; background writers (FX feed, webhook positions,
 * key last-used times, history retention, automatic backups) put their writes off. The state is
 * left only once the free space is back above the reserve plus a margin, so that a disk hovering at
 * the line does not flap between refusing and admitting. Entering and leaving are logged once each.
 *
 * Why a reserve and not the last byte: LMDB writes a commit's pages copy-on-write past the end of
 * the data file, so the file grows by the commit's size (and more for B-tree splits) before the
 * old pages are free again; a failed write of those pages (ENOSPC) fails the commit, which the
 * server answers by exiting (tenant/runtime.ts). The reserve covers what is admitted between two
 * samples, the commits in flight when the state flips, and the smaller writers that keep going
 * (sign-in links, sessions, webhook registrations refused but positions kept in memory, the log).
 * @module
 */
import { statfs, statfsSync } from 'node:fs'
import type { Logger } from 'pino'
import { ApiError } from '../platform/errors.js'

/** What writers ask before they write (a plain field: its read costs nothing on the hot path). */
export interface StorageState {
  readonly nearlyFull: boolean
}

/** For tools and tests without a guard: always room. */
export const plentyOfRoom: StorageState = Object.freeze({ nearlyFull: false })

/** Seconds a refused writer waits before retrying (freeing disk space is an operator's job). */
export const storageRetryAfterS = 30

const sampleIntervalMs = 1000
const mebibyte = 1024 * 1024

export interface StorageGuardSample {
  /** Bytes an unprivileged writer may still use (statfs `bavail` x block size). */
  readonly freeBytes: number
  readonly reserveBytes: number
  readonly nearlyFull: boolean
  /** Epoch ms of the sample (0: none yet). */
  readonly sampledAtMs: number
}

export class StorageGuard implements StorageState {
  /** True while writes are refused. Written only here. */
  nearlyFull = false
  /** The last sample's free bytes (-1 before the first). */
  freeBytes = -1
  sampledAtMs = 0
  /** Free bytes the state is left at: the reserve plus an eighth of it, at most 64 MiB more. */
  readonly resumeBytes: number
  /** Durable bytes between samples that trigger one at once (a sixteenth of the reserve, 256 KiB to 64 MiB). */
  readonly sampleEveryBytes: number
  #writtenSinceSample = 0
  #sampling = false
  #timer: NodeJS.Timeout | null = null
  #failureLogged = false

  constructor(
    readonly directory: string,
    readonly reserveBytes: number,
    readonly logger: Logger,
    readonly now: () => number,
  ) {
    if (!(Number.isInteger(reserveBytes) && reserveBytes >= 0))
      throw new Error(`storage reserve must be a whole number of bytes, not ${reserveBytes}`)
    this.resumeBytes = reserveBytes + Math.min(Math.floor(reserveBytes / 8), 64 * mebibyte)
    this.sampleEveryBytes = Math.min(Math.max(Math.floor(reserveBytes / 16), 256 * 1024), 64 * mebibyte)
  }

  /** Takes a first sample at once (a start on a nearly full disk refuses writes from the first request), then one a second. */
  start(): void {
    try {
      this.#apply(freeOf(statfsSync(this.directory)))
    } catch (error) {
      this.#failed(error)
    }
    this.#timer = setInterval(() => this.sample(), sampleIntervalMs)
    this.#timer.unref()
  }

  stop(): void {
    if (this.#timer !== null) clearInterval(this.#timer)
    this.#timer = null
  }

  /** Told of each durable commit's size (storage/tenant-store.ts `onDurable`): a burst of writes samples early. */
  noteWritten(bytes: number): void {
    this.#writtenSinceSample += bytes
    if (this.#writtenSinceSample >= this.sampleEveryBytes) this.sample()
  }

  /** Samples now, unless a sample is under way. */
  sample(): void {
    if (this.#sampling) return
    this.#sampling = true
    this.#writtenSinceSample = 0
    statfs(this.directory, (error, stats) => {
      this.#sampling = false
      if (error !== null) this.#failed(error)
      else this.#apply(freeOf(stats))
    })
  }

  /** The state for /readyz and /metrics. */
  get state(): StorageGuardSample {
    return {
      freeBytes: this.freeBytes,
      reserveBytes: this.reserveBytes,
      nearlyFull: this.nearlyFull,
      sampledAtMs: this.sampledAtMs,
    }
  }

  #apply(freeBytes: number): void {
    this.freeBytes = freeBytes
    this.sampledAtMs = this.now()
    this.#failureLogged = false
    const fields = { free_bytes: freeBytes, reserve_bytes: this.reserveBytes, data_dir: this.directory }
    if (!this.nearlyFull && freeBytes < this.reserveBytes) {
      this.nearlyFull = true
      this.logger.warn(fields, 'storage nearly full: writes answer 503 storage_full until space is freed; reads go on')
    } else if (this.nearlyFull && freeBytes >= this.resumeBytes) {
      this.nearlyFull = false
      this.logger.info({ ...fields, resume_bytes: this.resumeBytes }, 'storage has room again: writes resume')
    }
  }

  /** A failed statfs keeps the last state (writes are not refused on a guess); logged once per run of failures. */
  #failed(error: unknown): void {
    if (this.#failureLogged) return
    this.#failureLogged = true
    this.logger.error(
      { err: error, data_dir: this.directory },
      'statfs of the data directory failed; the storage guard keeps its last state',
    )
  }
}

function freeOf(stats: { bavail: number; bsize: number }): number {
  return stats.bavail * stats.bsize
}

/** The answer to a write while storage is nearly full: 503 `storage_full` with `Retry-After`. */
export function storageFullError(): ApiError {
  return new ApiError(
    'storage_full',
    'Storage is nearly full: writes are refused until space is freed; reads go on',
    {},
    storageRetryAfterS,
  )
}

/**
 * Whether a root route (admin, portal, console and operator pages) is refused while storage is
 * nearly full: every method but GET and HEAD, unless the route says it is served then.
 */
export function refusedWhenNearlyFull(route: {
  readonly method: string
  readonly whenStorageNearlyFull?: 'serve'
}): boolean {
  return route.method !== 'GET' && route.whenStorageNearlyFull !== 'serve'
}
