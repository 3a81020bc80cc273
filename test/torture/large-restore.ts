/**
 * The torture phase `restore-large`: a SIGKILL 0.1-2.5 s into a restore of a large tenant, whose
 * start must then finish the restore and serve. The `restore` phase's tenant is small: its start
 * finishes a cut restore in a moment and loads in well under a second, so it never met what a
 * large one does. There, the start writes megabytes of the restore and then loads hundreds of
 * thousands of price versions in chunks, long enough for the store's quiet-time reopen to fire
 * under the load (the start exited with "Can not renew a transaction from a closed database").
 *
 * A tenant of its own (`large`, untouched by the writers): 20,000 x scale SKUs on one pricelist,
 * each with a price in force and 40 future versions, and one backup of that. Each run puts a new
 * price in force on every SKU (so the restore rewrites every record), restores the backup and kills
 * the server. After the start, the generic check says whether it served (a failed start is a
 * finding there); this one asks that an accepted restore is `completed` and that every price in
 * force is the backup's again, read through price queries.
 * @module
 */
import { expect, request, type Answer } from './client.js'
import type { PhaseRun, Session } from './phases.js'
import type { Prng } from './prng.js'
import { adminToken, type ServerProcess } from './server-process.js'

const slug = 'large'
const futureVersions = 40
const batchItems = 2_500
const queryItems = 1_000
/** The backup's prices in force are `backupBase + index`; each run's new ones `runBase(n) + index`. */
const backupBase = 1_000_000

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, Math.max(0, Math.round(ms))))

export class LargeTenant {
  #token = ''
  backupId = ''
  runs = 0

  private constructor(
    readonly server: ServerProcess,
    readonly skus: readonly string[],
    readonly clientId: string,
    readonly clientSecret: string,
  ) {}

  /** Creates the tenant, fills it and takes the backup the runs restore. */
  static async create(server: ServerProcess, scale: number): Promise<LargeTenant> {
    const admin = (method: string, urlPath: string, body?: unknown) =>
      request(server, method, urlPath, { body, token: adminToken })
    const limits = { ingest_rate: null, ingest_burst: null, query_rate: null, query_burst: null, prices: null }
    await expect(
      admin('POST', '/admin/tenants', { slug, tier: 'enterprise', region: 'local', limits }),
      201,
      'large tenant',
    )
    const key = await expect(admin('POST', `/admin/tenants/${slug}/keys`, { name: 'torture' }), 201, 'large key')
    const skus = Array.from({ length: Math.max(batchItems, Math.round(20_000 * scale)) }, (_, index) => `L-${index}`)
    const tenant = new LargeTenant(server, skus, key.body.client_id, key.body.client_secret)
    await tenant.refresh()
    await expect(tenant.api('PUT', '/currency/EUR', { is_active: true, vat_precision: 2 }), 202, 'currency')
    await expect(tenant.api('PUT', '/tax-area/SE', { name: 'Sweden' }), 202, 'tax area')
    await expect(tenant.api('PUT', '/vat/class/standard', { name: 'standard' }), 202, 'VAT class')
    await expect(
      tenant.api('POST', '/vat/rate', { tax_area_code: 'SE', vat_class_code: 'standard', rate: 25 }),
      202,
      'VAT rate',
    )
    await expect(tenant.api('PUT', '/pricelist/RETAIL', { currency_code: 'EUR', vat_mode: 'NET' }), 202, 'pricelist')
    for (let start = 0; start < skus.length; start += batchItems) {
      const items = skus
        .slice(start, start + batchItems)
        .map((sku) => ({ sku_code: sku, tax_area_code: 'SE', vat_class_code: 'standard' }))
      await expect(tenant.api('POST', '/article-taxclass/batch', items), 202, 'mappings')
    }
    await tenant.writePrices(backupBase)
    for (let round = 1; round <= futureVersions; round++) {
      await tenant.writePrices(
        backupBase + round * 100_000,
        new Date(Date.UTC(2040, 0, round)).toISOString().replace('.000Z', 'Z'),
      )
    }
    tenant.backupId = (await expect(admin('POST', `/admin/tenants/${slug}/backups`, {}), 201, 'large backup')).body.id
    return tenant
  }

