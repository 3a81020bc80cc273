/**
 * Fixtures for tests of the storage layer on real LMDB environments: a temporary directory removed
 * at teardown, and log entries of articles to commit.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { Test } from 'tap'
import type { EntryContent } from '../../storage/log-entry.js'

export function temporaryDir(t: Test, prefix: string): string {
  const directory = mkdtempSync(path.join(tmpdir(), `pricing-${prefix}-`))
  t.teardown(() => rmSync(directory, { recursive: true, force: true }))
  return directory
}

/** `count` article entries with codes `<prefix>-<index>` (and `padding` characters more each). */
export function articleEntries(count: number, prefix: string, padding = 0): EntryContent[] {
  return Array.from({ length: count }, (_, index) => ({
    entityType: 'article' as const,
    changeType: 'created' as const,
    entityCode: `${prefix}-${index}${padding > 0 ? `-${'x'.repeat(padding)}` : ''}`,
    compositeKey: null,
    changedAt: 1_000 + index,
    changedBy: 'tester',
    contentHash: `${index}`.padStart(32, '0'),
  }))
}
