/**
 * OAuth2 client credentials: API keys with scrypt-hashed secrets compared in constant time,
 * EdDSA-signed JWT access tokens (jose), the public JWKS, and a cache of verified tokens so that each
 * distinct token is verified once until it expires.
 * @module
 */
import { randomBytes, randomUUID, scrypt, timingSafeEqual } from 'node:crypto'
import { promisify } from 'node:util'
import { jwtVerify, SignJWT, type JWK } from 'jose'
import type { Logger } from 'pino'
import type { ApiKeyRecord, SigningKeyRecord, SystemStore } from '../storage/system-store.js'
import { SecretSealer } from '../platform/secrets/sealer.js'
import { signingAlgorithm, SigningKeyRing, type SigningKeyState } from './signing-keys.js'

const scryptAsync = promisify(scrypt) as (
  password: string,
  salt: Buffer,
  keylen: number,
  options: { N: number; r: number; p: number; maxmem: number },
) => Promise<Buffer>

/** scrypt cost: N=2^14, r=8, p=1 (about 50 ms per hash here; memory 16 MiB). */
const scryptParameters = { N: 16384, r: 8, p: 1, maxmem: 64 * 1024 * 1024 }
const scryptKeyBytes = 32

export const tokenLifetimeS = 900
/** Seconds of clock difference between nodes tolerated when a token's times are checked. */
const tokenClockSkewS = 30
/**
 * How long a signing key stays in the JWKS after the key after it was created: the last token it
 * signed verifies until then (its lifetime and the clock skew allowed on `exp`).
 */
export const signingKeyRetentionMs = (tokenLifetimeS + tokenClockSkewS) * 1000
/** Bound on cached verified tokens; expired ones are swept, the oldest evicted beyond this. */
const verifiedTokensMax = 100_000

export async function hashSecret(secret: string): Promise<string> {
  const salt = randomBytes(16)
  const hash = await scryptAsync(secret, salt, scryptKeyBytes, scryptParameters)
  const { N, r, p } = scryptParameters
  return `scrypt$${N}$${r}$${p}$${salt.toString('hex')}$${hash.toString('hex')}`
}

export async function verifySecret(secret: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, saltHex, hashHex] = stored.split('$')
  if (scheme !== 'scrypt' || saltHex === undefined || hashHex === undefined) return false
  const expected = Buffer.from(hashHex, 'hex')
  const actual = await scryptAsync(secret, Buffer.from(saltHex, 'hex'), expected.length, {
    N: Number(n),
    r: Number(r),
    p: Number(p),
    maxmem: scryptParameters.maxmem,
  })
  return actual.length === expected.length && timingSafeEqual(actual, expected)
}

/** A new key: 24-hex-character client_id, 64-hex-character secret (spec). */
export function newKeyCredentials(): { clientId: string; clientSecret: string } {
  return { clientId: randomBytes(12).toString('hex'), clientSecret: randomBytes(32).toString('hex') }
}

/**
 * The longest bearer token looked at: the service's tokens are about 500 characters; a longer one
 * is refused before any parsing (an oversized token costs nothing to send and would cost a parse).
 */
export const bearerTokenLengthMax = 2_048

/** The token of an `Authorization: Bearer <token>` header, or null (also when it is too long to be ours). */
export function bearerToken(authorization: string): string | null {
  if (
    authorization.length < 8 ||
    authorization.length > bearerTokenLengthMax + 16 ||
    authorization.slice(0, 7).toLowerCase() !== 'bearer '
  )
    return null
  const token = authorization.slice(7).trim()
  return token.length > 0 && token.length <= bearerTokenLengthMax ? token : null
}

export type TokenKind = 'key' | 'console'

export interface TokenClaims {
  readonly tenant: string
  readonly subject: string
  readonly kind: TokenKind
  readonly expiresAtMs: number
  /** The signing key it was verified with: dropping the key ends the claims' life in the caches. */
  readonly kid: string
}

export class TokenService {
  /** The public root URL, read at each use: it is final only once the server listens. */
  readonly #issuer: () => string
  /** The signing keys: which signs, which verify, their rotation (accounts/signing-keys.ts). */
  readonly keys: SigningKeyRing
  readonly #verified = new Map<string, TokenClaims>()

  constructor(
    store: SystemStore,
    issuer: () => string,
    options: { sealer?: SecretSealer; logger?: Pick<Logger, 'info' | 'warn' | 'error'> } = {},
  ) {
    this.#issuer = issuer
    this.keys = new SigningKeyRing(
      store,
      options.sealer ?? SecretSealer.none,
      signingKeyRetentionMs,
      options.logger ?? null,
    )
    this.keys.onDropped = (kid) => this.#forgetVerified(kid)
  }

  /**
   * Loads the signing keys, creating the first pair on first start; throws a SecretKeyError (the
   * start stops) when a stored private key does not open with PRICING_SECRET_KEY.
   */
  async init(nowMs: number): Promise<{ created: boolean; resealed: number; dropped: string[] }> {
    return this.keys.load(nowMs)
  }

  /**
   * A signing key another node created (cluster/directory.ts): its tokens verify here too, it is
   * published in the JWKS, and it signs here when it is the newest.
   */
  async learn(record: SigningKeyRecord): Promise<void> {
    await this.keys.learn(record)
  }

