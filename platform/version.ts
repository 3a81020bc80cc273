/**
 * Which build is running, for `pricing-service --version`, `/healthz`, the start's `listening`
 * record and the `pricing_build_info` metric: package.json's `version`, the git commit the code
 * was built from when it is known, and the Node.js version.
 *
 * The single executable gets both from its build (binary/build.ts defines PRICING_BUILD_INFO).
 * A checkout reads package.json beside its build folder and asks git for the checkout's commit
 * once, at the first use: `npm start` builds just before it starts, so that is the commit built.
 * Without git, or outside a git work tree (an unpacked tarball), the commit is null. Uncommitted
 * changes are not detected: a development build carries the commit it started from.
 * @module
 */
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync, realpathSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export interface BuildInfo {
  /** package.json's `version`. */
  readonly version: string
  /** The first 12 hex digits of the git commit, or null when not known. */
  readonly commit: string | null
  /** `process.version`, e.g. `v22.15.0`. */
  readonly node: string
}

/** Set by the single executable's bundler (binary/build.ts); absent in a checkout. */
declare const PRICING_BUILD_INFO: { readonly version: string; readonly commit: string | null } | undefined

const commitDigits = 12

/** The first folder above this module that holds package.json: the checkout. */
function checkoutRoot(): string {
  let folder = path.dirname(fileURLToPath(import.meta.url))
  while (!existsSync(path.join(folder, 'package.json'))) {
    const parent = path.dirname(folder)
    if (parent === folder) throw new Error('package.json not found above the build')
    folder = parent
  }
  return folder
}

/** The checkout's commit, when `root` is itself the top of a git work tree (not a folder inside another). */
function checkoutCommit(root: string): string | null {
  try {
    const [top, commit] = execFileSync('git', ['rev-parse', '--show-toplevel', 'HEAD'], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 5_000,
    })
      .trim()
      .split('\n')
    if (
      top === undefined ||
      commit === undefined ||
      realpathSync(top) !== realpathSync(root) ||
      !/^[0-9a-f]{40,64}$/.test(commit)
    )
      return null
    return commit.slice(0, commitDigits)
  } catch {
    return null
  }
}

let known: BuildInfo | null = null

export function buildInfo(): BuildInfo {
  if (known !== null) return known
  if (typeof PRICING_BUILD_INFO !== 'undefined') known = { ...PRICING_BUILD_INFO, node: process.version }
  else {
    const root = checkoutRoot()
    const { version } = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string }
    known = { version, commit: checkoutCommit(root), node: process.version }
  }
  return known
}

/** One line: `pricing-service 0.1.0 (commit 1a2b3c4d5e6f, Node.js v22.15.0)`. */
export function versionLine(): string {
  const info = buildInfo()
  const commit = info.commit === null ? '' : `commit ${info.commit}, `
  return `pricing-service ${info.version} (${commit}Node.js ${info.node})`
}
