/**
 * The single executable's runtime (platform/packaged.ts): its embedded files come from Node's SEA
 * assets (`node:sea`). What must exist on disk (native addons, worker scripts) is written into a
 * folder of this user only (mode 0700) under the temporary directory, named after the build, and
 * used only when its bytes hash to the embedded file's: a file planted there by someone else is
 * replaced, never loaded.
 * @module
 */
import { createHash } from 'node:crypto'
import { chmodSync, existsSync, lstatSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { getRawAsset } from 'node:sea'
import type { PackagedRuntime } from '../platform/packaged.js'

const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex')

export function seaRuntime(buildId: string): PackagedRuntime {
  const folder = path.join(
    process.env['TMPDIR'] ?? tmpdir(),
    `pricing-service-${buildId}-${process.getuid?.() ?? 'user'}`,
  )
  const written = new Map<string, string>()
  const load = createRequire(process.execPath)

  function bytes(name: string): Buffer {
    return Buffer.from(getRawAsset(name) as ArrayBuffer)
  }

  function privateFolder(): void {
    if (!existsSync(folder)) mkdirSync(folder, { recursive: true, mode: 0o700 })
    const stat = lstatSync(folder)
    if (!stat.isDirectory() || (process.getuid !== undefined && stat.uid !== process.getuid())) {
      throw new Error(`${folder} is not a folder of this user: the binary will not load code from it`)
    }
    if ((stat.mode & 0o077) !== 0) chmodSync(folder, 0o700)
  }

  function file(name: string): string {
    const known = written.get(name)
    if (known !== undefined) return known
    const content = bytes(name)
    const hash = sha256(content)
    privateFolder()
    const target = path.join(folder, name.replaceAll('/', '_'))
    if (!existsSync(target) || sha256(readFileSync(target)) !== hash) {
      const temporary = `${target}.${process.pid}.tmp`
      writeFileSync(temporary, content, { mode: 0o700 })
      renameSync(temporary, target)
    }
    written.set(name, target)
    return target
  }

  return { bytes, file, addon: (name) => load(file(name)) as unknown }
}
