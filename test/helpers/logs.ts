/**
 * Reading a test server's stdout as what a log shipper sees: JSON records, one a line.
 */
import type { TestServer } from './server.js'

export type LogRecord = Record<string, unknown>

/** Every stdout line as a record; throws on a line that is not a JSON object (naming the line). */
export function logRecords(stdout: string): LogRecord[] {
  const lines = stdout.split('\n')
  // The last piece is '' after a complete line, or a line still being written: not yet a record.
  lines.pop()
  return lines.map((line, index) => {
    let record: unknown
    try {
      record = JSON.parse(line)
    } catch {
      throw new Error(`stdout line ${index + 1} is not JSON: ${line.slice(0, 200)}`)
    }
    if (record === null || typeof record !== 'object' || Array.isArray(record))
      throw new Error(`stdout line ${index + 1} is not a JSON object: ${line.slice(0, 200)}`)
    return record as LogRecord
  })
}

/** Polls the server's stdout until a record passes `match` (access-log lines come in batches). */
export async function waitForRecord(
  server: TestServer,
  match: (record: LogRecord) => boolean,
  what: string,
): Promise<LogRecord> {
  for (let attempt = 0; attempt < 400; attempt++) {
    const found = logRecords(server.stdout).find(match)
    if (found !== undefined) return found
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  throw new Error(`no log record ${what} within 10 s; stdout ends with: ${server.stdout.slice(-1000)}`)
}

/**
 * Stops the server (SIGTERM) and answers every record it wrote: the last one, `closed`, is written
 * after the access log's final flush, so once it is read nothing is missing.
 */
export async function stopAndReadRecords(server: TestServer): Promise<LogRecord[]> {
  await server.stop()
  await waitForRecord(server, (record) => record['msg'] === 'closed', "'closed'")
  return logRecords(server.stdout)
}
