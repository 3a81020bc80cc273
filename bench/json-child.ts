/**
 * Runs a bench module in a child process of its own: the module gets one JSON argument and prints
 * one JSON answer on stdout (stderr passes through). Load generators run this way so that they do
 * not share an event loop with the bench's other work (./load-process.ts, ./soak-load.ts).
 * @module
 */
import { spawn } from 'node:child_process'

/** Spawns `entry` with `argument` as JSON and answers what it printed, parsed; `label` names it in errors. */
export function runJsonChild<T>(entry: string, argument: unknown, label: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [entry, JSON.stringify(argument)], { stdio: ['ignore', 'pipe', 'inherit'] })
    let output = ''
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()))
    child.once('error', reject)
    child.once('exit', (code) => {
      if (code !== 0) reject(new Error(`${label} exited with ${code}`))
      else resolve(JSON.parse(output) as T)
    })
  })
}
