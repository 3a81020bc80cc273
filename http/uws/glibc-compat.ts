/**
 * glibc compatibility for the uWebSockets.js binaries of Node.js 22 and newer on Linux.
 *
 * Upstream builds those binaries on Ubuntu 24.04 (glibc 2.39). Built with C23 headers, three
 * calls bind to glibc 2.38's `__isoc23_strtol`, `__isoc23_strtoul` and `__isoc23_sscanf`, so
 * the binaries refuse to load on an older glibc (Debian 12 has 2.36) although nothing else in them
 * needs more than 2.36. The `__isoc23_` functions differ from the classic `strtol`, `strtoul`
 * and `sscanf` only in also reading the C23 binary prefix `0b` (base 0 or 2, `%i`), which no
 * HTTP parsing in uWebSockets relies on.
 *
 * `bindClassicIsoc23` rebinds those three imports to the classic functions in a copy of the
 * binary: each symbol's name offset moves past its `__isoc23_` prefix (the classic name is the
 * tail of the same string), its version becomes the architecture's base glibc version, and the
 * now unused `GLIBC_2.38` requirement is marked weak. Sizes and layout stay the same; nothing else
 * is touched. Anything unexpected (another symbol needing 2.38, a different ELF) throws.
 * @module
 */

const ELF_MAGIC = 0x464c457f
const SHT_DYNSYM = 11
const SHT_GNU_VERNEED = 0x6ffffffe
const SHT_GNU_VERSYM = 0x6fffffff
const VER_FLG_WEAK = 0x2
const EM_X86_64 = 62
const EM_AARCH64 = 183
const isoc23Prefix = '__isoc23_'
/** The three functions that gained `__isoc23_` twins in glibc 2.38 and that the binaries use. */
const rebindable = new Set(['__isoc23_strtol', '__isoc23_strtoul', '__isoc23_sscanf'])
export const compatGlibcVersion = 'GLIBC_2.38'

interface Section {
  readonly type: number
  readonly offset: number
  readonly size: number
  readonly link: number
  readonly info: number
}

interface VersionNeed {
  readonly file: string
  readonly name: string
  /** File offset of the Vernaux entry. */
  readonly at: number
  /** The version index (`vna_other`) that symbols refer to. */
  readonly index: number
}

/** Answers the names of the imports rebound; throws when the binary is not what this expects. */
export function bindClassicIsoc23(elf: Buffer): string[] {
  if (elf.length < 64 || elf.readUInt32LE(0) !== ELF_MAGIC || elf[4] !== 2 || elf[5] !== 1) {
    throw new Error('not a 64-bit little-endian ELF file')
  }
  const machine = elf.readUInt16LE(0x12)
  const baseVersion = machine === EM_X86_64 ? 'GLIBC_2.2.5' : machine === EM_AARCH64 ? 'GLIBC_2.17' : null
  if (baseVersion === null) throw new Error(`unsupported ELF machine ${machine}`)
  const sections = readSections(elf)
  const dynsym = only(sections, SHT_DYNSYM, 'dynamic symbol table')
  const versym = only(sections, SHT_GNU_VERSYM, 'symbol version table')
  const verneed = only(sections, SHT_GNU_VERNEED, 'version requirements')
  const dynstr = sections[dynsym.link]
  if (dynstr === undefined) throw new Error('no dynamic string table')
  const text = (offset: number): string =>
    elf.toString('latin1', dynstr.offset + offset, elf.indexOf(0, dynstr.offset + offset))
  const needs = readVersionNeeds(elf, verneed, text)
  const libc = needs.filter((need) => need.file === 'libc.so.6')
  const compat = libc.find((need) => need.name === compatGlibcVersion)
  const base = libc.find((need) => need.name === baseVersion)
  if (compat === undefined) return []
  if (base === undefined) throw new Error(`no ${baseVersion} requirement to bind to`)
  const rebound: string[] = []
  const count = dynsym.size / 24
  for (let index = 0; index < count; index++) {
    const entry = dynsym.offset + index * 24
    if ((elf.readUInt16LE(versym.offset + index * 2) & 0x7fff) !== compat.index) continue
    const nameOffset = elf.readUInt32LE(entry)
    const name = text(nameOffset)
    if (!rebindable.has(name)) throw new Error(`${name} needs ${compatGlibcVersion} and has no older equivalent`)
    elf.writeUInt32LE(nameOffset + isoc23Prefix.length, entry)
    elf.writeUInt16LE(base.index, versym.offset + index * 2)
    rebound.push(name)
  }
  elf.writeUInt16LE(elf.readUInt16LE(compat.at + 4) | VER_FLG_WEAK, compat.at + 4)
  return rebound
}

function readSections(elf: Buffer): Section[] {
  const offset = Number(elf.readBigUInt64LE(0x28))
  const entrySize = elf.readUInt16LE(0x3a)
  const count = elf.readUInt16LE(0x3c)
  const sections: Section[] = []
  for (let index = 0; index < count; index++) {
    const at = offset + index * entrySize
    sections.push({
      type: elf.readUInt32LE(at + 4),
      offset: Number(elf.readBigUInt64LE(at + 0x18)),
      size: Number(elf.readBigUInt64LE(at + 0x20)),
      link: elf.readUInt32LE(at + 0x28),
      info: elf.readUInt32LE(at + 0x2c),
    })
  }
  return sections
}

function only(sections: readonly Section[], type: number, what: string): Section {
  const found = sections.filter((section) => section.type === type)
  if (found.length !== 1) throw new Error(`expected one ${what}, found ${found.length}`)
  return found[0]!
}

/** The Verneed/Vernaux chains: which version of which library each version index stands for. */
function readVersionNeeds(elf: Buffer, verneed: Section, text: (offset: number) => string): VersionNeed[] {
  const needs: VersionNeed[] = []
  let at = verneed.offset
  for (let file = 0; file < verneed.info; file++) {
    const fileName = text(elf.readUInt32LE(at + 4))
    let aux = at + elf.readUInt32LE(at + 8)
    for (let version = elf.readUInt16LE(at + 2); version > 0; version--) {
      needs.push({ file: fileName, name: text(elf.readUInt32LE(aux + 8)), at: aux, index: elf.readUInt16LE(aux + 6) })
      aux += elf.readUInt32LE(aux + 12)
    }
    at += elf.readUInt32LE(at + 12)
  }
  return needs
}
