/**
 * `npm run layers`: the import graph's layering report (test/layers/import-graph.ts) for the
 * source tree; exits 1 on an upward import, an unresolved import or a circle.
 * @module
 */
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { formatReport, layerReport } from './import-graph.js'

// From dist*/test/layers/ to the checkout (the report reads the sources, not the build).
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..')
const report = layerReport(root)
process.stdout.write(`${formatReport(report)}\n`)
process.exit(report.upward.length + report.unresolved.length + report.circles.length === 0 ? 0 : 1)
