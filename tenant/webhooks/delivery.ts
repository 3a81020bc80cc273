/**
 * One delivery over HTTPS: the signed POST of a batch of events to a receiver and its outcome. Kept
 * apart from the dispatcher so that the network code (timeout, private-address guard, signature)
 * is read in one place, and the dispatcher's bookkeeping has no socket in it.
 * @module
 */
import { createHmac } from 'node:crypto'
import https from 'node:https'
import { isIP } from 'node:net'
import { formatInstant } from '../../engine/time.js'
import type { WebhookEnvironment } from './environment.js'
import type { DeliveryOutcome, Webhook } from './model.js'
import { guardedLookup, hostOf, isForbiddenAddress } from './url-guard.js'

const userAgent = 'pricing-service-webhooks/1'

/** What one POST carries: the webhook, its events as JSON, which attempt this is. */
export interface DeliveryRequest {
  readonly record: Webhook
  readonly eventsJson: string
  readonly attempt: number
  /** Aborts the send (a deactivation or a shutdown); its outcome is then ignored. */
  readonly signal: AbortSignal
}

/** One POST; resolves with its outcome, never rejects. */
export function deliver(env: WebhookEnvironment, request: DeliveryRequest): Promise<DeliveryOutcome> {
  const { record, eventsJson, attempt, signal } = request
  const settings = env.settings
  const url = new URL(record.url)
  const host = hostOf(url)
  if (!settings.allowPrivate && isIP(host) !== 0 && isForbiddenAddress(host)) {
    return Promise.resolve({ ok: false, status: null, error: `${host} is not a public address` })
  }
  const deliveredAt = formatInstant(env.now())
  const text = `{"webhook_id":${record.id},"delivered_at":"${deliveredAt}","events":${eventsJson}}`
  const body = Buffer.from(text, 'utf8')
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'content-length': String(body.length),
    'user-agent': userAgent,
    'x-webhook-id': String(record.id),
    'x-delivery-attempt': String(attempt),
  }
  if (record.secret !== null) {
    headers['x-signature-256'] = `sha256=${createHmac('sha256', record.secret).update(body).digest('hex')}`
  }
  return new Promise<DeliveryOutcome>((resolve) => {
    let done = false
    const finish = (outcome: DeliveryOutcome): void => {
      if (done) return
      done = true
      clearTimeout(timer)
      resolve(outcome)
    }
    const lookup = settings.allowPrivate ? {} : { lookup: guardedLookup }
    const request = https.request(url, { method: 'POST', headers, agent: env.agent, signal, ...lookup }, (response) => {
      const status = response.statusCode ?? 0
      response.on('error', (error) => finish({ ok: false, status, error: error.message }))
      response.on('end', () => {
        const ok = status >= 200 && status < 300
        finish({ ok, status, error: ok ? null : `answered ${status}` })
      })
      response.resume()
    })
    const timer = setTimeout(() => {
      request.destroy(new Error(`no complete answer within ${settings.timeoutMs} ms`))
    }, settings.timeoutMs)
    request.on('error', (error) => finish({ ok: false, status: null, error: error.message }))
    request.end(body)
  })
}
