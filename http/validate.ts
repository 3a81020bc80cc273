/**
 * Request validation: TypeBox schemas compiled once (on first use) into validators whose failures
 * become `validation_failed` errors with `details: [{path, message}]`.
 * @module
 */
import { FormatRegistry, type TSchema } from '@sinclair/typebox'
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler'
import { parseInstant, instantMax, instantMin } from '../engine/time.js'
import { validationError, type ErrorDetail } from '../platform/errors.js'

FormatRegistry.Set('date-time', (value) => {
  const ms = parseInstant(value)
  return !Number.isNaN(ms) && ms >= instantMin && ms <= instantMax
})
FormatRegistry.Set('date', (value) => /^\d{4}-\d{2}-\d{2}$/.test(value) && !Number.isNaN(parseInstant(value)))

/** Code points a code may not hold: controls (Cc), format characters (Cf) and lone surrogates (Cs). */
const codeRefused = /[\p{Cc}\p{Cf}\p{Cs}]/u

/**
 * The `code` format (schemas.ts Code). Printable ASCII, nearly every code, passes a plain loop;
 * only a code with other characters pays for the Unicode property test. Unassigned code points
 * (Cn) are allowed: which are unassigned depends on the Unicode version of the Node that runs,
 * and two nodes of a cluster must answer one request alike.
 */
export function isCode(value: string): boolean {
  for (let index = 0; index < value.length; index++) {
    const unit = value.charCodeAt(index)
    if (unit < 0x20 || unit > 0x7e) return !codeRefused.test(value)
  }
  return true
}
FormatRegistry.Set('code', isCode)

const compiled = new WeakMap<TSchema, TypeCheck<TSchema>>()

function checker(schema: TSchema): TypeCheck<TSchema> {
  let check = compiled.get(schema)
  if (check === undefined) {
    check = TypeCompiler.Compile(schema)
    compiled.set(schema, check)
  }
  return check
}

/** Compiles now (at module load of the route files), so no request pays for it. */
export function precompile(schema: TSchema | undefined): void {
  if (schema !== undefined) checker(schema)
}

const detailsMax = 20

export function detailsOf(schema: TSchema, value: unknown, prefix = ''): ErrorDetail[] {
  const details: ErrorDetail[] = []
  for (const error of checker(schema).Errors(value)) {
    details.push({ path: prefix + error.path, message: describe(error.message, error.schema, error.value) })
    if (details.length >= detailsMax) break
  }
  return details
}

function describe(message: string, schema: TSchema, value: unknown): string {
  if (schema.format === 'date-time') return 'Expected an RFC 3339 date-time with offset, or a date (yyyy-MM-dd)'
  if (schema.format === 'code')
    return 'Expected a code without control characters, format characters (Unicode Cc, Cf) or lone surrogates'
  // A number literal no double holds arrives as its text (./json-body.ts): say why it is refused here.
  if (typeof value === 'string' && /^-?\d[\d.eE+-]{15,}$/.test(value)) {
    if (schema.type === 'number' || schema.type === 'integer') {
      return `${message}: a number of more than 15 significant digits is read exactly only where the API takes decimals`
    }
    const lengthMax = textLengthMax(schema)
    if (lengthMax !== null && value.length > lengthMax) {
      return `Expected a decimal of at most ${lengthMax} characters (a number literal is read from its text)`
    }
  }
  return message
}

/** The maxLength of a string branch of a (nested) union, or null. */
function textLengthMax(schema: TSchema): number | null {
  if (schema.type === 'string') return typeof schema.maxLength === 'number' ? schema.maxLength : null
  for (const branch of (schema.anyOf as TSchema[] | undefined) ?? []) {
    const found = textLengthMax(branch)
    if (found !== null) return found
  }
  return null
}

/** Answers the value when it matches the schema, else throws a 400 with details. */
export function validate<T>(schema: TSchema, value: unknown, prefix = ''): T {
  if (checker(schema).Check(value)) return value as T
  throw validationError(detailsOf(schema, value, prefix))
}

export function isValid(schema: TSchema, value: unknown): boolean {
  return checker(schema).Check(value)
}

/**
 * Query strings: convert text to the schema's types, then validate. Only exact spellings convert
 * (integers as plain digits, booleans as `true`/`false`); anything else stays text and fails
 * validation with 400, so `page=1.5` or `limit=1e3` is refused rather than silently truncated.
 */
export function validateQuery<T>(schema: TSchema, raw: Record<string, string>): T {
  const properties = (schema as { properties?: Record<string, TSchema> }).properties ?? {}
  const converted: Record<string, unknown> = {}
  for (const [name, text] of Object.entries(raw)) {
    const type = properties[name]?.type
    if (type === 'integer' && /^-?\d{1,15}$/.test(text)) converted[name] = Number(text)
    else if (type === 'number' && /^-?\d{1,15}(\.\d+)?$/.test(text)) converted[name] = Number(text)
    else if (type === 'boolean' && (text === 'true' || text === 'false')) converted[name] = text === 'true'
    else converted[name] = text
  }
  return validate<T>(schema, converted, 'query')
}
