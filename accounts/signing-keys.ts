/**
 * The token-signing keys (docs/security.md "Key rotation"): which key signs, which public keys
 * verify (the JWKS), and their lifecycle in the system store's `signing_keys` table.
 *
 * - The newest key signs. A rotation adds a new key pair, which signs from then on.
 * - An older key stays in the JWKS, and its tokens verify, until the last token it can have signed
 *   has expired: the creation of the key after it plus a token's lifetime and the clock skew
 *   allowed (`retentionMs`, 930 s). Then it is dropped: removed from the store (its private key
 *   with it), from the JWKS, and from the cache of verified tokens.
 * - A rotation with `dropPrevious` drops every older key at once (a key thought stolen): their
 *   tokens are refused from then on, and clients fetch new ones.
 * - In a cluster the table is shared (cluster/directory.ts): a node learns the keys the others
 *   create and signs with the newest it can open; a key one node drops is dropped everywhere.
 *
 * Private keys are opened through the SecretSealer (platform/secrets/): at load every record must
 * open, or the start stops with a message naming PRICING_SECRET_KEY; records stored otherwise than
 * the current setting would store them (plaintext with a key, sealed under the previous key) are
 * written again in the current form.
 * @module
 */
import { assert } from '../engine/assert.js'
import { randomUUID } from 'node:crypto'
import { exportJWK, generateKeyPair, importJWK, type JWK } from 'jose'
import type { Logger } from 'pino'
import type { SigningKeyRecord, SystemStore } from '../storage/system-store.js'
import { ApiError } from '../platform/errors.js'
import type { SecretSealer } from '../platform/secrets/sealer.js'
import { privateJwkOf, signingKeySealed, signingKeyStale, storedSigningKey } from './signing-key-records.js'

export const signingAlgorithm = 'EdDSA'
/** Keys held at most (the signing one and those waiting to be dropped); a rotation past it is refused. */
export const signingKeysMax = 10

type VerificationKey = CryptoKey | Uint8Array

/** One key as the operator sees it (GET /admin/signing-keys). */
export interface SigningKeyState {
  readonly kid: string
  readonly alg: string
  readonly createdAt: number
  /** This node signs new tokens with it; otherwise it only verifies. */
  readonly signing: boolean
  /** When it is dropped (epoch ms); null for the newest key. */
  readonly dropsAt: number | null
  /** Its private key is stored sealed under PRICING_SECRET_KEY. */
  readonly encrypted: boolean
}

/**
 * The states of stored records, newest first: `signingKid` signs (null: the newest), each older key
 * drops `retentionMs` after the creation of the key after it.
 */
export function signingKeyStates(
  records: readonly SigningKeyRecord[],
  signingKid: string | null,
  retentionMs: number,
): SigningKeyState[] {
  const sorted = newestFirst(records)
  return sorted.map((record, index) => ({
    kid: record.kid,
    alg: record.alg,
    createdAt: record.created_at,
    signing: signingKid === null ? index === 0 : record.kid === signingKid,
    dropsAt: index === 0 ? null : sorted[index - 1]!.created_at + retentionMs,
    encrypted: signingKeySealed(record),
  }))
}

/** The operator's view of the keys (GET /admin/signing-keys, the CLI's `signing-key` commands). */
export function publicSigningKeys(states: readonly SigningKeyState[]): Record<string, unknown>[] {
  return states.map((state) => ({
    kid: state.kid,
    alg: state.alg,
    created_at: new Date(state.createdAt).toISOString(),
    status: state.signing ? 'signing' : 'verifying',
    drops_at: state.dropsAt === null ? null : new Date(state.dropsAt).toISOString(),
    encrypted: state.encrypted,
  }))
}

function newestFirst(records: readonly SigningKeyRecord[]): SigningKeyRecord[] {
  return [...records].sort((left, right) => right.created_at - left.created_at || (left.kid < right.kid ? -1 : 1))
}

export class SigningKeyRing {
  /** The stored records, by kid. */
  readonly #records = new Map<string, SigningKeyRecord>()
  readonly #publicKeys = new Map<string, VerificationKey>()
  #signing: { readonly kid: string; readonly key: VerificationKey; readonly createdAt: number } | null = null
  #jwks: { keys: JWK[] } = { keys: [] }
  /** Rotations, drops and loads one at a time. */
  #queue: Promise<unknown> = Promise.resolve()
  /** Told of each key dropped here (the token cache forgets what it verified). */
  onDropped: (kid: string) => void = () => {}

  constructor(
    readonly store: SystemStore,
    readonly sealer: SecretSealer,
    /** How long an older key is kept after the key after it was created. */
    readonly retentionMs: number,
    readonly logger: Pick<Logger, 'info' | 'warn' | 'error'> | null = null,
  ) {}

