/**
 * Price rules in CEL (Common Expression Language, via @marcbachmann/cel-js). Filters see `article`
 * (`sku`, `name`, `type`, `metadata`) and must be boolean; expressions see `sales`, `fields` and
 * `article` and answer the new sales amount. Rules are parsed and type-checked once, when the
 * pricelist is written; a rule that does not compile is refused there, never at query time.
 * Mixed int/double arithmetic (`sales * 2`) is allowed, as a pricing user expects.
 *
 * Cost bounds (engine/limits.ts; docs/security.md, API4): at compile time the text's length, the
 * syntax tree's nodes and depth and the literals' elements (the parser's own limits), and only the
 * functions in `allowedFunctions`: none of them makes a value larger than its inputs, so every
 * value stays within the expression's size times the largest input (refused: `matches`, whose
 * JavaScript regular expressions can backtrack exponentially; `split`, `join`, `map`, `filter`,
 * `cel.bind` and the bytes encodings, which can double a value per call and so grow it
 * exponentially with the expression's size). At run time every evaluation of a sub-expression
 * counts against `celEvaluationStepsMax` per run, which bounds what nested comprehensions repeat.
 * @module
 */
import { Environment } from '@marcbachmann/cel-js'
import {
  celAstDepthMax,
  celAstNodesMax,
  celEvaluationStepsMax,
  celExpressionLengthMax,
  celLiteralElementsMax,
  celPricelistNodesMax,
} from './limits.js'
import { assert } from './assert.js'

/**
 * The functions and macros a rule may call: comparisons, string tests, conversions, `has`, the
 * boolean comprehensions, and the timestamp accessors. Each answers a value no larger than its
 * arguments (or a number, a boolean, a timestamp).
 */
const allowedFunctions = new Set([
  'size',
  'startsWith',
  'endsWith',
  'contains',
  'lowerAscii',
  'upperAscii',
  'trim',
  'indexOf',
  'lastIndexOf',
  'substring',
  'has',
  'all',
  'exists',
  'exists_one',
  'int',
  'uint',
  'double',
  'string',
  'bool',
  'dyn',
  'type',
  'timestamp',
  'duration',
  'getDate',
  'getDayOfMonth',
  'getDayOfWeek',
  'getDayOfYear',
  'getFullYear',
  'getHours',
  'getMilliseconds',
  'getMinutes',
  'getMonth',
  'getSeconds',
])

/** Thrown inside a run that passes `celEvaluationStepsMax`; the caller's catch turns it into `rule_error`. */
export class RuleCostError extends Error {
  override name = 'RuleCostError'
}

/** Sub-expression evaluations of the run in progress (runs are synchronous and never nest). */
let steps = 0

/**
 * Thrown inside a run when the work in progress passes the allowance `withinRuleAllowance` set:
 * the caller hands that work to a worker thread (or yields) instead of holding this thread longer.
 * Never a rule's own failure: callers that turn errors into `rule_error` rethrow it.
 */
export class RuleAllowanceExceeded extends Error {
  override name = 'RuleAllowanceExceeded'
}

/** Steps this thread may spend in the `withinRuleAllowance` call in progress (Infinity outside one). */
let allowance = Number.POSITIVE_INFINITY
/** Steps spent since that call started. */
let spent = 0

function makeEnvironment(): Environment {
  const environment = new Environment({
    unlistedVariablesAreDyn: false,
    limits: {
      maxAstNodes: celAstNodesMax,
      maxDepth: celAstDepthMax,
      maxListElements: celLiteralElementsMax,
      maxMapEntries: celLiteralElementsMax,
      maxCallArguments: 8,
    },
  })
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
    environment.registerOperator(`double ${operator} int`, (left: unknown, right: unknown) =>
      operation(toNumber(left), toNumber(right)),
    )
    environment.registerOperator(`int ${operator} double`, (left: unknown, right: unknown) =>
      operation(toNumber(left), toNumber(right)),
    )
  }
  meter(environment)
  return environment
}