  api(method: string, urlPath: string, body?: unknown): Promise<Answer> {
    return request(this.server, method, `/t/${slug}${urlPath}`, { body, token: this.#token, timeoutMs: 120_000 })
  }

  admin(method: string, urlPath: string, body?: unknown): Promise<Answer> {
    return request(this.server, method, urlPath, { body, token: adminToken, timeoutMs: 120_000 })
  }

  async refresh(): Promise<void> {
    const form = new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: this.clientId,
      client_secret: this.clientSecret,
    })
    const response = await fetch(`${this.server.url}/oauth2/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form.toString(),
    })
    const json = (await response.json()) as { access_token: string }
    if (response.status !== 200) throw new Error(`large tenant token: ${response.status} ${JSON.stringify(json)}`)
    this.#token = json.access_token
  }

  /** Every SKU's RETAIL price `base + index`, in force now or from `startDate`. */
  async writePrices(base: number, startDate?: string): Promise<void> {
    for (let start = 0; start < this.skus.length; start += batchItems) {
      const items = this.skus.slice(start, start + batchItems).map((sku, offset) => ({
        sku,
        pricelist: 'RETAIL',
        price: base + start + offset,
        ...(startDate === undefined ? {} : { start_date: startDate }),
      }))
      const answer = await expect(this.api('POST', '/price/batch', items), 202, 'large prices')
      if (answer.body.failed.length > 0) throw new Error(`large prices refused: ${answer.text.slice(0, 300)}`)
    }
  }

  /** The base of every price in force (net - the SKU's index), 'mixed' when they differ, or the error. */
  async baseInForce(): Promise<number | string> {
    const bases = new Set<number>()
    for (let start = 0; start < this.skus.length; start += queryItems) {
      const skus = this.skus.slice(start, start + queryItems)
      const answer = await this.api('POST', '/price/query', {
        currency_code: 'EUR',
        tax_area: 'SE',
        skus,
        pricelist_filter: { pricelists: ['RETAIL'] },
      })
      if (answer.status !== 200) return `query answered ${answer.status} ${answer.text.slice(0, 200)}`
      if (answer.body.items.length !== skus.length)
        return `a query of ${skus.length} SKUs answered ${answer.body.items.length}`
      for (const item of answer.body.items as { sku: string; net: number }[])
        bases.add(item.net - Number(item.sku.slice(2)))
    }
    return bases.size === 1 ? [...bases][0]! : 'mixed'
  }
}

export async function restoreLarge(session: Session, prng: Prng): Promise<PhaseRun> {
  const large = session.large
  if (large === null) throw new Error('restore-large: the session has no large tenant')
  await large.refresh()
  large.runs++
  const newBase = 2_000_000 + large.runs * 100_000
  await large.writePrices(newBase)
  const started = performance.now()
  const wallStart = Date.now()
  const requested = large
    .admin('POST', `/admin/tenants/${slug}/restore`, { backup_id: large.backupId })
    .catch((error: Error) => error)
  await sleep(prng.between(100, 2500))
  const killedAtMs = Math.round(performance.now() - started)
  await session.server.kill()
  const answer = await requested
  const accepted = !(answer instanceof Error) && answer.status === 202
  const findings =
    !(answer instanceof Error) && answer.status !== 202
      ? [`the large restore answered ${answer.status} ${answer.text.slice(0, 200)}`]
      : []
  return {
    killedAtMs,
    note: `restore of ${large.skus.length} x ${futureVersions + 1} versions ${accepted ? 'accepted' : 'not accepted'}, killed after ${killedAtMs} ms`,
    afterRestart: async () => {
      await large.refresh()
      const status = await large.admin('GET', `/admin/tenants/${slug}/restore/status`)
      if (status.status !== 200) return [...findings, `large restore status answered ${status.status}`]
      // This run's restore, if its status was stored before the kill (a previous run's is older).
      const ours = status.body.started_at !== null && Date.parse(status.body.started_at) >= wallStart - 1_000
      if (ours && status.body.status !== 'completed')
        findings.push(`the large restore is ${status.body.status} after the start: ${status.body.error}`)
      if (accepted && !ours) findings.push('the accepted large restore is unknown after the start')
      const base = await large.baseInForce()
      const expected = ours ? backupBase : newBase
      if (base !== expected)
        findings.push(
          `the large tenant's prices in force are ${base}, not ${expected} (${ours ? 'the backup' : 'before the restore'})`,
        )
      const landing = !ours
        ? 'restore-large: killed before it was accepted'
        : session.server.output.includes('"msg":"interrupted restore finished at start"')
          ? 'restore-large: finished by the start'
          : 'restore-large: completed before the kill'
      session.landings.set(landing, (session.landings.get(landing) ?? 0) + 1)
      return findings
    },
  }
}
