/**
 * Loads uWebSockets.js's native binary for the running Node ABI, never a JavaScript fallback.
 * The binary must be one of the published files (sha256 in ./binaries.ts). On Linux with a glibc
 * older than 2.38, the Node 22+ binaries load through a rebound copy (./glibc-compat.ts).
 * @module
 */
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type * as Uws from 'uWebSockets.js'
import { binarySha256, supportedAbis, uwsPackage, uwsVersion } from './binaries.js'
import { bindClassicIsoc23, compatGlibcVersion } from './glibc-compat.js'
import { packaged, type PackagedRuntime } from '../../platform/packaged.js'

// The single executable's bundle has no module file of its own: resolve from the executable there.
const require = createRequire(packaged() !== null ? process.execPath : import.meta.url)

export interface LoadedBinary {
  /** The published file that was verified. */
  readonly file: string
  readonly sha256: string
  /** The path that was loaded: the published file, or its glibc-compatible copy. */
  readonly loadedFrom: string
  readonly glibcCompat: boolean
}

let loaded: LoadedBinary | null = null

/** What the last successful `loadNativeUws` loaded (null before). */
export function loadedUwsBinary(): LoadedBinary | null {
  return loaded
}

/** The installed package's folder (its `exports` hide package.json, so resolve its main file). */
export function uwsPackageDir(): string {
  return path.dirname(require.resolve('uWebSockets.js'))
}

function supportedList(): string {
  return Object.entries(supportedAbis)
    .map(([abi, node]) => `${node} (ABI ${abi})`)
    .join(', ')
}

function refusal(abi: string, reason: string): Error {
  return new Error(
    `The native uWebSockets.js binary did not load for Node.js ${process.version} (ABI ${abi}) on ` +
      `${process.platform}-${process.arch}: ${reason}. uWebSockets.js ${uwsVersion} supports ${supportedList()} ` +
      'on Linux (glibc) and macOS, x64 and arm64. The service refuses the slow JavaScript fallback.',
  )
}

function sha256(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex')
}

/** Where the published binary comes from: its bytes, and a path to load it from. */
interface BinarySource {
  readonly bytes: Buffer
  /** Names the file in errors. */
  readonly label: string
  /** A path holding exactly `bytes` (asked for only once they are verified). */
  path(): string
}

/** The installed package's folder, once its manifest is the pinned package and version. */
function checkedPackageDir(abi: string): string {
  const directory = uwsPackageDir()
  const manifest = JSON.parse(readFileSync(path.join(directory, 'package.json'), 'utf8')) as {
    name?: string
    version?: string
  }
  if (manifest.name !== uwsPackage || manifest.version !== uwsVersion) {
    throw refusal(
      abi,
      `node_modules has ${manifest.name}@${manifest.version}, expected ${uwsPackage}@${uwsVersion} (run npm ci)`,
    )
  }
  return directory
}

/** The installed package's file. */
function checkoutSource(abi: string, directory: string, file: string): BinarySource {
  const binary = path.join(directory, file)
  try {
    return { bytes: readFileSync(binary), label: binary, path: () => binary }
  } catch (error) {
    throw refusal(abi, `${binary} is missing (${(error as Error).message}); run npm ci`)
  }
}

/** The single executable's copy (binary/build.ts embeds the published file of its Node's ABI), loaded from the runtime's private folder. */
function embeddedSource(abi: string, file: string, embedded: PackagedRuntime): BinarySource {
  try {
    return { bytes: embedded.bytes(file), label: `the embedded ${file}`, path: () => embedded.file(file) }
  } catch (error) {
    throw refusal(
      abi,
      `the executable does not embed ${file} (${(error as Error).message}): it was built for another Node.js`,
    )
  }
}

/** Loads and verifies the native addon; throws a clear error instead of falling back to JS. */
export function loadNativeUws(abi: string = process.versions.modules): typeof Uws {
  const file = `uws_${process.platform}_${process.arch}_${abi}.node`
  const embedded = packaged()
  const directory = embedded === null ? checkedPackageDir(abi) : null
  const expected = binarySha256[file]
  if (expected === undefined) throw refusal(abi, `no binary ${file} is published for this platform and ABI`)
  const source = directory !== null ? checkoutSource(abi, directory, file) : embeddedSource(abi, file, embedded!)
  const actual = sha256(source.bytes)
  if (actual !== expected) throw refusal(abi, `${source.label} has sha256 ${actual}, not the published ${expected}`)
  const binary = source.path()
  try {
    const native = require(binary) as typeof Uws
    loaded = { file, sha256: actual, loadedFrom: binary, glibcCompat: false }
    return native
  } catch (error) {
    const message = (error as Error).message
    if (process.platform !== 'linux' || !message.includes(`version \`${compatGlibcVersion}' not found`)) {
      throw refusal(abi, message)
    }
    // The single executable keeps its compatible copy beside the embedded one, in its private folder.
    const copy = compatCopy(
      source.bytes,
      file,
      actual,
      abi,
      message,
      embedded !== null ? [path.dirname(binary)] : undefined,
    )
    try {
      const native = require(copy) as typeof Uws
      loaded = { file, sha256: actual, loadedFrom: copy, glibcCompat: true }
      return native
    } catch (compatError) {
      throw refusal(
        abi,
        `${message}; its glibc-compatible copy ${copy} did not load either: ${(compatError as Error).message}`,
      )
    }
  }
}

/**
 * Writes (once) the copy of the verified binary with its `__isoc23_` imports rebound, next to
 * node_modules (or in the temporary folder when that is read-only), and answers its path. The
 * file name carries the published binary's hash; an existing copy is used only when its bytes are
 * exactly what the rebinding produces.
 */
function compatCopy(
  bytes: Buffer,
  file: string,
  publishedSha: string,
  abi: string,
  loadError: string,
  folders?: readonly string[],
): string {
  const patched = Buffer.from(bytes)
  try {
    bindClassicIsoc23(patched)
  } catch (error) {
    throw refusal(abi, `${loadError}; the glibc compatibility rebinding refused it: ${(error as Error).message}`)
  }
  const name = `${file.replace(/\.node$/, '')}.glibc-compat.${publishedSha.slice(0, 16)}.node`
  const patchedSha = sha256(patched)
  const directories = folders ?? [
    path.resolve(uwsPackageDir(), '..', '.cache', 'pricing-service-uws'),
    path.join(tmpdir(), `pricing-service-uws-${process.getuid?.() ?? 'user'}`),
  ]
  const failures: string[] = []
  for (const directory of directories) {
    const target = path.join(directory, name)
    try {
      if (existsSync(target) && sha256(readFileSync(target)) === patchedSha) return target
      mkdirSync(directory, { recursive: true, mode: 0o755 })
      const temporary = `${target}.${process.pid}.tmp`
      writeFileSync(temporary, patched, { mode: 0o755 })
      renameSync(temporary, target)
      return target
    } catch (error) {
      failures.push(`${directory}: ${(error as Error).message}`)
    }
  }
  throw refusal(abi, `${loadError}; no folder to write its glibc-compatible copy (${failures.join('; ')})`)
}
