/**
 * The torture harness's reference model: what the service acknowledged, key by key, and what it
 * may hold for keys whose write was in flight when the process was killed.
 *
 * Each key (of one kind: price, article, pricelist, VAT rate, setting) has a confirmed value (the
 * canonical form of the last acknowledged write, null for absent or deleted) and a set of
 * candidates: values of writes whose outcome is unknown (the answer never came). A key has at most
 * one write in flight (writers lock it), so the order of writes to one key is the order of their
 * answers. After a restart every key is read back: the value seen must be the confirmed one or a
 * candidate; anything else is a lost (or invented) write. The value seen is then adopted, so the
 * model is exact again before the next run. Non-goal: ordering between different keys (the
 * changelog checks cover that).
 * @module
 */
export const kinds = ['price', 'article', 'pricelist', 'vat_rate', 'setting'] as const
export type Kind = (typeof kinds)[number]

/** Canonical value: a string, or null for absent/deleted. */
export type Value = string | null

interface Entry {
  confirmed: Value
  /** Values of writes with an unknown outcome (in flight at a kill, or answered 5xx). */
  candidates: Value[]
  locked: boolean
}

export interface Mismatch {
  kind: Kind
  key: string
  expected: Value
  candidates: Value[]
  observed: Value
}

export type Snapshot = ReadonlyMap<Kind, ReadonlyMap<string, Value>>

export class Model {
  readonly #tables = new Map<Kind, Map<string, Entry>>(kinds.map((kind) => [kind, new Map()]))
  /** Items acknowledged over the session (a batch counts each of its items). */
  acknowledged = 0
  /** Items refused with a 4xx other than 429, or a 503 other than a restore's (workload bugs or findings). */
  refused = 0
  /** Items whose outcome stayed unknown (in flight at a kill). */
  unknown = 0

  #entry(kind: Kind, key: string): Entry {
    const table = this.#tables.get(kind)!
    let entry = table.get(key)
    if (entry === undefined) {
      entry = { confirmed: null, candidates: [], locked: false }
      table.set(key, entry)
    }
    return entry
  }

  /** Takes the key for one write; false when a write of it is in flight. */
  lock(kind: Kind, key: string): boolean {
    const entry = this.#entry(kind, key)
    if (entry.locked) return false
    entry.locked = true
    return true
  }

  unlock(kind: Kind, key: string): void {
    this.#entry(kind, key).locked = false
  }

  /** The value the model is sure of, or undefined while the key has unresolved candidates. */
  known(kind: Kind, key: string): Value | undefined {
    const entry = this.#entry(kind, key)
    return entry.candidates.length === 0 ? entry.confirmed : undefined
  }

  acknowledge(kind: Kind, key: string, value: Value): void {
    const entry = this.#entry(kind, key)
    entry.confirmed = value
    entry.candidates = []
    this.acknowledged++
  }

  /** The write may or may not have been applied. */
  maybe(kind: Kind, key: string, value: Value): void {
    this.#entry(kind, key).candidates.push(value)
    this.unknown++
  }

  /**
   * Compares what the service answers with the model; answers the mismatch, if any, and adopts
   * the value seen either way.
   */
  check(kind: Kind, key: string, observed: Value): Mismatch | null {
    const entry = this.#entry(kind, key)
    const allowed = observed === entry.confirmed || entry.candidates.includes(observed)
    const mismatch = allowed
      ? null
      : { kind, key, expected: entry.confirmed, candidates: entry.candidates.slice(), observed }
    entry.confirmed = observed
    entry.candidates = []
    return mismatch
  }

  keys(kind: Kind): string[] {
    return [...this.#tables.get(kind)!.keys()]
  }

  /** Every key's confirmed value; only meaningful when nothing is in flight and nothing is unresolved. */
  snapshot(): Snapshot {
    const copy = new Map<Kind, Map<string, Value>>()
    for (const [kind, table] of this.#tables) {
      const values = new Map<string, Value>()
      for (const [key, entry] of table) {
        if (entry.locked || entry.candidates.length > 0) throw new Error(`snapshot with ${kind} ${key} unresolved`)
        values.set(key, entry.confirmed)
      }
      copy.set(kind, values)
    }
    return copy
  }

  /** After a completed restore: every key holds the backup's value (keys the backup lacked: absent). */
  replaceWith(snapshot: Snapshot): void {
    for (const [kind, table] of this.#tables) {
      const values = snapshot.get(kind)!
      for (const [key, entry] of table) {
        if (entry.locked) throw new Error(`restore while ${kind} ${key} is in flight`)
        entry.confirmed = values.get(key) ?? null
        entry.candidates = []
      }
    }
  }

  /** Whether any key is in flight (writers must be stopped before a restart or a snapshot). */
  get busy(): boolean {
    for (const table of this.#tables.values()) for (const entry of table.values()) if (entry.locked) return true
    return false
  }
}
