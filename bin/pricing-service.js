#!/usr/bin/env node
// Entry of the `pricing-service` command: `start` (default) runs the server; other commands manage
// tenants and keys (see `pricing-service help`). It runs the compiled tree in dist/: `npm start`
// and `npm run build` compile it (`tsc -b`: only when a source is newer than the last build).
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const entry = new URL('../dist/server/start.js', import.meta.url)
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write('pricing-service: dist/ is not built yet; run `npm run build` (or `npm start`) first\n')
  process.exit(1)
}
await import(entry.href)
