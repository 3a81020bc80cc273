/**
 * Price rules in CEL (Common Expression Language, via @marcbachmann/cel-js). Filters see `article`
 * (`sku`, `name`, `type`, `metadata`) and must be boolean; expressions see `sales`, `fields` and
 * `article` and answer the new sales amount. Rules are parsed and type-checked once, when the
 * pricelist is written; a rule that does not compile is refused there, never at query time.
 * Mixed int/double arithmetic (`sales * 2`) is allowed, as a pricing user expects.
 * @module
 */
import { Environment } from '@marcbachmann/cel-js'
import { celExpressionLengthMax } from './limits.js'

function makeEnvironment(): Environment {
  const environment = new Environment({ unlistedVariablesAreDyn: false })
    .registerVariable('article', 'map')
    .registerVariable('sales', 'double')
    .registerVariable('fields', 'map')
  const toNumber = (value: unknown): number => (typeof value === 'bigint' ? Number(value) : (value as number))
  const operations: Record<string, (left: number, right: number) => number> = {
    '+': (left, right) => left + right,
    '-': (left, right) => left - right,
    '*': (left, right) => left * right,
    '/': (left, right) => left / right,
  }
  for (const [operator, operation] of Object.entries(operations)) {
    environment.registerOperator(`double ${operator} int`, (left: unknown, right: unknown) => operation(toNumber(left), toNumber(right)))
    environment.registerOperator(`int ${operator} double`, (left: unknown, right: unknown) => operation(toNumber(left), toNumber(right)))
  }
  return environment
}

const environment = makeEnvironment()

export type CelProgram = (context: Record<string, unknown>) => unknown

export class RuleCompileError extends Error {
  override name = 'RuleCompileError'
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(message)
  }
}

function compile(text: string, path: string, expected: 'bool' | 'number'): CelProgram {
  if (text.length > celExpressionLengthMax) {
    throw new RuleCompileError(path, `expression longer than ${celExpressionLengthMax} characters`)
  }
  let program: ReturnType<Environment['parse']>
  try {
    program = environment.parse(text)
  } catch (error) {
    throw new RuleCompileError(path, `does not compile: ${firstLine(error)}`)
  }
  const checked = program.check() as { valid: boolean; type?: string; error?: unknown }
  if (!checked.valid) throw new RuleCompileError(path, `does not type-check: ${firstLine(checked.error)}`)
  const type = checked.type ?? 'dyn'
  const fits = expected === 'bool' ? type === 'bool' || type === 'dyn' : type === 'double' || type === 'int' || type === 'dyn'
  if (!fits) throw new RuleCompileError(path, `must be ${expected === 'bool' ? 'a boolean' : 'a number'}, not ${type}`)
  return program as unknown as CelProgram
}

function firstLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error)
  return text.split('\n')[0] ?? text
}

/** Compiles an article filter (empty or absent: matches every article). */
export function compileFilter(text: string | null, path = 'filter'): CelProgram | null {
  if (text === null || text.trim() === '') return null
  return compile(text, path, 'bool')
}

export interface CompiledRule {
  readonly filter: CelProgram | null
  readonly expression: CelProgram | null
}

/** Compiles a pricelist's rules in order; throws RuleCompileError naming the failing field. */
export function compileRules(rules: readonly { filter: string | null; expression: string | null }[]): CompiledRule[] {
  return rules.map((rule, index) => ({
    filter: compileFilter(rule.filter, `/price_rules/${index}/filter`),
    expression:
      rule.expression === null || rule.expression.trim() === ''
        ? null
        : compile(rule.expression, `/price_rules/${index}/expression`, 'number'),
  }))
}

/** Runs a filter; a run-time failure counts as "does not match" for searches. */
export function matches(filter: CelProgram, article: Record<string, unknown>): boolean {
  try {
    return filter({ article }) === true
  } catch {
    return false
  }
}
