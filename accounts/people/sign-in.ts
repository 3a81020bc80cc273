/**
 * People's sign-in (API.md §4): a magic link by mail, single-use and valid 15 minutes, exchanged
 * for a console session kept in the system store.
 *
 * - Tokens and session ids are 32 random bytes (base64url); only their SHA-256 is stored, so a copy
 *   of the store signs nobody in.
 * - A link is spent by its first use (a second one, or one after 15 minutes, gives no session);
 *   of several uses at the same moment exactly one wins.
 * - Anyone may ask for a link: the answer is the same whether the address belongs to a member or
 *   not (it never reveals who is known); what the session may reach is decided by membership.
 *   Mails asked for at the portal are limited per e-mail and per client address (the answer stays
 *   the same when a limit holds a mail back).
 * - Sessions last 12 hours from sign-in (PRICING_SESSION_LIFETIME_S), and end at sign-out.
 * @module
 */
import { createHash, randomBytes } from 'node:crypto'
import type { SignInLinkRecord, SystemStore } from '../../storage/system-store.js'
import { KeyedBuckets } from '../credential-limits.js'
import type { Mailer } from '../../platform/mailer.js'

export const signInLinkLifetimeMs = 15 * 60_000
/**
 * Sign-in mails asked for at the portal, per e-mail address (anyone may ask for anyone's link, so
 * without a limit a stranger fills a mailbox): `burst` at once, then `perHour`
 * (PRICING_SIGN_IN_MAILS_BURST, PRICING_SIGN_IN_MAILS_PER_HOUR); per client address ten times
 * both. Invitations are not counted: members send those.
 */
export interface SignInMailLimits {
  readonly burst: number
  readonly perHour: number
}

export const defaultSignInMailLimits: SignInMailLimits = { burst: 3, perHour: 12 }
/** Client addresses ask for links for many people (an office behind one address): ten times more. */
const perClientFactor = 10
const mailLimitKeysMax = 100_000
export const defaultSessionLifetimeMs = 12 * 3_600_000
export const sessionCookie = 'pricing_session'

function newSecret(): string {
  return randomBytes(32).toString('base64url')
}

export function secretHash(secret: string): string {
  return createHash('sha256').update(secret).digest('hex')
}

/** A plausible address, lower-cased (the store's key); null otherwise. */
export function normalEmail(text: string): string | null {
  const email = text.trim().toLowerCase()
  return email.length <= 254 && /^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(email) ? email : null
}

export class SignIn {
  /**
   * Links being spent, by their hash: claimed synchronously when a use is accepted, before the
   * first await, so that a second use of the same link arriving meanwhile finds it taken. Left
   * once the store has the link as used (or the write failed, and the link stays good).
   */
  readonly #spending = new Set<string>()
  readonly #mailLimits: { readonly emails: KeyedBuckets; readonly clients: KeyedBuckets }

