/**
 * The torture phases. Each starts work against the running server, SIGKILLs it at a moment chosen
 * by the seed, stops the writers (every request in flight settles: answered or failed) and answers
 * a check to run after the restart, before the general checks (verify.ts):
 *
 * - ingest: the writers alone;
 * - webhook: the writers while the receiver fails or delays part of the deliveries (retries are in
 *   progress at the kill); it turns healthy at the kill, and the general check waits for every
 *   sequence;
 * - backup: a backup taken through the management API while the writers run; afterwards every
 *   acknowledged backup is listed, no `.partial` copy is left, and every listed backup opens and
 *   verifies (log tail and checksum chain);
 * - restore: writers quiesced, a backup taken (its content is the model's snapshot), more writes,
 *   writers quiesced again, then a restore through the management API, killed while it runs; a
 *   reader checks meanwhile that a page of prices is wholly the state before or wholly the backup;
 *   afterwards the restore is `completed` (the model becomes the backup) or was never accepted;
 * - retention: many versions of few prices, then an operator's retention pass (beside the automatic
 *   ones), killed while it runs; afterwards another pass runs to its end, and the general check
 *   reads every price in force;
 * - restore-large: a restore of a tenant of its own with hundreds of thousands of price versions,
 *   killed 0.1-2.5 s into it (./large-restore.ts); the start must finish it and serve.
 * @module
 */
import { existsSync, readdirSync } from 'node:fs'
import path from 'node:path'
import { TenantStore } from '../../storage/tenant-store.js'
import type { HttpsReceiver } from '../helpers/https-receiver.js'
import type { Answer, Tenant } from './client.js'
import { restoreLarge, type LargeTenant } from './large-restore.js'
import type { Model, Snapshot } from './model.js'
import type { Prng } from './prng.js'
import type { ServerProcess } from './server-process.js'
import { canonicalPrice, ingestMix, retentionMix, type Workload } from './workload.js'

export const phaseNames = ['ingest', 'webhook', 'backup', 'restore', 'retention', 'restore-large'] as const
export type PhaseName = (typeof phaseNames)[number]

export interface Session {
  server: ServerProcess
  tenant: Tenant
  model: Model
  workload: Workload
  receiver: HttpsReceiver
  /** Multiplies phase durations (the CI variant runs shorter phases). */
  scale: number
  concurrency: number
  /** Backups acknowledged (201) so far, and those already opened and verified. */
  backupsAcknowledged: Set<string>
  backupsVerified: Set<string>
  /** Recent durations, to place kills inside the next one. */
  estimates: { backupMs: number; restoreMs: number; retentionMs: number }
  /** Counts of where kills landed, for the report. */
  landings: Map<string, number>
  /** The restore-large phase's tenant, filled before the first clean start when the plan has it. */
  large: LargeTenant | null
}

export interface PhaseRun {
  /** Milliseconds from the phase's start to the kill. */
  killedAtMs: number
  note: string
  /** Runs after the restart, before the general checks; answers findings. */
  afterRestart: () => Promise<string[]>
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, Math.max(0, Math.round(ms))))

function land(session: Session, name: string): void {
  session.landings.set(name, (session.landings.get(name) ?? 0) + 1)
}

/** A request's outcome without throwing: the answer, or the error (the kill cut it). */
function settle(answer: Promise<Answer>): Promise<Answer | Error> {
  return answer.catch((error: Error) => error)
}

async function killAndStop(session: Session, startedMs: number): Promise<number> {
  const killedAtMs = Math.round(performance.now() - startedMs)
  await session.server.kill()
  await session.workload.stop()
  return killedAtMs
}

export async function ingest(session: Session, prng: Prng): Promise<PhaseRun> {
  const started = performance.now()
  session.workload.start(prng.fork(), session.concurrency, ingestMix)
  await sleep(prng.between(150, 2500) * session.scale)
  const killedAtMs = await killAndStop(session, started)
  return { killedAtMs, note: 'writers', afterRestart: async () => [] }
}

