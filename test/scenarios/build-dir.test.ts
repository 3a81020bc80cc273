// `npm test` builds into its own folder (dist-test/, or PRICING_BUILD_DIR), never into dist/: a
// running `npm start` serves from dist/, and a clean test build there deleted it under the service.
import t from 'tap'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const buildRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')

t.test('the tests run from a build folder other than dist/', async (t) => {
  t.not(path.basename(buildRoot), 'dist', `this test runs from ${buildRoot}`)
  t.equal(path.basename(buildRoot), process.env.PRICING_BUILD_DIR ?? 'dist-test')
})
