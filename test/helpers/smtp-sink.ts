/**
 * A real SMTP server on loopback (the `smtp-server` package) that keeps every mail it receives, for
 * tests of the service's mail over `PRICING_SMTP_URL`: who it went to, its text (quoted-printable
 * undone) and the sign-in link in it.
 */
import type { AddressInfo } from 'node:net'
import { SMTPServer } from 'smtp-server'
import { unquote } from './console.js'

export interface ReceivedMail {
  readonly to: string[]
  readonly text: string
}

export class SmtpSink {
  readonly received: ReceivedMail[] = []
  readonly #server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    onData: (stream, session, callback) => {
      let text = ''
      stream.on('data', (chunk: Buffer) => (text += chunk.toString()))
      stream.on('end', () => {
        this.received.push({
          to: session.envelope.rcptTo.map((address) => address.address.toLowerCase()),
          text: unquote(text),
        })
        callback()
      })
    },
  })

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve))
  }

  /** `smtp://127.0.0.1:<port>`, for PRICING_SMTP_URL. */
  get url(): string {
    return `smtp://127.0.0.1:${(this.#server.server.address() as AddressInfo).port}`
  }

  /** Mails to `email`, oldest first. */
  to(email: string): ReceivedMail[] {
    return this.received.filter((mail) => mail.to.includes(email.toLowerCase()))
  }

  /** The newest mail to `email` whose text matches `pattern`, waiting up to `timeoutMs` for it. */
  async waitFor(email: string, pattern: RegExp, timeoutMs = 10_000): Promise<ReceivedMail> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const found = this.to(email)
        .reverse()
        .find((mail) => pattern.test(mail.text))
      if (found !== undefined) return found
      if (Date.now() > deadline)
        throw new Error(
          `no mail to ${email} matching ${pattern} within ${timeoutMs} ms (${this.received.length} received)`,
        )
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }

  /** The sign-in link of the newest mail to `email` that has one. */
  async link(email: string): Promise<string> {
    const mail = await this.waitFor(email, /\/portal\/verify\?token=/)
    return /(http:\/\/\S+\/portal\/verify\?token=[A-Za-z0-9_-]+)/.exec(mail.text)![1]!
  }

  close(): Promise<void> {
    return new Promise<void>((resolve) => this.#server.close(() => resolve()))
  }
}
