/**
 * Pricelist writes and soft deletes as use cases (./core.ts). A definition is versioned when it is
 * written (from now on); its start_date and end_date are only its activity window. Rules are
 * compiled before the batch is planned (on a price worker when one takes them), so a rule that does
 * not compile never reaches the price engine; the currency must be ISO 4217 (and active when the
 * write assigns it); a parent must exist, and the chain may neither loop nor pass pricelistDepthMax.
 * @module
 */
import { setImmediate as nextTurn } from 'node:timers/promises'
import type { Catalog, Change, Metadata, PriceRule, Pricelist, VatMode } from '../../engine/catalog.js'
import { isIso4217 } from '../../engine/currencies.js'
import { pricelistDepthMax } from '../../engine/limits.js'
import { compileRule, RuleCompileError, type NodeTally } from '../../engine/rules.js'
import { parseInstant } from '../../engine/time.js'
import { QueryPoolBusy } from '../../workers/pool.js'
import { applyChange, catalogQuota, createsLiveKey, deleteKeys, type DeleteInput } from './catalog.js'
import {
  applyBatch,
  invalid,
  Refusal,
  type EntityWriter,
  type ItemOutcome,
  type WriteContext,
  type WriteTarget,
} from './core.js'

/** One pricelist write, its shape checked by the edge (dates valid instants). */
export interface PricelistInput {
  readonly code: string
  readonly currency_code: string
  readonly vat_mode?: VatMode | null
  readonly name?: string | null
  readonly description?: string | null
  readonly parent_code?: string | null
  readonly start_date?: string | null
  readonly end_date?: string | null
  readonly metadata?: Metadata
  readonly price_rules?: readonly {
    readonly code?: string | null
    readonly description?: string | null
    readonly expression?: string | null
    readonly filter?: string | null
    readonly updated_by?: string | null
  }[]
}

function optionalInstant(text: string | undefined | null): number | null {
  return text === undefined || text === null ? null : parseInstant(text)
}

function toPricelist(input: PricelistInput, actor: string): Pricelist {
  return {
    currency_code: input.currency_code,
    vat_mode: input.vat_mode ?? null,
    name: input.name ?? null,
    description: input.description ?? null,
    parent_code: input.parent_code ?? null,
    start_date: optionalInstant(input.start_date),
    end_date: optionalInstant(input.end_date),
    metadata: input.metadata ?? {},
    price_rules: (input.price_rules ?? []).map(
      (rule): PriceRule => ({
        code: rule.code ?? null,
        description: rule.description ?? null,
        expression: rule.expression ?? null,
        filter: rule.filter ?? null,
        updated_by: rule.updated_by ?? actor,
      }),
    ),
  }
}

/**
 * Refuses an unknown currency, and an inactive one when the write assigns it (a new pricelist, or a
 * switch of currency): pricelists already on a currency keep working after it is deactivated.
 */
function currencyRefusal(
  catalog: Catalog,
  pricelist: Pricelist,
  existing: Pricelist | null,
  nowMs: number,
): Refusal | null {
  const currency = pricelist.currency_code
  if (!isIso4217(currency)) {
    const message = `Currency ${currency} is not an ISO 4217 code`
    return new Refusal({ status: 'currency_unknown', message, path: '/currency_code', problem: 'not an ISO 4217 code' })
  }
  if (existing?.currency_code === currency) return null
  if (catalog.get('currency', currency, nowMs)?.is_active === false) {
    const message = `Currency ${currency} is inactive and cannot be assigned to a pricelist`
    return new Refusal({ status: 'currency_inactive', message, path: '/currency_code', problem: 'inactive currency' })
  }
  return null
}

function shapeRefusal(pricelist: Pricelist): Refusal | null {
  if (pricelist.vat_mode === null && pricelist.parent_code === null) {
    return invalid('/vat_mode', 'required on a top-level pricelist (NET or GROSS)')
  }
  if (pricelist.start_date !== null && pricelist.end_date !== null && pricelist.end_date <= pricelist.start_date) {
    return invalid('/end_date', 'must be after start_date')
  }
  return null
}

/**
 * Main-thread time a write may spend compiling rules before it lets other requests run, when no
 * worker takes them (none, or their queue full): a pricelist's rules take up to a few milliseconds
 * to compile (2,048 syntax tree nodes), a batch of them much more, so they are compiled one rule at
 * a time here, with a turn of the event loop whenever this much time has passed.
 */
const compileSliceMs = 0.5

/**
 * The checks of a pricelist that need no state, its rules compiled included (rule_invalid): done
 * before the write is planned. Compiling is the costly part of a write, so a price worker does it,
 * below the main thread's priority (test/security/resource-abuse.test.ts, the compile floods); the
 * main thread compiles each version again when it first prices with it.
 */
async function bodyRefusal(tenant: WriteTarget, input: PricelistInput, actor: string): Promise<Refusal | null> {
  const pricelist = toPricelist(input, actor)
  const shape = shapeRefusal(pricelist)
  if (shape !== null || pricelist.price_rules.length === 0) return shape
  const rules = pricelist.price_rules.map((rule) => ({ filter: rule.filter, expression: rule.expression }))
  let refusal: { path: string; message: string } | null
  try {
    if (tenant.queryPool === null) throw new QueryPoolBusy('no price workers')
    refusal = await tenant.queryPool.checkRules(rules)
  } catch (error) {
    if (!(error instanceof QueryPoolBusy)) throw error
    refusal = await compileInTurns(rules)
  }
  if (refusal === null) return null
  const message = `Price rule ${refusal.path} ${refusal.message}`
  return new Refusal({ status: 'rule_invalid', message, path: refusal.path, problem: refusal.message })
}

