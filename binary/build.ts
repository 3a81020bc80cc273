/**
 * `npm run build:binary` (issue 10): the service as one executable, `dist/pricing-service`, a Node.js
 * single executable application (SEA) of the Node.js that runs this build (Linux x64).
 *
 * 1. esbuild bundles the entry (binary/main.ts), the price-query worker (workers/price-task.ts) and
 *    piscina's own worker script into CommonJS files. Three places that load a native addon or a
 *    worker by path are redirected to the embedded files (platform/packaged.ts): lmdb's and
 *    msgpackr-extract's `node-gyp-build-optional-packages` call, and piscina's worker path; and
 *    ordered-binary, whose direct eval survives only in its CommonJS build.
 * 2. The SEA blob holds the entry and, as assets, the worker scripts, the native addons for this
 *    Node's ABI (uWebSockets.js, lmdb, msgpackr-extract) and the pages' files.
 * 3. A copy of this `node` gets the blob injected by postject; the old signature-free ELF needs no
 *    further step on Linux.
 * @module
 */
import { createHash } from 'node:crypto'
import { execFileSync } from 'node:child_process'
import { chmodSync, copyFileSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { build, type Plugin } from 'esbuild'
import { assetNames, assetsDir } from '../http/pages/shared/assets.js'
import { buildInfo } from '../platform/version.js'

const require = createRequire(import.meta.url)
/** The repository (this file runs as dist/binary/build.js). */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')
const defaultWork = path.join(root, 'dist', 'binary-build')
const defaultOutput = path.join(root, 'dist', 'pricing-service')
const seaFuse = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2'

/** The native addons node-gyp-build would pick for this Node, by the name the binary embeds them as. */
function nativeAddons(): Record<string, string> {
  const gypBuild = require('node-gyp-build-optional-packages') as { resolve(dir: string): string }
  const lmdbDir = path.join(root, 'node_modules', 'lmdb')
  const extractDir = path.join(root, 'node_modules', 'msgpackr-extract')
  const uwsDir = path.dirname(require.resolve('uWebSockets.js'))
  const uws = `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`
  return {
    [uws]: path.join(uwsDir, uws),
    'lmdb.node': gypBuild.resolve(lmdbDir),
    'msgpackr-extract.node': gypBuild.resolve(extractDir),
  }
}

/** Redirects the loads by path to the embedded files (see the module comment). */
const embeddedLoads: Plugin = {
  name: 'embedded-loads',
  setup(plugin) {
    plugin.onResolve({ filter: /^node-gyp-build-optional-packages$/ }, (args) => ({
      path: /msgpackr-extract/.test(args.importer) ? 'msgpackr-extract.node' : 'lmdb.node',
      namespace: 'embedded-addon',
    }))
    plugin.onLoad({ filter: /.*/, namespace: 'embedded-addon' }, (args) => ({
      contents: `module.exports = function load() {
  const runtime = globalThis.__pricingPackaged
  if (runtime === undefined) throw new Error('${args.path}: the embedded addons load in the main thread only')
  return runtime.addon(${JSON.stringify(args.path)})
}`,
      loader: 'js',
    }))
    // ordered-binary builds its string reader with a direct eval that names a module variable
    // (`position`); bundled as an ES module its top-level names may be renamed, so the eval'd code
    // would read another variable and loop forever. Its CommonJS build keeps them in one closure.
    plugin.onResolve({ filter: /^ordered-binary$/ }, () => ({
      path: path.join(root, 'node_modules', 'ordered-binary', 'dist', 'index.cjs'),
    }))
    // ioredis's VerbatimString extends String, which slows msgpackr process-wide: the plain class
    // of cluster/verbatim-string.ts instead (it says why; a checkout swaps it in cluster/ioredis-shim.ts).
    plugin.onLoad({ filter: /ioredis[\\/]built[\\/]resp[\\/]verbatim-string\.js$/ }, () => ({
      contents: `export { VerbatimString } from ${JSON.stringify(path.join(root, 'cluster', 'verbatim-string.ts'))}`,
      resolveDir: path.join(root, 'cluster'),
      loader: 'ts',
    }))
    plugin.onLoad({ filter: /piscina[\\/]dist[\\/]index\.js$/ }, (args) => {
      const source = readFileSync(args.path, 'utf8')
      const workerPath = "(0, node_path_1.resolve)(__dirname, 'worker.js')"
      if (!source.includes(workerPath)) throw new Error(`piscina changed: ${workerPath} is not in ${args.path}`)
      return {
        contents: source.replace(workerPath, "globalThis.__pricingPackaged.file('piscina-worker.cjs')"),
        loader: 'js',
      }
    })
  },
}

async function bundle(entry: string, outfile: string, buildId: string, plugins: Plugin[] = []): Promise<void> {
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: `node${process.versions.node.split('.')[0]}`,
    // ESM modules read import.meta.url; in the bundle it is the executable's own URL.
    // The version and commit of this checkout, fixed into the executable (platform/version.ts).
    define: {
      'import.meta.url': '__importMetaUrl',
      PRICING_BUILD_ID: JSON.stringify(buildId),
      PRICING_BUILD_INFO: JSON.stringify({ version: buildInfo().version, commit: buildInfo().commit }),
    },
    banner: { js: 'var __importMetaUrl = require("node:url").pathToFileURL(__filename).href;' },
    plugins,
    // piscina's optional process-priority addon, needed only with its niceIncrement option.
    external: ['@napi-rs/nice'],
    legalComments: 'none',
    logLevel: 'warning',
  })
}

