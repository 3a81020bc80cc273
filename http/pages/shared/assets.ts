/**
 * The pages' static files (issue 9), read once at start from http/pages/shared/assets/ (see `assetsDir`;
 * the single executable embeds them), answered with long caching since each name carries the service version.
 * @module
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { packaged } from '../../../platform/packaged.js'

/** The files of http/pages/shared/assets/ that pages use (the single executable embeds them as `web/<name>`). */
export const assetNames = ['app.css', 'console.js', 'portal.js'] as const

/** The assets' directory in the source tree (the build reads them from there too). */
export const assetsDir = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '..',
  '..',
  '..',
  '..',
  'http',
  'pages',
  'shared',
  'assets',
)

const types: Readonly<Record<string, string>> = {
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
}

export interface Asset {
  readonly body: Buffer
  readonly type: string
}

let loaded: Map<string, Asset> | null = null

/** The asset of a file name, or undefined. */
export function asset(name: string): Asset | undefined {
  if (loaded === null) {
    loaded = new Map()
    const embedded = packaged()
    for (const file of assetNames)
      loaded.set(file, {
        body: embedded !== null ? embedded.bytes(`web/${file}`) : readFileSync(path.join(assetsDir, file)),
        type: types[path.extname(file)]!,
      })
  }
  return loaded.get(name)
}
