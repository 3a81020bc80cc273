/**
 * Readings of a process from /proc (Linux): CPU time (user + system, all threads, or per thread) and
 * resident memory split into anonymous and file-backed pages. Non-goal: portability; the targets
 * are defined on Linux.
 * @module
 */
import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'

/** Clock ticks per second of /proc/<pid>/stat times (`getconf CLK_TCK`, normally 100). */
export function clockTicksPerSecond(): number {
  try {
    const ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim())
    return Number.isInteger(ticks) && ticks > 0 ? ticks : 100
  } catch {
    return 100
  }
}

/** utime + stime of the whole process (every thread), in clock ticks. */
export function cpuTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  // The command name (field 2) may contain spaces; the fields after its closing parenthesis do not.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  // fields[0] is field 3 (state); utime and stime are fields 14 and 15.
  return Number(fields[11]) + Number(fields[12])
}

/**
 * utime + stime so far of each thread of `pid`, in clock ticks (/proc/<pid>/task/<tid>/stat). Node's
 * threads mostly share the name "node": the main thread (tid = pid) is `main`, the others
 * `<name>#<tid>`. A thread that ends between the listing and its read is left out.
 */
export function threadTicks(pid: number): Map<string, number> {
  const byName = new Map<string, number>()
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let stat: string
    try {
      stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8')
    } catch {
      continue
    }
    const name = tid === String(pid) ? 'main' : `${stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'))}#${tid}`
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    byName.set(name, (byName.get(name) ?? 0) + Number(fields[11]) + Number(fields[12]))
  }
  return byName
}

export interface Memory {
  readonly rssBytes: number
  readonly rssAnonBytes: number
  readonly rssFileBytes: number
}

/** VmRSS, RssAnon and RssFile from /proc/<pid>/status. */
export function memory(pid: number): Memory {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kibibytes = (name: string): number => {
    const match = new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)
    return match === null ? 0 : Number(match[1]) * 1024
  }
  return { rssBytes: kibibytes('VmRSS'), rssAnonBytes: kibibytes('RssAnon'), rssFileBytes: kibibytes('RssFile') }
}
