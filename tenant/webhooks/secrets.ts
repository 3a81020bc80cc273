/**
 * Webhook secrets at rest: a webhook record is stored with its secret sealed under
 * PRICING_SECRET_KEY (`sealedSecret`, and `secret` null), or as it is without a key. The tenant's
 * LMDB file, its backups (copies of that file) and the copies a new cluster replica starts from
 * hold only the sealed form whenever a key is set. The webhooks (tenant/webhooks/store.ts) keep the
 * secret in memory only, for signing.
 * @module
 */
import type { StoredWebhook } from '../../storage/tenant-store.js'
import { SecretKeyError, type SecretSealer } from '../../platform/secrets/sealer.js'

/** The additional data a webhook's secret is sealed with: it opens in its own record only. */
function purposeOf(id: number): string {
  return `webhook ${id}`
}

/** A stored webhook's secret, opened; or why it does not open (the sealed value is kept then). */
export type OpenedSecret =
  | { readonly secret: string | null; readonly stale: boolean; readonly unopened: null }
  | {
      readonly secret: null
      readonly stale: false
      readonly unopened: { readonly sealed: string; readonly problem: string }
    }

/**
 * The secret of a stored webhook: sealed or as it is. `stale` says that the record is stored
 * otherwise than it would be now (plaintext while a key is set, sealed under the previous key).
 */
export function openWebhookSecret(stored: StoredWebhook, sealer: SecretSealer): OpenedSecret {
  const sealed = stored['sealedSecret']
  if (typeof sealed === 'string') {
    try {
      return { secret: sealer.open(sealed, purposeOf(stored.id)), stale: sealer.stale(sealed), unopened: null }
    } catch (error) {
      if (!(error instanceof SecretKeyError)) throw error
      return { secret: null, stale: false, unopened: { sealed, problem: error.message } }
    }
  }
  const secret = typeof stored['secret'] === 'string' ? stored['secret'] : null
  return { secret, stale: secret !== null && sealer.stale(null), unopened: null }
}

/** A webhook's secret sealed for storing (the sealer must have a key). */
export function sealWebhookSecret(secret: string, id: number, sealer: SecretSealer): string {
  return sealer.seal(secret, purposeOf(id))
}

/**
 * The form of a webhook record to store: with `sealedSecret` (the secret sealed, or a sealed value
 * that does not open here, kept as it was so that the right key can still open it) and `secret`
 * null; or, when there is none, the record as it is.
 */
export function storedWebhookForm(
  record: StoredWebhook & { readonly secret: string | null },
  sealedSecret: string | null,
): StoredWebhook {
  const { sealedSecret: _previous, ...fields } = record
  return sealedSecret === null ? fields : { ...fields, secret: null, sealedSecret }
}
