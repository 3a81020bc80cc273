/**
 * Command-line flags, the same way for the server settings and the tenant/key commands: node's
 * `util.parseArgs` splits the arguments into tokens (`--x=y`, `--x`, `-x`, `--`); this file pairs
 * each flag with its value (`--port 9000` or `--port=9000`), reads booleans (`--demo`, `--no-demo`,
 * `--demo=false`, `--demo false`) and collects every problem at once: unknown flags with a
 * suggestion, missing values, unexpected arguments. Values are returned as text; callers check them.
 * @module
 */
import { parseArgs } from 'node:util'
import leven from 'leven'

export interface FlagSpec {
  /** The flag without its dashes: `port`, `data-dir`. */
  readonly name: string
  /** A boolean flag stands alone (`--demo`), is negated with `--no-demo`, or takes true/false/1/0. */
  readonly boolean: boolean
}

export interface ParsedFlags {
  /** Flag name → text given (the last one wins when a flag repeats); booleans as 'true'/'false'. */
  readonly values: ReadonlyMap<string, string>
  readonly positionals: readonly string[]
  /** One sentence per mistake, each naming the flag as given. */
  readonly problems: readonly string[]
}

const booleanTexts = new Set(['true', 'false', '1', '0'])

/** The candidate closest to `name` by edit distance, if close enough to be a likely typo. */
export function suggestion(name: string, candidates: readonly string[]): string | undefined {
  const distanceMax = Math.max(2, Math.ceil(name.length / 3))
  let best: string | undefined
  let bestDistance = distanceMax + 1
  for (const candidate of candidates) {
    const distance = leven(name.toLowerCase(), candidate.toLowerCase(), { maxDistance: bestDistance })
    if (distance < bestDistance) {
      best = candidate
      bestDistance = distance
    }
  }
  return best
}

/** ` (did you mean X?)`, or nothing when no candidate is close. */
export function didYouMean(name: string, candidates: readonly string[], prefix = ''): string {
  const found = suggestion(name, candidates)
  return found === undefined ? '' : `; did you mean ${prefix}${found}?`
}

/**
 * Parses `args` against `specs`. An unknown flag's following argument is taken as its value (not
 * reported as a stray argument, and never echoed: it may be a secret given to a misspelt flag).
 */
export function parseFlags(args: readonly string[], specs: readonly FlagSpec[]): ParsedFlags {
  const byName = new Map(specs.map((spec) => [spec.name, spec]))
  const names = specs.map((spec) => spec.name)
  const { tokens } = parseArgs({ args: [...args], options: {}, strict: false, allowPositionals: true, tokens: true })
  const values = new Map<string, string>()
  const positionals: string[] = []
  const problems: string[] = []
  const consumed = new Set<number>()
  /** The raw argument after index `at`, taken as a value when it does not look like a flag. */
  const next = (at: number, accept: (text: string) => boolean): string | undefined => {
    const text = args[at + 1]
    if (text === undefined || text.startsWith('--') || !accept(text)) return undefined
    consumed.add(at + 1)
    return text
  }
  for (const token of tokens) {
    if (consumed.has(token.index) || token.kind === 'option-terminator') continue
    if (token.kind === 'positional') {
      positionals.push(token.value)
      continue
    }
    const flag = token.rawName
    const negated = token.name.startsWith('no-') ? byName.get(token.name.slice(3)) : undefined
    const spec = byName.get(token.name)
    if (spec === undefined && negated?.boolean === true) {
      if (token.inlineValue === true) problems.push(`${flag}=${token.value}: ${flag} takes no value`)
      else values.set(negated.name, 'false')
      continue
    }
    if (spec === undefined || !flag.startsWith('--')) {
      if (token.inlineValue !== true) next(token.index, () => true)
      problems.push(`${flag}: unknown flag${didYouMean(token.name, names, '--')}`)
      continue
    }
    if (spec.boolean) {
      const text =
        token.inlineValue === true ? token.value! : (next(token.index, (text) => booleanTexts.has(text)) ?? 'true')
      values.set(spec.name, text)
      continue
    }
    const text = token.inlineValue === true ? token.value : next(token.index, () => true)
    if (text === undefined) problems.push(`${flag}: expects a value (${flag} VALUE or ${flag}=VALUE)`)
    else values.set(spec.name, text)
  }
  return { values, positionals, problems }
}
