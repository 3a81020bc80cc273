/**
 * First start with the demo on: seeds the demo tenant, writes its key to the credentials file,
 * logs where the file is (without the secret) and, on a terminal, notes it on stderr.
 * @module
 */
import type { AppDeps } from '../app.js'
import { demoCredentialsNote, writeDemoCredentials, type DemoCredentials } from './credentials.js'
import { seedDemoTenant } from './seed.js'

export async function provisionDemoTenant(deps: AppDeps, dataDir: string, nowMs: number): Promise<DemoCredentials> {
  const demo = await seedDemoTenant(deps, nowMs)
  const credentials: DemoCredentials = {
    tenant: demo.slug,
    base_url: `${deps.publicUrl}/t/${demo.slug}`,
    token_url: `${deps.publicUrl}/oauth2/token`,
    client_id: demo.clientId,
    client_secret: demo.clientSecret,
    created_at: new Date(nowMs).toISOString(),
  }
  const file = await writeDemoCredentials(dataDir, credentials)
  deps.logger.info({ tenant: demo.slug, clientId: demo.clientId, credentialsFile: file }, 'demo tenant provisioned')
  if (process.stderr.isTTY === true) process.stderr.write(demoCredentialsNote(file, credentials))
  return credentials
}