export async function webhook(session: Session, prng: Prng): Promise<PhaseRun> {
  const started = performance.now()
  const replies = prng.fork()
  const failRate = prng.pick([0.2, 0.5, 0.8])
  session.receiver.respondWith(() => {
    const roll = replies.next()
    if (roll < failRate) return { status: replies.pick([500, 503, 429]) }
    if (roll < failRate + 0.1) return { status: 200, delayMs: replies.between(50, 400) }
    return { status: 200 }
  })
  session.workload.start(prng.fork(), session.concurrency, ingestMix)
  await sleep(prng.between(400, 2500) * session.scale)
  const killedAtMs = await killAndStop(session, started)
  // Healthy from the restart on: every change must then arrive.
  session.receiver.respondWith(() => ({ status: 200 }))
  return { killedAtMs, note: `receiver failing ${Math.round(failRate * 100)}%`, afterRestart: async () => [] }
}

export async function backup(session: Session, prng: Prng): Promise<PhaseRun> {
  const started = performance.now()
  session.workload.start(prng.fork(), session.concurrency, ingestMix)
  await sleep(prng.between(100, 800) * session.scale)
  const backupStarted = performance.now()
  const taken = settle(session.tenant.management('POST', '/backups', { retain: prng.chance(0.3) }))
  const progress = { answered: false }
  void taken.then(() => (progress.answered = true))
  await sleep(prng.next() * 1.5 * session.estimates.backupMs)
  const answeredBeforeKill = progress.answered
  const killedAtMs = await killAndStop(session, started)
  const outcome = await taken
  let note: string
  if (outcome instanceof Error || !answeredBeforeKill) {
    note = 'killed while the backup was taken'
    land(session, 'backup: inside the copy')
  } else if (outcome.status === 201) {
    session.backupsAcknowledged.add(outcome.body.id)
    session.estimates.backupMs = Math.max(20, performance.now() - backupStarted)
    note = `backup ${outcome.body.id} acknowledged before the kill`
    land(session, 'backup: after it was acknowledged')
  } else {
    note = `backup answered ${outcome.status}`
  }
  return { killedAtMs, note, afterRestart: () => checkBackups(session) }
}

/** Every acknowledged backup listed, no partial copy left, every listed backup opens and verifies. */
async function checkBackups(session: Session): Promise<string[]> {
  const findings: string[] = []
  const list = await session.tenant.management('GET', '/backups')
  if (list.status !== 200) return [`GET /management/backups answered ${list.status}`]
  const listed = new Set<string>(list.body.map((record: { id: string }) => record.id))
  for (const id of session.backupsAcknowledged)
    if (!listed.has(id)) findings.push(`acknowledged backup ${id} is not listed`)
  const directory = path.join(session.server.dataDir, 'backups', session.tenant.slug)
  const partials = existsSync(directory) ? readdirSync(directory).filter((name) => name.endsWith('.partial')) : []
  if (partials.length > 0) findings.push(`partial copies left after the start: ${partials.join(', ')}`)
  for (const id of listed) {
    if (session.backupsVerified.has(id)) continue
    try {
      const store = new TenantStore(path.join(directory, id))
      const sequence = store.sequence
      await store.close()
      if (!(sequence > 0)) findings.push(`backup ${id} opens at sequence ${sequence}`)
      session.backupsVerified.add(id)
    } catch (error) {
      findings.push(`listed backup ${id} does not open: ${(error as Error).message}`)
    }
  }
  return findings
}

/** The first page (1,000) of PA's prices as a state holds them: [sku, canonical] sorted by SKU. */
function pageOf(snapshot: Snapshot): string {
  const entries: [string, string][] = []
  for (const [key, value] of snapshot.get('price')!) {
    if (value !== null && key.startsWith('PA|')) entries.push([key.slice(3), value])
  }
  entries.sort((left, right) => (left[0] < right[0] ? -1 : left[0] > right[0] ? 1 : 0))
  return JSON.stringify(entries.slice(0, 1000))
}

