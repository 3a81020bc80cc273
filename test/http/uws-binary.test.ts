import { createHash } from 'node:crypto'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import t from 'tap'
import { binarySha256, supportedAbis, uwsVersion } from '../../http/uws/binaries.js'
import { bindClassicIsoc23 } from '../../http/uws/glibc-compat.js'
import { loadNativeUws, loadedUwsBinary, uwsPackageDir } from '../../http/uws/load.js'

const packageDir = uwsPackageDir()
const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex')

t.test('the native uWebSockets.js binary loads for this Node ABI', async (t) => {
  const uws = loadNativeUws()
  t.type(uws.App, 'function')
  t.type(uws.us_socket_local_port, 'function', 'a native-only export is present')
  const loaded = loadedUwsBinary()!
  t.equal(loaded.file, `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`)
  t.equal(loaded.sha256, binarySha256[loaded.file], 'the loaded binary is the published one')
  t.ok(process.versions.modules in supportedAbis, `ABI ${process.versions.modules} is listed as supported`)
})

t.test('an unsupported ABI stops start-up naming the running Node, its ABI and the supported ones', async (t) => {
  let message = ''
  try {
    loadNativeUws('999')
  } catch (error) {
    message = (error as Error).message
  }
  t.match(message, `Node.js ${process.version} (ABI 999)`)
  t.match(message, 'Node.js 20 (ABI 115), Node.js 22 (ABI 127), Node.js 24 (ABI 137)')
  t.match(message, /refuses the slow JavaScript fallback/)
})

t.test('every published binary in node_modules has its recorded sha256', async (t) => {
  let checked = 0
  for (const [file, expected] of Object.entries(binarySha256)) {
    t.equal(sha256(readFileSync(path.join(packageDir, file))), expected, file)
    checked++
  }
  t.equal(checked, 20, '5 platforms x 4 ABIs')
  t.equal(JSON.parse(readFileSync(path.join(packageDir, 'package.json'), 'utf8')).version, uwsVersion)
})

/** `objdump -T` lines of the undefined symbols of a binary, as `name@version`. */
function imports(file: string): string[] {
  const text = execFileSync('objdump', ['-T', file], { encoding: 'utf8' })
  return [...text.matchAll(/\*UND\*\s+\S+\s+(?:\((\S+)\)|\S+)\s+(\S+)$/gm)].map(
    (match) => `${match[2]}@${match[1] ?? ''}`,
  )
}

t.test('the glibc rebinding changes only the three __isoc23_ imports of the Linux binaries', async (t) => {
  let objdump = true
  try {
    execFileSync('objdump', ['--version'])
  } catch {
    objdump = false
  }
  for (const arch of ['x64', 'arm64']) {
    for (const abi of ['115', '127', '137', '141']) {
      const file = path.join(packageDir, `uws_linux_${arch}_${abi}.node`)
      const original = readFileSync(file)
      const patched = Buffer.from(original)
      const rebound = bindClassicIsoc23(patched).sort()
      t.same(
        rebound,
        arch === 'x64'
          ? ['__isoc23_sscanf', '__isoc23_strtol', '__isoc23_strtoul']
          : ['__isoc23_strtol', '__isoc23_strtoul'],
        `${arch} ${abi}: rebound`,
      )
      let changed = 0
      for (let index = 0; index < original.length; index++) if (original[index] !== patched[index]) changed++
      t.ok(changed > 0 && changed <= 5 * rebound.length + 1, `${arch} ${abi}: ${changed} bytes changed`)
      t.same(bindClassicIsoc23(Buffer.from(patched)), [], 'a rebound binary needs nothing more')
      if (!objdump || arch !== 'x64') continue
      const directory = mkdtempSync(path.join(tmpdir(), 'uws-rebound-'))
      const temporary = path.join(directory, `${abi}.node`)
      writeFileSync(temporary, patched)
      const before = imports(file)
      const after = imports(temporary)
      rmSync(directory, { recursive: true, force: true })
      t.same(
        after.filter((symbol) => symbol.includes('GLIBC_2.38')),
        [],
        'no import needs glibc 2.38',
      )
      const expected = before.map((symbol) => symbol.replace(/^__isoc23_(\w+)@GLIBC_2\.38$/, '$1@GLIBC_2.2.5'))
      t.same(after, expected, `${abi}: every other import is as published`)
    }
  }
})
