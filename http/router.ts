/**
 * A segment trie for the route table: static segments before parameters, built once, then
 * matched without allocating beyond the parameter array. Paths use `:name` for parameters.
 * @module
 */
import { assert } from '../engine/assert.js'
import { validationError } from '../platform/errors.js'

interface Node<T> {
  readonly statics: Map<string, Node<T>>
  param: Node<T> | null
  readonly handlers: Map<string, T>
}

function makeNode<T>(): Node<T> {
  return { statics: new Map(), param: null, handlers: new Map() }
}

export interface Match<T> {
  readonly route: T | null
  readonly params: string[]
  /** Methods that exist at this path (for 405), when `route` is null but the path is known. */
  readonly allowed: readonly string[]
}

const noMatch: Match<never> = { route: null, params: [], allowed: [] }

export class Router<T> {
  readonly #root = makeNode<T>()

  add(method: string, path: string, route: T): void {
    let node = this.#root
    for (const segment of path.split('/').filter((part) => part.length > 0)) {
      if (segment.startsWith(':')) {
        node.param ??= makeNode<T>()
        node = node.param
      } else {
        let next = node.statics.get(segment)
        if (next === undefined) {
          next = makeNode<T>()
          node.statics.set(segment, next)
        }
        node = next
      }
    }
    assert(!node.handlers.has(method), 'route registered twice')
    node.handlers.set(method, route)
  }

  /** Matches `segments` from index `start`; parameters are percent-decoded. */
  match(method: string, segments: readonly string[], start: number): Match<T> {
    const params: string[] = []
    const node = this.#walk(this.#root, segments, start, params)
    if (node === null) return noMatch
    const route = node.handlers.get(method) ?? (method === 'HEAD' ? node.handlers.get('GET') : undefined)
    if (route !== undefined) return { route, params, allowed: [] }
    return { route: null, params, allowed: [...node.handlers.keys()] }
  }

  #walk(node: Node<T>, segments: readonly string[], index: number, params: string[]): Node<T> | null {
    if (index === segments.length) return node.handlers.size > 0 ? node : null
    const segment = segments[index]!
    const next = node.statics.get(segment)
    if (next !== undefined) {
      const found = this.#walk(next, segments, index + 1, params)
      if (found !== null) return found
    }
    if (node.param !== null && segment.length > 0) {
      params.push(decodeSegment(segment))
      const found = this.#walk(node.param, segments, index + 1, params)
      if (found !== null) return found
      params.pop()
    }
    return null
  }
}

/**
 * A parameter that is not valid percent-encoded UTF-8 (`%ED%BF%BF`, a lone surrogate; `%E2%82`, a
 * cut sequence; `%zz`) is refused: kept as literal text it became a code nobody meant.
 */
function decodeSegment(segment: string): string {
  if (segment.indexOf('%') < 0) return segment
  try {
    return decodeURIComponent(segment)
  } catch {
    throw validationError([
      { path: 'url', message: `cannot decode '${segment.slice(0, 64)}' as percent-encoded UTF-8` },
    ])
  }
}