const sha = (bytes: Buffer | string): string => createHash('sha256').update(bytes).digest('hex')

/** Builds the executable at `output` (default dist/pricing-service), with its intermediate files in `work`. */
export async function buildBinary(
  output = defaultOutput,
  work = defaultWork,
): Promise<{ file: string; bytes: number }> {
  rmSync(work, { recursive: true, force: true })
  mkdirSync(work, { recursive: true })
  // The workers first: the build id covers every file the binary writes to disk at run time.
  await bundle(path.join(root, 'workers', 'price-task.ts'), path.join(work, 'price-task.cjs'), '')
  // piscina's exports hide its worker script: it sits beside the package's main file.
  await bundle(
    path.join(path.dirname(require.resolve('piscina')), 'worker.js'),
    path.join(work, 'piscina-worker.cjs'),
    '',
  )
  const assets: Record<string, string> = {
    'price-task.cjs': path.join(work, 'price-task.cjs'),
    'piscina-worker.cjs': path.join(work, 'piscina-worker.cjs'),
    ...nativeAddons(),
    ...Object.fromEntries(assetNames.map((name) => [`web/${name}`, path.join(assetsDir, name)])),
  }
  const buildId = sha(
    Object.entries(assets)
      .map(([name, file]) => `${name}:${sha(readFileSync(file))}`)
      .join('\n'),
  ).slice(0, 16)
  await bundle(path.join(root, 'binary', 'main.ts'), path.join(work, 'main.cjs'), buildId, [embeddedLoads])
  if (/\bextends String\b/.test(readFileSync(path.join(work, 'main.cjs'), 'utf8')))
    throw new Error('the bundle defines a class that extends String (cluster/verbatim-string.ts says why not)')
  const config = {
    main: path.join(work, 'main.cjs'),
    output: path.join(work, 'sea-prep.blob'),
    disableExperimentalSEAWarning: true,
    useSnapshot: false,
    useCodeCache: true,
    assets,
  }
  writeFileSync(path.join(work, 'sea-config.json'), JSON.stringify(config, null, 2))
  execFileSync(process.execPath, ['--experimental-sea-config', path.join(work, 'sea-config.json')], {
    stdio: 'inherit',
  })
  mkdirSync(path.dirname(output), { recursive: true })
  rmSync(output, { force: true })
  copyFileSync(process.execPath, output)
  chmodSync(output, 0o755)
  const { inject } = require('postject') as {
    inject(file: string, name: string, data: Buffer, options: { sentinelFuse: string }): Promise<void>
  }
  await inject(output, 'NODE_SEA_BLOB', readFileSync(path.join(work, 'sea-prep.blob')), { sentinelFuse: seaFuse })
  return { file: output, bytes: statSync(output).size }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const built = await buildBinary()
  process.stdout.write(
    `${path.relative(root, built.file)}: ${(built.bytes / 1024 / 1024).toFixed(1)} MiB, Node.js ${process.version}\n`,
  )
}