/**
 * Counts every sub-expression evaluation. The library evaluates each child node through its
 * evaluator's `run` method (operators, calls, literals, and each step of a comprehension), so the
 * environment's own evaluator gets a counting `run`: it is reached through a function registered
 * for this only (`this` of a function handler is the evaluator), which rules cannot call (it is not
 * in `allowedFunctions`). Written for @marcbachmann/cel-js 8.0.0 (pinned); test/security/
 * resource-abuse.test.ts fails if an upgrade stops the counting.
 */
interface Evaluator {
  run: (ast: unknown, context: unknown) => unknown
}

function meter(environment: Environment): void {
  const captured: { evaluator: Evaluator | null } = { evaluator: null }
  environment.registerFunction('pricingCostMeter(): bool', function (this: Evaluator) {
    captured.evaluator = this
    return true
  })
  environment.evaluate('pricingCostMeter()', {})
  const found = captured.evaluator
  assert(found !== null && typeof found.run === 'function', 'CEL evaluator not found: the rule cost meter cannot count')
  const run = found.run
  found.run = function (this: unknown, ast: unknown, context: unknown) {
    if (++steps > celEvaluationStepsMax)
      throw new RuleCostError(`rule stopped after ${celEvaluationStepsMax} evaluation steps`)
    if (++spent > allowance) throw new RuleAllowanceExceeded(`more than ${allowance} rule steps on this thread`)
    return run.call(this, ast, context)
  }
}

const environment = makeEnvironment()

/** A syntax tree node of the library's parser: `op` and `args` (for `call`, `[name, args]`; for `rcall`, `[name, receiver, args]`). */
interface AstNode {
  readonly op: string
  readonly args: unknown
}

function isNode(value: unknown): value is AstNode {
  return (
    typeof value === 'object' && value !== null && typeof (value as { op?: unknown }).op === 'string' && 'args' in value
  )
}

/** The tree's node count, and the first function or macro it calls that is not allowed (or null). */
function inspect(root: AstNode): { nodes: number; refused: string | null } {
  const stack: unknown[] = [root]
  let nodes = 0
  while (stack.length > 0) {
    const value = stack.pop()
    if (Array.isArray(value)) {
      for (const item of value) stack.push(item)
      continue
    }
    if (!isNode(value)) continue
    nodes++
    if ((value.op === 'call' || value.op === 'rcall') && Array.isArray(value.args)) {
      const name = value.args[0]
      if (typeof name !== 'string' || !allowedFunctions.has(name)) return { nodes, refused: String(name) }
      stack.push(value.args.slice(1))
      continue
    }
    stack.push(value.args)
  }
  return { nodes, refused: null }
}

function refusal(name: string): string {
  if (name === 'matches')
    return 'calls matches(): regular expressions are not allowed in rules (use startsWith, endsWith, contains)'
  return `calls ${name}(), which rules may not use; allowed: ${[...allowedFunctions].join(', ')}`
}

/**
 * Starts a new budget of `celEvaluationStepsMax` steps for the runs that follow: the rules of one
 * pricelist for one SKU share one (engine/pipeline.ts), a search filter has one per article.
 */
export function startRuleBudget(): void {
  steps = 0
}

/**
 * Runs `work` (synchronous) with at most `limit` rule steps on this thread, across every budget it
 * starts; past them a run throws `RuleAllowanceExceeded`, which `work` lets through. The main
 * thread sets one around each price read and small query, so that costly rules cannot hold it
 * (http/routes/price-reads.ts); workers run without one, within the per-SKU budgets alone.
 */
export function withinRuleAllowance<T>(limit: number, work: () => T): T {
  allowance = limit
  spent = 0
  try {
    return work()
  } finally {
    allowance = Number.POSITIVE_INFINITY
    spent = 0
  }
}

/** The steps spent since the budget was started (at most one past `celEvaluationStepsMax`). */
export function ruleStepsSpent(): number {
  return steps
}

