/**
 * A new API key's secret between the form post that creates it and the page that shows it (POST,
 * redirect, GET), so that reloading the page shows the key again but creates no second one. The
 * secret waits in this process's memory, for one read by the session that created the key (keyed
 * by a hash of the session's secret, never by the secret itself), at most `secretWaitMs`; then it is
 * gone, and only its hash is kept (accounts/provision.ts). Nothing is written to disk.
 *
 * In a cluster the page must reach the node that created the key; the 303 follows at once, so only
 * a load balancer that spreads one browser's requests over nodes loses it (docs/api.md says so).
 * @module
 */
import { createHash } from 'node:crypto'

/** How long a new key's secret waits for its page. */
export const secretWaitMs = 5 * 60_000
/** At most this many secrets wait at once (the oldest is dropped first). */
const waitingCountMax = 1_000

interface Waiting {
  readonly secret: string
  readonly expiresMs: number
}

function slot(session: string, clientId: string): string {
  return `${createHash('sha256').update(session).digest('base64url')} ${clientId}`
}

export class NewKeySecrets {
  readonly #waiting = new Map<string, Waiting>()

  /** Keeps `secret` for one `take` by the same session, until `nowMs + secretWaitMs`. */
  put(session: string, clientId: string, secret: string, nowMs: number): void {
    for (const [key, waiting] of this.#waiting) if (waiting.expiresMs <= nowMs) this.#waiting.delete(key)
    while (this.#waiting.size >= waitingCountMax) this.#waiting.delete(this.#waiting.keys().next().value!)
    this.#waiting.set(slot(session, clientId), { secret, expiresMs: nowMs + secretWaitMs })
  }

  /** The secret, once: null for another session, after it was taken, or after it expired. */
  take(session: string, clientId: string, nowMs: number): string | null {
    const key = slot(session, clientId)
    const waiting = this.#waiting.get(key)
    this.#waiting.delete(key)
    return waiting === undefined || waiting.expiresMs <= nowMs ? null : waiting.secret
  }

  get size(): number {
    return this.#waiting.size
  }
}
