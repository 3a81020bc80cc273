/**
 * Puts ./verbatim-string.ts in the module cache where ioredis looks for its own `VerbatimString`,
 * before ioredis loads (cluster/redis.ts imports this first). Why: ./verbatim-string.ts.
 * @module
 */
import Module, { createRequire } from 'node:module'
import { VerbatimString } from './verbatim-string.js'

const require = createRequire(import.meta.url)

/** ioredis's module that defines `VerbatimString`; null in the single executable (bundled: binary/build.ts swaps it). */
function verbatimModulePath(): string | null {
  try {
    return require.resolve('ioredis/built/resp/verbatim-string.js')
  } catch {
    return null
  }
}

const modulePath = verbatimModulePath()
if (modulePath !== null && require.cache[modulePath] === undefined) {
  const replacement = new Module(modulePath)
  replacement.filename = modulePath
  replacement.loaded = true
  replacement.exports = { VerbatimString }
  require.cache[modulePath] = replacement
}

/** The class ioredis uses as its `VerbatimString` (tests check it is this one). */
export function ioredisVerbatimString(): unknown {
  return modulePath === null ? null : (require(modulePath) as { VerbatimString: unknown }).VerbatimString
}
