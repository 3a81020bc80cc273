/**
 * Secrets at rest (docs/security.md "Secrets at rest"): AES-256-GCM sealing of the short secrets
 * the service must be able to read back (a token-signing private key, a webhook's HMAC secret)
 * under the key of `PRICING_SECRET_KEY`. While the key changes, `PRICING_SECRET_KEY_PREVIOUS`
 * opens what the key before sealed, so that it can be sealed again under the new one.
 *
 * A sealed value is the text `v1:<fingerprint>:<base64url of nonce (12 bytes) | ciphertext | tag
 * (16 bytes)>`. The fingerprint (8 hex digits of an HMAC of a fixed text under the key) names the
 * key without revealing it, so that a wrong key is told apart from damaged data. The additional
 * authenticated data is the value's purpose and record (`signing key <kid>`, `webhook <id>`): a
 * sealed value copied into another record does not open there. Without a key nothing is sealed.
 * @module
 */
import { assert } from '../../engine/assert.js'
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto'

export const secretKeySetting = 'PRICING_SECRET_KEY'
export const previousSecretKeySetting = 'PRICING_SECRET_KEY_PREVIOUS'

const keyBytes = 32
const nonceBytes = 12
const tagBytes = 16
const sealedPattern = /^v1:([0-9a-f]{8}):([A-Za-z0-9_-]+)$/
const hexKeyPattern = /^[0-9a-fA-F]{64}$/
const base64KeyPattern = /^(?:[A-Za-z0-9+/]{43}=|[A-Za-z0-9_-]{43})$/

/** A key that is malformed, missing or wrong for what is stored: the start stops with this message. */
export class SecretKeyError extends Error {
  override name = 'SecretKeyError'
}

interface SecretKey {
  /** The setting it came from, for messages. */
  readonly setting: string
  readonly bytes: Buffer
  readonly fingerprint: string
}

/** The fingerprint of a key: 8 hex digits that name it in sealed values and messages. */
function fingerprintOf(bytes: Buffer): string {
  return createHmac('sha256', bytes).update('pricing-service secret key fingerprint').digest('hex').slice(0, 8)
}

/**
 * A key from its setting's text: 64 hex digits or 32 bytes in base64 (`openssl rand -base64 32`),
 * surrounding white space ignored; empty: none. A malformed value is refused without repeating it.
 */
export function parseSecretKey(setting: string, text: string): SecretKey | null {
  const trimmed = text.trim()
  if (trimmed === '') return null
  let bytes: Buffer | null = null
  if (hexKeyPattern.test(trimmed)) bytes = Buffer.from(trimmed, 'hex')
  else if (base64KeyPattern.test(trimmed)) bytes = Buffer.from(trimmed, 'base64')
  if (bytes === null || bytes.length !== keyBytes) {
    throw new SecretKeyError(
      `${setting}: expected a ${keyBytes}-byte key as 64 hex digits or 44 characters of base64 (openssl rand -base64 32); the value given (${trimmed.length} characters, not shown) is neither`,
    )
  }
  return { setting, bytes, fingerprint: fingerprintOf(bytes) }
}

export class SecretSealer {
  /** No key: nothing sealed, and nothing sealed can be opened. */
  static readonly none = new SecretSealer(null, null)

  /** The sealer of the two settings' texts; throws a SecretKeyError naming a malformed one. */
  static fromSettings(current: string, previous: string): SecretSealer {
    const currentKey = parseSecretKey(secretKeySetting, current)
    const previousKey = parseSecretKey(previousSecretKeySetting, previous)
    // The same key twice is one key.
    const distinctPrevious =
      previousKey !== null && currentKey !== null && previousKey.bytes.equals(currentKey.bytes) ? null : previousKey
    return new SecretSealer(currentKey, distinctPrevious)
  }

  constructor(
    readonly current: SecretKey | null,
    readonly previous: SecretKey | null,
  ) {}

  /** Whether secrets are sealed (a current key is set). */
  get enabled(): boolean {
    return this.current !== null
  }

  /** Whether `value` has the form of a sealed value (stored fields that hold one hold nothing else). */
  static isSealed(value: unknown): value is string {
    return typeof value === 'string' && sealedPattern.test(value)
  }

  /** `plaintext` sealed under the current key for `purpose` (the record it belongs to). */
  seal(plaintext: string, purpose: string): string {
    const key = this.current
    assert(key !== null, 'SecretSealer.seal without a key')
    const nonce = randomBytes(nonceBytes)
    const cipher = createCipheriv('aes-256-gcm', key.bytes, nonce, { authTagLength: tagBytes })
    cipher.setAAD(Buffer.from(purpose, 'utf8'))
    const body = Buffer.concat([nonce, cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()])
    return `v1:${key.fingerprint}:${body.toString('base64url')}`
  }

  /**
   * The plaintext of a sealed value, opened with the key whose fingerprint it names (current or
   * previous). Throws a SecretKeyError naming the setting when no key given opens it.
   */
  open(sealed: string, purpose: string): string {
    const match = sealedPattern.exec(sealed)
    if (match === null) throw new SecretKeyError(`${purpose}: the stored value is not a sealed secret (damaged?)`)
    const fingerprint = match[1]!
    const key = [this.current, this.previous].find((candidate) => candidate?.fingerprint === fingerprint)
    if (key === undefined || key === null) throw new SecretKeyError(`${purpose}: ${this.#noKeyFor(fingerprint)}`)
    const body = Buffer.from(match[2]!, 'base64url')
    if (body.length < nonceBytes + tagBytes)
      throw new SecretKeyError(`${purpose}: the sealed value is truncated (damaged?)`)
    try {
      const decipher = createDecipheriv('aes-256-gcm', key.bytes, body.subarray(0, nonceBytes), {
        authTagLength: tagBytes,
      })
      decipher.setAAD(Buffer.from(purpose, 'utf8'))
      decipher.setAuthTag(body.subarray(body.length - tagBytes))
      return Buffer.concat([
        decipher.update(body.subarray(nonceBytes, body.length - tagBytes)),
        decipher.final(),
      ]).toString('utf8')
    } catch {
      throw new SecretKeyError(
        `${purpose}: the sealed value does not open with ${key.setting} (fingerprint ${fingerprint}): it was altered or damaged`,
      )
    }
  }

  /**
   * Whether a stored secret must be written again: `sealed` is its sealed form, or null when it is
   * stored as it is. Stored as it is while a key is set, or sealed under a key other than the
   * current one (the previous key, or a key dropped since): yes.
   */
  stale(sealed: string | null): boolean {
    if (sealed === null) return this.current !== null
    return this.current === null || sealedPattern.exec(sealed)?.[1] !== this.current.fingerprint
  }

  /** Why nothing opens a value sealed under `fingerprint`, naming the settings. */
  #noKeyFor(fingerprint: string): string {
    const stored = `encrypted with the key of fingerprint ${fingerprint}`
    if (this.current === null && this.previous === null)
      return `${stored}, and ${secretKeySetting} is not set: set it to that key`
    const given = [this.current, this.previous].filter((key): key is SecretKey => key !== null)
    const named = given.map((key) => `${key.setting} (fingerprint ${key.fingerprint})`).join(' nor with ')
    return `${stored}, not with ${named}: set ${secretKeySetting} to that key (or to a new key, with that one as ${previousSecretKeySetting})`
  }
}
