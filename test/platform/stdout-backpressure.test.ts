/**
 * stdout never stalls the server (platform/log.ts): with a reader that stops reading, log lines queue
 * up to 16 MiB and the rest are dropped and counted, the event loop keeps running, and what does
 * reach the reader is whole JSON lines; the report of the drop gets through once there is room. A
 * child process records 150,000 access lines (about 40 MB) while this test does not read its
 * stdout for a while, then reads it all.
 */
import { spawn } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { stdoutPendingBytesMax } from '../../platform/log.js'
import { logRecords } from '../helpers/logs.js'

const floodEntry = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'helpers', 'stdout-flood.js')
const lineCount = 150_000

t.test(
  'a stalled stdout reader: lines beyond 16 MiB are dropped and counted, never a stall or a broken line',
  async (t) => {
    const child = spawn(process.execPath, [floodEntry, String(lineCount)], { stdio: ['pipe', 'pipe', 'pipe'] })
    let stderr = ''
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    child.stdout!.pause()
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
    // The child finishes recording while nobody reads: the event loop did not block on stdout.
    for (let attempt = 0; attempt < 600 && !stderr.includes('recorded'); attempt++)
      await new Promise((resolve) => setTimeout(resolve, 50))
    t.match(stderr, `recorded ${lineCount}`, 'every answer was recorded while stdout was not read')
    // Still not reading: the drop report, due a second after the drops began, does not fit either.
    await new Promise((resolve) => setTimeout(resolve, 1_500))
    const chunks: Buffer[] = []
    child.stdout!.on('data', (chunk: Buffer) => chunks.push(chunk))
    child.stdout!.resume()
    // The report is tried again a second later, when the queue has room; then the child closes.
    await new Promise((resolve) => setTimeout(resolve, 1_500))
    child.stdin!.write('\n')
    // A child that never exits is killed after a minute, so the failure shows its stderr instead of
    // a tap timeout with nothing to go on (the child's exit once hung so on Node 24: its module says why).
    const deadline = setTimeout(() => child.kill('SIGKILL'), 60_000)
    const code = await exited
    clearTimeout(deadline)
    t.equal(code, 0, `the child exits normally (stderr: ${stderr.slice(-2_000)})`)
    const text = Buffer.concat(chunks).toString('utf8')
    const records = logRecords(text)
    const lines = records.filter((record) => record['msg'] === 'request')
    // One report per stall; a loaded machine can stall the reader more than once.
    const reports = records.filter((record) => record['msg'] === 'stdout is not read fast enough: log lines dropped')
    t.ok(reports.length > 0, `the drop is reported (${reports.length} reports)`)
    const dropped = reports.reduce((sum, report) => sum + Number(report['dropped']), 0)
    t.ok(dropped > 0, `${dropped} lines dropped`)
    t.equal(lines.length + dropped, lineCount, 'every line is either written whole or counted as dropped')
    t.ok(
      Buffer.byteLength(text) > stdoutPendingBytesMax / 2,
      `what was queued reached the reader (${Buffer.byteLength(text)} bytes)`,
    )
    t.ok(
      lines.every((line) => line['request_id'] === 'flood' && line['bytes'] === 300),
      'each written line is a whole record',
    )
    t.equal(records.at(-1)?.['msg'], 'closed', 'the close record comes last')
  },
)
