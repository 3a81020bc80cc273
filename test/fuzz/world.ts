/**
 * The fuzzer's world on the real server: two tenants (the fuzzer's own, and a decoy the operator
 * routes may change), real credentials for every kind of route (an API token with full rights,
 * the operator's token, a console person's token and browser session), seeded data that valid
 * requests meet, and the two views of state the driver compares:
 *
 * - the changelog head: where the fuzzer's tenant's changelog ends (a cursor; an entry after it
 *   means something was written), read with one request;
 * - a digest: a hash of every list the API has (each tenant GET without a path parameter, with
 *   deleted entities included, every page; the operator's lists of tenants, keys, backups, tenant
 *   requests and the access-log switch), without the fields that change by themselves (a key's
 *   last use, a webhook's last delivery). It covers what the changelog does not record
 *   (webhooks, keys, users, backups, tenants) and a change that bypassed the changelog.
 * @module
 */
import { createHash } from 'node:crypto'
import type { IncomingHttpHeaders } from 'node:http'
import { consoleHeaders, signIn } from '../helpers/console.js'
import { adminToken, type TestServer } from '../helpers/server.js'
import { csrfToken } from '../../http/pages/shared/csrf.js'
import type { Ref, RefKind } from './json.js'
import type { Operation } from './operations.js'
import { decoySlug, mainSlug, ownerEmail, pools } from './schema.js'
import { Wire, type WireAnswer } from './wire.js'

/** Fields that change without a request: left out of the digest. */
const volatileFields = new Set(['last_used_at', 'last_delivery'])
/** Tokens live 900 s; they are fetched again well before. */
const tokenRefreshMs = 5 * 60_000

export interface Credentials {
  clientId: string
  clientSecret: string
  spareClientId: string
  spareClientSecret: string
  decoyClientId: string
  decoyClientSecret: string
  mainToken: string
  decoyToken: string
  consoleToken: string
  /** The browser session the fuzzer's requests carry (they may sign it out), and its form token. */
  pageSession: string
  csrf: string
}

export class World {
  readonly control: Wire
  readonly ids: Record<RefKind, string[]> = {
    backup: [],
    webhook: [],
    tenantRequest: [],
    otherKey: [],
    decoyKey: [],
    clientId: [],
    clientSecret: [],
  }
  /** Where the fuzzer's tenant's changelog ends: the cursor after its newest entry. */
  cursor = ''
  sessionAlive = true
  #refreshedAt = 0

  private constructor(
    readonly server: TestServer,
    readonly credentials: Credentials,
    readonly operations: readonly Operation[],
  ) {
    this.control = new Wire('127.0.0.1', server.port, 30_000)
  }

  /** Tenants, keys, people and seeded data on a started server. */
  static async create(server: TestServer, operations: readonly Operation[]): Promise<World> {
    const limits = { query_rate: null, query_burst: null, ingest_rate: null, ingest_burst: null }
    await expect(
      server.admin('POST', '/admin/tenants', {
        slug: mainSlug,
        tier: 'standard',
        region: 'local',
        owner_email: ownerEmail,
        limits,
      }),
      201,
      'main tenant',
    )
    await expect(
      server.admin('POST', '/admin/tenants', { slug: decoySlug, tier: 'standard', region: 'local', limits }),
      201,
      'decoy tenant',
    )
    const own = (await expect(server.admin('POST', `/admin/tenants/${mainSlug}/keys`, { name: 'fuzzer' }), 201, 'key'))
      .body
    const spare = (
      await expect(server.admin('POST', `/admin/tenants/${mainSlug}/keys`, { name: 'spare' }), 201, 'spare key')
    ).body
    const decoy = (
      await expect(server.admin('POST', `/admin/tenants/${decoySlug}/keys`, { name: 'decoy' }), 201, 'decoy key')
    ).body
    const pageSession = await signIn(server, ownerEmail)
    const credentials: Credentials = {
      clientId: own.client_id,
      clientSecret: own.client_secret,
      spareClientId: spare.client_id,
      spareClientSecret: spare.client_secret,
      decoyClientId: decoy.client_id,
      decoyClientSecret: decoy.client_secret,
      mainToken: '',
      decoyToken: '',
      consoleToken: '',
      pageSession,
      csrf: csrfToken(pageSession),
    }
    const world = new World(server, credentials, operations)
    world.ids.decoyKey = [decoy.client_id]
    await world.refreshTokens(true)
    await seed(server, credentials)
    world.cursor = await world.#cursorAtEnd()
    return world
  }

