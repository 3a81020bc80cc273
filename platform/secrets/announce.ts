/**
 * The start's one line about secrets at rest: encrypted under which key (by fingerprint), or, with
 * no PRICING_SECRET_KEY, a warning that token-signing keys and webhook secrets are stored as they
 * are (the quick start runs so, with no configuration).
 * @module
 */
import type { Logger } from 'pino'
import { previousSecretKeySetting, secretKeySetting, type SecretSealer } from './sealer.js'

export function announceSecretsAtRest(logger: Pick<Logger, 'info' | 'warn'>, sealer: SecretSealer): void {
  const previous = sealer.previous?.fingerprint ?? null
  if (sealer.current !== null) {
    logger.info(
      { fingerprint: sealer.current.fingerprint, previous },
      `secrets at rest: token-signing keys and webhook secrets are encrypted with ${secretKeySetting}`,
    )
  } else if (previous !== null) {
    logger.warn(
      { previous },
      `secrets at rest: ${previousSecretKeySetting} is set without ${secretKeySetting}: what it encrypted is decrypted and stored unencrypted`,
    )
  } else {
    logger.warn(
      { setting: secretKeySetting },
      `secrets at rest are not encrypted: token-signing keys and webhook secrets are stored as they are; set ${secretKeySetting} (docs/security.md)`,
    )
  }
}
