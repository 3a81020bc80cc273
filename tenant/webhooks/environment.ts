/**
 * What every tenant's webhooks share in one process: the settings, the HTTPS agent (kept-alive
 * connections), the metrics, the clock and the sealer of secrets at rest. Made once at the wiring
 * (server/main.ts) and closed at shutdown.
 * @module
 */
import https from 'node:https'
import type { Metrics } from '../../platform/metrics.js'
import { SecretSealer } from '../../platform/secrets/sealer.js'
import type { WebhookSettings } from './model.js'

export class WebhookEnvironment {
  readonly agent = new https.Agent({ keepAlive: true, maxSockets: 8 })
  constructor(
    readonly settings: WebhookSettings,
    readonly metrics: Metrics,
    readonly now: () => number,
    /** Seals secrets in the stored records (PRICING_SECRET_KEY; tenant/webhooks/secrets.ts). */
    readonly sealer: SecretSealer = SecretSealer.none,
  ) {}

  close(): void {
    this.agent.destroy()
  }
}