  /**
   * Fresh tokens when the last ones are older than the refresh interval, or when forced (after a
   * signing-key rotation that dropped the older keys: their tokens are refused by design).
   */
  async refreshTokens(force = false): Promise<void> {
    if (!force && Date.now() - this.#refreshedAt < tokenRefreshMs) return
    const credentials = this.credentials
    credentials.mainToken = await this.#token(credentials.clientId, credentials.clientSecret)
    // The decoy's key may have been revoked by the operator routes: its token then stays as it is.
    credentials.decoyToken = await this.#token(credentials.decoyClientId, credentials.decoyClientSecret).catch(
      () => credentials.decoyToken,
    )
    // A private session of the owner (the fuzzer never sends its cookie) gives the console token.
    credentials.consoleToken = (await consoleHeaders(this.server, ownerEmail, mainSlug))['authorization']!.slice(
      'Bearer '.length,
    )
    this.#refreshedAt = Date.now()
  }

  /** A new browser session for the fuzzer's requests, after one of them signed the last one out. */
  async renewSession(): Promise<void> {
    this.credentials.pageSession = await signIn(this.server, ownerEmail)
    this.credentials.csrf = csrfToken(this.credentials.pageSession)
    this.sessionAlive = true
  }

  async #token(clientId: string, clientSecret: string): Promise<string> {
    const form = new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: clientId,
      client_secret: clientSecret,
    })
    const answer = await this.server.request('POST', '/oauth2/token', {
      raw: form.toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    })
    if (answer.status !== 200) throw new Error(`token: ${answer.status} ${answer.text}`)
    return answer.body.access_token as string
  }

  /** The text a `Ref` stands for now: one of the ids of its kind, or a well-formed id that does not exist. */
  resolve(ref: Ref): string {
    if (ref.kind === 'clientId') return this.credentials.clientId
    if (ref.kind === 'clientSecret')
      return ref.index === 0 ? this.credentials.clientSecret : this.credentials.spareClientSecret
    const held = this.ids[ref.kind]
    if (held.length === 0 || ref.index % 10 === 9) return missingIds[ref.kind]
    return held[ref.index % held.length]!
  }

  /** A GET of the control connection with the credentials of its kind of route; the answer's JSON. */
  async get(
    path: string,
    authorization: string,
  ): Promise<{ status: number; json: unknown; headers: IncomingHttpHeaders }> {
    const answer = await this.control.send({ method: 'GET', path, headers: { authorization }, body: null })
    if (!('status' in answer)) throw new Error(`control request GET ${path}: ${answer.message}`)
    return { status: answer.status, json: parse(answer), headers: answer.headers }
  }

  /** The changelog entries after `cursor` (at most `limit`), and the cursor after them. */
  async entriesAfter(cursor: string, limit: number): Promise<{ items: unknown[]; next: string; more: boolean }> {
    const answer = await this.get(
      `/t/${mainSlug}/changelog?cursor=${encodeURIComponent(cursor)}&limit=${limit}`,
      `Bearer ${this.credentials.mainToken}`,
    )
    if (answer.status !== 200) throw new Error(`changelog: ${answer.status} ${JSON.stringify(answer.json)}`)
    const page = answer.json as { items: unknown[]; next_cursor: string; has_more: boolean }
    return { items: page.items, next: page.next_cursor, more: page.has_more }
  }

  /** New entries since the head the driver holds (at most a few, for a report); the head is not moved. */
  async entriesSinceHead(): Promise<unknown[]> {
    return (await this.entriesAfter(this.cursor, 5)).items
  }

  /** Moves the head to the end of the changelog (after an accepted write). */
  async advanceHead(): Promise<void> {
    this.cursor = await this.#cursorAtEnd(this.cursor)
  }

  async #cursorAtEnd(from?: string): Promise<string> {
    let cursor = from
    for (let pages = 0; pages < 10_000; pages++) {
      const query = cursor === undefined ? 'limit=1000' : `cursor=${encodeURIComponent(cursor)}&limit=1000`
      const answer = await this.get(`/t/${mainSlug}/changelog?${query}`, `Bearer ${this.credentials.mainToken}`)
      if (answer.status !== 200) throw new Error(`changelog: ${answer.status} ${JSON.stringify(answer.json)}`)
      const page = answer.json as { next_cursor: string; has_more: boolean }
      cursor = page.next_cursor
      if (!page.has_more) return cursor
    }
    throw new Error('the changelog did not end')
  }

  /** The lists the digest reads: tenant lists (API token or console token) and the operator's. */
  #digestPaths(): [string, string][] {
    const result: [string, string][] = []
    for (const op of this.operations) {
      const required = op.query.filter((parameter) => parameter.required).map((parameter) => parameter.name)
      if (op.method !== 'GET' || op.page) continue
      if (op.tenant && op.params.length === 0 && !op.template.endsWith('/changelog')) {
        // A list by tax area (the only required parameter of a list) is read for each seeded area.
        const wanted =
          required.length === 0
            ? ['']
            : required.length === 1 && required[0] === 'tax_area'
              ? pools.areas.map((area) => `tax_area=${area}`)
              : []
        const deleted = op.query.some((parameter) => parameter.name === 'include_deleted')
          ? ['include_deleted=true']
          : []
        const token = op.access === 'console' ? this.credentials.consoleToken : this.credentials.mainToken
        for (const query of wanted) {
          const text = [query, ...deleted].filter((part) => part !== '').join('&')
          result.push([`${op.template.replace('{slug}', mainSlug)}${text === '' ? '' : `?${text}`}`, `Bearer ${token}`])
        }
      } else if (op.access === 'admin' && required.length === 0) {
        const slugs =
          op.params.length === 0 ? [''] : op.params.length === 1 && op.params[0] === 'slug' ? [mainSlug, decoySlug] : []
        for (const slug of slugs) result.push([op.template.replace('{slug}', slug), `Bearer ${adminToken}`])
      }
    }
    return result
  }

  /**
   * The digest of the state, and the ids the fuzzer's `Ref`s choose from (backups, webhooks, keys,
   * tenant requests), read from the same answers.
   */
  async digest(): Promise<Digest> {
    const parts = new Map<string, string>()
    for (const [path, authorization] of this.#digestPaths()) {
      const pages = await this.#allPages(path, authorization)
      parts.set(path, JSON.stringify(stable(pages)))
      this.#noteIds(path, pages)
    }
    // The server's head, not the one the driver holds: a read that wrote would show here.
    parts.set('changelog head', await this.#cursorAtEnd(this.cursor))
    const hash = createHash('sha256')
    for (const [path, text] of parts) hash.update(`${path}\n${text}\n`)
    return { hash: hash.digest('hex'), parts }
  }

  /** A list's answer; a numbered page (`items`, `total`) is read to its end, 1,000 at a time. */
  async #allPages(path: string, authorization: string): Promise<unknown> {
    const first = await this.get(path, authorization)
    // An error answer counts by its status and code (its body has the time and the request id).
    if (first.status !== 200) return { status: first.status, code: (first.json as { code?: unknown } | null)?.code }
    const page = first.json as { items?: unknown[]; total?: number }
    if (!Array.isArray(page.items) || typeof page.total !== 'number' || page.items.length >= page.total)
      return first.json
    const items: unknown[] = []
    const separator = path.includes('?') ? '&' : '?'
    for (let number = 1; items.length < page.total && number <= 1000; number++) {
      const next = await this.get(`${path}${separator}page=${number}&size=1000`, authorization)
      const nextItems = (next.json as { items?: unknown[] }).items ?? []
      items.push(...nextItems)
      if (nextItems.length === 0) break
    }
    return { items, total: page.total }
  }

  #noteIds(path: string, body: unknown): void {
    if (!Array.isArray(body)) return
    const field = (name: string): string[] =>
      body
        .map((item) => (item as Record<string, unknown>)[name])
        .filter((value) => value !== undefined)
        .map(String)
    if (path === `/t/${mainSlug}/management/backups`) this.ids.backup = field('id')
    else if (path === `/t/${mainSlug}/webhooks`) this.ids.webhook = field('id')
    else if (path === '/admin/tenant-requests') this.ids.tenantRequest = field('id')
    else if (path === `/admin/tenants/${mainSlug}/keys`)
      this.ids.otherKey = field('client_id').filter((id) => id !== this.credentials.clientId)
    else if (path === `/admin/tenants/${decoySlug}/keys`) this.ids.decoyKey = field('client_id')
  }

  close(): void {
    this.control.close()
  }
}

