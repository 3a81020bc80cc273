/**
 * Bad input: mutations of a valid JSON tree (wrong types, missing fields, huge strings and arrays,
 * deep nesting, `__proto__` and `constructor` keys, number edge cases, odd text, duplicate keys)
 * and of the body's bytes (truncation, invalid UTF-8, a byte-order mark, trailing garbage, other
 * encodings). Each mutation is data drawn by fast-check and applied when the request is built, so
 * a seed gives the same requests every time.
 * @module
 */
import fc from 'fast-check'
import { cloneTree, JObject, RawJson, slotsOf, writeJson, type JValue } from './json.js'

/** Number tokens written verbatim: beyond double range, negative zero, tiny, exact-integer edges. */
export const numberTokens = [
  '1e400',
  '-1e400',
  '1e-400',
  '-0',
  '-0.0',
  '0.00005',
  '0.00004999',
  '0.000051',
  '9007199254740993',
  '-9007199254740993',
  '100000000000.00001',
  '123456789012345678901234567890',
  '1E2',
  '0e0',
  '1.0000000000000000001',
  '5e-324',
  '1.7976931348623157e308',
]
/** Numbers as text, which some fields accept (amounts) and most must refuse. */
export const numericStrings = [
  ' 12 ',
  '12 ',
  ' 12',
  '1e3',
  '0x10',
  '1_000',
  'NaN',
  'Infinity',
  '-Infinity',
  '-',
  '',
  '١٢',
  '12,5',
  '+5',
  '.5',
  '5.',
  '00012',
  '1e400',
  '-0',
  '0.00005',
  '12\u00a0',
  '\t7',
]
/** Text that has broken parsers, templates, paths and encoders before. */
export const oddStrings = [
  '\u0000',
  'a\u0000b',
  '\ud800',
  '\udfff',
  'a\ud83dz',
  '😀'.repeat(40),
  '\u202egnp.exe',
  '\u2028\u2029',
  '\u200b',
  'e\u0301',
  '\ufeff',
  '%00',
  '%ff',
  '../../etc/passwd',
  '<script>alert(1)</script>',
  "'; DROP TABLE x; --",
  '${{7*7}}',
  '{{7*7}}',
  '\\',
  '"',
  '\r\n\r\nX-Injected: 1',
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  'valueOf',
  '0',
  '-1',
  'null',
  'undefined',
  'true',
  ' ',
  '',
]
/** Keys that reach Object.prototype when code indexes plain objects. */
export const protoKeys = [
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  'valueOf',
  '__defineGetter__',
  'isPrototypeOf',
]
/** Dates that are almost dates. */
export const oddDates = [
  '2024-02-30',
  '2024-13-01T00:00:00Z',
  '0000-01-01',
  '9999-12-31T23:59:59Z',
  '+275760-09-13T00:00:00Z',
  '-000001-01-01T00:00:00Z',
  '2024-01-01T00:00:00',
  '2024-01-01T24:00:00Z',
  '2024-01-01T00:00:60Z',
  ' 2024-01-01',
  '2024-01-01T00:00:00.123456789Z',
  '1970-01-01T00:00:00-00:00',
  '2024-W01',
  '2024-1-1',
  '2024-01-01T00:00:00+25:00',
  '2024-01-01t00:00:00z',
  '1e400',
  '',
]
/** Values of every JSON type, to put where another type belongs. */
const otherTypes: JValue[] = [
  0,
  -1,
  1.5,
  '',
  'x',
  true,
  false,
  null,
  [],
  new JObject([]),
  [1, 'a', null],
  ['a'],
  new JObject([['a', 1]]),
]

export type TreeMutation =
  | { readonly kind: 'drop'; readonly at: number }
  | { readonly kind: 'retype'; readonly at: number; readonly choice: number }
  | { readonly kind: 'hugeString'; readonly at: number; readonly length: number; readonly text: string }
  | { readonly kind: 'hugeArray'; readonly at: number; readonly count: number }
  | { readonly kind: 'deep'; readonly at: number; readonly depth: number; readonly objects: boolean }
  | {
      readonly kind: 'protoKey'
      readonly at: number
      readonly key: string
      readonly choice: number
      readonly rename: boolean
    }
  | { readonly kind: 'number'; readonly at: number; readonly token: string; readonly asString: boolean }
  | { readonly kind: 'string'; readonly at: number; readonly text: string }
  | { readonly kind: 'date'; readonly at: number; readonly text: string }
  | { readonly kind: 'extraField'; readonly at: number; readonly key: string }
  | { readonly kind: 'duplicateKey'; readonly at: number; readonly choice: number }
  | { readonly kind: 'empty'; readonly at: number }

