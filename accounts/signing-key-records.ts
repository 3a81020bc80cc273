/**
 * Token-signing key records at rest: the private key sealed under PRICING_SECRET_KEY
 * (`sealed_private_jwk`), or its JWK as it is (`private_jwk`) without a key. The records are shared
 * between the nodes of a cluster as stored (cluster/directory.ts), so what Redis holds is the
 * sealed form whenever a key is set.
 * @module
 */
import type { JWK } from 'jose'
import type { SigningKeyRecord } from '../storage/system-store.js'
import { SecretKeyError, SecretSealer } from '../platform/secrets/sealer.js'

/** The additional data a signing key's private JWK is sealed with: it opens in its own record only. */
function purposeOf(kid: string): string {
  return `signing key ${kid}`
}

/** The record to store for a key pair: the private JWK sealed when the sealer has a key. */
export function storedSigningKey(
  fields: { kid: string; alg: string; publicJwk: JWK; createdAt: number },
  privateJwk: JWK,
  sealer: SecretSealer,
): SigningKeyRecord {
  const { kid, alg, publicJwk, createdAt } = fields
  const base = { kid, alg, public_jwk: publicJwk as Record<string, unknown>, created_at: createdAt }
  if (!sealer.enabled) return { ...base, private_jwk: privateJwk as Record<string, unknown> }
  return { ...base, sealed_private_jwk: sealer.seal(JSON.stringify(privateJwk), purposeOf(kid)) }
}

/** The private JWK of a record; throws a SecretKeyError naming the setting when it does not open. */
export function privateJwkOf(record: SigningKeyRecord, sealer: SecretSealer): JWK {
  if (record.sealed_private_jwk !== undefined)
    return JSON.parse(sealer.open(record.sealed_private_jwk, purposeOf(record.kid))) as JWK
  if (record.private_jwk !== undefined) return record.private_jwk as JWK
  throw new SecretKeyError(`${purposeOf(record.kid)}: the record holds no private key (damaged?)`)
}

/** Whether the record is stored otherwise than the sealer would store it now (plaintext with a key, another key's seal). */
export function signingKeyStale(record: SigningKeyRecord, sealer: SecretSealer): boolean {
  return sealer.stale(record.sealed_private_jwk ?? null)
}

/** Whether the record's private key is sealed. */
export function signingKeySealed(record: SigningKeyRecord): boolean {
  return record.sealed_private_jwk !== undefined
}
