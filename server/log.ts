/**
 * The pino root logger (JSON lines on stdout). Per-tenant child loggers bind the slug once.
 * @module
 */
import { pino, type Logger } from 'pino'

export function createLogger(level: string): Logger {
  return pino({ level, base: { service: 'pricing-service' }, timestamp: pino.stdTimeFunctions.isoTime })
}