/** Where a mutation applies: a fraction of the way through the tree's slots. */
const at = fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true })

/** Sizes: mostly just past the usual limits, sometimes far past them (the body limit is 8 MiB). */
const stringLength = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom(65, 257, 1025, 4097, 65_537) },
  { weight: 2, arbitrary: fc.constantFrom(1_000_000, 3_000_000) },
  { weight: 1, arbitrary: fc.constant(9_000_000) },
)
const arrayCount = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom(65, 101, 1001, 2501) },
  { weight: 1, arbitrary: fc.constantFrom(10_001, 100_001) },
)
const depth = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(10, 64, 100, 1000) },
  { weight: 2, arbitrary: fc.constantFrom(10_000, 100_000) },
  { weight: 1, arbitrary: fc.constant(1_000_000) },
)

export const treeMutation: fc.Arbitrary<TreeMutation> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('drop' as const), at }) },
  {
    weight: 4,
    arbitrary: fc.record({ kind: fc.constant('retype' as const), at, choice: fc.nat(otherTypes.length - 1) }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('hugeString' as const),
      at,
      length: stringLength,
      text: fc.constantFrom('x', 'é', '😀', '\u0000', ' '),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('hugeArray' as const), at, count: arrayCount }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('deep' as const), at, depth, objects: fc.boolean() }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('protoKey' as const),
      at,
      key: fc.constantFrom(...protoKeys),
      choice: fc.nat(otherTypes.length - 1),
      rename: fc.boolean(),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('number' as const),
      at,
      token: fc.constantFrom(...numberTokens, ...numericStrings),
      asString: fc.boolean(),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant('string' as const), at, text: fc.constantFrom(...oddStrings) }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('date' as const), at, text: fc.constantFrom(...oddDates) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('extraField' as const),
      at,
      key: fc.constantFrom('unknown', 'id', 'sequence', 'tenant', 'tid', 'admin'),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('duplicateKey' as const), at, choice: fc.nat(otherTypes.length - 1) }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('empty' as const), at }) },
)

function isNumberToken(token: string): boolean {
  return /^-?\d/.test(token)
}

/** Applies mutations to a copy of `value`; answers the mutated tree. */
export function mutateTree(value: JValue, mutations: readonly TreeMutation[]): JValue {
  const root = { value: cloneTree(value) }
  for (const mutation of mutations) applyOne(root, mutation)
  return root.value
}

function applyOne(root: { value: JValue }, mutation: TreeMutation): void {
  const slots = slotsOf(root)
  const slot = slots[Math.floor(mutation.at * slots.length)]!
  const current = slot.get()
  switch (mutation.kind) {
    case 'drop': {
      const parent = slot.parent
      const position =
        parent instanceof JObject
          ? parent.entries.findIndex((entry) => entry[0] === slot.key && entry[1] === current)
          : Array.isArray(parent)
            ? parent.indexOf(current)
            : -1
      if (parent instanceof JObject && position >= 0) parent.entries.splice(position, 1)
      else if (Array.isArray(parent) && position >= 0) parent.splice(position, 1)
      else if (parent === null) root.value = null
      return
    }
    case 'retype':
      slot.set(cloneTree(otherTypes[mutation.choice]!))
      return
    case 'hugeString':
      slot.set(mutation.text.repeat(Math.ceil(mutation.length / mutation.text.length)))
      return
    case 'hugeArray': {
      const item = Array.isArray(current) && current.length > 0 ? current[0]! : current
      // Written at once, as text: a later mutation must not grow one item that every copy shares.
      // At most about 12 MB of copies: past the body limit already, without building hundreds of MB.
      const text = writeJson(item, () => '""')
      const count = Math.min(mutation.count, Math.ceil(12_000_000 / (text.length + 1)))
      slot.set(new RawJson(`[${new Array<string>(count).fill(text).join(',')}]`))
      return
    }
    case 'deep': {
      const [open, close] = mutation.objects ? ['{"a":', '}'] : ['[', ']']
      slot.set(new RawJson(open.repeat(mutation.depth) + '1' + close.repeat(mutation.depth)))
      return
    }
    case 'protoKey': {
      const target = current instanceof JObject ? current : slot.parent instanceof JObject ? slot.parent : null
      if (target === null) {
        slot.set(new JObject([[mutation.key, cloneTree(otherTypes[mutation.choice]!)]]))
      } else if (mutation.rename && target.entries.length > 0) {
        target.entries[mutation.choice % target.entries.length]![0] = mutation.key
      } else {
        target.entries.push([mutation.key, cloneTree(otherTypes[mutation.choice]!)])
      }
      return
    }
    case 'number':
      slot.set(mutation.asString || !isNumberToken(mutation.token) ? mutation.token : new RawJson(mutation.token))
      return
    case 'string':
      slot.set(mutation.text)
      return
    case 'date':
      slot.set(mutation.text)
      return
    case 'extraField': {
      const target = current instanceof JObject ? current : slot.parent instanceof JObject ? slot.parent : null
      if (target !== null) target.entries.push([mutation.key, 'x'])
      return
    }
    case 'duplicateKey': {
      const target = current instanceof JObject ? current : slot.parent instanceof JObject ? slot.parent : null
      if (target !== null && target.entries.length > 0) {
        const [key, item] = target.entries[mutation.choice % target.entries.length]!
        // The first copy carries another value; which one a parser keeps is its own choice.
        target.entries.unshift([key, cloneTree(otherTypes[mutation.choice]!)])
        target.entries.push([key, cloneTree(item)])
      }
      return
    }
    case 'empty':
      slot.set(Array.isArray(current) ? [] : current instanceof JObject ? new JObject([]) : '')
      return
  }
}

