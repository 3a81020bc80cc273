/**
 * The torture session (`npm run torture`, and test/scenarios/torture.test.ts with few runs): one real server
 * process on one data directory, SIGKILLed once per run at a moment the seed chooses, in a phase the
 * seed chooses (phases.ts; the first five runs cover every phase once). After each kill it starts
 * the server again, times the start against a bound taken from a clean start on the same data,
 * and checks (verify.ts) every acknowledged write, the changelog's sequences, the webhook's
 * deliveries and the killed process's log. The result line counts runs, acknowledged items, lost
 * items and failed restarts; every finding is listed.
 * @module
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { startHttpsReceiver, testCertificate } from '../helpers/https-receiver.js'
import { expect, request, Tenant } from './client.js'
import { Model } from './model.js'
import { LargeTenant } from './large-restore.js'
import { phaseNames, phases, type PhaseName, type Session } from './phases.js'
import { Prng } from './prng.js'
import { adminToken, ServerProcess } from './server-process.js'
import { checkChangelog, checkState, Deliveries, readState } from './verify.js'
import { ingestMix, pricePricelists, taxAreas, vatClasses, Workload } from './workload.js'

export interface TortureOptions {
  runs: number
  seed: number
  /** Multiplies phase durations (default 1; the CI variant uses less). */
  scale?: number
  /** Writer loops, each with one request in flight (default 4). */
  concurrency?: number
  /** The tenant's changelog capacity (entries), small enough that eviction happens in a long session. */
  changelogCapacity?: number
  /** Keep the data directory and the log (default: kept only when something was found). */
  keep?: boolean
  log?: (line: string) => void
}

export interface TortureResult {
  runs: number
  acknowledged: number
  lost: number
  failedRestarts: number
  slowRestarts: number
  changelogGaps: number
  duplicateSequences: number
  undelivered: number
  phantoms: number
  fatalLogs: number
  phaseCounts: Record<PhaseName, number>
  cleanStartMs: number
  slowestStartMs: number
  boundMs: number
  durationMs: number
  findings: string[]
  logPath: string
  line: string
}

/** A start after a kill must be ready within 2x the clean start on the same data plus this. */
export const startBoundSlackMs = 3_000
/** How long the webhook may take to deliver what the changelog holds after a restart. */
const deliveryTimeoutMs = 60_000
/** A clean restart re-measures the start bound every this many runs (the data grows). */
const remeasureEvery = 10

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/** Each run's phase: a seeded permutation of all six first, then seeded picks. */
export function schedule(prng: Prng, runs: number): PhaseName[] {
  const first = prng.shuffle(phaseNames)
  return Array.from({ length: runs }, (_, index) => (index < first.length ? first[index]! : prng.pick(phaseNames)))
}