/** A parsed program whose steps count against the budget started last. */
function metered(program: (context: Record<string, unknown>) => unknown): CelProgram {
  return (context) => {
    const result = program(context)
    // `||`, `&&` and `exists`/`all` absorb an error of one branch or element (CEL semantics); a run
    // that passed the bound fails even when what was left decided its value.
    if (spent > allowance) throw new RuleAllowanceExceeded(`more than ${allowance} rule steps on this thread`)
    if (steps > celEvaluationStepsMax)
      throw new RuleCostError(`rule stopped after ${celEvaluationStepsMax} evaluation steps`)
    return result
  }
}

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

/** Syntax tree nodes of the expressions of one pricelist (or one filter) compiled so far. */
export interface NodeTally {
  nodes: number
}

function compile(text: string, path: string, expected: 'bool' | 'number', tally: NodeTally): CelProgram {
  if (text.length > celExpressionLengthMax) {
    throw new RuleCompileError(path, `expression longer than ${celExpressionLengthMax} characters`)
  }
  let program: ReturnType<Environment['parse']>
  try {
    program = environment.parse(text)
  } catch (error) {
    throw new RuleCompileError(path, `does not compile: ${firstLine(error)}`)
  }
  const { nodes, refused } = inspect(program.ast as unknown as AstNode)
  if (refused !== null) throw new RuleCompileError(path, refusal(refused))
  tally.nodes += nodes
  if (tally.nodes > celPricelistNodesMax) {
    throw new RuleCompileError(
      path,
      `makes the pricelist's rules larger than ${celPricelistNodesMax} syntax tree nodes together`,
    )
  }
  const checked = program.check() as { valid: boolean; type?: string; error?: unknown }
  if (!checked.valid) throw new RuleCompileError(path, `does not type-check: ${firstLine(checked.error)}`)
  const type = checked.type ?? 'dyn'
  const fits =
    expected === 'bool' ? type === 'bool' || type === 'dyn' : type === 'double' || type === 'int' || type === 'dyn'
  if (!fits) throw new RuleCompileError(path, `must be ${expected === 'bool' ? 'a boolean' : 'a number'}, not ${type}`)
  return metered(program as unknown as (context: Record<string, unknown>) => unknown)
}

function firstLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error)
  return text.split('\n')[0] ?? text
}

/** Compiles an article filter (empty or absent: matches every article). */
export function compileFilter(text: string | null, path = 'filter'): CelProgram | null {
  if (text === null || text.trim() === '') return null
  return compile(text, path, 'bool', { nodes: 0 })
}

export interface CompiledRule {
  readonly filter: CelProgram | null
  readonly expression: CelProgram | null
}

/** Compiles a pricelist's rules in order; throws RuleCompileError naming the failing field. */
export function compileRules(rules: readonly { filter: string | null; expression: string | null }[]): CompiledRule[] {
  const tally: NodeTally = { nodes: 0 }
  return rules.map((rule, index) => compileRule(rule, index, tally))
}

/**
 * Compiles the pricelist's rule at `index`; `tally` carries the nodes of its rules before it (a
 * writer compiles them one at a time, letting other requests run between: http/routes/pricelists.ts).
 */
export function compileRule(
  rule: { filter: string | null; expression: string | null },
  index: number,
  tally: NodeTally,
): CompiledRule {
  return {
    filter:
      rule.filter === null || rule.filter.trim() === ''
        ? null
        : compile(rule.filter, `/price_rules/${index}/filter`, 'bool', tally),
    expression:
      rule.expression === null || rule.expression.trim() === ''
        ? null
        : compile(rule.expression, `/price_rules/${index}/expression`, 'number', tally),
  }
}

/** Runs a filter; a run-time failure counts as "does not match" for searches. */
export function matches(filter: CelProgram, article: Record<string, unknown>): boolean {
  startRuleBudget()
  try {
    return filter({ article }) === true
  } catch {
    return false
  }
}