export type ByteMutation =
  | { readonly kind: 'truncate'; readonly at: number }
  | { readonly kind: 'invalidUtf8'; readonly at: number; readonly bytes: readonly number[] }
  | { readonly kind: 'bom' }
  | { readonly kind: 'trailing'; readonly text: string }
  | { readonly kind: 'utf16' }
  | { readonly kind: 'randomBytes'; readonly bytes: Uint8Array }
  | { readonly kind: 'padding'; readonly length: number }

/** Byte sequences that are not UTF-8: a lone continuation, overlong forms, surrogates, past U+10FFFF, cut short. */
export const invalidUtf8: readonly (readonly number[])[] = [
  [0xff],
  [0xfe, 0xff],
  [0x80],
  [0xc0, 0xaf],
  [0xe0, 0x80, 0xaf],
  [0xed, 0xa0, 0x80],
  [0xed, 0xbf, 0xbf],
  [0xf4, 0x90, 0x80, 0x80],
  [0xe2, 0x82],
  [0xf0, 0x9f, 0x98],
  [0xc3],
]

export const byteMutation: fc.Arbitrary<ByteMutation> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('truncate' as const), at }) },
  {
    weight: 4,
    arbitrary: fc.record({ kind: fc.constant('invalidUtf8' as const), at, bytes: fc.constantFrom(...invalidUtf8) }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('bom' as const) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('trailing' as const),
      text: fc.constantFrom('x', '}', ']', ',', '{}', '\u0000', ' \n'),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('utf16' as const) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('randomBytes' as const),
      bytes: fc.uint8Array({ minLength: 1, maxLength: 64 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('padding' as const), length: fc.constantFrom(1000, 100_000, 2_000_000) }),
  },
)

/** Applies a byte mutation to a body. Invalid UTF-8 goes inside a string when there is one. */
export function mutateBytes(body: Buffer, mutation: ByteMutation): Buffer {
  switch (mutation.kind) {
    case 'truncate':
      return body.subarray(0, Math.floor(mutation.at * body.length))
    case 'invalidUtf8': {
      const quotes: number[] = []
      for (let index = 0; index < body.length; index++) if (body[index] === 0x22) quotes.push(index + 1)
      const position =
        quotes.length > 0 ? quotes[Math.floor(mutation.at * quotes.length)]! : Math.floor(mutation.at * body.length)
      return Buffer.concat([body.subarray(0, position), Buffer.from(mutation.bytes), body.subarray(position)])
    }
    case 'bom':
      return Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), body])
    case 'trailing':
      return Buffer.concat([body, Buffer.from(mutation.text, 'utf8')])
    case 'utf16':
      return Buffer.from(body.toString('utf8'), 'utf16le')
    case 'randomBytes':
      return Buffer.from(mutation.bytes)
    case 'padding':
      return Buffer.concat([Buffer.alloc(mutation.length, 0x20), body])
  }
}
