/**
 * The docs stay true and self-contained (issue 15 point 9): every relative link in README.md,
 * docs/ and bench/README.md points to a file (and heading) in the repository, none points outside
 * it, and docs/plans.md's table is the one in tenant/plans.ts. The table is generated: with
 * PRICING_UPDATE_DOCS=true this suite rewrites it instead of failing. docs/errors.md's table lists
 * every code of the error registry (platform/errors.ts) with its status, and no other code.
 */
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { errorStatus } from '../../http/error-status.js'
import { errorCodes } from '../../platform/errors.js'
import { plans, tiers, type Limits } from '../../tenant/plans.js'
import { repoRoot } from '../helpers/fixtures.js'

const root = repoRoot()
const markdownFiles = [
  'README.md',
  'bench/README.md',
  ...readdirSync(path.join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
]

/** What each limit means, in the order of the table. */
const limitMeanings: Readonly<Record<keyof Limits, string>> = {
  articles: 'live articles',
  pricelists: 'live pricelists',
  prices: 'live prices (SKU × pricelist)',
  changelog_capacity: 'changelog entries kept (the oldest are evicted)',
  query_rate: 'reads: items per second',
  query_burst: 'reads: bucket size (items)',
  ingest_rate: 'writes: items per second',
  ingest_burst: 'writes: bucket size (items)',
  max_items_per_request: 'items in one request',
  webhooks: 'webhooks (change events)',
  retention: 'price history retention',
}

function cell(value: number | boolean | null): string {
  if (value === null) return 'unlimited'
  if (typeof value === 'boolean') return value ? 'yes' : 'no'
  return value.toLocaleString('en-US')
}

function plansTable(): string {
  const lines = ['| limit | meaning | starter | standard | enterprise |', '|---|---|---|---|---|']
  for (const [name, meaning] of Object.entries(limitMeanings) as [keyof Limits, string][]) {
    lines.push(`| \`${name}\` | ${meaning} | ${tiers.map((tier) => cell(plans[tier][name])).join(' | ')} |`)
  }
  return lines.join('\n')
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-')
}

function anchorsOf(markdown: string): Set<string> {
  return new Set([...markdown.matchAll(/^#{1,6} (.+)$/gm)].map((match) => anchorOf(match[1]!.replace(/`/g, ''))))
}

/** Markdown without its fenced code blocks and inline code, where `[x](y)` is not a link. */
function prose(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```$/gm, '').replace(/`[^`\n]*`/g, '')
}

t.test('docs/plans.md lists the limits of tenant/plans.ts', async (t) => {
  t.same(Object.keys(limitMeanings).sort(), Object.keys(plans.standard).sort(), 'every limit has a meaning')
  t.same(tiers, ['starter', 'standard', 'enterprise'], 'the table has a column per tier')
  const file = path.join(root, 'docs/plans.md')
  const text = readFileSync(file, 'utf8')
  const block = /(<!-- plans table -->\n)([\s\S]*?)(\n<!-- end of plans table -->)/.exec(text)
  t.ok(block !== null, 'docs/plans.md has the table markers')
  if (block === null) return
  const expected = plansTable()
  if (process.env['PRICING_UPDATE_DOCS'] === 'true' && block[2] !== expected) {
    writeFileSync(file, text.replace(block[0], `${block[1]}${expected}${block[3]}`))
    t.pass('docs/plans.md rewritten')
    return
  }
  t.equal(block[2], expected, 'the table is current (PRICING_UPDATE_DOCS=true rewrites it)')
})

t.test('every relative link in the docs points to a file and heading in the repository', async (t) => {
  let count = 0
  for (const name of markdownFiles) {
    const text = readFileSync(path.join(root, name), 'utf8')
    t.notMatch(text, /\.\.\/shared\/|\/work\/shared/, `${name} names no file outside the repository`)
    for (const match of prose(text).matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = match[1]!
      if (/^[a-z]+:/i.test(target)) continue
      count++
      const [file = '', anchor] = target.split('#')
      const resolved = file === '' ? path.join(root, name) : path.resolve(path.dirname(path.join(root, name)), file)
      const where = `${name}: ${target}`
      t.ok(resolved.startsWith(`${root}${path.sep}`), `${where} stays in the repository`)
      t.ok(existsSync(resolved), `${where} exists`)
      if (anchor !== undefined && existsSync(resolved) && statSync(resolved).isFile()) {
        t.ok(anchorsOf(readFileSync(resolved, 'utf8')).has(anchor), `${where}: the heading exists`)
      }
    }
  }
  t.ok(count >= 10, `${count} relative links checked`)
})

t.test('docs/errors.md lists every code of the error registry with its status, and no other', async (t) => {
  const text = readFileSync(path.join(root, 'docs/errors.md'), 'utf8')
  const rows = [...text.matchAll(/^\| (\d{3}) \| `([a-z_]+)` \|/gm)].map((match) => ({
    status: Number(match[1]),
    code: match[2]!,
  }))
  const documented = rows.map((row) => row.code)
  t.same([...documented].sort(), [...errorCodes].sort(), 'the table has one row per registry code')
  t.equal(new Set(documented).size, documented.length, 'no code has two rows')
  for (const { status, code } of rows) {
    if (!Object.hasOwn(errorStatus, code)) continue
    t.equal(status, errorStatus[code as keyof typeof errorStatus], `${code}: the status the edge gives it`)
  }
})
