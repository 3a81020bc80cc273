/**
 * Browser tests (issue 9): playwright-core driving Debian's chromium (no browser download), each page
 * photographed at 1280x800 and 390x844 into test/screenshots/ (not committed) and checked with axe-core.
 * axe runs through the DevTools protocol (`page.evaluate`), which the pages' CSP does not govern, so
 * the pages are tested under their real CSP; any console error (a CSP violation among them) is kept
 * for the test to assert on.
 */
import { existsSync, mkdirSync } from 'node:fs'
import path from 'node:path'
import axe from 'axe-core'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'
import { repoRoot } from './fixtures.js'

/** Where the test's screenshots go. */
export const screenshotsDir = path.join(repoRoot(), 'test', 'screenshots')

/** The chromium to drive: PRICING_CHROMIUM, else Debian's; null when there is none. */
export function chromiumPath(): string | null {
  const candidates = [process.env['PRICING_CHROMIUM'], '/usr/bin/chromium', '/usr/bin/chromium-browser'].filter(
    (candidate): candidate is string => candidate !== undefined && candidate !== '',
  )
  return candidates.find((candidate) => existsSync(candidate)) ?? null
}

export const noChromium =
  "no chromium on this machine: the browser tests need Debian's chromium (`apt-get install -y chromium`, which .ci/run does) or PRICING_CHROMIUM"

export async function launchChromium(executablePath: string): Promise<Browser> {
  return chromium.launch({
    executablePath,
    headless: true,
    // Flags for a sandboxed CI machine without network (see the env notes): no background traffic.
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-dev-shm-usage',
    ],
  })
}

export interface AxeViolation {
  readonly id: string
  readonly impact: string | null
  readonly help: string
  readonly targets: string[]
}

/** A context whose pages record their console errors and failed requests in `problems`. */
export async function watchedContext(browser: Browser): Promise<{ context: BrowserContext; problems: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
  const problems: string[] = []
  context.on('page', (page) => watch(page, problems))
  return { context, problems }
}

function watch(page: Page, problems: string[]): void {
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console error on ${page.url()}: ${message.text()}`)
  })
  page.on('pageerror', (error) => problems.push(`script error on ${page.url()}: ${error.message}`))
}

/**
 * The controls a person cannot reach by looking: each link, button and field that is rendered must
 * lie inside the viewport's width and inside every ancestor that clips (overflow other than
 * visible), so that a table's action column hidden in a scroll box counts. Runs in the page.
 */
const controlsOutOfViewScript = `(() => {
  const out = []
  const width = document.documentElement.clientWidth
  const controls = document.querySelectorAll('a[href], button, select, input:not([type=hidden]), textarea, summary')
  for (const control of controls) {
    if (control.closest('.visually-hidden, [hidden]')) continue
    const box = control.getBoundingClientRect()
    if (box.width === 0 && box.height === 0) continue
    const name = (control.innerText || control.value || control.getAttribute('aria-label') || control.id || control.tagName).trim().replace(/\\s+/g, ' ').slice(0, 40)
    if (box.left < -0.5 || box.right > width + 0.5) {
      out.push(name + ': outside the viewport (' + Math.round(box.left) + ' to ' + Math.round(box.right) + ' of ' + width + ' px)')
      continue
    }
    for (let up = control.parentElement; up !== null && up !== document.documentElement; up = up.parentElement) {
      const style = getComputedStyle(up)
      if (style.overflowX === 'visible' && style.overflowY === 'visible') continue
      const clip = up.getBoundingClientRect()
      const left = clip.left + up.clientLeft
      if (box.left < left - 0.5 || box.right > left + up.clientWidth + 0.5) {
        out.push(name + ': cut off by its ' + up.tagName.toLowerCase() + '.' + up.className + ' (' + Math.round(box.right - left) + ' px into a ' + up.clientWidth + ' px box)')
        break
      }
    }
  }
  return out
})()`

/** A chart's labels as the person sees them: font size times the SVG's scale, in CSS px. Runs in the page. */
const chartLabelSizesScript = `(() => {
  const out = []
  for (const chart of document.querySelectorAll('figure.chart')) {
    const labels = chart.querySelectorAll('text, .chart-label')
    if (labels.length === 0) out.push({ text: '(a chart without labels)', px: 0 })
    for (const label of labels) {
      const matrix = typeof label.getScreenCTM === 'function' ? label.getScreenCTM() : null
      const scale = matrix === null ? 1 : Math.hypot(matrix.a, matrix.b)
      out.push({ text: label.textContent.trim(), px: parseFloat(getComputedStyle(label).fontSize) * scale })
    }
  }
  return out
})()`

/** The smallest size a chart's label may have on screen, in CSS px. */
export const chartLabelPxMin = 11

/**
 * Photographs the page at both sizes (`<name>-1280x800.png`, `<name>-390x844.png`) and answers
 * axe's violations at the impacts serious and critical at either size (every rule axe runs by
 * default: WCAG 2.x A and AA and best practice), a page that scrolls sideways at either width, a
 * control out of sight (outside the viewport's width or cut off by a scroll box: a phone's person
 * would not know it is there) and a chart label smaller than 11 px.
 */
export async function auditPage(page: Page, name: string): Promise<AxeViolation[]> {
  mkdirSync(screenshotsDir, { recursive: true })
  const violations: AxeViolation[] = []
  for (const viewport of [
    { width: 1280, height: 800 },
    { width: 390, height: 844 },
  ]) {
    await page.setViewportSize(viewport)
    await page.screenshot({
      path: path.join(screenshotsDir, `${name}-${viewport.width}x${viewport.height}.png`),
      fullPage: true,
    })
    const width = (await page.evaluate('document.documentElement.scrollWidth')) as number
    if (width > viewport.width)
      violations.push({
        id: 'page-wider-than-viewport',
        impact: 'serious',
        help: `the page scrolls sideways at ${viewport.width} px (${width} px wide)`,
        targets: ['html'],
      })
    const hidden = (await page.evaluate(controlsOutOfViewScript)) as string[]
    if (hidden.length > 0)
      violations.push({
        id: 'control-out-of-view',
        impact: 'serious',
        help: `at ${viewport.width} px, controls out of sight`,
        targets: hidden,
      })
    const small = ((await page.evaluate(chartLabelSizesScript)) as { text: string; px: number }[]).filter(
      (label) => label.px < chartLabelPxMin,
    )
    if (small.length > 0) {
      const targets = small.map((label) => `${label.text}: ${label.px.toFixed(1)} px`)
      violations.push({
        id: 'chart-label-too-small',
        impact: 'serious',
        help: `at ${viewport.width} px, chart labels under ${chartLabelPxMin} px`,
        targets,
      })
    }
    if (!(await page.evaluate('typeof window.axe === "object"'))) await page.evaluate(axe.source)
    const result = (await page.evaluate('window.axe.run(document, { resultTypes: ["violations"] })')) as {
      violations: { id: string; impact: string | null; help: string; nodes: { target: string[] }[] }[]
    }
    for (const violation of result.violations) {
      const seen = violations.some((known) => known.id === violation.id)
      if (!seen && (violation.impact === 'serious' || violation.impact === 'critical')) {
        violations.push({
          id: violation.id,
          impact: violation.impact,
          help: violation.help,
          targets: violation.nodes.map((node) => node.target.join(' ')),
        })
      }
    }
  }
  await page.setViewportSize({ width: 1280, height: 800 })
  return violations
}
