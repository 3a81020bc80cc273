/**
 * The fuzzer's JSON: a small tree that can say what `JSON.stringify` cannot, so that a body reaches
 * the server exactly as meant. An object is a list of entries (duplicate keys and own `__proto__`
 * keys are ordinary entries), a `RawJson` is written verbatim (numbers such as `1e400` or `-0`,
 * deep nesting, broken text), and a `Ref` names a resource of the running server (a backup id, a
 * webhook id) that is looked up when the request is sent.
 * @module
 */

/** An object as an ordered list of entries: a key may repeat, and any key is a plain key. */
export class JObject {
  constructor(readonly entries: [string, JValue][]) {}
}

/** Text written into the body as it is (never escaped or checked). */
export class RawJson {
  constructor(readonly text: string) {}
}

/** What a `Ref` names; the driver keeps the server's current ids of each kind. */
export type RefKind = 'backup' | 'webhook' | 'tenantRequest' | 'otherKey' | 'decoyKey' | 'clientId' | 'clientSecret'

/** A resource id of the running server, chosen when the request is sent (`index` modulo the ids held). */
export class Ref {
  constructor(
    readonly kind: RefKind,
    readonly index: number,
  ) {}
}

export type JValue = null | boolean | number | string | JValue[] | JObject | RawJson | Ref

/** A plain value (as fast-check makes it) as a tree; `Ref`s and trees pass through. */
export function toTree(value: unknown): JValue {
  if (value === null || typeof value === 'boolean' || typeof value === 'number' || typeof value === 'string')
    return value
  if (value instanceof JObject || value instanceof RawJson || value instanceof Ref) return value
  if (Array.isArray(value)) return value.map(toTree)
  if (typeof value === 'object')
    return new JObject(
      Object.entries(value as Record<string, unknown>)
        .filter(([, item]) => item !== undefined)
        .map(([key, item]) => [key, toTree(item)]),
    )
  return null
}

/** A copy that mutations may change without touching the original. */
export function cloneTree(value: JValue): JValue {
  if (Array.isArray(value)) return value.map(cloneTree)
  if (value instanceof JObject) return new JObject(value.entries.map(([key, item]) => [key, cloneTree(item)]))
  return value
}

/** The JSON text of a tree; `resolve` gives the text of each `Ref` (a JSON string or number). */
export function writeJson(value: JValue, resolve: (ref: Ref) => string | number): string {
  if (value === null) return 'null'
  if (typeof value === 'boolean') return value ? 'true' : 'false'
  // JSON.stringify writes NaN and Infinity as null; the fuzzer spells those as RawJson when it wants them.
  if (typeof value === 'number') return JSON.stringify(value)
  if (typeof value === 'string') return JSON.stringify(value)
  if (value instanceof RawJson) return value.text
  if (value instanceof Ref) return JSON.stringify(resolve(value))
  if (Array.isArray(value)) return `[${value.map((item) => writeJson(item, resolve)).join(',')}]`
  return `{${value.entries.map(([key, item]) => `${JSON.stringify(key)}:${writeJson(item, resolve)}`).join(',')}}`
}

/** The value as a plain string for a query parameter, a form field or a path segment. */
export function plainText(value: JValue, resolve: (ref: Ref) => string | number): string {
  if (typeof value === 'string') return value
  if (value instanceof Ref) return String(resolve(value))
  if (value instanceof RawJson) return value.text
  return writeJson(value, resolve)
}

/** Every place in the tree that holds a value: the container and the index or entry number. */
export interface Slot {
  readonly get: () => JValue
  readonly set: (value: JValue) => void
  /** The entry's key when the slot is an object entry. */
  readonly key: string | null
  readonly parent: JValue[] | JObject | null
}

/** The slots of a tree, the root first (depth-first; trees built from schemas are shallow). */
export function slotsOf(root: { value: JValue }): Slot[] {
  const slots: Slot[] = [{ get: () => root.value, set: (value) => (root.value = value), key: null, parent: null }]
  const visit = (value: JValue): void => {
    if (Array.isArray(value)) {
      value.forEach((item, index) => {
        slots.push({ get: () => value[index]!, set: (next) => (value[index] = next), key: null, parent: value })
        visit(item)
      })
    } else if (value instanceof JObject) {
      value.entries.forEach((entry) => {
        slots.push({ get: () => entry[1], set: (next) => (entry[1] = next), key: entry[0], parent: value })
        visit(entry[1])
      })
    }
  }
  visit(root.value)
  return slots
}
