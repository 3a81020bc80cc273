/**
 * A dry run (POST /price/simulate) plans its writes in slices across turns of the event loop, so
 * that a simulation of 1,000 writes does not hold the main thread (tenant/simulate/dry-run.ts). Its
 * copy reads the live tenant, so these tests land real writes between its slices, on a real
 * TenantRuntime over LMDB: the real write must show in the simulation's answer (not lost to it), no
 * state half before and half after it may be read (the dry run starts over), the simulation must not
 * leak into the tenant, and the sliced plan must answer what planning in one turn answers, refusals
 * included. Amounts: RETAIL is NET in SE at 25%.
 */
import { setImmediate as nextTurn } from 'node:timers/promises'
import t, { type Test } from 'tap'
import type { PriceVersion } from '../../engine/prices.js'
import { createLogger } from '../../platform/log.js'
import { SystemStore, type TenantRecord } from '../../storage/system-store.js'
import { TenantRegistry, type TenantRuntime } from '../../tenant/runtime.js'
import {
  dryRun,
  dryRunPacing,
  type DryRunOutcome,
  type ProposedWrites,
  type SimulatedState,
} from '../../tenant/simulate/dry-run.js'
import { Refusal } from '../../tenant/writes/core.js'
import { writePricelists } from '../../tenant/writes/pricelists.js'
import { writePrices, type PriceInput } from '../../tenant/writes/prices.js'
import {
  writeCurrencies,
  writeMappings,
  writeTaxAreas,
  writeVatClasses,
  writeVatRates,
} from '../../tenant/writes/reference.js'
import { executeQuery } from '../../workers/execute.js'
import { temporaryDir } from '../helpers/store-fixtures.js'

const nowMs = Date.parse('2026-01-01T00:00:00Z')
const context = { nowMs, actor: 'tester' }
const tomorrow = '2026-01-02T00:00:00Z'
const skus = Array.from({ length: 50 }, (_, index) => `P-${index}`)

/** A tenant with EUR, SE (standard 25%), the NET list RETAIL and each of `skus` at 10.00. */
async function retailTenant(t: Test): Promise<TenantRuntime> {
  const dataDir = temporaryDir(t, 'simulate-turns')
  const system = new SystemStore(`${dataDir}/system`)
  const record: TenantRecord = {
    slug: 'acme',
    tier: 'standard',
    region: 'eu',
    status: 'active',
    owner_email: null,
    limits: { prices: null },
    created_at: nowMs,
    updated_at: nowMs,
  }
  const registry = new TenantRegistry({ system, dataDir, logger: createLogger('silent'), now: () => nowMs })
  t.teardown(async () => {
    await registry.close()
    await system.close()
  })
  const tenant = registry.open(record, nowMs)
  await tenant.loadGradually()
  const past = { nowMs: nowMs - 86_400_000, actor: 'setup' }
  await writeCurrencies(tenant, past, [{ code: 'EUR', is_active: true, vat_precision: 2 }])
  await writeTaxAreas(tenant, past, [{ code: 'SE', name: 'Sweden' }])
  await writeVatClasses(tenant, past, [{ code: 'standard' }])
  await writeVatRates(tenant, past, [{ tax_area_code: 'SE', vat_class_code: 'standard', rate: 25 }])
  await writePricelists(tenant, past, [{ code: 'RETAIL', currency_code: 'EUR', vat_mode: 'NET' }])
  await writeMappings(
    tenant,
    past,
    skus.map((sku) => ({ sku_code: sku, tax_area_code: 'SE', vat_class_code: 'standard' })),
  )
  await writePrices(
    tenant,
    past,
    skus.map((sku) => ({ sku, pricelist: 'RETAIL', price: 10 })),
  )
  return tenant
}

function proposedPrices(prices: readonly PriceInput[]): ProposedWrites {
  return { pricelists: [], prices, vatRates: [], mappings: [], fxDays: [] }
}

/** P-0 at 30.00 from tomorrow, then `count` prices of new SKUs: many slices, P-0 planned in the first. */
function proposal(count: number): ProposedWrites {
  return proposedPrices([
    { sku: 'P-0', pricelist: 'RETAIL', price: 30, start_date: tomorrow },
    ...Array.from({ length: count }, (_, index) => ({ sku: `W-${index}`, pricelist: 'RETAIL', price: 5 })),
  ])
}

const amounts = (versions: readonly PriceVersion[]): [number, number | null][] =>
  versions.map((version) => [version.from, version.content?.sales ?? null])

/** The gross of P-0 on RETAIL in SE now, as a query of the state answers it. */
function grossOfP0(state: SimulatedState): number {
  const json = executeQuery(state.catalog, state.prices, {
    at: nowMs,
    cacheable: false,
    taxArea: 'SE',
    skus: ['P-0'],
    pricelists: ['RETAIL'],
    currency: 'EUR',
    rounding: null,
    sortOrder: null,
    quantity: 1,
  })
  return JSON.parse(String(json)).items[0].gross
}

/** What a dry run's read sees of P-0, and of the tenant beside it in the same turn. */
interface Seen {
  readonly simulated: [number, number | null][]
  readonly tenant: [number, number | null][]
  readonly gross: number
  readonly pairs: number
}

function seeing(tenant: TenantRuntime): (state: SimulatedState) => Seen {
  return (state) => ({
    simulated: amounts(state.prices.versions('RETAIL', 'P-0')),
    tenant: amounts(tenant.prices.versions('RETAIL', 'P-0')),
    gross: grossOfP0(state),
    pairs: state.prices.pairCount,
  })
}

function answered<T>(t: Test, outcome: DryRunOutcome<T>): { answer: T; restarts: number } {
  if ('refused' in outcome) throw new Error(`refused: ${outcome.refused.refusal.message}`)
  t.pass('the dry run answered')
  return outcome
}