  /** The key new tokens are signed with. */
  get signing(): { readonly kid: string; readonly key: VerificationKey } {
    assert(this.#signing !== null, 'SigningKeyRing.load() was not called')
    return this.#signing
  }

  get jwks(): { keys: JWK[] } {
    return this.#jwks
  }

  publicKey(kid: string): VerificationKey | undefined {
    return this.#publicKeys.get(kid)
  }

  /** Every key held, newest first. */
  states(): SigningKeyState[] {
    return signingKeyStates([...this.#records.values()], this.#signing?.kid ?? null, this.retentionMs)
  }

  /**
   * Loads the stored keys (creating the first pair on a first start), checks that every private
   * key opens (a SecretKeyError otherwise: nothing is created or changed then), stores again those
   * not in the current form, and drops the keys whose time is past.
   */
  load(nowMs: number): Promise<{ created: boolean; resealed: number; dropped: string[] }> {
    return this.#serially(async () => {
      const records = [...this.store.signingKeys.getRange({ snapshot: false })].map((entry) => entry.value)
      const opened = new Map<string, JWK>()
      for (const record of records) opened.set(record.kid, privateJwkOf(record, this.sealer))
      let created = false
      if (records.length === 0) {
        const { record, privateJwk } = await this.#newKey(nowMs)
        await this.store.put(this.store.signingKeys, record.kid, record)
        records.push(record)
        opened.set(record.kid, privateJwk)
        created = true
      }
      let resealed = 0
      for (const [index, record] of records.entries()) {
        if (!signingKeyStale(record, this.sealer)) continue
        const stored = storedSigningKey(
          { kid: record.kid, alg: record.alg, publicJwk: record.public_jwk as JWK, createdAt: record.created_at },
          opened.get(record.kid)!,
          this.sealer,
        )
        await this.store.put(this.store.signingKeys, record.kid, stored)
        records[index] = stored
        resealed++
      }
      for (const record of records) await this.#hold(record)
      const newest = newestFirst(records)[0]!
      await this.#signWith(newest, opened.get(newest.kid)!)
      const dropped = await this.#dropExpired(nowMs)
      if (resealed > 0)
        this.logger?.info(
          { resealed, encrypted: this.sealer.enabled },
          'signing keys stored again under the current secret key',
        )
      if (dropped.length > 0) this.logger?.info({ dropped }, 'signing keys dropped: their last tokens have expired')
      return { created, resealed, dropped }
    })
  }

  /**
   * A key another node stored (or stored again): it verifies here too, and signs here when it is
   * the newest. Never throws: a key whose private part does not open here is kept for verifying,
   * and the problem logged.
   */
  async learn(record: SigningKeyRecord): Promise<void> {
    try {
      await this.#hold(record)
      if (this.#signing !== null && record.created_at > this.#signing.createdAt)
        await this.#signWith(record, privateJwkOf(record, this.sealer))
    } catch (error) {
      this.logger?.error(
        { kid: record.kid, error: (error as Error).message, signing: this.#signing?.kid },
        'a signing key from another node cannot be used here; this node keeps signing with its key',
      )
    }
  }

  /** A key dropped by another node (or here): it no longer verifies. */
  async forget(kid: string): Promise<void> {
    if (!this.#records.delete(kid)) return
    this.#publicKeys.delete(kid)
    this.#rebuildJwks()
    this.onDropped(kid)
    if (this.#signing?.kid !== kid) return
    // This node signed with it (it could not open a newer key): the newest it can open signs now.
    for (const record of newestFirst([...this.#records.values()])) {
      try {
        await this.#signWith(record, privateJwkOf(record, this.sealer))
        return
      } catch (error) {
        this.logger?.error({ kid: record.kid, error: (error as Error).message }, 'signing key cannot be opened')
      }
    }
    this.logger?.error(
      { kid },
      'the signing key was dropped elsewhere and no other key opens here: tokens of this node will be refused',
    )
  }

  /**
   * A new key pair signs from now on. Older keys stay until their tokens have expired, or are
   * dropped at once with `dropPrevious`. 409 when `signingKeysMax` keys are held already.
   */
  rotate(nowMs: number, dropPrevious: boolean): Promise<SigningKeyState[]> {
    return this.#serially(async () => {
      if (!dropPrevious && this.#records.size >= signingKeysMax) {
        const drops = this.states().flatMap((state) => (state.dropsAt === null || state.signing ? [] : [state.dropsAt]))
        const firstDrop = drops.length === 0 ? 'its time' : new Date(Math.min(...drops)).toISOString()
        throw new ApiError(
          'conflict',
          `${this.#records.size} signing keys are held, the most there may be; the oldest is dropped at ${firstDrop}: rotate after that, or with drop_previous`,
        )
      }
      const record = await this.#addKey(nowMs)
      const dropped: string[] = []
      if (dropPrevious) {
        for (const kid of [...this.#records.keys()]) {
          if (kid === record.kid) continue
          await this.#drop(kid)
          dropped.push(kid)
        }
      }
      this.logger?.info({ kid: record.kid, encrypted: signingKeySealed(record), dropped }, 'signing key rotated')
      return this.states()
    })
  }

  /**
   * The periodic step: catches up with the store (keys other nodes added or dropped while no
   * change reached this node), drops the keys whose time is past, and rotates when the newest key
   * is `rotationIntervalMs` old (0: never).
   */
  maintain(nowMs: number, rotationIntervalMs: number): Promise<void> {
    return this.#serially(async () => {
      const stored = new Map(
        [...this.store.signingKeys.getRange({ snapshot: false })].map((entry): [string, SigningKeyRecord] => [
          entry.key,
          entry.value,
        ]),
      )
      for (const record of stored.values()) await this.learn(record)
      for (const kid of [...this.#records.keys()]) if (!stored.has(kid)) await this.forget(kid)
      const dropped = await this.#dropExpired(nowMs)
      if (dropped.length > 0) this.logger?.info({ dropped }, 'signing keys dropped: their last tokens have expired')
      const newest = newestFirst([...this.#records.values()])[0]
      if (rotationIntervalMs <= 0 || newest === undefined || newest.created_at + rotationIntervalMs > nowMs) return
      if (this.#records.size >= signingKeysMax) {
        this.logger?.warn(
          { held: this.#records.size },
          'automatic signing key rotation skipped: the most keys are held (PRICING_SIGNING_KEY_ROTATION_S too short?)',
        )
        return
      }
      const record = await this.#addKey(nowMs)
      this.logger?.info(
        { kid: record.kid, encrypted: signingKeySealed(record), automatic: true },
        'signing key rotated',
      )
    })
  }

  /** A new key pair, stored (durably, and shared in a cluster), that signs from now on. */
  async #addKey(nowMs: number): Promise<SigningKeyRecord> {
    const newest = newestFirst([...this.#records.values()])[0]
    // Creation times order the keys: a clock that went back still makes the new key the newest.
    const createdAt = newest === undefined ? nowMs : Math.max(nowMs, newest.created_at + 1)
    const { record, privateJwk } = await this.#newKey(createdAt)
    await this.store.put(this.store.signingKeys, record.kid, record)
    await this.#hold(record)
    await this.#signWith(record, privateJwk)
    return record
  }

  /** Drops the older keys whose last token has expired, never the one this node signs with. */
  async #dropExpired(nowMs: number): Promise<string[]> {
    const dropped: string[] = []
    for (const state of this.states()) {
      if (state.dropsAt === null || state.signing || state.dropsAt > nowMs) continue
      await this.#drop(state.kid)
      dropped.push(state.kid)
    }
    return dropped
  }

  async #drop(kid: string): Promise<void> {
    await this.store.remove(this.store.signingKeys, kid)
    await this.forget(kid)
  }

  async #newKey(createdAt: number): Promise<{ record: SigningKeyRecord; privateJwk: JWK }> {
    const { privateKey, publicKey } = await generateKeyPair(signingAlgorithm, { extractable: true })
    const privateJwk = await exportJWK(privateKey)
    const record = storedSigningKey(
      { kid: randomUUID(), alg: signingAlgorithm, publicJwk: await exportJWK(publicKey), createdAt },
      privateJwk,
      this.sealer,
    )
    return { record, privateJwk }
  }

  /** Holds a record for verifying: its public key in the JWKS. */
  async #hold(record: SigningKeyRecord): Promise<void> {
    const known = this.#records.has(record.kid)
    this.#records.set(record.kid, record)
    if (known) return
    this.#publicKeys.set(record.kid, await importJWK(record.public_jwk as JWK, record.alg))
    this.#rebuildJwks()
  }

  async #signWith(record: SigningKeyRecord, privateJwk: JWK): Promise<void> {
    this.#signing = { kid: record.kid, key: await importJWK(privateJwk, record.alg), createdAt: record.created_at }
  }

  #rebuildJwks(): void {
    this.#jwks = {
      keys: newestFirst([...this.#records.values()]).map((record) => ({
        ...(record.public_jwk as JWK),
        kid: record.kid,
        alg: record.alg,
        use: 'sig',
      })),
    }
  }

  #serially<T>(work: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(work, work)
    this.#queue = run.catch(() => undefined)
    return run
  }
}