/** A digest of the state, with the text of each list it covers (to say which one changed). */
export interface Digest {
  readonly hash: string
  readonly parts: ReadonlyMap<string, string>
}

/** The lists two digests disagree on, each with the start of both texts. */
export function digestDifference(before: Digest, after: Digest): string {
  const names = new Set([...before.parts.keys(), ...after.parts.keys()])
  const changed = [...names].filter((name) => before.parts.get(name) !== after.parts.get(name))
  return changed
    .map(
      (name) =>
        `${name}: ${(before.parts.get(name) ?? '').slice(0, 300)} -> ${(after.parts.get(name) ?? '').slice(0, 300)}`,
    )
    .join('; ')
}

/** Well-formed ids that name nothing. */
const missingIds: Record<RefKind, string> = {
  backup: `${mainSlug}-2020-01-01T00-00-00.000000Z`,
  webhook: '999999',
  tenantRequest: '00000000-0000-4000-8000-000000000000',
  otherKey: '0123456789abcdef01234567',
  decoyKey: '0123456789abcdef01234567',
  clientId: '0123456789abcdef01234567',
  clientSecret: '0'.repeat(64),
}

function parse(answer: WireAnswer): unknown {
  try {
    return JSON.parse(answer.body.toString('utf8'))
  } catch {
    return answer.body.toString('utf8')
  }
}