const scale = 10_000
const dayMs = 86_400_000

t.test('a real write landing between two slices shows in the answer; the dry run starts over on it', async (t) => {
  const tenant = await retailTenant(t)
  // 201 writes, a slice of 8 a turn: turn 1 starts planning, the later ones land between slices.
  for (const [round, landingTurn] of [2, 5, 10].entries()) {
    const price = 20 + round
    const running = dryRun(tenant, context, proposal(200), seeing(tenant), { sliceMs: 0, restartsMax: 3 })
    for (let turn = 0; turn < landingTurn; turn++) await nextTurn()
    const real = await writePrices(tenant, context, [{ sku: 'P-0', pricelist: 'RETAIL', price }])
    t.same(
      real.map((outcome) => outcome.status),
      ['applied'],
      `the real write of ${price}.00 is applied at turn ${landingTurn}`,
    )
    const { answer, restarts } = answered(t, await running)
    t.equal(restarts, 1, 'the dry run started over once, when the real write moved the price book')
    t.same(
      answer.simulated,
      [
        [nowMs - dayMs, 10 * scale],
        [nowMs, price * scale],
        [nowMs + dayMs, 30 * scale],
      ],
      `P-0's simulated versions: 10.00, the real write's ${price}.00 now, the proposed 30.00 tomorrow`,
    )
    t.same(
      answer.tenant,
      answer.simulated.slice(0, 2),
      'in the read turn, the tenant holds the same versions but 30.00',
    )
    t.equal(answer.gross, price * 1.25, `the simulated query answers the real write: ${price}.00 NET + 25%`)
    t.equal(answer.pairs, 201, 'every proposed pair is in the simulated state')
    t.same(
      amounts(tenant.prices.versions('RETAIL', 'P-0')),
      answer.tenant,
      'after it, the tenant keeps the real write and not the simulated one',
    )
    t.same(tenant.prices.versions('RETAIL', 'W-0'), [], 'no proposed price leaked into the tenant')
  }
})

t.test('writes landing between every slice: past restartsMax it plans in one turn, on one state', async (t) => {
  const tenant = await retailTenant(t)
  let writing = true
  let landed = 0
  const stored: Promise<unknown>[] = []
  // A write each turn, as requests would land: its memory changes at once, its commit follows.
  const writer = (async () => {
    while (writing) {
      await nextTurn()
      stored.push(writePrices(tenant, context, [{ sku: 'P-1', pricelist: 'RETAIL', price: 11 + (landed % 2) }]))
      landed++
    }
  })()
  const outcome = await dryRun(tenant, context, proposal(200), seeing(tenant), { sliceMs: 0, restartsMax: 2 })
  writing = false
  await writer
  await Promise.all(stored)
  const { answer, restarts } = answered(t, outcome)
  t.equal(restarts, 2, 'it started over twice, then planned in one turn')
  t.ok(landed >= 2, `real writes landed meanwhile (${landed})`)
  t.same(answer.tenant, answer.simulated.slice(0, 1), "P-0's real versions are the simulation's, but the proposed one")
  t.equal(answer.gross, 12.5, 'P-0 now: 10.00 NET + 25% = 12.50')
})

t.test(
  'sliced at the default pacing, a dry run of 1,000 writes lets other turns run and answers as one turn does',
  async (t) => {
    const tenant = await retailTenant(t)
    const writes = proposal(999)
    let ticks = 0
    let ticking = true
    const ticker = (async () => {
      while (ticking) {
        await nextTurn()
        ticks++
      }
    })()
    const started = ticks
    const sliced = answered(t, await dryRun(tenant, context, writes, seeing(tenant)))
    const ticksDuring = ticks - started
    ticking = false
    await ticker
    const oneTurn = answered(t, await dryRun(tenant, context, writes, seeing(tenant), { sliceMs: 0, restartsMax: 0 }))
    t.ok(
      ticksDuring >= 2,
      `other turns ran during the dry run (${ticksDuring}; at most ${dryRunPacing.sliceMs} ms each)`,
    )
    t.same(sliced.answer, oneTurn.answer, 'the sliced plan answers what one turn answers')
    t.same([sliced.restarts, oneTurn.restarts], [0, 0], 'no write landed: neither started over')
    t.equal(sliced.answer.pairs, 1_000, 'a pair per proposed price')
  },
)

t.test('a refused write in a later slice is named as in one turn, and nothing is stored', async (t) => {
  const tenant = await retailTenant(t)
  const changes = tenant.prices.changeCount
  const prices: PriceInput[] = Array.from({ length: 100 }, (_, index) => ({
    sku: `W-${index}`,
    pricelist: 'RETAIL',
    price: index === 57 ? 'ten' : 5,
  }))
  const refusals = []
  for (const pacing of [
    { sliceMs: 0, restartsMax: 3 },
    { sliceMs: 0, restartsMax: 0 },
  ]) {
    const outcome = await dryRun(tenant, context, proposedPrices(prices), seeing(tenant), pacing)
    if (!('refused' in outcome)) throw new Error('the bad amount was accepted')
    const { family, index, refusal } = outcome.refused
    t.ok(refusal instanceof Refusal)
    refusals.push([family, index, refusal.status, refusal.message])
  }
  t.same(
    refusals[0],
    ['prices', 57, 'validation_failed', '/price/sales: must be a decimal number (at most ±100000000000)'],
    'the 58th price is refused for its amount',
  )
  t.same(refusals[1], refusals[0], 'planned in one turn, the same refusal')
  t.equal(tenant.prices.changeCount, changes, "the tenant's price book did not change")
  t.same(tenant.prices.versions('RETAIL', 'W-0'), [], 'the accepted writes before it were not stored')
})
