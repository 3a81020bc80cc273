/**
 * A tenant's backups on disk: `<data>/backups/<slug>/<id>/` holds the copied environment
 * (`data.mdb`) and `backup.json` (the record below). A backup is written as `<id>.partial`,
 * verified (it opens, and its log tail and checksum chain check out at a sequence no older than the
 * one durable when the copy started), and only then renamed to its id: a listed backup is a whole,
 * verified one, and a crash leaves at most a `.partial` directory, removed at the next start.
 *
 * Disk: before copying, the file system must have room for the tenant's current data file plus a
 * margin, and the tenant's backups together must stay within `diskMaxBytes` (0: no bound of our
 * own). Otherwise the backup is refused with `BackupRefused` (507 at the API), nothing written.
 * @module
 */
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statfsSync,
  statSync,
  writeFileSync,
  openSync,
  fsyncSync,
  closeSync,
} from 'node:fs'
import path from 'node:path'
import { TenantStore } from '../tenant-store.js'

export interface BackupRecord {
  readonly id: string
  /** ISO 8601 with microseconds, UTC. */
  readonly created: string
  readonly type: 'automatic' | 'manual'
  readonly retain: boolean
  /** The last log sequence the backup holds. */
  readonly sequence: number
  /** Bytes of its data file. */
  readonly bytes: number
}

/** Why a backup was not written: no room (507) or a failure while writing or verifying (503). */
export class BackupRefused extends Error {
  override name = 'BackupRefused'
  constructor(
    readonly reason: 'insufficient_storage' | 'failed',
    message: string,
  ) {
    super(message)
  }
}

const recordFile = 'backup.json'
const partialSuffix = '.partial'
/** Room kept free beyond the copy's size estimate (the copy is compacted, so usually smaller). */
const freeMarginBytes = 64 * 1024 * 1024

let lastMicros = 0

/** Microseconds since the epoch, strictly increasing in this process. */
function nowMicros(nowMs: number): number {
  const micros = Math.max(Math.floor(nowMs * 1000) + (Math.floor(performance.now() * 1000) % 1000), lastMicros + 1)
  lastMicros = micros
  return micros
}

/** `2026-11-25T18:33:12.123456Z` for an instant in microseconds. */
export function isoMicros(micros: number): string {
  const iso = new Date(Math.floor(micros / 1000)).toISOString()
  return `${iso.slice(0, 23)}${String(micros % 1000).padStart(3, '0')}Z`
}

/** The spec's id: `<slug>-<UTC timestamp with microseconds, colons as hyphens>`. */
export function backupId(slug: string, created: string): string {
  return `${slug}-${created.replaceAll(':', '-')}`
}

export class TenantBackups {
  constructor(
    /** `<data>/backups/<slug>`. */
    readonly directory: string,
    readonly slug: string,
    readonly diskMaxBytes: number,
  ) {
    mkdirSync(directory, { recursive: true })
    // A crash while writing leaves a partial copy: never listed, removed here.
    for (const name of readdirSync(directory)) {
      if (name.endsWith(partialSuffix)) rmSync(path.join(directory, name), { recursive: true, force: true })
    }
  }

  /** Every whole backup, newest first. */
  list(): BackupRecord[] {
    const records: BackupRecord[] = []
    for (const name of readdirSync(this.directory)) {
      if (name.endsWith(partialSuffix)) continue
      const file = path.join(this.directory, name, recordFile)
      if (!existsSync(file)) continue
      records.push(JSON.parse(readFileSync(file, 'utf8')) as BackupRecord)
    }
    return records.sort((left, right) => (left.created < right.created ? 1 : left.created > right.created ? -1 : 0))
  }

  get(id: string): BackupRecord | null {
    return this.list().find((record) => record.id === id) ?? null
  }

  /** The directory of a listed backup's environment. */
  environmentPath(id: string): string {
    return path.join(this.directory, id)
  }

  /** Bytes all listed backups take. */
  bytes(): number {
    return this.list().reduce((sum, record) => sum + record.bytes, 0)
  }

  /** Copies the tenant's environment, verifies the copy and lists it. */
  async create(store: TenantStore, type: BackupRecord['type'], retain: boolean, nowMs: number): Promise<BackupRecord> {
    const created = isoMicros(nowMicros(nowMs))
    const id = backupId(this.slug, created)
    const estimate = statSync(path.join(store.path, 'data.mdb')).size
    const free = freeBytes(this.directory)
    if (free < estimate + freeMarginBytes) {
      throw new BackupRefused(
        'insufficient_storage',
        `Backup needs about ${estimate} bytes plus ${freeMarginBytes} free; the disk has ${free}`,
      )
    }
    const used = this.bytes()
    if (this.diskMaxBytes > 0 && used + estimate > this.diskMaxBytes) {
      throw new BackupRefused(
        'insufficient_storage',
        `Backups of ${this.slug} take ${used} bytes; another of about ${estimate} would pass the bound of ${this.diskMaxBytes}`,
      )
    }
    const partial = path.join(this.directory, `${id}${partialSuffix}`)
    try {
      const { sequenceAtStart } = await store.backup(partial)
      const sequence = await verify(partial, sequenceAtStart)
      const record: BackupRecord = {
        id,
        created,
        type,
        retain,
        sequence,
        bytes: statSync(path.join(partial, 'data.mdb')).size,
      }
      writeDurably(path.join(partial, recordFile), `${JSON.stringify(record, null, 2)}\n`)
      renameSync(partial, this.environmentPath(id))
      syncDirectory(this.directory)
      return record
    } catch (error) {
      rmSync(partial, { recursive: true, force: true })
      if (error instanceof BackupRefused) throw error
      throw new BackupRefused('failed', `Backup ${id} could not be written: ${(error as Error).message}`)
    }
  }

  /** Deletes a listed backup (thinning). */
  delete(id: string): void {
    const target = this.environmentPath(id)
    if (!existsSync(path.join(target, recordFile))) return
    // Unlisted first (the record goes), then the data.
    rmSync(path.join(target, recordFile))
    rmSync(target, { recursive: true, force: true })
  }
}

/** Opens the copy as a store (which checks its log tail and chain) and answers its sequence. */
async function verify(directory: string, sequenceAtStart: number): Promise<number> {
  const copy = new TenantStore(directory)
  try {
    const sequence = copy.sequence
    if (sequence < sequenceAtStart) throw new Error(`the copy ends at sequence ${sequence}, before ${sequenceAtStart}`)
    return sequence
  } finally {
    await copy.close()
    rmSync(path.join(directory, 'lock.mdb'), { force: true })
  }
}

function freeBytes(directory: string): number {
  const stats = statfsSync(directory)
  return stats.bavail * stats.bsize
}

function writeDurably(file: string, text: string): void {
  writeFileSync(file, text)
  const descriptor = openSync(file, 'r')
  try {
    fsyncSync(descriptor)
  } finally {
    closeSync(descriptor)
  }
}

function syncDirectory(directory: string): void {
  const descriptor = openSync(directory, 'r')
  try {
    fsyncSync(descriptor)
  } finally {
    closeSync(descriptor)
  }
}