/** The value with object keys sorted and volatile fields left out, for hashing. */
function stable(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(stable)
  if (value === null || typeof value !== 'object') return value
  const result: Record<string, unknown> = {}
  for (const key of Object.keys(value).sort()) {
    if (!volatileFields.has(key)) result[key] = stable((value as Record<string, unknown>)[key])
  }
  return result
}

async function expect<T extends { status: number; text: string }>(
  answer: Promise<T>,
  status: number,
  what: string,
): Promise<T & { body: any }> {
  const got = await answer
  if (got.status !== status) throw new Error(`fuzz setup, ${what}: ${got.status} ${got.text}`)
  return got as T & { body: any }
}

/**
 * The data valid requests meet: currencies, tax areas, VAT classes and rates, articles and their
 * VAT classes, pricelists (one a child), prices, a bundle, a rounding profile, exchange rates, a
 * webhook and a backup. Codes are those of `pools` (schema.ts).
 */
async function seed(server: TestServer, credentials: Credentials): Promise<void> {
  const call = (
    method: string,
    path: string,
    body: unknown,
    status = 202,
    token = credentials.mainToken,
  ): Promise<unknown> =>
    expect(server.request(method, `/t/${mainSlug}${path}`, { body, token }), status, `${method} ${path}`)
  for (const code of ['EUR', 'SEK', 'USD'])
    await call('PUT', `/currency/${code}`, { is_active: true, vat_precision: 2 })
  for (const code of ['SE', 'DE', 'NO']) await call('PUT', `/tax-area/${code}`, { name: `area ${code}` })
  for (const code of ['standard', 'reduced']) await call('PUT', `/vat/class/${code}`, { name: code })
  for (const [area, rate] of [
    ['SE', 25],
    ['DE', 19],
    ['NO', 25],
  ] as const)
    await call('POST', '/vat/rate', { tax_area_code: area, vat_class_code: 'standard', rate })
  await call('POST', '/vat/rate', { tax_area_code: 'DE', vat_class_code: 'reduced', rate: 7 })
  const skus = ['SKU-1', 'SKU-2', 'SKU-3', 'BUNDLE-1']
  for (const sku of skus)
    await call('PUT', `/article/${sku}`, { name: `article ${sku}`, type: 'shoe', metadata: { colour: ['red'] } })
  await call(
    'POST',
    '/article-taxclass/batch',
    skus.flatMap((sku) =>
      ['SE', 'DE', 'NO'].map((area) => ({ sku_code: sku, tax_area_code: area, vat_class_code: 'standard' })),
    ),
  )
  await call('PUT', '/pricelist/PL-EU', {
    currency_code: 'EUR',
    vat_mode: 'NET',
    name: 'Europe',
    price_rules: [{ code: 'r1', filter: 'article.type == "shoe"', expression: 'sales * 0.9' }],
  })
  await call('PUT', '/pricelist/PL-SE', { currency_code: 'SEK', vat_mode: 'GROSS', name: 'Sweden' })
  await call('PUT', '/pricelist/PL-CHILD', { currency_code: 'EUR', parent_code: 'PL-EU', name: 'child' })
  await call(
    'POST',
    '/price/batch',
    ['SKU-1', 'SKU-2', 'SKU-3'].flatMap((sku, index) => [
      {
        sku,
        pricelist: 'PL-EU',
        price: { sales: 10 + index, fields: { cost: 5 } },
        quantity_breaks: [{ quantity_break: 10, percent_of_base: 90 }],
      },
      { sku, pricelist: 'PL-SE', price: 100 + index },
    ]),
  )
  await call('PUT', '/bundle/BUNDLE-1/PL-EU', {
    method: 'SUM_OF_PARTS',
    discount_type: 'PERCENTAGE',
    discount_value: 10,
    components: [
      { sku: 'SKU-1', quantity: 1 },
      { sku: 'SKU-2', quantity: 2 },
    ],
  })
  await call('POST', '/rounding-profile', {
    code: 'R-99',
    currency_code: 'EUR',
    tier_rules: [{ from: 0, increment: 1, mode: 'UP', offset: -0.01 }],
  })
  await call('POST', '/fx/daily', { date: '2024-06-03', rates: { SEK: 11.5, USD: 1.08, NOK: 11.6 } })
  await call('POST', '/webhooks', { url: 'https://127.0.0.1:9/hook', secret: 'fuzz-secret' }, 201)
  await call('POST', '/management/backups', { retain: false }, 201, credentials.consoleToken)
}
