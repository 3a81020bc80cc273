/**
 * Reading V8 CPU profiles (`.cpuprofile`, from node:inspector or `node --cpu-prof`): the functions
 * with the most self time, as the profile tools print them.
 * @module
 */
import path from 'node:path'
import { fileURLToPath } from 'node:url'

/** The parts of a V8 CPU profile that self time needs. */
export interface CpuProfile {
  readonly nodes: readonly {
    readonly id: number
    readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number }
  }[]
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
export function selfTimes(
  profile: CpuProfile,
  root: string,
  window: { fromEndUs: number; untilEndUs: number } | null = null,
): { samples: number; frames: SelfTime[] } {
  const hits = new Map<number, number>()
  const samples = profile.samples ?? []
  const deltas = profile.timeDeltas ?? []
  let time = profile.startTime
  for (let index = 0; index < samples.length; index++) {
    time += deltas[index] ?? 0
    if (window !== null && (time < profile.endTime - window.fromEndUs || time > profile.endTime - window.untilEndUs))
      continue
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
  const frames = [...byFrame]
    .sort((left, right) => right[1] - left[1])
    .map(([frame, count]) => ({ frame, share: total === 0 ? 0 : count / total }))
  return { samples: total, frames }
}

/** The top `count` frames as printed lines: `  12.3%  frame`. */
export function formatSelfTimes(frames: readonly SelfTime[], count: number): string {
  return frames
    .slice(0, count)
    .map((entry) => `${(entry.share * 100).toFixed(1).padStart(6)}%  ${entry.frame}\n`)
    .join('')
}

/**
 * The busy samples (not idle) grouped by where the code lives: the repository's folder (engine,
 * workers, server, storage), a package (node_modules/<name>), Node.js itself, or a bracketed V8
 * entry such as (garbage collector) and (program); native functions by name. Largest first, as
 * shares of the busy samples: the layers a floor is argued from.
 */
export function byLayer(frames: readonly SelfTime[]): SelfTime[] {
  const layers = new Map<string, number>()
  let busy = 0
  for (const { frame, share } of frames) {
    if (frame.startsWith('(idle)')) continue
    if (frame.startsWith('(') && frame.endsWith(')')) {
      layers.set(frame, (layers.get(frame) ?? 0) + share)
      busy += share
      continue
    }
    const space = frame.lastIndexOf(' ')
    const file = space < 0 ? '' : frame.slice(space + 1).replace(/:\d+$/, '')
    let layer: string
    if (file === '') layer = frame.startsWith('(') ? frame : `native: ${frame}`
    else if (file.startsWith('node:')) layer = 'node.js'
    else if (file.includes('node_modules/')) layer = `node_modules/${file.split('node_modules/')[1]!.split('/')[0]}`
    else {
      const parts = file.split('/')
      // dist-test/engine/query.js -> engine (the build folder first, then the layer).
      layer = parts.length >= 3 ? parts[1]! : parts[0]!
    }
    layers.set(layer, (layers.get(layer) ?? 0) + share)
    busy += share
  }
  return [...layers]
    .sort((left, right) => right[1] - left[1])
    .map(([frame, share]) => ({ frame, share: busy === 0 ? 0 : share / busy }))
}
