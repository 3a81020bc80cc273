/**
 * The layering rule (test/layers/import-graph.ts) holds for the source tree: no import points to a
 * higher layer, none is unresolved, and no module reaches itself through its imports. The checker
 * itself is tried on a small tree that breaks each rule.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { formatReport, layerReport } from './import-graph.js'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..')

t.test('the source tree keeps its layers', async (t) => {
  const report = layerReport(root)
  t.ok(report.files.length > 150, `every layer's sources are read (${report.files.length} files)`)
  t.ok(
    report.files.includes('engine/query.ts') &&
      report.files.includes('http/app.ts') &&
      report.files.includes('server/main.ts'),
    'files of the bottom, the edge and the process are among them',
  )
  t.same(report.upward, [], 'no import points to a higher layer')
  t.same(report.unresolved, [], 'every relative import names a source file')
  t.same(report.circles, [], 'no import circle')
  const engineImports = report.edges.filter((edge) => edge.from.startsWith('engine/') && !edge.to.startsWith('engine/'))
  t.same(engineImports, [], 'engine/ imports no other project folder')
  t.same(
    report.edges.filter(
      (edge) => edge.to.startsWith('server/') && !edge.from.startsWith('server/') && !edge.from.startsWith('binary/'),
    ),
    [],
    'only the single executable imports server/',
  )
  t.comment(formatReport(report))
})

t.test('the checker finds an upward import, an unresolved import and a circle', async (t) => {
  const tree = mkdtempSync(path.join(os.tmpdir(), 'layers-'))
  t.teardown(() => rmSync(tree, { recursive: true, force: true }))
  const write = (file: string, text: string): void => {
    mkdirSync(path.dirname(path.join(tree, file)), { recursive: true })
    writeFileSync(path.join(tree, file), text)
  }
  write('engine/a.ts', "import { b } from './b.js'\nexport const a = b\n")
  write('engine/b.ts', "import type { a } from './a.js'\nexport const b = 1 as typeof a\n")
  write('storage/s.ts', "import { h } from '../http/h.js'\nimport { x } from './missing.js'\nexport const s = h + x\n")
  write('http/h.ts', "import { s } from '../storage/s.js'\nexport const h = 1\nexport const t = s\n")
  const report = layerReport(tree)
  t.same(report.upward, [{ from: 'storage/s.ts', to: 'http/h.ts' }], 'storage -> http is upward')
  t.same(report.unresolved, [{ from: 'storage/s.ts', to: 'storage/missing.ts' }], 'a missing file is unresolved')
  t.same(
    report.circles.map((circle) => circle.join(' ')).sort(),
    ['engine/a.ts engine/b.ts', 'http/h.ts storage/s.ts'],
    'both circles, a type-only one included',
  )
  t.equal(report.lines['engine'], 6, 'lines are counted per layer')
})
