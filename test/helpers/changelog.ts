/**
 * Reading the changelog over HTTP for tests (docs/api.md "Changelog"): the entry shape, a walk over
 * every page from the start or from a cursor, and the entries recorded since a sequence. Webhook
 * deliveries carry the same entries, so the helpers that read them from a receiver's requests live
 * here too.
 */
import type { HttpsReceiver, ReceivedRequest } from './https-receiver.js'
import { expectStatus } from './price-fixtures.js'
import type { TenantClient } from './server.js'

// One definition of the setup check for every suite; it lives with the price fixtures that use it most.
export { expectStatus }

/** One changelog entry as GET /changelog and webhook deliveries answer it. */
export interface ChangelogEntry {
  sequence: number
  entity_type: string
  change_type: string
  entity_code: string
  composite_key: string | null
  changed_at: string
  changed_by: string
  content_hash: string
}

export interface ChangelogWalk {
  entries: ChangelogEntry[]
  /** How many pages the walk read, the last (has_more false) included. */
  pages: number
  /** The last page's next_cursor: where a later walk continues. */
  nextCursor: string
}

/** A log that does not end within this many pages is a bug, not a long log. */
const walkPagesMax = 1000

/**
 * Every entry from `cursor` (or from the oldest held) to the end, page by page. `query` holds the
 * other parameters (e.g. `limit=2&entity_type=article`); '' reads pages of the server's default size.
 * A status other than 200 throws.
 */
export async function walkChangelog(client: TenantClient, query = '', cursor?: string): Promise<ChangelogWalk> {
  const entries: ChangelogEntry[] = []
  let position = cursor
  for (let pages = 1; pages <= walkPagesMax; pages++) {
    const parameters = [query, position === undefined ? '' : `cursor=${encodeURIComponent(position)}`].filter(
      (part) => part !== '',
    )
    const answer = await expectStatus(client.get(`/changelog?${parameters.join('&')}`), 200, 'changelog')
    entries.push(...(answer.body.items as ChangelogEntry[]))
    position = answer.body.next_cursor as string
    if (!answer.body.has_more) return { entries, pages, nextCursor: position }
  }
  throw new Error('changelog did not end')
}

/** Every entry from the oldest held, oldest first (`query` as in walkChangelog). */
export async function readChangelog(client: TenantClient, query = ''): Promise<ChangelogEntry[]> {
  return (await walkChangelog(client, query)).entries
}

/** The sequence of the newest entry, 0 for an empty log. */
export async function lastSequence(client: TenantClient): Promise<number> {
  const entries = await readChangelog(client, 'limit=1000')
  return entries.length === 0 ? 0 : entries[entries.length - 1]!.sequence
}

/** The entries recorded after `sequence`, oldest first. */
export async function entriesAfter(client: TenantClient, sequence: number): Promise<ChangelogEntry[]> {
  return (await readChangelog(client, 'limit=1000')).filter((entry) => entry.sequence > sequence)
}

/** Every event of every delivery POST, in the order received (redeliveries included). */
export function eventsOf(requests: readonly ReceivedRequest[]): ChangelogEntry[] {
  return requests.flatMap((request) =>
    Array.isArray(request.body?.events) ? (request.body.events as ChangelogEntry[]) : [],
  )
}

export function sequencesOf(requests: readonly ReceivedRequest[]): number[] {
  return eventsOf(requests).map((event) => event.sequence)
}

/** Waits until every sequence has been received (in any POST); answers every request so far. */
export function waitForSequences(
  rx: HttpsReceiver,
  sequences: readonly number[],
  timeoutMs: number,
): Promise<ReceivedRequest[]> {
  return rx.waitFor((requests) => {
    const seen = new Set(sequencesOf(requests))
    return sequences.every((sequence) => seen.has(sequence))
  }, timeoutMs)
}
