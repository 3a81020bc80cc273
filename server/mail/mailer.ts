/**
 * Outgoing mail (sign-in links; later invitations and tenant-ready notices), built by nodemailer:
 * sent over SMTP when `PRICING_SMTP_URL` is set, otherwise written as an RFC 5322 `.eml` file under
 * `<data>/outbox/` with one log line naming the file and the link (API.md §4), so that a first
 * hour without a mail server still signs in.
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
  /** The link the mail carries, logged with an outbox file (never with SMTP: the mail is the channel). */
  readonly link?: string
}

export interface Mailer {
  send(mail: Mail): Promise<void>
  close(): void
}

export function createMailer(options: { smtpUrl: string; from: string; outboxDir: string; logger: Logger }): Mailer {
  return options.smtpUrl === '' ? new OutboxMailer(options.from, options.outboxDir, options.logger) : new SmtpMailer(options.smtpUrl, options.from)
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

class OutboxMailer implements Mailer {
  readonly #transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' })

  constructor(
    readonly from: string,
    readonly directory: string,
    readonly logger: Logger,
  ) {}

  async send(mail: Mail): Promise<void> {
    const info = await this.#transport.sendMail({ from: this.from, to: mail.to, subject: mail.subject, text: mail.text })
    mkdirSync(this.directory, { recursive: true })
    const file = path.join(this.directory, `${new Date().toISOString().replaceAll(':', '-')}-${randomBytes(4).toString('hex')}.eml`)
    writeFileSync(file, info.message as Buffer)
    this.logger.info({ to: mail.to, subject: mail.subject, file, link: mail.link ?? null }, 'mail written to the outbox (no PRICING_SMTP_URL)')
  }

  close(): void {
    this.#transport.close()
  }
}
