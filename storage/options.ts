/**
 * Every lmdb-js option the service relies on, spelled out with the reason for its value.
 * @module
 */
import type { RootDatabaseOptionsWithPath } from 'lmdb'

export function environmentOptions(path: string, mapSizeBytes: number): RootDatabaseOptionsWithPath {
  const options: RootDatabaseOptionsWithPath & { safeRestore: boolean } = {
    path,
    // Always a directory holding data.mdb: lmdb-js would take a path with a dot in its last part
    // (a backup's id has one, `...12.123456Z`) for a single file.
    noSubdir: false,
    // Sub-databases: log, log index by type, entity tables, meta (and room for later ones).
    maxDbs: 16,
    // Grows on demand; this is the initial map, not a cap.
    mapSize: mapSizeBytes,
    // Flush after commit, outside the writer lock; we wait for `flushed` before acknowledging.
    overlappingSync: true,
    separateFlushed: true,
    // Never skip syncs: a 202 promises durability.
    noSync: false,
    noMetaSync: false,
    // Writes queued in one event turn share one transaction, run on lmdb-js's write thread.
    // TenantStore.commit queues all of a commit's puts synchronously: this is what makes them one
    // atomic transaction (and commits of neighbouring requests share its fsync).
    eventTurnBatching: true,
    commitDelay: 0,
    // msgpackr with shared record structures stored once per database.
    encoding: 'msgpack',
    cache: false,
    // On a crash with overlappingSync, reopen at the last flushed transaction (not in the typings).
    safeRestore: true,
  }
  return options
}
