/**
 * Outgoing mail (sign-in links; later invitations and tenant-ready notices), built by nodemailer:
 * sent over SMTP when `PRICING_SMTP_URL` is set, otherwise written as an RFC 5322 `.eml` file under
 * `<data>/outbox/` with one log line naming the file, so that a first hour without a mail server
 * still signs in. A sign-in link is a credential for 15 minutes, and logs travel further than the
 * data directory (journald, log shippers): the info line carries it only in development (the demo
 * on, `PRICING_DEMO`); otherwise it is logged at debug level only.
 * @module
 */
import { randomBytes } from 'node:crypto'
import { mkdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import nodemailer, { type Transporter } from 'nodemailer'
import type { Logger } from 'pino'

export interface Mail {
  readonly to: string
  readonly subject: string
  readonly text: string
  /** The link the mail carries, logged with an outbox file as `logLinks` says (never with SMTP). */
  readonly link?: string
}

export interface Mailer {
  send(mail: Mail): Promise<void>
  close(): void
}

/** `logLinks`: an outbox mail's link is in its info line (development); otherwise at debug level only. */
export function createMailer(options: {
  smtpUrl: string
  from: string
  outboxDir: string
  logger: Logger
  logLinks: boolean
}): Mailer {
  if (options.smtpUrl !== '') return new SmtpMailer(options.smtpUrl, options.from)
  return new OutboxMailer(options.from, options.outboxDir, options.logger, options.logLinks)
}

class SmtpMailer implements Mailer {
  readonly #transport: Transporter

  constructor(
    url: string,
    readonly from: string,
  ) {
    this.#transport = nodemailer.createTransport(url)
  }

  async send(mail: Mail): Promise<void> {
    await this.#transport.sendMail({ from: this.from, to: mail.to, subject: mail.subject, text: mail.text })
  }

  close(): void {
    this.#transport.close()
  }
}

const outboxMessage = 'mail written to the outbox (no PRICING_SMTP_URL)'

class OutboxMailer implements Mailer {
  readonly #transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' })

  constructor(
    readonly from: string,
    readonly directory: string,
    readonly logger: Logger,
    readonly logLinks: boolean,
  ) {}

  async send(mail: Mail): Promise<void> {
    const info = await this.#transport.sendMail({
      from: this.from,
      to: mail.to,
      subject: mail.subject,
      text: mail.text,
    })
    mkdirSync(this.directory, { recursive: true })
    const file = path.join(
      this.directory,
      `${new Date().toISOString().replaceAll(':', '-')}-${randomBytes(4).toString('hex')}.eml`,
    )
    writeFileSync(file, info.message as Buffer)
    if (this.logLinks) {
      this.logger.info({ to: mail.to, subject: mail.subject, file, link: mail.link ?? null }, outboxMessage)
      return
    }
    this.logger.info({ to: mail.to, subject: mail.subject, file }, outboxMessage)
    if (mail.link !== undefined) this.logger.debug({ file, link: mail.link }, "the outbox mail's link")
  }

  close(): void {
    this.#transport.close()
  }
}
