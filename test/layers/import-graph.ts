/**
 * The layering rule as code: the project's folders are layers, bottom to top, and an import may
 * point to its own layer or one below, never above; and no module reaches itself through its
 * imports (no circle, type-only imports included: a circle of types is a circle of concepts).
 * README "Layers" shows the picture. Run `npm run layers` for the report; test/layers/import-graph.test.ts fails
 * CI on any finding.
 * @module
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import path from 'node:path'
import ts from 'typescript'

/** Bottom to top. `binary/` is the single executable's entry, beside `server/start.ts`. */
export const layers = [
  'engine',
  'storage',
  'workers',
  'platform',
  'tenant',
  'accounts',
  'cluster',
  'http',
  'server',
  'binary',
] as const
export type Layer = (typeof layers)[number]

export interface ImportEdge {
  readonly from: string
  readonly to: string
}

export interface LayerReport {
  readonly files: string[]
  readonly edges: ImportEdge[]
  /** Imports that point to a higher layer. */
  readonly upward: ImportEdge[]
  /** Imports of a file that does not exist (a path the rule cannot place). */
  readonly unresolved: ImportEdge[]
  /** Each circle: its files, in the order the imports run. */
  readonly circles: string[][]
  /** Source lines per layer. */
  readonly lines: Record<string, number>
}

function layerOf(file: string): Layer | null {
  const top = file.split('/')[0]!
  return (layers as readonly string[]).includes(top) ? (top as Layer) : null
}

function sources(root: string): string[] {
  const found: string[] = []
  const walk = (folder: string): void => {
    for (const name of readdirSync(path.join(root, folder))) {
      const relative = path.posix.join(folder, name)
      if (statSync(path.join(root, relative)).isDirectory()) walk(relative)
      else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) found.push(relative)
    }
  }
  for (const layer of layers) {
    try {
      walk(layer)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
    }
  }
  return found.sort()
}

/** The relative imports of one file (static, dynamic and `export ... from`), as project paths. */
function importsOf(root: string, file: string): { targets: string[]; lineCount: number } {
  const text = readFileSync(path.join(root, file), 'utf8')
  const targets: string[] = []
  for (const imported of ts.preProcessFile(text, true, true).importedFiles) {
    if (!imported.fileName.startsWith('.')) continue
    const target = path.posix.normalize(path.posix.join(path.posix.dirname(file), imported.fileName))
    targets.push(target.replace(/\.js$/, '.ts'))
  }
  return { targets, lineCount: text.split('\n').length }
}

/** Strongly connected components of more than one file, or a file importing itself (Tarjan). */
function circlesOf(files: readonly string[], edges: readonly ImportEdge[]): string[][] {
  const next = new Map<string, string[]>(files.map((file) => [file, []]))
  for (const edge of edges) next.get(edge.from)?.push(edge.to)
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const found: string[][] = []
  let counter = 0
  const visit = (file: string): void => {
    index.set(file, counter)
    low.set(file, counter)
    counter++
    stack.push(file)
    onStack.add(file)
    for (const target of next.get(file) ?? []) {
      if (!next.has(target)) continue
      if (!index.has(target)) {
        visit(target)
        low.set(file, Math.min(low.get(file)!, low.get(target)!))
      } else if (onStack.has(target)) low.set(file, Math.min(low.get(file)!, index.get(target)!))
    }
    if (low.get(file) !== index.get(file)) return
    const component: string[] = []
    for (;;) {
      const member = stack.pop()!
      onStack.delete(member)
      component.push(member)
      if (member === file) break
    }
    if (component.length > 1 || (next.get(file) ?? []).includes(file)) found.push(component.sort())
  }
  for (const file of files) if (!index.has(file)) visit(file)
  return found
}

export function layerReport(root: string): LayerReport {
  const files = sources(root)
  const known = new Set(files)
  const edges: ImportEdge[] = []
  const upward: ImportEdge[] = []
  const unresolved: ImportEdge[] = []
  const lines: Record<string, number> = Object.fromEntries(layers.map((layer) => [layer, 0]))
  for (const file of files) {
    const { targets, lineCount } = importsOf(root, file)
    lines[layerOf(file)!] += lineCount
    for (const to of targets) {
      const edge = { from: file, to }
      edges.push(edge)
      const target = layerOf(to)
      if (!known.has(to) || target === null) unresolved.push(edge)
      else if (layers.indexOf(target) > layers.indexOf(layerOf(file)!)) upward.push(edge)
    }
  }
  return { files, edges, upward, unresolved, circles: circlesOf(files, edges), lines }
}

/** The report as text: counts, then each finding on its own line. */
export function formatReport(report: LayerReport): string {
  const out = [
    `layers, bottom to top: ${layers.join(' < ')}`,
    `${report.files.length} files, ${report.edges.length} imports`,
    `lines: ${layers.map((layer) => `${layer} ${report.lines[layer]}`).join(', ')}`,
    `upward imports: ${report.upward.length}`,
    ...report.upward.map((edge) => `  ${edge.from} -> ${edge.to}`),
    `unresolved imports: ${report.unresolved.length}`,
    ...report.unresolved.map((edge) => `  ${edge.from} -> ${edge.to}`),
    `import circles: ${report.circles.length}`,
    ...report.circles.map((circle) => `  (${circle.length}) ${circle.join(' ')}`),
  ]
  return out.join('\n')
}
