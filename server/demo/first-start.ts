/**
 * First start with the demo on: seeds the demo tenant (owner `owner@demo.example`), writes its key
 * to the credentials file, mails the owner a sign-in link (the outbox, without SMTP), logs where
 * the file is (without the secret) and, on a terminal, notes it all on stderr.
 * @module
 */
import type { AppDeps } from '../../http/contracts.js'
import { demoCredentialsNote, writeDemoCredentials, type DemoCredentials } from './credentials.js'
import { demoOwnerEmail, seedDemoTenant } from './seed.js'

export async function provisionDemoTenant(deps: AppDeps, dataDir: string, nowMs: number): Promise<DemoCredentials> {
  const demo = await seedDemoTenant(deps, nowMs)
  const credentials: DemoCredentials = {
    tenant: demo.slug,
    base_url: `${deps.publicUrl}/t/${demo.slug}`,
    token_url: `${deps.publicUrl}/oauth2/token`,
    client_id: demo.clientId,
    client_secret: demo.clientSecret,
    created_at: new Date(nowMs).toISOString(),
    portal_url: `${deps.publicUrl}/portal`,
    console_url: `${deps.publicUrl}/console/${demo.slug}`,
    owner_email: demoOwnerEmail,
  }
  const file = await writeDemoCredentials(dataDir, credentials)
  // The owner's way into the console: a sign-in link in the outbox (and the log), or over SMTP.
  await deps.signIn.request(demoOwnerEmail, nowMs, undefined, `/console/${demo.slug}`)
  deps.logger.info({ tenant: demo.slug, clientId: demo.clientId, credentialsFile: file }, 'demo tenant provisioned')
  if (process.stderr.isTTY === true) process.stderr.write(demoCredentialsNote(file, credentials))
  return credentials
}