  /** A signing key another node dropped. */
  async forget(kid: string): Promise<void> {
    await this.keys.forget(kid)
  }

  /** A new signing key signs from now on (see SigningKeyRing.rotate); answers every key held. */
  rotate(nowMs: number, dropPrevious: boolean): Promise<SigningKeyState[]> {
    return this.keys.rotate(nowMs, dropPrevious)
  }

  get jwks(): { keys: JWK[] } {
    return this.keys.jwks
  }

  async issue(tenant: string, subject: string, kind: TokenKind, nowMs: number): Promise<string> {
    const signing = this.keys.signing
    const issuedAtS = Math.floor(nowMs / 1000)
    return new SignJWT({ tid: tenant, typ: kind, scope: kind === 'key' ? 'api' : 'console' })
      .setProtectedHeader({ alg: signingAlgorithm, kid: signing.kid, typ: 'JWT' })
      .setIssuer(this.#issuer())
      .setSubject(subject)
      .setAudience(tenant)
      .setIssuedAt(issuedAtS)
      .setExpirationTime(issuedAtS + tokenLifetimeS)
      .setJti(randomUUID())
      .sign(signing.key)
  }

  /** Claims of a valid token, or null. Verified once per distinct token, then served from cache. */
  async verify(token: string, nowMs: number): Promise<TokenClaims | null> {
    const cached = this.#verified.get(token)
    if (cached !== undefined) {
      if (cached.expiresAtMs > nowMs) return cached
      this.#verified.delete(token)
      return null
    }
    try {
      const { payload, protectedHeader } = await jwtVerify(
        token,
        (header) => {
          const key = header.kid === undefined ? undefined : this.keys.publicKey(header.kid)
          if (key === undefined) throw new Error('unknown kid')
          return key
        },
        // RFC 8725: one algorithm, explicit typing, and no token older than a token lives (a
        // future iat or one past the lifetime is refused along with exp and nbf).
        {
          issuer: this.#issuer(),
          algorithms: [signingAlgorithm],
          typ: 'JWT',
          maxTokenAge: tokenLifetimeS + tokenClockSkewS,
          clockTolerance: tokenClockSkewS,
          currentDate: new Date(nowMs),
        },
      )
      const tenant = payload['tid']
      const kind = payload['typ']
      if (typeof tenant !== 'string' || typeof payload.sub !== 'string' || payload.exp === undefined) return null
      if (payload.aud !== tenant || (kind !== 'key' && kind !== 'console')) return null
      const kid = protectedHeader.kid!
      // Dropped while this token was being verified: not cached, refused.
      if (this.keys.publicKey(kid) === undefined) return null
      const claims: TokenClaims = { tenant, subject: payload.sub, kind, expiresAtMs: payload.exp * 1000, kid }
      if (this.#verified.size >= verifiedTokensMax) this.#sweep(nowMs)
      this.#verified.set(token, claims)
      return claims
    } catch {
      return null
    }
  }

  /** Synchronous cache probe for the hot path; undefined means "not cached, verify". */
  cached(token: string, nowMs: number): TokenClaims | null | undefined {
    const cached = this.#verified.get(token)
    if (cached === undefined) return undefined
    return cached.expiresAtMs > nowMs ? cached : null
  }

  /**
   * Forgets the tokens a dropped key verified: their claims end now (the app's last-claims shortcut
   * holds the same objects), so each is verified again, and refused.
   */
  #forgetVerified(kid: string): void {
    for (const [token, claims] of this.#verified) {
      if (claims.kid !== kid) continue
      ;(claims as { expiresAtMs: number }).expiresAtMs = 0
      this.#verified.delete(token)
    }
  }

  #sweep(nowMs: number): void {
    for (const [token, claims] of this.#verified) {
      if (claims.expiresAtMs <= nowMs) this.#verified.delete(token)
    }
    while (this.#verified.size >= verifiedTokensMax) {
      const oldest = this.#verified.keys().next().value
      if (oldest === undefined) break
      this.#verified.delete(oldest)
    }
  }
}

/** Credentials from a token request: form fields, HTTP Basic, or the older `id:secret` form. */
export function readClientCredentials(
  form: URLSearchParams,
  authorization: string,
): { clientId: string; clientSecret: string } | null {
  if (authorization.toLowerCase().startsWith('basic ')) {
    const decoded = Buffer.from(authorization.slice(6).trim(), 'base64').toString('utf8')
    const colon = decoded.indexOf(':')
    if (colon < 0) return null
    return { clientId: formDecode(decoded.slice(0, colon)), clientSecret: formDecode(decoded.slice(colon + 1)) }
  }
  const clientId = form.get('client_id')
  const clientSecret = form.get('client_secret')
  if (clientId !== null && clientSecret !== null) return { clientId, clientSecret }
  if (clientId !== null && clientId.includes(':')) {
    const colon = clientId.indexOf(':')
    return { clientId: clientId.slice(0, colon), clientSecret: clientId.slice(colon + 1) }
  }
  return null
}

/**
 * RFC 6749 §2.3.1 form-encodes id and secret before Basic; a malformed escape is kept as is so that
 * the lookup fails with invalid_client instead of an exception.
 */
function formDecode(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '))
  } catch {
    return text
  }
}

export function isUsableKey(key: ApiKeyRecord | undefined): key is ApiKeyRecord {
  return key !== undefined && key.revoked_at === null
}