/** Compiles rules here, one at a time, yielding every `compileSliceMs`; answers the first refusal. */
async function compileInTurns(
  rules: readonly { filter: string | null; expression: string | null }[],
): Promise<{ path: string; message: string } | null> {
  const tally: NodeTally = { nodes: 0 }
  let sliceStarted = performance.now()
  for (const [index, rule] of rules.entries()) {
    try {
      compileRule(rule, index, tally)
    } catch (error) {
      if (!(error instanceof RuleCompileError)) throw error
      return { path: error.path, message: error.message }
    }
    if (performance.now() - sliceStarted > compileSliceMs) {
      await nextTurn()
      sliceStarted = performance.now()
    }
  }
  return null
}

/**
 * Refuses a parent that is not live now, a parent chain that comes back to `code`, and a chain
 * (ancestors, this pricelist and its deepest descendants) longer than pricelistDepthMax.
 */
function parentRefusal(catalog: Catalog, code: string, parentCode: string | null, nowMs: number): Refusal | null {
  if (parentCode === null) return null
  if (catalog.view('pricelist', parentCode, nowMs) === null)
    return invalid('/parent_code', `pricelist ${parentCode} does not exist`)
  let length = 1
  let current: string | null = parentCode
  while (current !== null) {
    if (current === code) {
      return new Refusal({
        status: 'pricelist_cycle',
        message: `Pricelist ${code} would be its own ancestor (through ${parentCode})`,
      })
    }
    length++
    if (length > pricelistDepthMax) return depthRefusal(code)
    current = catalog.get('pricelist', current, nowMs)?.parent_code ?? null
  }
  if (catalog.exists('pricelist', code) && length + descendantLevels(catalog, code, nowMs) > pricelistDepthMax) {
    return depthRefusal(code)
  }
  return null
}

function depthRefusal(code: string): Refusal {
  const message = `Pricelist ${code}: inheritance chains are limited to ${pricelistDepthMax} pricelists`
  return new Refusal({ status: 'pricelist_cycle', message })
}

/** Levels of live descendants below `code` (0 when it has no children), counted up to the bound. */
function descendantLevels(catalog: Catalog, code: string, at: number): number {
  const children = new Map<string, string[]>()
  for (const [key, view] of catalog.viewsAt('pricelist', at)) {
    const parent = view.value.parent_code
    if (parent === null) continue
    const list = children.get(parent)
    if (list === undefined) children.set(parent, [key])
    else list.push(key)
  }
  let level: string[] = [code]
  let levels = 0
  while (levels <= pricelistDepthMax) {
    const next = level.flatMap((key) => children.get(key) ?? [])
    if (next.length === 0) break
    levels++
    level = next
  }
  return levels
}

/** How to write pricelists (their rules checked before): shape, currency, parent, then the quota. */
export function pricelistWriter(tenant: WriteTarget, context: WriteContext): EntityWriter<PricelistInput, Change> {
  const { nowMs, actor } = context
  const catalog = tenant.catalog
  return {
    plan: (input) => {
      const pricelist = toPricelist(input, actor)
      const refusal =
        shapeRefusal(pricelist) ??
        currencyRefusal(catalog, pricelist, catalog.get('pricelist', input.code, nowMs), nowMs) ??
        parentRefusal(catalog, input.code, pricelist.parent_code, nowMs)
      return refusal ?? catalog.plan('pricelist', input.code, pricelist, nowMs, nowMs, actor)
    },
    // Earlier items are applied already, so the live count includes them.
    quota: (change) => (createsLiveKey(tenant, change) ? catalogQuota(tenant, 'pricelist', 'pricelists', 1) : null),
    // Later items (a child after its parent, a repeat of a code) plan against this one.
    apply: (change, applied) => applyChange(tenant, change, applied),
  }
}

/**
 * Writes pricelists (each item a PricelistInput or the refusal of its shape); an outcome per item.
 * Every item's rules are compiled first, in turns, then the items are planned in one go, in order.
 */
export async function writePricelists(
  tenant: WriteTarget,
  context: WriteContext,
  items: readonly (PricelistInput | Refusal)[],
): Promise<ItemOutcome[]> {
  return applyBatch(tenant, await checkPricelistBodies(tenant, context, items), pricelistWriter(tenant, context))
}

/**
 * The part of a pricelist write that may wait (its rules compiled, in turns or on a worker): each
 * item, or why its body is refused. `pricelistWriter` then plans the items in one turn.
 */
export async function checkPricelistBodies(
  tenant: WriteTarget,
  context: WriteContext,
  items: readonly (PricelistInput | Refusal)[],
): Promise<(PricelistInput | Refusal)[]> {
  const checked: (PricelistInput | Refusal)[] = []
  for (const item of items)
    checked.push(item instanceof Refusal ? item : ((await bodyRefusal(tenant, item, context.actor)) ?? item))
  return checked
}

/** Soft-deletes pricelists at their instant; one not live then is refused (not_found). */
export function deletePricelists(
  tenant: WriteTarget,
  context: WriteContext,
  items: readonly (DeleteInput | Refusal)[],
): Promise<ItemOutcome[]> {
  return deleteKeys(tenant, context, { type: 'pricelist', what: (code) => `Pricelist ${code}`, items })
}
