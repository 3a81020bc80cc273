/**
 * Where the shared fixture files are (the ECB feed files and others in ../shared/fixtures, next to
 * the repository), found from the compiled test so that any build folder works.
 */
import { existsSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

/** The repository root: the first folder above the compiled helper that holds package.json. */
export function repoRoot(): string {
  let folder = path.dirname(fileURLToPath(import.meta.url))
  while (!existsSync(path.join(folder, 'package.json'))) {
    const parent = path.dirname(folder)
    if (parent === folder) throw new Error('repository root not found')
    folder = parent
  }
  return folder
}

/** The shared fixtures folder, beside the repository. */
export const sharedFixturesDir = path.resolve(repoRoot(), '../shared/fixtures')