  constructor(
    readonly system: SystemStore,
    readonly mailer: Mailer,
    /** Public root URL the link points at. */
    readonly publicUrl: () => string,
    /** How long a session lasts from sign-in (PRICING_SESSION_LIFETIME_S; 12 hours by default). */
    readonly sessionLifetimeMs = defaultSessionLifetimeMs,
    mailLimits: SignInMailLimits = defaultSignInMailLimits,
  ) {
    const perSecond = mailLimits.perHour / 3600
    this.#mailLimits = {
      emails: new KeyedBuckets(perSecond, mailLimits.burst, mailLimitKeysMax),
      clients: new KeyedBuckets(perSecond * perClientFactor, mailLimits.burst * perClientFactor, mailLimitKeysMax),
    }
  }

  /**
   * Stores a new link for `email` and mails it: a sign-in, or an invitation to a tenant. The link
   * lands on `next` (a path of this service), an invitation's on the tenant's console, others on /console.
   */
  async request(
    email: string,
    nowMs: number,
    invitation?: { readonly tenant: string; readonly role: string; readonly by: string },
    next?: string,
  ): Promise<void> {
    const token = newSecret()
    const record: SignInLinkRecord = { email, expires_at: nowMs + signInLinkLifetimeMs, used_at: null }
    const landing = next ?? (invitation === undefined ? undefined : `/console/${invitation.tenant}`)
    if (landing !== undefined) record.next = landing
    await this.system.put(this.system.signInLinks, secretHash(token), record)
    const link = `${this.publicUrl()}/portal/verify?token=${token}`
    const intro =
      invitation === undefined
        ? 'Sign in to the pricing service console:'
        : `${invitation.by} invites you to the tenant ${invitation.tenant} of the pricing service, as ${invitation.role}. Sign in to its console:`
    await this.mailer.send({
      to: email,
      subject: invitation === undefined ? 'Your sign-in link' : `You are invited to ${invitation.tenant}`,
      text: `${intro}\n\n${link}\n\nThe link works once, within 15 minutes. If you did not ask for it, ignore this mail.\n`,
      link,
    })
  }

  /**
   * A link asked for at the portal: mailed unless `email` or `clientAddress` has had its share
   * (SignInMailLimits). Answers whether it was sent; the person asking must be told the same
   * either way, so that the answer reveals neither the limit's state nor who is known.
   */
  async requestFromPortal(email: string, clientAddress: string, nowMs: number): Promise<boolean> {
    const byEmail = this.#mailLimits.emails
    const byClient = this.#mailLimits.clients
    if (!byEmail.allows(email, nowMs) || !byClient.allows(clientAddress, nowMs)) return false
    byEmail.bucket(email, nowMs).take(1, nowMs)
    byClient.bucket(clientAddress, nowMs).take(1, nowMs)
    await this.request(email, nowMs)
    return true
  }

  /** Whether a link would sign in now (unknown, used, expired or being spent: no); spends nothing. */
  usable(token: string, nowMs: number): boolean {
    const key = secretHash(token)
    const link = this.system.signInLinks.get(key)
    return link !== undefined && link.used_at === null && link.expires_at > nowMs && !this.#spending.has(key)
  }

  /**
   * Spends a link: a new session's secret, or null when the link is unknown, used, expired, or
   * being spent by a use that came first (exactly one of several concurrent uses wins).
   */
  async verify(token: string, nowMs: number): Promise<{ session: string; email: string; next: string | null } | null> {
    const key = secretHash(token)
    const link = this.system.signInLinks.get(key)
    if (link === undefined || link.used_at !== null || link.expires_at <= nowMs || this.#spending.has(key)) return null
    this.#spending.add(key)
    try {
      await this.system.put(this.system.signInLinks, key, { ...link, used_at: nowMs })
    } finally {
      this.#spending.delete(key)
    }
    const session = newSecret()
    await this.system.put(this.system.sessions, secretHash(session), {
      email: link.email,
      created_at: nowMs,
      expires_at: nowMs + this.sessionLifetimeMs,
    })
    return { session, email: link.email, next: link.next ?? null }
  }

  /** The signed-in address of a session secret, or null. */
  session(secret: string, nowMs: number): string | null {
    if (secret === '') return null
    const record = this.system.sessions.get(secretHash(secret))
    return record === undefined || record.expires_at <= nowMs ? null : record.email
  }

  async signOut(secret: string): Promise<void> {
    await this.system.remove(this.system.sessions, secretHash(secret))
  }
}

/** A cookie's value from a Cookie header, or ''. */
export function cookieValue(header: string, name: string): string {
  for (const part of header.split(';')) {
    const equals = part.indexOf('=')
    if (equals > 0 && part.slice(0, equals).trim() === name) return part.slice(equals + 1).trim()
  }
  return ''
}

/** The Set-Cookie of a session (Secure when the service is public over HTTPS). */
export function sessionSetCookie(secret: string, secure: boolean, lifetimeMs = defaultSessionLifetimeMs): string {
  return `${sessionCookie}=${secret}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${Math.floor(lifetimeMs / 1000)}${secure ? '; Secure' : ''}`
}

export function sessionClearCookie(secure: boolean): string {
  return `${sessionCookie}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0${secure ? '; Secure' : ''}`
}
