/**
 * Reading V8 CPU profiles (`.cpuprofile`, from node:inspector or `node --cpu-prof`): the functions
 * with the most self time, as the profile tools print them.
 * @module
 */
import path from 'node:path'
import { fileURLToPath } from 'node:url'

/** The parts of a V8 CPU profile that self time needs. */
export interface CpuProfile {
  readonly nodes: readonly { readonly id: number; readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number } }[]
  readonly samples?: readonly number[]
  /** Microseconds between samples (the first from startTime). */
  readonly timeDeltas?: readonly number[]
  readonly startTime: number
  readonly endTime: number
}

export interface SelfTime {
  /** `function file:line` (file relative to `root`). */
  readonly frame: string
  readonly share: number
}

/**
 * Functions by self time, largest first; `share` is a fraction of the samples counted. `window`:
 * only samples taken that many microseconds before the profile's end (from, until) count.
 */
export function selfTimes(profile: CpuProfile, root: string, window: { fromEndUs: number; untilEndUs: number } | null = null): { samples: number; frames: SelfTime[] } {
  const hits = new Map<number, number>()
  const samples = profile.samples ?? []
  const deltas = profile.timeDeltas ?? []
  let time = profile.startTime
  for (let index = 0; index < samples.length; index++) {
    time += deltas[index] ?? 0
    if (window !== null && (time < profile.endTime - window.fromEndUs || time > profile.endTime - window.untilEndUs)) continue
    hits.set(samples[index]!, (hits.get(samples[index]!) ?? 0) + 1)
  }
  const byFrame = new Map<string, number>()
  let total = 0
  for (const node of profile.nodes) {
    const count = hits.get(node.id) ?? 0
    total += count
    const frame = node.callFrame
    const file = frame.url.startsWith('file:') ? path.relative(root, fileURLToPath(frame.url)) : frame.url
    const key = `${frame.functionName || '(anonymous)'}${file === '' ? '' : ` ${file}:${frame.lineNumber + 1}`}`
    byFrame.set(key, (byFrame.get(key) ?? 0) + count)
  }
  const frames = [...byFrame].sort((left, right) => right[1] - left[1]).map(([frame, count]) => ({ frame, share: total === 0 ? 0 : count / total }))
  return { samples: total, frames }
}

/** The top `count` frames as printed lines: `  12.3%  frame`. */
export function formatSelfTimes(frames: readonly SelfTime[], count: number): string {
  return frames.slice(0, count).map((entry) => `${(entry.share * 100).toFixed(1).padStart(6)}%  ${entry.frame}\n`).join('')
}
