/**
 * Checks real answers against an OpenAPI document: finds the operation of a request, checks that
 * its status is declared (not only `default`), that its media type is the declared one, and
 * validates its body with Ajv (JSON Schema 2020-12, the dialect of OpenAPI 3.1) against the schema
 * declared for that status. Schemas are checked strictly: an object that does not say otherwise
 * may hold only the properties it declares, so a field a real answer has and the document lacks is
 * found. It also records which operations were exercised.
 */
import SwaggerParser from '@apidevtools/swagger-parser'
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'
import addFormatsModule from 'ajv-formats'
import type { Answer } from './server.js'

// ajv-formats is CommonJS: under NodeNext TypeScript types its default import as the module object.
const addFormats = addFormatsModule.default

const methods = ['get', 'put', 'post', 'delete', 'patch'] as const

interface MediaTypes {
  [mediaType: string]: { schema?: Record<string, unknown> }
}

interface Operation {
  readonly id: string
  readonly method: string
  readonly template: string
  readonly pattern: RegExp
  readonly paramCount: number
  readonly responses: Record<string, { content?: MediaTypes }>
}

/**
 * A copy of a schema where every object schema that lists properties and says nothing about
 * others admits no others.
 */
function strict(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(strict)
  if (schema === null || typeof schema !== 'object') return schema
  const copy: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(schema))
    copy[key] = key === 'enum' || key === 'const' ? value : strict(value)
  const open = 'additionalProperties' in copy || 'patternProperties' in copy || 'unevaluatedProperties' in copy
  if (copy['properties'] !== undefined && !open) copy['additionalProperties'] = false
  return copy
}

function mediaTypeOf(header: string | null): string {
  return (header ?? '').split(';')[0]!.trim().toLowerCase()
}

export class ContractChecker {
  readonly #operations: Operation[] = []
  readonly #validators = new Map<string, ValidateFunction>()
  readonly #ajv = new Ajv2020({ strict: false, allErrors: true })
  readonly exercised = new Map<string, Set<number>>()

  private constructor(dereferenced: Record<string, unknown>) {
    addFormats(this.#ajv)
    const paths = dereferenced['paths'] as Record<
      string,
      Record<string, { operationId: string; responses: Operation['responses'] }>
    >
    for (const [template, item] of Object.entries(paths)) {
      for (const method of methods) {
        const op = item[method]
        if (op === undefined) continue
        const source = template.replace(/[.]/g, '\\.').replace(/\{[^}]+\}/g, '[^/]+')
        this.#operations.push({
          id: op.operationId,
          method: method.toUpperCase(),
          template,
          pattern: new RegExp(`^${source}$`),
          paramCount: (template.match(/\{/g) ?? []).length,
          responses: op.responses,
        })
      }
    }
  }

  /** A checker for `document` (left unchanged: references are resolved in a copy). */
  static async create(document: unknown): Promise<ContractChecker> {
    const dereferenced = await SwaggerParser.dereference(structuredClone(document) as never)
    return new ContractChecker(dereferenced as unknown as Record<string, unknown>)
  }

  get operationIds(): string[] {
    return this.#operations.map((op) => op.id)
  }

  /** The operation a request goes to: literal segments win over parameters, as in the router. */
  operationOf(method: string, urlPath: string): Operation | undefined {
    const path = urlPath.split('?')[0]!
    const candidates = this.#operations.filter((op) => op.method === method && op.pattern.test(path))
    return candidates.sort((left, right) => left.paramCount - right.paramCount)[0]
  }

  /**
   * Problems of one real answer (empty when it matches the document); records the operation as
   * exercised with that status.
   */
  problems(method: string, urlPath: string, answer: Answer): string[] {
    const op = this.operationOf(method, urlPath)
    if (op === undefined) return [`${method} ${urlPath} is not in the document`]
    const declared = op.responses[String(answer.status)]
    if (declared === undefined)
      return [`${op.id}: status ${answer.status} is not declared (${Object.keys(op.responses).join(', ')})`]
    const statuses = this.exercised.get(op.id) ?? new Set<number>()
    statuses.add(answer.status)
    this.exercised.set(op.id, statuses)
    const content = declared.content
    if (content === undefined)
      return answer.text === ''
        ? []
        : [`${op.id} ${answer.status}: a body the document does not declare: ${answer.text.slice(0, 200)}`]
    const mediaType = mediaTypeOf(answer.headers.get('content-type'))
    const schema = content[mediaType]?.schema
    if (schema === undefined)
      return [`${op.id} ${answer.status}: media type ${mediaType}, declared ${Object.keys(content).join(', ')}`]
    const body = mediaType === 'application/json' ? answer.body : answer.text
    const validate = this.#validator(`${op.id} ${answer.status} ${mediaType}`, schema)
    if (validate(body)) return []
    return (validate.errors ?? []).map(
      (error) =>
        `${op.id} ${answer.status}: ${error.instancePath || '/'} ${error.message} ${JSON.stringify(error.params)}`,
    )
  }

  /** Operations never exercised. */
  missing(): string[] {
    return this.#operations
      .filter((op) => !this.exercised.has(op.id))
      .map((op) => `${op.id} (${op.method} ${op.template})`)
  }

  #validator(key: string, schema: Record<string, unknown>): ValidateFunction {
    let validate = this.#validators.get(key)
    if (validate === undefined) {
      validate = this.#ajv.compile(strict(schema) as Record<string, unknown>)
      this.#validators.set(key, validate)
    }
    return validate
  }
}