export async function runTorture(options: TortureOptions): Promise<TortureResult> {
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`))
  const startedMs = performance.now()
  const prng = new Prng(options.seed)
  const plan = schedule(prng.fork(), options.runs)
  const capacity = options.changelogCapacity ?? 30_000
  const dataDir = mkdtempSync(path.join(tmpdir(), `pricing-torture-${options.seed}-`))
  const logPath = `${dataDir}.log`
  const { caPath } = await testCertificate()
  const receiver = await startHttpsReceiver()
  const server = new ServerProcess(
    dataDir,
    {
      NODE_EXTRA_CA_CERTS: caPath,
      PRICING_WEBHOOK_ALLOW_PRIVATE: 'true',
      PRICING_WEBHOOK_RETRY_SCALE: '0.01',
      PRICING_WEBHOOK_BATCH_MS: '100',
      PRICING_WEBHOOK_TIMEOUT_MS: '2000',
      PRICING_RETENTION_INTERVAL_S: '2',
      PRICING_BACKUP_INTERVAL_S: '0',
      PRICING_WORKERS: '1',
    },
    logPath,
  )
  const findings: string[] = []
  const counts = {
    lost: 0,
    failedRestarts: 0,
    slowRestarts: 0,
    gaps: 0,
    duplicates: 0,
    undelivered: 0,
    phantoms: 0,
    fatal: 0,
  }
  const phaseCounts = Object.fromEntries(phaseNames.map((name) => [name, 0])) as Record<PhaseName, number>
  let cleanStartMs = 0
  let slowestStartMs = 0
  let runsDone = 0
  const model = new Model()
  try {
    await server.start()
    const tenant = await provision(server, capacity)
    const workload = new Workload(tenant, model)
    const deliveries = new Deliveries(receiver)
    const session: Session = {
      server,
      tenant,
      model,
      workload,
      receiver,
      scale: options.scale ?? 1,
      concurrency: options.concurrency ?? 4,
      backupsAcknowledged: new Set(),
      backupsVerified: new Set(),
      estimates: { backupMs: 200, restoreMs: 400, retentionMs: 150 },
      landings: new Map(),
      large: null,
    }
    await setupData(tenant)
    model.acknowledge('setting', 'retention.max.versions', '3')
    const registered = await expect(tenant.api('POST', '/webhooks', { url: `${receiver.url}/torture` }), 201, 'webhook')
    let head = (await checkChangelog(tenant, 0, capacity)).head
    let deliveredThrough = head
    log(
      `torture: seed ${options.seed}, ${options.runs} runs, data ${dataDir}, server log ${logPath}; webhook ${registered.body.id} from sequence ${head}`,
    )

    /** The general checks after a start; answers a short summary for the run line. */
    const verify = async (label: string): Promise<string> => {
      const state = checkState(model, await readState(tenant))
      for (const mismatch of state.mismatches.slice(0, 20))
        findings.push(
          `${label}: lost ${mismatch.kind} ${mismatch.key}: expected ${mismatch.expected}${mismatch.candidates.length > 0 ? ` or ${mismatch.candidates.join(' or ')}` : ''}, read ${mismatch.observed}`,
        )
      counts.lost += state.mismatches.length
      counts.phantoms += state.phantoms.length
      for (const phantom of state.phantoms.slice(0, 5))
        findings.push(`${label}: ${phantom} is there but was never written`)
      const changelog = await checkChangelog(tenant, head, capacity)
      counts.gaps += changelog.gaps.length
      counts.duplicates += changelog.duplicates.length
      for (const gap of changelog.gaps.slice(0, 10)) findings.push(`${label}: changelog ${gap}`)
      if (changelog.duplicates.length > 0)
        findings.push(`${label}: changelog sequences twice: ${changelog.duplicates.slice(0, 10).join(', ')}`)
      head = changelog.head
      const missing = await deliveries.waitFor(
        Math.max(deliveredThrough, changelog.oldest - 1),
        changelog.head,
        deliveryTimeoutMs,
      )
      counts.undelivered += missing.length
      if (missing.length > 0)
        findings.push(
          `${label}: ${missing.length} sequences never delivered to the webhook (first ${missing.slice(0, 5).join(', ')})`,
        )
      deliveredThrough = changelog.head
      return `${state.keys} keys, changelog ${changelog.oldest}-${changelog.head}`
    }

    /** A clean stop and start: the bound for starts after a kill. */
    const measureCleanStart = async (label: string): Promise<void> => {
      await server.stop()
      const { readyMs } = await server.start()
      cleanStartMs = readyMs
      await tenant.refresh()
      const summary = await verify(label)
      log(
        `${label}: clean start ${readyMs} ms (bound for starts after a kill: ${2 * readyMs + startBoundSlackMs} ms); ${summary}`,
      )
    }

    // Filled before the first measurement, so that the start bound counts its load.
    if (plan.includes('restore-large')) {
      const filling = performance.now()
      session.large = await LargeTenant.create(server, session.scale)
      log(
        `restore-large: tenant filled in ${Math.round(performance.now() - filling)} ms, backup ${session.large.backupId}`,
      )
    }
    // Data before the first measurement, so that the clean start loads something.
    workload.start(prng.fork(), session.concurrency, ingestMix)
    await sleep(1500 * session.scale)
    await workload.stop()
    await measureCleanStart('setup')

    for (let run = 0; run < options.runs; run++) {
      const phase = plan[run]!
      phaseCounts[phase]++
      const runPrng = prng.fork()
      const acknowledgedBefore = model.acknowledged
      const outcome = await phases[phase](session, runPrng)
      const label = `run ${run + 1}/${options.runs} (${phase})`
      const fatal = server.fatalLines()
      if (fatal.length > 0) {
        counts.fatal += fatal.length
        findings.push(`${label}: fatal log lines before the kill: ${fatal.slice(0, 3).join(' | ')}`)
      }
      let readyMs: number
      try {
        readyMs = (await server.start()).readyMs
      } catch (error) {
        counts.failedRestarts++
        findings.push(`${label}: the start after the kill failed: ${(error as Error).message.slice(0, 500)}`)
        await server.kill()
        readyMs = (await server.start()).readyMs
      }
      const boundMs = 2 * cleanStartMs + startBoundSlackMs
      slowestStartMs = Math.max(slowestStartMs, readyMs)
      if (readyMs > boundMs) {
        counts.slowRestarts++
        findings.push(`${label}: ready ${readyMs} ms after the start, over the bound of ${boundMs} ms`)
      }
      await tenant.refresh()
      const phaseFindings = await outcome.afterRestart()
      for (const finding of phaseFindings) findings.push(`${label}: ${finding}`)
      const summary = await verify(label)
      const startFatal = server.fatalLines()
      if (startFatal.length > 0) {
        counts.fatal += startFatal.length
        findings.push(`${label}: fatal log lines after the start: ${startFatal.slice(0, 3).join(' | ')}`)
      }
      runsDone++
      log(
        `${label}: killed at ${outcome.killedAtMs} ms (${outcome.note}); ready in ${readyMs} ms; +${model.acknowledged - acknowledgedBefore} acknowledged; ${summary}; lost ${counts.lost}, findings ${findings.length}`,
      )
      if ((run + 1) % remeasureEvery === 0 && run + 1 < options.runs) await measureCleanStart(`after run ${run + 1}`)
    }
    log(
      `kills landed: ${JSON.stringify(Object.fromEntries(session.landings))}; writes by status: ${JSON.stringify(Object.fromEntries(workload.statuses))}`,
    )
    for (const unexpected of workload.unexpected.slice(0, 20)) findings.push(`unexpected answer: ${unexpected}`)
    const errors = server.errorMessages()
    if (errors.size > 0) log(`error lines of the last process: ${JSON.stringify(Object.fromEntries(errors))}`)
    await server.stop()
  } catch (error) {
    findings.push(`the session stopped: ${(error as Error).stack ?? String(error)}`)
    await server.kill()
  } finally {
    await receiver.close()
  }
  const durationMs = Math.round(performance.now() - startedMs)
  const result: TortureResult = {
    runs: runsDone,
    acknowledged: model.acknowledged,
    lost: counts.lost,
    failedRestarts: counts.failedRestarts,
    slowRestarts: counts.slowRestarts,
    changelogGaps: counts.gaps,
    duplicateSequences: counts.duplicates,
    undelivered: counts.undelivered,
    phantoms: counts.phantoms,
    fatalLogs: counts.fatal,
    phaseCounts,
    cleanStartMs,
    slowestStartMs,
    boundMs: 2 * cleanStartMs + startBoundSlackMs,
    durationMs,
    findings,
    logPath,
    line: '',
  }
  result.line =
    `torture: runs ${result.runs}, acknowledged items ${result.acknowledged}, lost items ${result.lost}, failed restarts ${result.failedRestarts}` +
    ` (seed ${options.seed}; phases ${phaseNames.map((name) => `${name} ${phaseCounts[name]}`).join(', ')};` +
    ` slow restarts ${result.slowRestarts}, changelog gaps ${result.changelogGaps}, duplicate sequences ${result.duplicateSequences},` +
    ` undelivered events ${result.undelivered}, phantom items ${result.phantoms}, fatal log lines ${result.fatalLogs}, other findings ${findings.length};` +
    ` clean start ${cleanStartMs} ms, slowest start after a kill ${slowestStartMs} ms, bound ${result.boundMs} ms; ${(durationMs / 1000).toFixed(1)} s)`
  if (options.keep !== true && findings.length === 0) {
    rmSync(dataDir, { recursive: true, force: true })
    rmSync(logPath, { force: true })
  }
  return result
}

async function provision(server: ServerProcess, changelogCapacity: number): Promise<Tenant> {
  const slug = 'torture'
  const ownerEmail = 'owner@torture.test'
  const admin = (method: string, urlPath: string, body?: unknown) =>
    request(server, method, urlPath, { body, token: adminToken })
  const limits = {
    ingest_rate: null,
    ingest_burst: null,
    query_rate: null,
    query_burst: null,
    articles: null,
    pricelists: null,
    prices: null,
    changelog_capacity: changelogCapacity,
  }
  await expect(
    admin('POST', '/admin/tenants', { slug, tier: 'enterprise', region: 'local', owner_email: ownerEmail, limits }),
    201,
    'tenant',
  )
  const key = await expect(admin('POST', `/admin/tenants/${slug}/keys`, { name: 'torture' }), 201, 'key')
  const tenant = new Tenant(server, slug, key.body.client_id, key.body.client_secret, ownerEmail)
  await tenant.refresh()
  return tenant
}

/** Reference data the writers' entities need, and the settings of webhooks and retention. */
async function setupData(tenant: Tenant): Promise<void> {
  await expect(tenant.api('PUT', '/currency/EUR', { is_active: true, vat_precision: 2 }), 202, 'currency')
  for (const area of taxAreas) await expect(tenant.api('PUT', `/tax-area/${area}`, { name: area }), 202, 'tax area')
  for (const vatClass of vatClasses)
    await expect(tenant.api('PUT', `/vat/class/${vatClass}`, { name: vatClass }), 202, 'VAT class')
  for (const pricelist of pricePricelists)
    await expect(
      tenant.api('PUT', `/pricelist/${pricelist}`, { currency_code: 'EUR', vat_mode: 'NET' }),
      202,
      'pricelist',
    )
  await expect(tenant.api('PUT', '/settings/change.events.enabled', { value: 'true' }), 202, 'change.events.enabled')
  await expect(tenant.api('PUT', '/settings/retention.enabled', { value: 'true' }), 202, 'retention.enabled')
  // A low maximum, so that passes remove versions (the writers move it between 3 and 12).
  await expect(tenant.api('PUT', '/settings/retention.max.versions', { value: '3' }), 202, 'retention.max.versions')
}
