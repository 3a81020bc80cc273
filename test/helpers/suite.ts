/**
 * The setup most suites repeated in their own words: one real server for the whole file, disposed
 * when the file's tests end, with the tenants the file works in and, for the price suites, the
 * shared reference data and pricelists written before the first test. A suite awaits it at the top
 * and keeps its own names: `const { server, tenants: { acme } } = await suiteServer({ tenants: { acme: {} } })`.
 */
import t from 'tap'
import { putPricelist, setupReference } from './price-fixtures.js'
import { startServer, type StartOptions, type TenantClient, type TestServer } from './server.js'

/** One tenant of the suite, created through the operator API in the order given. */
export interface TenantFixture {
  tier?: string
  limits?: Record<string, unknown>
  /** Writes price-fixtures.ts's `setupReference` (currencies, tax areas, VAT classes and rates, FX). */
  reference?: boolean
  /** Pricelists written after the reference data, by code, in the order given. */
  pricelists?: Readonly<Record<string, Record<string, unknown>>>
}

export interface SuiteOptions<Slug extends string> extends StartOptions {
  /** The tenants, by slug. */
  tenants?: Readonly<Record<Slug, TenantFixture>>
}

export interface Suite<Slug extends string> {
  server: TestServer
  tenants: Record<Slug, TenantClient>
}

/** Starts the suite's server (disposed in the file's teardown) and sets its tenants up. */
export async function suiteServer<Slug extends string = never>(options: SuiteOptions<Slug> = {}): Promise<Suite<Slug>> {
  const { tenants: fixtures, ...start } = options
  const server = await startServer(start)
  t.teardown(async () => server.dispose())
  const tenants = {} as Record<Slug, TenantClient>
  for (const [slug, fixture] of Object.entries(fixtures ?? {}) as [Slug, TenantFixture][]) {
    const client = await server.tenant(slug, { tier: fixture.tier, limits: fixture.limits })
    if (fixture.reference === true) await setupReference(client)
    for (const [code, body] of Object.entries(fixture.pricelists ?? {})) await putPricelist(client, code, body)
    tenants[slug] = client
  }
  return { server, tenants }
}