export async function restore(session: Session, prng: Prng): Promise<PhaseRun> {
  const { tenant, model, workload } = session
  const started = performance.now()
  workload.start(prng.fork(), session.concurrency, ingestMix)
  await sleep(prng.between(200, 1000) * session.scale)
  await workload.stop()
  const taken = await tenant.management('POST', '/backups', {})
  if (taken.status !== 201) throw new Error(`restore phase: backup answered ${taken.status} ${taken.text}`)
  const backupId: string = taken.body.id
  session.backupsAcknowledged.add(backupId)
  const backupState = model.snapshot()
  workload.start(prng.fork(), session.concurrency, ingestMix)
  await sleep(prng.between(300, 1200) * session.scale)
  await workload.stop()
  const before = model.snapshot()
  const pages = new Set([pageOf(before), pageOf(backupState)])
  const mixes: string[] = []
  let reading = true
  const reader = (async () => {
    while (reading) {
      const answer = await tenant.api('GET', '/price?pricelist=PA&page=1&size=1000').catch(() => null)
      if (answer === null || answer.status !== 200) continue
      const page = JSON.stringify(
        answer.body.items.map((record: any) => [record.sku, canonicalPrice(record.price, record.quantity_breaks)]),
      )
      if (!pages.has(page) && mixes.length < 3)
        mixes.push('a read during the restore answered a page that is neither the state before nor the backup')
    }
  })()
  const restoreStarted = performance.now()
  const requested = settle(tenant.management('POST', '/restore', { backup_id: backupId }))
  await sleep(prng.next() * 1.5 * session.estimates.restoreMs)
  const killedAtMs = await killAndStop(session, started)
  reading = false
  await reader
  const answer = await requested
  const acknowledged = !(answer instanceof Error) && answer.status === 202
  if (!(answer instanceof Error) && answer.status !== 202)
    mixes.push(`the restore answered ${answer.status} ${answer.text.slice(0, 200)}`)
  const note = `restore of ${backupId} ${acknowledged ? 'acknowledged' : 'not acknowledged'}, killed ${Math.round(performance.now() - restoreStarted)} ms after the request`
  return {
    killedAtMs,
    note,
    afterRestart: async () => {
      const findings = mixes.slice()
      const status = await tenant.management('GET', '/restore/status')
      if (status.status !== 200) return [...findings, `restore status answered ${status.status}`]
      const ours = status.body.backup_id === backupId
      if (ours && status.body.status === 'completed') {
        model.replaceWith(backupState)
        const finishedAtStart = session.server.output.includes('"msg":"interrupted restore finished at start"')
        land(session, finishedAtStart ? 'restore: finished by the start' : 'restore: completed before the kill')
        const ms = Date.parse(status.body.completed_at) - Date.parse(status.body.started_at)
        if (!finishedAtStart && ms > 0) session.estimates.restoreMs = Math.max(50, ms)
      } else if (ours) {
        findings.push(`restore of ${backupId} is ${status.body.status} after the restart: ${status.body.error}`)
      } else {
        if (acknowledged)
          findings.push(
            `the acknowledged restore of ${backupId} is unknown after the restart (status of ${status.body.backup_id})`,
          )
        land(session, 'restore: killed before it was accepted')
      }
      return findings
    },
  }
}

async function retentionPass(tenant: Tenant): Promise<Answer> {
  for (let attempt = 0; ; attempt++) {
    const answer = await tenant.admin('POST', `/admin/tenants/${tenant.slug}/retention`, undefined, 120_000)
    // 409: an automatic pass is running; wait for it.
    if (answer.status !== 409 || attempt >= 200) return answer
    await sleep(25)
  }
}

export async function retention(session: Session, prng: Prng): Promise<PhaseRun> {
  const { tenant, workload } = session
  const started = performance.now()
  workload.start(prng.fork(), session.concurrency, retentionMix)
  await sleep(prng.between(500, 2000) * session.scale)
  const passStarted = performance.now()
  const pass = settle(retentionPass(tenant))
  const progress = { answered: false }
  void pass.then(() => (progress.answered = true))
  await sleep(prng.next() * 1.5 * session.estimates.retentionMs)
  const answeredBeforeKill = progress.answered
  const killedAtMs = await killAndStop(session, started)
  const outcome = await pass
  let note = 'killed during the pass'
  if (!answeredBeforeKill || outcome instanceof Error) land(session, 'retention: inside the pass')
  else {
    land(session, 'retention: after the pass')
    if (outcome.status === 200) {
      session.estimates.retentionMs = Math.max(20, performance.now() - passStarted)
      note = `pass answered before the kill: ${JSON.stringify(outcome.body)}`
    } else note = `pass answered ${outcome.status} ${outcome.text.slice(0, 200)}`
  }
  return {
    killedAtMs,
    note,
    afterRestart: async () => {
      const again = await retentionPass(tenant)
      return again.status === 200
        ? []
        : [`a retention pass after the restart answered ${again.status} ${again.text.slice(0, 200)}`]
    },
  }
}

export const phases: Record<PhaseName, (session: Session, prng: Prng) => Promise<PhaseRun>> = {
  ingest,
  webhook,
  backup,
  restore,
  retention,
  'restore-large': restoreLarge,
}
